"""Fuzzing what a broad crawl feeds the package (hypothesis).

tests/test_engine_properties.py covers parse / lint / stringify / matching
over robots.txt-shaped input; this module adds what arrives from the open
web: URLs of every shape, hostile header values and pages, stored outcomes
that are not what they should be, and the cost of parsing and matching as
the input grows (measured by a deterministic count of the calls made and
the characters read, not by a clock).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse, Response, TextResponse

from scrapy_rfc9309.directives import DirectiveSet, directives_for, parse_directives
from scrapy_rfc9309.match import Decision, compile, explain
from scrapy_rfc9309.outcome import Outcome, kind_of_status, max_age
from scrapy_rfc9309.parse import Document, parse, product_token
from scrapy_rfc9309.urls import request_path, robots_url

SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILES = st.sampled_from(["rfc9309", "google"])

# -- URLs of every shape ------------------------------------------------------

_ANY_CHAR = st.characters(exclude_categories=())  # surrogates included
_URL_PIECE = st.one_of(
    st.sampled_from(
        [
            "/", "//", "?", "#", ";", "&", "=", "*", "$", ":", "@", "[", "]",
            "%", "%%", "%2", "%zz", "%e9", "%E3%83%84", "%00", "%2F", "%25",
            "%2A", "%24", "..", "./", "\\", " ", "\t", "\n", "\x00", "ツ", "é",
            "\ufeff", "\ud800", "\udcff", "xn--", "robots.txt", "index.html",
        ]
    ),
    st.text(_ANY_CHAR, max_size=5),
)  # fmt: skip
_PREFIX = st.sampled_from(
    [
        "", "/", "http://", "https://", "HTTP://Example.COM", "https://a.b",
        "http://127.0.0.1:8080", "https://[::1]", "https://[::1", "http://[bad]",
        "http://a:99999", "http://a:-1", "http://user:pw@host", "//host",
        "mailto:", "data:,", "file:///", "ftp://a", "https://ツ.jp",
        "https://xn--zz", "http://" + "a" * 300 + ".com", "?", "#", "*",
    ]
)  # fmt: skip
URL = st.one_of(
    st.tuples(_PREFIX, st.lists(_URL_PIECE, max_size=30).map("".join)).map("".join),
    st.text(_ANY_CHAR, max_size=100),
    # Very long ones: repeated pieces, 10-100 KB.
    st.tuples(_PREFIX, _URL_PIECE, st.integers(1_000, 20_000)).map(
        lambda t: t[0] + "/" + t[1] * t[2]
    ),
)
AGENT = st.one_of(
    st.sampled_from(["FooBot", "foobot/1.0", "*", "", " ", "Mozilla/5.0 (X)"]),
    st.text(_ANY_CHAR, max_size=30),
)
_BODY = (
    "User-agent: *\nDisallow: /*x*x$\nAllow: /%7e\nDisallow: /ツ\n"
    "User-agent: foobot\nAllow: /\nDisallow: /private*\nDisallow: /*.php$\n"
)


@SETTINGS
@given(URL, AGENT, PROFILES)
def test_is_allowed_never_raises_on_any_url(url: str, agent: str, profile: str) -> None:
    document = parse(_BODY, profile=profile)
    decision = explain(document, agent, url)
    assert isinstance(decision, Decision)
    assert compile(document, agent).is_allowed(url) is decision.allowed


@SETTINGS
@given(URL)
def test_url_helpers_never_raise(url: str) -> None:
    found = robots_url(url)
    if found is not None:
        assert found.startswith(("http://", "https://"))
        assert found.endswith("/robots.txt")
        # The robots.txt URL is its own origin's.
        assert robots_url(found) == found
    assert isinstance(request_path(url), str)


@SETTINGS
@given(AGENT)
def test_product_token_is_a_token(agent: str) -> None:
    token = product_token(agent)
    assert token == token.lower()
    assert all(char.isascii() and (char.isalpha() or char in "_-") for char in token)


# -- what servers send alongside robots.txt -------------------------------------


@SETTINGS
@given(st.one_of(st.text(_ANY_CHAR, max_size=60), st.none()))
def test_cache_control_never_raises(value: str | None) -> None:
    seconds = max_age(value)
    assert seconds is None or seconds >= 0


@SETTINGS
@given(st.integers(-(10**6), 10**6))
def test_every_status_has_an_outcome(status: int) -> None:
    assert kind_of_status(status) in {"parsed", "unavailable", "unreachable"}


_HEADER_VALUE = st.one_of(
    st.binary(max_size=80),
    st.lists(
        st.sampled_from(
            [b"noindex", b"nofollow", b"none", b"googlebot:", b"examplebot:", b",",
             b" ", b"max-snippet:", b"-1", b"unavailable_after:", b"\xff", b"\x00",
             b"max-image-preview:large", b"27 Jun 2011 15:00:00 PST"]
        ),
        max_size=12,
    ).map(b"".join),
)  # fmt: skip
_HTML_PIECE = st.sampled_from(
    [
        "<meta name=robots content=noindex>", '<meta name="ExampleBot" content="',
        "<meta content='nofollow' name='robots'>", "<META NAME=ROBOTS>", "<!--",
        "-->", "<script>", "</script>", "<head>", "</head>", "<body>", "\x00",
        "\ufeff", "é", "<", ">", '"', "'", "=", " ", "content=none",
    ]
)  # fmt: skip


@SETTINGS
@given(
    st.lists(_HEADER_VALUE, max_size=4),
    st.one_of(
        st.lists(_HTML_PIECE, max_size=40).map(lambda parts: "".join(parts).encode()),
        st.binary(max_size=300),
    ),
    st.sampled_from([HtmlResponse, TextResponse, Response]),
    AGENT,
)
def test_directives_for_never_raises(
    headers: list[bytes], body: bytes, cls: type[Response], agent: str
) -> None:
    response = cls(
        "http://example.com/",
        body=body,
        headers={"X-Robots-Tag": headers, "Content-Type": "text/html"},
    )
    assert isinstance(directives_for(response, agent), DirectiveSet)
    for value in headers:
        assert all(isinstance(d, DirectiveSet) for d in parse_directives(value))


# -- stored outcomes that are not what they should be ---------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=20,
)
_OUTCOME_KEYS = st.sampled_from(
    ["format", "kind", "fetched_at", "expires_at", "retain_until", "http_status",
     "document", "detail", "unreachable_since", "grace_ends_at", "fallback"]
)  # fmt: skip
_ALMOST_OUTCOME = st.fixed_dictionaries(
    {"format": st.sampled_from([1, 1, 2, "1", None]),
     "kind": st.sampled_from(["parsed", "unavailable", "unreachable", "x", 3])},
    optional={
        "fetched_at": _JSON, "expires_at": _JSON, "retain_until": _JSON,
        "document": _JSON | st.fixed_dictionaries(
            {"profile": st.sampled_from(["rfc9309", "google", "x"]),
             "groups": _JSON, "sitemaps": _JSON},
        ),
        "fallback": _JSON, "http_status": _JSON,
    },
)  # fmt: skip


@SETTINGS
@given(st.one_of(_JSON, _ALMOST_OUTCOME, st.dictionaries(_OUTCOME_KEYS, _JSON)))
def test_outcome_from_dict_fails_only_as_documented(data: Any) -> None:
    # Stores read outcomes written by other processes and versions: a bad
    # one must be refused with the documented exceptions, nothing else.
    try:
        outcome = Outcome.from_dict(data)
    except (ValueError, TypeError, KeyError):
        return
    assert Outcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome


@SETTINGS
@given(st.one_of(_JSON, st.dictionaries(st.sampled_from(["profile", "groups",
       "sitemaps", "records"]), _JSON)))  # fmt: skip
def test_document_from_dict_fails_only_as_documented(data: Any) -> None:
    try:
        document = Document.from_dict(data)
    except ValueError:
        return
    assert Document.from_dict(document.to_dict()) == document


# -- cost: linear in the input ------------------------------------------------------


#: Regular expression methods, and those that return a match (whose end
#: says how far the engine read).
_REGEX_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub",
                  "subn", "split")  # fmt: skip
_SCANS = ("match", "fullmatch", "search")


def _counting(method: Any, add: Callable[[int], None]) -> Callable[..., Any]:
    """``method`` of a compiled regex, adding the characters it reads."""
    name = method.__name__

    def counted(*args: Any, **kwargs: Any) -> Any:
        string = args[1] if name in ("sub", "subn") else args[0]
        pos = 0
        if name in _SCANS:
            pos = args[1] if len(args) > 1 else kwargs.get("pos", 0)
        result = method(*args, **kwargs)
        # A match read up to its end; anything else, up to the end of text.
        end = result.end() if name in _SCANS and result is not None else len(string)
        add(max(end - pos, 0))
        return result

    return counted


class _CountedPattern:
    """A compiled regex whose scanning methods count what they read."""

    def __init__(self, pattern: re.Pattern[Any], add: Callable[[int], None]) -> None:
        self._pattern = pattern
        self._add = add

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._pattern, name)
        return _counting(attribute, self._add) if name in _REGEX_METHODS else attribute


@contextmanager
def _counted_regexes(add: Callable[[int], None]) -> Iterator[None]:
    """Every compiled regex of the package's modules (held as a pattern or as
    one of its bound methods) counting the characters it reads, meanwhile."""
    replaced: list[tuple[Any, str, Any]] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("scrapy_rfc9309"):
            continue
        for name, value in list(vars(module).items()):
            owner = getattr(value, "__self__", None)
            if isinstance(value, re.Pattern):
                counted: Any = _CountedPattern(value, add)
            elif isinstance(owner, re.Pattern) and value.__name__ in _REGEX_METHODS:
                counted = _counting(value, add)
            else:
                continue
            replaced.append((module, name, value))
            setattr(module, name, counted)
    try:
        yield
    finally:
        for module, name, value in replaced:
            setattr(module, name, value)


_TEXT = (str, bytes, bytearray)


def _work(function: Callable[[], object]) -> int:
    """A deterministic measure of the work ``function()`` does, never a
    clock: one per Python or C function call, plus the characters read in
    C: the length of each str or bytes a C method is called on (an upper
    bound: a str method reads at most all of it) and the characters each
    regex of the package reads (to the end of its match, else of the text).

    Blind spots: a regex backtracking within the characters it reads (each
    repeat of the package's regexes on unbounded input is followed by a
    character its class does not hold, so a failed match gives back at most
    what it read, once), and slicing or concatenation, which are operators,
    not calls.
    """
    count = 0

    def add(size: int) -> None:
        nonlocal count
        count += size

    def profiler(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1
        elif event == "c_call":
            receiver = getattr(arg, "__self__", None)
            count += 1 + (len(receiver) if isinstance(receiver, _TEXT) else 0)

    with _counted_regexes(add):
        previous = sys.getprofile()
        sys.setprofile(profiler)
        try:
            function()
        finally:
            sys.setprofile(previous)
    return count


def test_work_counts_what_c_reads_and_restores_the_regexes() -> None:
    reader = importlib.import_module("scrapy_rfc9309._read")
    pattern = reader._TWO_TOKENS
    # One line without a colon: two C calls or so, 10,000 characters read
    # by str methods and by the regex that splits it in two tokens.
    line = "a" * 5_000 + " " + "b" * 5_000
    assert _work(lambda: parse(line).groups) > 2 * len(line)
    counted = []
    with _counted_regexes(counted.append):
        reader._TWO_TOKENS(line)
    assert counted == [len(line)]
    assert reader._TWO_TOKENS is pattern


#: ``work(4n) / work(n)`` must stay under this for a linear algorithm (4,
#: plus constant costs); a quadratic one gives 16.
GROWTH = 6.0

_LINE = st.one_of(
    st.tuples(
        st.sampled_from(
            ["User-agent:", "Allow:", "Disallow:", "Sitemap:", "Crawl-delay:",
             "Content-Signal:", "useragent", "disalow:", "Host:", "#", ""]
        ),
        st.text(st.sampled_from("/*$?=a%2Fツ é:#\x00\t"), max_size=12),
        st.sampled_from(["\n", "\r\n", "\r", ""]),
    ).map("".join),
    st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_LINE, min_size=1, max_size=8).map("".join), PROFILES)
def test_parse_work_grows_linearly(unit: str, profile: str) -> None:
    source = unit + "\n"
    # Large enough that per-call constants do not dominate, far below the
    # size limit so that the 4x input is read whole.
    n = max(1, 2_000 // len(source.encode()))
    small = source * n
    large = source * (4 * n)
    work_small = _work(lambda: parse(small, profile=profile, max_bytes=10**7).groups)
    work_large = _work(lambda: parse(large, profile=profile, max_bytes=10**7).groups)
    assert work_large <= GROWTH * work_small + 200


_SHAPES = pytest.mark.parametrize(
    "shape",
    [
        lambda n: "x" * (40 * n),  # one long line, no newline
        lambda n: "\x00" * (40 * n),
        lambda n: "\r" * (40 * n),
        lambda n: "User-agent: a\n" * n,  # one group, many agents
        lambda n: "User-agent: a\nDisallow: /x\n" * n,  # many groups
        lambda n: "User-agent: *\n" + "Disallow: /*a*b*c$\n" * n,
        lambda n: "Disallow: " + "*" * (40 * n) + "\n",
        lambda n: "User-agent: *\nDisallow: " + "%" * (40 * n) + "\n",
        lambda n: "Sitemap: http://a/" + "s\nSitemap: http://a/" * n,
    ],
    ids=["long-line", "nuls", "crs", "agents", "groups", "wildcards", "stars",
         "percents", "sitemaps"],
)  # fmt: skip


@_SHAPES
@pytest.mark.parametrize("profile", ["rfc9309", "google"])
def test_parse_work_grows_linearly_on_adversarial_shapes(
    shape: Callable[[int], str], profile: str
) -> None:
    small, large = shape(100), shape(400)
    work_small = _work(lambda: parse(small, profile=profile, max_bytes=10**7).groups)
    work_large = _work(lambda: parse(large, profile=profile, max_bytes=10**7).groups)
    assert work_large <= GROWTH * work_small + 200


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.text(st.sampled_from("/ab*$%2F"), min_size=1, max_size=10),
        ),
        min_size=1,
        max_size=30,
    ),
    st.text(st.sampled_from("/ab?=%"), min_size=1, max_size=4),
    PROFILES,
)
def test_matching_work_grows_linearly_with_the_url(
    rules: list[tuple[bool, str]], unit: str, profile: str
) -> None:
    source = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: /{pattern}\n" for allow, pattern in rules
    )
    matcher = compile(parse(source, profile=profile), "bot")
    small = "/" + unit * 500
    large = "/" + unit * 2_000
    work_small = _work(lambda: matcher.is_allowed(small))
    work_large = _work(lambda: matcher.is_allowed(large))
    assert work_large <= GROWTH * work_small + 200


@pytest.mark.parametrize(
    "pattern",
    [
        "/a*a*a*a*a*a*a*a*b$",
        "/*a*b*a*b*a*b",
        "/*ab$",
        "/a%2A*b",
        "/" + "a*" * 40,
        "/a*a*a*c",
        "/*a*a*c*",
    ],
)
@pytest.mark.parametrize("profile", ["rfc9309", "google"])
def test_matching_work_grows_linearly_on_adversarial_patterns(
    pattern: str, profile: str
) -> None:
    # Wildcards a backtracking matcher would try every way to place.
    source = f"User-agent: *\nDisallow: {pattern}\nAllow: /a*a*c$\n"
    matcher = compile(parse(source, profile=profile), "bot")
    small, large = "/" + "a" * 2_000, "/" + "a" * 8_000
    work_small = _work(lambda: matcher.is_allowed(small))
    work_large = _work(lambda: matcher.is_allowed(large))
    assert work_large <= GROWTH * work_small + 200
