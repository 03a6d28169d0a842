from __future__ import annotations

import io
import pickle
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import FrameType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import version_info
from scrapy.exporters import (
    BaseItemExporter,
    CsvItemExporter,
    JsonLinesItemExporter,
)
from scrapy.http import HtmlResponse, Response, TextResponse

from scrapy_rfc9309 import directives as directives_module
from scrapy_rfc9309.directives import (
    IMAGE_PREVIEWS,
    MAX_VALUE_LENGTH,
    DirectiveSet,
    directives_for,
    merge,
    parse_directives,
    stringify_directives,
)

UTC = timezone.utc
D = DirectiveSet


def at(
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    microsecond: int = 0,
) -> datetime:
    return datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("noindex", [D(noindex=True)]),
        ("noindex, nofollow", [D(noindex=True, nofollow=True)]),
        ("NOINDEX,NOFOLLOW", [D(noindex=True, nofollow=True)]),
        ("  noindex ,  ", [D(noindex=True)]),
        ("noindex nofollow", [D(noindex=True, nofollow=True)]),
        ("googlebot: noindex", [D(bot="googlebot", noindex=True)]),
        ("GoogleBot : NoIndex", [D(bot="googlebot", noindex=True)]),
        (
            "otherbot: noindex, nofollow",
            [D(bot="otherbot", noindex=True, nofollow=True)],
        ),
        ("none", [D(noindex=True, nofollow=True)]),
        ("all", [D()]),
        ("index, follow", [D()]),
        ("noarchive, nocache", [D(noarchive=True)]),
        (
            "nosnippet, noimageindex, notranslate",
            [D(nosnippet=True, noimageindex=True, notranslate=True)],
        ),
        (
            "max-snippet: 20, max-image-preview: large",
            [D(max_snippet=20, max_image_preview="large")],
        ),
        (
            "max-snippet:-1, max-image-preview:none, max-video-preview:0",
            [D(max_snippet=-1, max_image_preview="none", max_video_preview=0)],
        ),
        # A missing comma between two valued directives.
        (
            "max-snippet: 20 max-image-preview: standard",
            [D(max_snippet=20, max_image_preview="standard")],
        ),
        (
            "unavailable_after: 25 Jun 2010 15:00:00 PST",
            [D(unavailable_after=at(2010, 6, 25, 23))],
        ),
        (
            "unavailable_after: 2026-12-31T00:00:00Z",
            [D(unavailable_after=at(2026, 12, 31))],
        ),
        ("noai, noimageai", [D(other=("noai", "noimageai"))]),
        ("indexifembedded", [D(other=("indexifembedded",))]),
        ("max-foo: Bar", [D(other=("max-foo:bar",))]),
        (
            "noindex, googlebot: nofollow, otherbot: none, googlebot: nosnippet",
            [
                D(noindex=True),
                D(bot="googlebot", nofollow=True, nosnippet=True),
                D(bot="otherbot", noindex=True, nofollow=True),
            ],
        ),
        (
            "googlebot: unavailable_after: Monday, 27-Jun-2011 15:00:00 GMT, noindex",
            [D(bot="googlebot", noindex=True, unavailable_after=at(2011, 6, 27, 15))],
        ),
        ("googlebot: all", [D(bot="googlebot")]),
        ("googlebot-news: noindex", [D(bot="googlebot-news", noindex=True)]),
        # A known directive followed by a colon is a typo, not a bot name.
        ("noindex: nofollow", [D(noindex=True, nofollow=True)]),
        # A value the directive does not take is ignored, its neighbours not.
        ("max-snippet: many, noindex", [D(noindex=True)]),
        ("max-snippet: -7", [D()]),
        # An integer of ASCII digits, as Google writes them; not what else
        # Python's int() takes.
        ("max-snippet: +5", [D()]),
        ("max-snippet: 1_000", [D()]),
        ("max-snippet: \u0663", [D()]),
        ("max-image-preview: huge", [D()]),
        ("unavailable_after: someday, noindex", [D(noindex=True)]),
        ("unavailable_after: 1 Jan 99999 00:00:00 GMT", [D()]),
        ("googlebot:", []),
        (":::,,,", []),
        ("", []),
        (",", []),
        ("<>?!, {}", []),
        (b"noindex", [D(noindex=True)]),
        (b"\xff\xfe noindex", [D(noindex=True)]),
    ],
)
def test_parse(value: str | bytes, expected: list[DirectiveSet]) -> None:
    assert parse_directives(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("25 Jun 2010 15:00:00 PST", at(2010, 6, 25, 23)),
        ("25-Aug-2007 15:00:00 EST", at(2007, 8, 25, 20)),
        ("7 Jul 2007 16:30:00 GMT", at(2007, 7, 7, 16, 30)),
        ("Monday, 27-Jun-2011 15:00:00 GMT", at(2011, 6, 27, 15)),
        ("Mon, 27 Jun 2011 15:00:00 GMT", at(2011, 6, 27, 15)),
        ("Mon, 27 Jun 2011 15:00:00 +0200", at(2011, 6, 27, 13)),
        ("Thursday, 01-Jan-70 00:00:00 GMT", at(1970, 1, 1)),
        ("Sat Jun 25 15:00:00 2010", at(2010, 6, 25, 15)),
        ("25 Jun 2010", at(2010, 6, 25)),
        ("2026-12-31", at(2026, 12, 31)),
        ("2026-12-31T00:00:00Z", at(2026, 12, 31)),
        ("2026-12-31T10:30", at(2026, 12, 31, 10, 30)),
        ("2026-12-31 10:30:15.25+02:00", at(2026, 12, 31, 8, 30, 15, 250_000)),
        ("2026-12-31T10:30:00-0130", at(2026, 12, 31, 12)),
        ("2020-09-21 UTC", at(2020, 9, 21)),
    ],
)
def test_unavailable_after_dates(text: str, expected: datetime) -> None:
    (directives,) = parse_directives(f"noindex, unavailable_after: {text}, noarchive")
    assert directives.unavailable_after == expected
    assert directives.unavailable_after.tzinfo is UTC
    assert directives.noindex
    assert directives.noarchive


@pytest.mark.parametrize(
    "text", ["2026-13-01", "2026-12-31T25:00", "2026-12-31T00:00+25:00", "yesterday"]
)
def test_unreadable_dates_are_ignored(text: str) -> None:
    assert parse_directives(f"unavailable_after: {text}") == [D()]


def test_unavailable_after_normalised_to_utc() -> None:
    naive = D(unavailable_after=datetime(2030, 1, 1))
    assert naive.unavailable_after == at(2030, 1, 1)
    assert naive.unavailable_after is not None
    assert naive.unavailable_after.tzinfo is UTC
    plus_two = D(
        unavailable_after=datetime(2030, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    )
    assert plus_two == naive


def test_is_expired() -> None:
    directives = D(unavailable_after=at(2030, 1, 1))
    assert not directives.is_expired(at(2029, 12, 31, 23, 59))
    assert directives.is_expired(at(2030, 1, 1))
    assert directives.is_expired(datetime(2031, 1, 1))  # naive: UTC
    assert not D().is_expired(at(9999, 1, 1))
    assert D(unavailable_after=at(2000, 1, 1)).is_expired()
    assert not D(unavailable_after=at(9999, 1, 1)).is_expired()


def test_values_compare_hash_and_pickle() -> None:
    (directives,) = parse_directives(
        "noindex, max-snippet:3, unavailable_after: 2026-01-01, noai"
    )
    assert pickle.loads(pickle.dumps(directives)) == directives
    assert hash(directives) == hash(D(**directives.__dict__))
    # Given by hand in any order or container, other is sorted and distinct.
    unsorted = D(other=["noimageai", "noai", "noai"])  # type: ignore[arg-type]
    assert unsorted.other == ("noai", "noimageai")
    assert D(bot="GoogleBot") == D(bot="googlebot")
    assert str(directives) == stringify_directives(directives)


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ((), D()),
        ((D(noindex=True), D(nofollow=True)), D(noindex=True, nofollow=True)),
        ((D(max_snippet=20), D(max_snippet=5)), D(max_snippet=5)),
        ((D(max_snippet=-1), D(max_snippet=5)), D(max_snippet=5)),
        ((D(max_snippet=5), D(max_snippet=-1)), D(max_snippet=5)),
        ((D(max_snippet=-1), D()), D(max_snippet=-1)),
        ((D(max_snippet=0), D(max_snippet=-1)), D(max_snippet=0)),
        ((D(max_video_preview=-1), D(max_video_preview=10)), D(max_video_preview=10)),
        (
            (D(max_image_preview="large"), D(max_image_preview="standard")),
            D(max_image_preview="standard"),
        ),
        (
            (D(max_image_preview="none"), D(max_image_preview="large")),
            D(max_image_preview="none"),
        ),
        (
            (D(unavailable_after=at(2030, 1, 1)), D(unavailable_after=at(2020, 1, 1))),
            D(unavailable_after=at(2020, 1, 1)),
        ),
        (
            (D(other=("noai",)), D(other=("noimageai",))),
            D(other=("noai", "noimageai")),
        ),
        ((D(bot="googlebot", noindex=True),), D(noindex=True)),
    ],
)
def test_merge(sets: tuple[DirectiveSet, ...], expected: DirectiveSet) -> None:
    assert merge(*sets) == expected
    assert merge(*reversed(sets)) == expected


def test_merge_scope() -> None:
    assert merge(D(noindex=True), bot="examplebot") == D(bot="examplebot", noindex=True)


@pytest.mark.parametrize(
    ("directives", "compact", "explicit"),
    [
        (D(), "all", "index, follow"),
        (D(noindex=True), "noindex", "noindex, follow"),
        (D(noindex=True, nofollow=True), "noindex, nofollow", "noindex, nofollow"),
        (D(bot="googlebot"), "googlebot: all", "googlebot: index, follow"),
        (
            D(bot="googlebot", nosnippet=True, max_image_preview="large"),
            "googlebot: nosnippet, max-image-preview:large",
            "googlebot: index, follow, nosnippet, max-image-preview:large",
        ),
        (
            D(max_snippet=-1, max_video_preview=0, unavailable_after=at(2026, 12, 31)),
            "max-snippet:-1, max-video-preview:0,"
            " unavailable_after: 2026-12-31T00:00:00Z",
            "index, follow, max-snippet:-1, max-video-preview:0,"
            " unavailable_after: 2026-12-31T00:00:00Z",
        ),
        (
            D(other=("noimageai", "noai")),
            "noai, noimageai",
            "index, follow, noai, noimageai",
        ),
    ],
)
def test_stringify(directives: DirectiveSet, compact: str, explicit: str) -> None:
    assert stringify_directives(directives) == compact
    assert stringify_directives(directives, explicit=True) == explicit
    assert parse_directives(compact) == [directives]
    assert parse_directives(explicit) == [directives]


# -- property tests ------------------------------------------------------------

_RESERVED = {
    "noindex", "nofollow", "noarchive", "nocache", "nosnippet", "noimageindex",
    "notranslate", "none", "all", "index", "follow", "max-snippet",
    "max-image-preview", "max-video-preview", "unavailable_after", "unavailable-after",
}  # fmt: skip
_word = st.from_regex(r"[a-z0-9_][a-z0-9_.\-]{0,12}", fullmatch=True).filter(
    lambda w: w not in _RESERVED and not w.startswith("max-")
)
_limit = st.none() | st.integers(min_value=-1, max_value=10**6)
_when = st.none() | st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=-8)), timezone(timedelta(minutes=330))]
    ),
)
directive_sets = st.builds(
    DirectiveSet,
    bot=st.none() | _word,
    noindex=st.booleans(),
    nofollow=st.booleans(),
    noarchive=st.booleans(),
    nosnippet=st.booleans(),
    noimageindex=st.booleans(),
    notranslate=st.booleans(),
    max_snippet=_limit,
    max_image_preview=st.none() | st.sampled_from(IMAGE_PREVIEWS),
    max_video_preview=_limit,
    unavailable_after=_when,
    other=st.lists(_word | st.builds("max-{}:{}".format, _word, _word), max_size=3).map(
        tuple
    ),
)


@given(directive_sets, st.booleans())
def test_stringify_round_trip(directives: DirectiveSet, explicit: bool) -> None:
    assert parse_directives(stringify_directives(directives, explicit=explicit)) == [
        directives
    ]


@given(st.text() | st.binary())
def test_parse_never_raises(value: str | bytes) -> None:
    for directives in parse_directives(value):
        assert isinstance(directives, DirectiveSet)


_fragments = st.sampled_from(
    ["noindex", "googlebot", ":", ",", " ", "unavailable_after", "max-snippet", "-1",
     "Monday", "27-Jun-2011 15:00:00 GMT", "2026-12-31T", "none", "\x00", "é"]
)  # fmt: skip


@given(st.lists(_fragments, max_size=20).map("".join))
def test_parse_never_raises_on_near_misses(value: str) -> None:
    for directives in parse_directives(value):
        assert parse_directives(stringify_directives(directives)) == [directives]


@given(
    st.text(
        alphabet=st.sampled_from("<meta name=\"robots\" content='noindex'>!-/ \n"),
        max_size=200,
    )
)
def test_directives_for_never_raises_on_html(body: str) -> None:
    response = HtmlResponse("http://example.com/", body=body.encode(), encoding="utf-8")
    assert isinstance(directives_for(response, "ExampleBot"), DirectiveSet)


# -- responses -----------------------------------------------------------------

AGENT = "ExampleBot/1.0 (+https://example.com/bot)"


def html(
    head: str = "", body: str = "", headers: dict[str, list[str]] | None = None
) -> HtmlResponse:
    page = f"<html><head><title>t</title>{head}</head><body>{body}</body></html>"
    return HtmlResponse(
        "http://example.com/",
        body=page.encode(),
        headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})},
    )


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([], D()),
        (["noindex"], D(noindex=True)),
        (["noindex", "nofollow"], D(noindex=True, nofollow=True)),
        (["examplebot: noindex"], D(noindex=True)),
        (["EXAMPLEBOT: noindex"], D(noindex=True)),
        (["otherbot: noindex, nofollow"], D()),
        (["googlebot: noindex", "examplebot: nofollow"], D(nofollow=True)),
        (["max-snippet: 50", "examplebot: max-snippet: 10"], D(max_snippet=10)),
        (["max-snippet: -1", "examplebot: max-snippet: 10"], D(max_snippet=10)),
        (
            ["max-image-preview: large, examplebot: max-image-preview: none"],
            D(max_image_preview="none"),
        ),
        (
            [
                "unavailable_after: 2030-01-01",
                "examplebot: unavailable_after: 2029-01-01",
            ],
            D(unavailable_after=at(2029, 1, 1)),
        ),
        (
            ["noai", "examplebot: noimageai", "otherbot: nothing"],
            D(other=("noai", "noimageai")),
        ),
    ],
)
def test_headers(headers: list[str], expected: DirectiveSet) -> None:
    response = Response("http://example.com/a.pdf", headers={"X-Robots-Tag": headers})
    assert directives_for(response, AGENT) == expected


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ("", D()),
        ('<meta name="robots" content="noindex">', D(noindex=True)),
        ("<META NAME=ROBOTS CONTENT=NOINDEX>", D(noindex=True)),
        (
            "<meta content='noindex, nofollow' name='Robots' />",
            D(noindex=True, nofollow=True),
        ),
        (
            '<meta\n  name = "robots"\n  content = "none"\n>',
            D(noindex=True, nofollow=True),
        ),
        ('<meta name="examplebot" content="noindex">', D(noindex=True)),
        ('<meta name="googlebot" content="noindex">', D()),
        ('<meta name="examplebot-news" content="noindex">', D()),
        ('<meta name="robots" content="googlebot: noindex">', D()),
        ('<meta name="robots" content="examplebot: noindex">', D(noindex=True)),
        ('<meta name="description" content="noindex">', D()),
        ('<meta property="robots" content="noindex">', D()),
        ('<meta data-name="robots" content="noindex">', D()),
        ('<meta name="robots">', D()),
        (
            '<meta name="robots" content="noindex&#44; nofollow">',
            D(noindex=True, nofollow=True),
        ),
        (
            '<meta content="noarchive > nosnippet" name="robots" data-x="noindex">',
            D(noarchive=True, nosnippet=True),
        ),
        ('<meta content="max-snippet:5" name="robots">', D(max_snippet=5)),
        (
            '<meta name="robots" content="index, follow, max-image-preview:large,'
            ' max-snippet:-1, max-video-preview:-1">'
            '<meta name="examplebot" content="nosnippet">',
            D(
                nosnippet=True,
                max_snippet=-1,
                max_image_preview="large",
                max_video_preview=-1,
            ),
        ),
        ('<!-- <meta name="robots" content="noindex"> -->', D()),
        # Empty comments in HTML5: the tag after them is read.
        ('<!--><meta name="robots" content="noindex">', D(noindex=True)),
        ('<!---><meta name="robots" content="noindex">', D(noindex=True)),
        ('<!--a-><meta name="robots" content="noindex">-->', D()),
        (
            "<script>document.write('"
            + '<meta name="robots" content="noindex">'
            + "')</script>",
            D(),
        ),
        ('<style>/* <meta name="robots" content="noindex"> */</style>', D()),
        (
            '<!-- x --><meta name="robots" content="nofollow"><!-- y -->',
            D(nofollow=True),
        ),
        ('<script></script><meta name="robots" content="nofollow">', D(nofollow=True)),
    ],
)
def test_meta(head: str, expected: DirectiveSet) -> None:
    assert directives_for(html(head), AGENT) == expected


def test_meta_in_body_and_headers_merge() -> None:
    response = html(
        head='<meta name="robots" content="max-snippet: 30">',
        body='<p>x</p><meta name="examplebot" content="noarchive, max-snippet: 10">',
        headers={"X-Robots-Tag": ["nofollow"]},
    )
    assert directives_for(response, AGENT) == D(
        nofollow=True, noarchive=True, max_snippet=10
    )


def test_meta_ignored_outside_html() -> None:
    body = b'<meta name="robots" content="noindex">'
    text = TextResponse(
        "http://example.com/a.txt", body=body, headers={"Content-Type": "text/plain"}
    )
    assert directives_for(text, AGENT) == D()
    # Scrapy's own pick of the class counts, whatever the header says.
    sniffed = HtmlResponse("http://example.com/", body=body, encoding="utf-8")
    assert directives_for(sniffed, AGENT) == D(noindex=True)
    xhtml = TextResponse(
        "http://example.com/",
        body=body,
        headers={"Content-Type": "application/xhtml+xml"},
    )
    assert directives_for(xhtml, AGENT) == D(noindex=True)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<",
        b"<meta",
        b'<meta name="robots" content="noindex',
        b"<meta name='robots' content=\"noindex'>",
        b"<!-- <meta name=robots content=noindex>",
        b"<script><meta name=robots content=noindex>",
        b"\xff\xfe\x00<\x00m\x00e\x00t\x00a",
        b"\x00" * 100,
        # Hostile markup that a backtracking scan would take minutes over.
        b"<meta " * 20_000,
        b'<meta content="' * 20_000,
        b"<meta name=robots " * 20_000,
        b"<meta name=" + b" " * 100_000,
        b'<meta name="robots' + b" " * 100_000,
        b'<meta name="robots" ' + b'"" ' * 50_000,
    ],
    ids=lambda body: repr(body[:20]),
)
def test_broken_html(body: bytes) -> None:
    response = HtmlResponse("http://example.com/", body=body)
    assert directives_for(response, AGENT) == D()


def test_agent_without_token() -> None:
    response = html(
        '<meta name="robots" content="noindex">',
        headers={"X-Robots-Tag": [": nofollow"]},
    )
    assert directives_for(response, "*") == D(noindex=True)


ISO_UTC = b"2026-12-31T00:00:00+00:00"


@pytest.mark.parametrize(
    ("exporter", "expected"),
    [
        (
            JsonLinesItemExporter,
            b'"robots_directives": {"bot": null, "noindex": true, "nofollow": false,'
            b' "noarchive": false, "nosnippet": false, "noimageindex": false,'
            b' "notranslate": false, "max_snippet": 5, "max_image_preview": null,'
            b' "max_video_preview": null,'
            b' "unavailable_after": "%s", "other": ["noai"]}'
            # Scrapy 2.13 to 2.17 write a datetime to JSON without its zone.
            % (ISO_UTC if version_info >= (2, 18) else b"2026-12-31 00:00:00"),
        ),
        (
            CsvItemExporter,
            b'"noindex, max-snippet:5, unavailable_after: 2026-12-31T00:00:00Z, noai"',
        ),
    ],
)
def test_feed_exports(
    exporter: Callable[[io.BytesIO], BaseItemExporter], expected: bytes
) -> None:
    (directives,) = parse_directives(
        "noai, noindex, max-snippet: 5, unavailable_after: 2026-12-31"
    )
    output = io.BytesIO()
    export = exporter(output)
    export.start_exporting()
    export.export_item({"url": "http://example.com/", "robots_directives": directives})
    export.finish_exporting()
    assert expected in output.getvalue()


def _lines_run(response: HtmlResponse) -> int:
    """Lines of ``scrapy_rfc9309/directives.py`` executed to read ``response``:
    the work of the Python part of the scan, counted rather than timed."""
    source = directives_module.__file__
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if frame.f_code.co_filename != source:
            return None
        if event == "line":
            count += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        directives_for(response, AGENT)
    finally:
        sys.settrace(previous)
    return count


def test_meta_scan_is_linear_in_hostile_pages() -> None:
    # A page of comment + robots meta pairs: each meta tag had been checked
    # against every comment before it, so four times the page was sixteen
    # times the work.
    def lines(pairs: int) -> int:
        pair = '<!-- x --><meta name="robots" content="noindex">'
        return _lines_run(html(head=pair * pairs))

    small, double, quadruple = lines(200), lines(400), lines(800)
    assert double < 2.2 * small
    assert quadruple < 4.4 * small


@given(
    st.lists(
        st.sampled_from(
            [
                '<meta name="robots" content="noindex">',
                '<meta name="robots" content="nofollow">',
                "<!--",
                "-->",
                "<script>",
                "</script>",
                "<style>",
                "</style>",
                "x",
            ]
        ),
        max_size=30,
    )
)
def test_meta_scan_skips_what_a_browser_skips(pieces: list[str]) -> None:
    # The one-walk scan against the plain definition: a candidate inside a
    # comment, script or style span is no tag.
    text = "".join(pieces)
    opaque = [m.span() for m in directives_module._OPAQUE.finditer(text)]
    expected = [
        match.group().split('content="')[1].split('"')[0]
        for match in directives_module._meta_finder("examplebot").finditer(text)
        if not any(start < match.start() < end for start, end in opaque)
    ]
    found = directives_module._robots_meta(text, "examplebot")
    assert [content for _, content in found] == expected


# -- cost: linear, and bounded by MAX_VALUE_LENGTH (issue 24, F2) ---------------


def _work(value: str | bytes | Callable[[], object]) -> tuple[int, int]:
    """(lines run, bytes allocated) to parse ``value`` (or to call it),
    counted, not timed.

    Bytes: the highest growth of traced memory within each line and each C
    call (``str.partition``, a slice, ``split``), summed, so a copy of the
    rest of the value at each step counts its length each time.
    """
    import tracemalloc

    lines = allocated = 0
    last = 0

    def sample() -> None:
        # The peak since the last sample catches a copy made then freed
        # within one line (piece = piece[colon:]).
        nonlocal allocated, last
        now, peak = tracemalloc.get_traced_memory()
        allocated += max(0, peak - last)
        last = now
        tracemalloc.reset_peak()

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
            sample()
        return trace

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event in ("c_call", "c_return", "c_exception"):
            sample()

    tracemalloc.start()
    last = tracemalloc.get_traced_memory()[0]
    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        value() if callable(value) else parse_directives(value)
    finally:
        sys.setprofile(None)
        sys.settrace(None)
        tracemalloc.stop()
    return lines, allocated


def test_parse_is_linear_below_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # a:a:a:... copied the rest of the value at each "a:": 0.5 MB took 9.9 s.
    monkeypatch.setattr(directives_module, "MAX_VALUE_LENGTH", 10**9)
    (lines, small), (lines4, large) = _work("a:" * 4_000), _work("a:" * 16_000)
    assert lines4 < 4.4 * lines
    assert large < 4.4 * small


def _words(count: int, start: int = 0) -> str:
    return ",".join(f"w{number}" for number in range(start, start + count))


def test_distinct_words_are_read_in_linear_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each word kept in ``other`` copied and sorted all those before it:
    # 8 KB of distinct words took 144 ms, 64 KB 9.6 s.
    monkeypatch.setattr(directives_module, "MAX_VALUE_LENGTH", 10**9)
    (_, small), (_, large) = _work(_words(1_000)), _work(_words(4_000))
    assert large < 6 * small


def test_many_headers_are_merged_in_linear_time() -> None:
    # The same, across headers (or meta tags): 2,000 X-Robots-Tag headers of
    # 40 words each held a crawl 17.8 s.
    def response(headers: int) -> Callable[[], object]:
        values = [_words(40, 40 * number) for number in range(headers)]
        page = Response("http://a.example/", headers={"X-Robots-Tag": values})
        return lambda: directives_for(page, "bot")

    (_, small), (_, large) = _work(response(100)), _work(response(400))
    assert large < 6 * small
    assert len(response(10)().other) == 400  # type: ignore[attr-defined]


@pytest.mark.parametrize("megabytes", [0.5, 1, 2, 4])
@pytest.mark.parametrize("kind", [str, bytes])
def test_huge_values_cost_no_more_than_the_bound(
    megabytes: float, kind: type[str] | type[bytes]
) -> None:
    # Meta content (str) or header (bytes) of a:a:a:... (or a scoped
    # directive, then that): only the first MAX_VALUE_LENGTH are read, so
    # the work is that of 8 KB whatever the size.
    size = int(megabytes * 1024 * 1024)
    text = ("noindex, x: " + ("a:" * 100 + " ") * (size // 201))[:size] + ", nofollow"
    value = text if kind is str else text.encode()
    lines, allocated = _work(value)
    bound_lines, bound_bytes = _work("a:" * (MAX_VALUE_LENGTH // 2))
    assert lines <= bound_lines + 100
    assert allocated <= 2 * bound_bytes
    # What is read is the prefix, cut at a separator; "nofollow" is past it.
    assert parse_directives(value) == [D(noindex=True)]


def test_a_value_is_cut_at_its_last_separator_within_the_bound() -> None:
    head = "noindex," + " " * (MAX_VALUE_LENGTH - 8 - len("nofollow"))
    assert len(head + "nofollow") == MAX_VALUE_LENGTH
    # Exactly at the limit: read whole.
    assert parse_directives(head + "nofollow") == [D(noindex=True, nofollow=True)]
    # One character more: the directive astride the limit is dropped, not
    # read as "nofollo" (or "max-snippet:1" of "max-snippet:12").
    assert parse_directives(head + "nofollow!") == [D(noindex=True)]
    assert parse_directives(head + "nofollow,noarchive") == [
        D(noindex=True, nofollow=True)
    ]
    assert parse_directives((head + "nofollow!").encode()) == [D(noindex=True)]
    assert parse_directives("x" * (MAX_VALUE_LENGTH + 1)) == []


def _reference(value: str) -> list[DirectiveSet]:
    """The parser before it read by position: a plain definition, copying
    the rest of the piece at each colon."""
    m = directives_module
    scopes = m._Scopes()
    pieces = value.lower().split(",")
    index = 0
    while index < len(pieces):
        piece = pieces[index]
        index += 1
        while piece:
            head, colon, rest = piece.partition(":")
            key = head.strip()
            if not colon:
                for word in piece.split():
                    scopes.word(word)
                break
            if key in m._DATE_KEYS:
                index += m._read_date(scopes, rest, pieces, index)
                break
            if key in m._VALUE_KEYS or key.startswith("max-"):
                parts = rest.split(None, 1)
                if not parts:
                    break
                m._read_value(scopes, key, parts[0], 0)
                piece = parts[1] if len(parts) > 1 else ""
            elif key in m._FLAGS:
                scopes.word(key)
                piece = rest
            elif m._WORD.fullmatch(key):
                scopes.bot = key
                piece = rest
            else:
                break
    return [DirectiveSet(bot=bot, **values) for bot, values in scopes.values.items()]


_pieces = st.sampled_from(
    ["noindex", "nofollow", "googlebot", "a", ":", ",", " ", "\t", "\xa0", "\x1c",
     "max-snippet", "max-image-preview", "max-foo", "large", "-1", "12", "x y",
     "unavailable_after", "2026-12-31", "Monday", "27-Jun-2011 15:00:00 GMT",
     "none", "NoIndex", "é"]
)  # fmt: skip


@given(st.lists(_pieces, max_size=30).map("".join))
def test_parse_reads_as_the_plain_definition(value: str) -> None:
    assert parse_directives(value) == _reference(value)
