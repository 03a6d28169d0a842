from __future__ import annotations

import json
import pickle

import pytest

from scrapy_rfc9309.lint import lint
from scrapy_rfc9309.match import explain
from scrapy_rfc9309.parse import (
    MAX_LINE_BYTES,
    Document,
    Group,
    Record,
    Rule,
    parse,
    product_token,
)


def rules(document: Document) -> list[tuple[bool, str, int]]:
    return [tuple(rule) for group in document.groups for rule in group.rules]  # type: ignore[misc]


def test_document_shape() -> None:
    document = parse(
        "User-agent: ExampleBot\n"
        "User-agent: *\n"
        "Disallow: /private # no\n"
        "Allow: /private/ok\n"
        "Crawl-delay: 2.5\n"
        "Content-Signal: search=yes, ai-train=no, ai-input=maybe\n"
        "Sitemap: https://example.com/sitemap.xml\n"
        "Host: example.com\n"
        "\n"
        "User-agent: OtherBot\n"
        "Disallow:\n"
    )
    assert document == Document(
        groups=(
            Group(
                ("ExampleBot", "*"),
                (Rule(False, "/private", 3), Rule(True, "/private/ok", 4)),
                2.5,
                {"search": True, "ai-train": False, "ai-input": "maybe"},
                1,
            ),
            Group(("OtherBot",), (Rule(False, "", 11),), None, {}, 10),
        ),
        sitemaps=("https://example.com/sitemap.xml",),
        records=(Record("host", "example.com", 8),),
        profile="rfc9309",
    )


@pytest.mark.parametrize(
    "body",
    [
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
        "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\n"
        "Disallow: /\r\n",
        "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
        "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
    ],
    ids=["lf", "crlf", "cr", "no-final-newline", "mixed"],
)
def test_line_numbers_with_any_line_ends(body: str) -> None:
    # Google's ID_LinesNumbersAreCountedCorrectly.
    document = parse(body)
    assert [group.line for group in document.groups] == [1, 3]
    assert rules(document) == [(True, "/some/path", 2), (False, "/", 6)]


@pytest.mark.parametrize(
    ("prefix", "read"),
    [
        (b"\xef\xbb\xbf", True),
        (b"\xef\xbb", True),
        (b"\xef", True),
        (b"\xef\x11\xbf", False),
    ],
    ids=["whole", "two-bytes", "one-byte", "broken"],
)
def test_byte_order_mark(prefix: bytes, read: bool) -> None:
    document = parse(prefix + b"User-Agent: foo\nAllow: /AnyValue\n")
    assert bool(document.groups) is read
    assert bool(document.records) is not read


def test_byte_order_mark_only_at_the_start() -> None:
    document = parse(b"User-Agent: foo\n\xef\xbb\xbfAllow: /AnyValue\n")
    assert document.groups[0].rules == ()
    assert document.records == (Record("\ufeffallow", "/AnyValue", 2),)


def test_byte_order_mark_in_text() -> None:
    assert parse("\ufeffUser-agent: *\nDisallow: /x\n").groups[0].rules == (
        Rule(False, "/x", 2),
    )


def test_nul_ends_its_line() -> None:
    document = parse(b"User-agent: *\nDisallow: /a\x00bc\nDisallow: /d\n")
    assert rules(document) == [(False, "/a", 2), (False, "/d", 3)]


def test_invalid_utf8_is_kept() -> None:
    document = parse(b"User-agent: *\nDisallow: /caf\xe9\n")
    assert document.groups[0].rules[0].pattern == "/caf\udce9"
    assert explain(document, "bot", "/caf%C3%A9").allowed is True
    assert explain(document, "bot", "/caf%E9").allowed is False


@pytest.mark.parametrize(
    "junk",
    [
        b"<!DOCTYPE html><html><head><title>Not found</title></head></html>",
        bytes(range(256)) * 4,
        b"\x00" * 100,
        b"\r\n\r\r\n\n",
        b":::\n: x\n x :\n#\n",
        "ツ: ツ\nUser-agent: ツ\nDisallow: ツ\n".encode(),
    ],
)
def test_junk_never_raises(junk: bytes) -> None:
    parse(junk)
    parse(junk, profile="google")
    parse(junk.decode("latin-1"))


def test_html_lines_are_read_as_robots_lines() -> None:
    document = parse("<html>\n<body>\nUser-agent: *<br>\nDisallow: /x<br>\n</body>\n")
    assert document.groups[0].user_agents == ("*<br>",)
    assert rules(document) == [(False, "/x<br>", 4)]


def test_max_bytes_cuts_on_the_last_whole_line() -> None:
    body = b"User-agent: *\nDisallow: /a\nDisallow: /bcdef\n"
    assert rules(parse(body, max_bytes=30)) == [(False, "/a", 2)]
    assert rules(parse(body, max_bytes=27)) == [(False, "/a", 2)]
    # The line ends right at the limit: it is whole.
    assert rules(parse(body, max_bytes=26)) == [(False, "/a", 2)]
    assert rules(parse(body, max_bytes=25)) == []
    assert rules(parse(body, max_bytes=len(body))) == [
        (False, "/a", 2),
        (False, "/bcdef", 3),
    ]
    assert parse(body, max_bytes=5) == Document()


def test_max_bytes_counts_bytes_of_text() -> None:
    body = "User-agent: *\nDisallow: /ツ\nDisallow: /b\n"
    assert len(body) == 40
    assert len(body.encode()) == 42
    assert rules(parse(body, max_bytes=40)) == [(False, "/ツ", 2)]


@pytest.mark.parametrize(
    ("max_bytes", "error"),
    [
        (-1, ValueError),
        ("512000", TypeError),
        (None, TypeError),
        (1.5, TypeError),
        (True, TypeError),
    ],
)
def test_max_bytes_that_is_no_size_is_refused(max_bytes: object, error: type) -> None:
    # A negative cut read nothing and allowed everything, without a word.
    body = "User-agent: *\nDisallow: /\n"
    for read in (parse, lint):
        with pytest.raises(error, match="max_bytes must be a whole number, 0 or"):
            read(body, max_bytes=max_bytes)  # type: ignore[arg-type]
    assert parse(body, max_bytes=0) == Document()


def test_default_max_bytes_is_at_least_500_kib() -> None:
    body = "User-agent: *\n" + "Disallow: /x\n" * 39_000 + "Disallow: /last\n"
    assert len(body) < 512_000
    assert rules(parse(body))[-1] == (False, "/last", 39_002)


def test_long_lines_are_capped_like_google() -> None:
    long = "/" + "x" * (MAX_LINE_BYTES + 100)
    document = parse(f"User-agent: *\nDisallow: {long}\nDisallow: /y\n")
    first, second = document.groups[0].rules
    assert len("Disallow: ") + len(first.pattern) == MAX_LINE_BYTES
    assert second == Rule(False, "/y", 3)


def test_long_line_cap_counts_bytes() -> None:
    long = "/" + "ツ" * MAX_LINE_BYTES
    pattern = parse(f"User-agent: *\nDisallow: {long}\n").groups[0].rules[0].pattern
    assert (
        len(f"Disallow: {pattern}".encode("utf-8", "surrogateescape")) == MAX_LINE_BYTES
    )


def test_user_agent_after_rule_starts_a_group() -> None:
    document = parse(
        "User-agent: a\nUser-agent: b\nDisallow: /x\nUser-agent: c\nDisallow: /y\n"
    )
    assert [group.user_agents for group in document.groups] == [("a", "b"), ("c",)]


@pytest.mark.parametrize(
    "between",
    [
        "Sitemap: https://example.com/s.xml",
        "Crawl-delay: 5",
        "Content-Signal: ai-train=no",
        "Unknown-thing: value",
        "",
        "# comment",
        "garbage without colon here",
    ],
)
def test_other_lines_never_end_a_group(between: str) -> None:
    document = parse(f"User-agent: a\n{between}\nUser-agent: b\nDisallow: /x\n")
    assert [group.user_agents for group in document.groups] == [("a", "b")]


def test_other_records_after_rules_stay_in_the_group() -> None:
    document = parse(
        "User-agent: a\nDisallow: /x\nCrawl-delay: 3\nContent-Signal: search=no\n"
    )
    assert document.groups[0].crawl_delay == 3.0
    assert document.groups[0].content_signals == {"search": False}


def test_rules_before_any_group_are_ignored() -> None:
    document = parse(
        "Disallow: /\nAllow: /x\nCrawl-delay: 4\nUser-agent: a\nDisallow: /y\n"
    )
    assert rules(document) == [(False, "/y", 5)]
    assert document.groups[0].crawl_delay is None
    # After a first line, a usual "Disallow: " line is read by the cut at
    # each such line, which must drop it too, also when no group follows.
    document = parse("# x\nDisallow: /a\nDisallow: /b\nUser-agent: a\nDisallow: /y\n")
    assert rules(document) == [(False, "/y", 5)]
    assert parse("# x\nDisallow: /a\n").groups == ()


@pytest.mark.parametrize(
    ("value", "delay"),
    [("5", 5.0), ("0.5", 0.5), (" 10 ", 10.0), ("0", 0.0), ("1e1", 10.0)],
)
def test_crawl_delay(value: str, delay: float) -> None:
    assert parse(f"User-agent: *\nCrawl-delay:{value}\n").groups[0].crawl_delay == delay


# float() alone would read "1_0" as 10 and "\u0663" (Arabic-Indic three) as 3.
@pytest.mark.parametrize(
    "value", ["", "abc", "-1", "nan", "inf", "5s", "1,5", "1_0", "\u0663", "\uff15"]
)
def test_invalid_crawl_delay_is_ignored(value: str) -> None:
    assert parse(f"User-agent: *\nCrawl-delay: {value}\n").groups[0].crawl_delay is None


def test_first_valid_crawl_delay_of_a_group_wins() -> None:
    document = parse("User-agent: *\nCrawl-delay: x\nCrawl-delay: 7\nCrawl-delay: 9\n")
    assert document.groups[0].crawl_delay == 7.0


def test_content_signals() -> None:
    document = parse(
        "User-agent: *\n"
        "Content-Signal: Search=YES , ai-train=no, ai-input = later, custom=,junk\n"
        "Content-Signal: ai-input=no, search=no\n"
    )
    assert document.groups[0].content_signals == {
        "search": False,
        "ai-train": False,
        "ai-input": False,
        "custom": "",
    }


def test_sitemaps_are_global_and_distinct() -> None:
    document = parse(
        "Sitemap: https://a/1.xml\nUser-agent: *\nSitemap: https://a/2.xml\n"
        "Disallow: /\nSitemap: https://a/1.xml\nsitemap:\n"
    )
    assert document.sitemaps == ("https://a/1.xml", "https://a/2.xml")
    assert [group.user_agents for group in document.groups] == [("*",)]


@pytest.mark.parametrize(
    "line",
    [
        "useragent: foo",
        "user agent: foo",
        "User-Agent foo",
        "USER-AGENT: foo",
        "  user-agent  :  foo  ",
        "\tuser-agent\t:\tfoo",
    ],
)
def test_lenient_user_agent_lines(line: str) -> None:
    assert parse(f"{line}\nDisallow: /\n").groups[0].user_agents == ("foo",)


@pytest.mark.parametrize(
    "key", ["disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"]
)
def test_accepted_disallow_typos(key: str) -> None:
    assert rules(parse(f"User-agent: *\n{key}: /x\n")) == [(False, "/x", 2)]


def test_missing_colon_needs_exactly_two_tokens() -> None:
    document = parse("User-agent *\nDisallow /a\nDisallow /b /c\nAllow\n")
    assert document.groups[0].user_agents == ("*",)
    assert rules(document) == [(False, "/a", 2)]


def test_google_reads_keys_by_prefix() -> None:
    body = "User-agent: *\nDisallowed: /x\nAllowance: /y\nSitemaps: https://a/s\n"
    google = parse(body, profile="google")
    assert rules(google) == [(False, "/x", 2), (True, "/y", 3)]
    assert google.sitemaps == ("https://a/s",)
    rfc = parse(body)
    assert rules(rfc) == []
    assert [record.name for record in rfc.records] == [
        "disallowed",
        "allowance",
        "sitemaps",
    ]


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="profile"):
        parse("", profile="msn")


def test_product_token() -> None:
    assert product_token("ExampleBot/1.0 (+https://x)") == "examplebot"
    assert product_token("Mozilla/5.0 (compatible; Googlebot/2.1)") == "mozilla"
    assert product_token("foo_bar-baz9") == "foo_bar-baz"
    assert product_token(" bot") == ""
    assert product_token("ツbot") == ""


def test_document_is_frozen_comparable_picklable_hashable() -> None:
    document = parse(
        "User-agent: *\nDisallow: /x\nContent-Signal: search=yes\nHost: h\n"
    )
    with pytest.raises(AttributeError):
        document.profile = "google"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(document)) == document
    same = parse("User-agent: *\nDisallow: /x\nContent-Signal: search=yes\nHost: h\n")
    assert same == document
    assert hash(same) == hash(document)
    assert document != parse("User-agent: *\nDisallow: /y\n")
    assert document != parse("User-agent: *\nDisallow: /x\n", profile="google")


def test_to_dict_round_trips_through_json() -> None:
    document = parse(
        "User-agent: a\nUser-agent: *\nDisallow: /x\nAllow: /x/y\nCrawl-delay: 1.5\n"
        "Content-Signal: search=yes, ai-train=no, other=text\nSitemap: https://a/s\n"
        "Host: example\n",
        profile="google",
    )
    data = json.loads(json.dumps(document.to_dict()))
    assert data["groups"][0]["rules"] == [["disallow", "/x", 3], ["allow", "/x/y", 4]]
    assert Document.from_dict(data) == document


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"profile": "msn", "groups": [], "sitemaps": []},
        {
            "profile": "rfc9309",
            "groups": [{"user_agents": [1], "rules": []}],
            "sitemaps": [],
        },
        {
            "profile": "rfc9309",
            "groups": [{"user_agents": [], "rules": [["deny", "/", 1]]}],
        },
        {"profile": "rfc9309", "groups": [], "sitemaps": [None]},
        {"profile": "rfc9309", "groups": "x", "sitemaps": []},
        {
            "profile": "rfc9309",
            "groups": [
                {"user_agents": ["*"], "rules": [], "content_signals": {"a": 1}}
            ],
            "sitemaps": [],
        },
    ],
)
def test_from_dict_rejects_what_to_dict_never_makes(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"not a robots\.txt document"):
        Document.from_dict(data)


def test_without_lines() -> None:
    a = parse("User-agent: *\nDisallow: /x\nHost: h\n")
    b = parse("\n\nUser-agent: *\n\nDisallow: /x\nHost: h\n")
    assert a != b
    assert a.without_lines() == b.without_lines()
    assert a.without_lines().groups[0].rules[0].line == 0


def test_for_agent_keeps_only_what_applies() -> None:
    document = parse(
        "User-agent: FooBot\nDisallow: /a\nCrawl-delay: 1\n\n"
        "User-agent: *\nDisallow: /b\n\n"
        "User-agent: foobot\nAllow: /a/b\nCrawl-delay: 3\nContent-Signal: ai-train=no\n"
        "Sitemap: https://x/s.xml\nHost: x\n"
    )
    mine = document.for_agent("FooBot/2.0")
    assert mine == Document(
        (
            Group(
                ("FooBot", "foobot"),
                (Rule(False, "/a", 2), Rule(True, "/a/b", 9)),
                3.0,
                {"ai-train": False},
                1,
            ),
        ),
        ("https://x/s.xml",),
        (),
        "rfc9309",
    )
    others = document.for_agent("OtherBot")
    assert others.groups == (Group(("*",), (Rule(False, "/b", 6),), None, {}, 5),)
    assert parse("User-agent: a\nDisallow: /\n").for_agent("b").groups == ()


@pytest.mark.parametrize("agent", ["FooBot", "otherbot", "BarBot/1.0", ""])
@pytest.mark.parametrize(
    "url", ["/a", "/a/b", "/b", "/c", "/robots.txt", "/a/index.html"]
)
def test_for_agent_answers_like_the_whole_document(agent: str, url: str) -> None:
    document = parse(
        "User-agent: FooBot\nUser-agent: BarBot\nDisallow: /a\nAllow: /a/index.html\n"
        "User-agent: *\nDisallow: /b\nUser-agent: foobot\nAllow: /a/b\nDisallow: /c\n"
    )
    assert explain(document.for_agent(agent), agent, url) == explain(
        document, agent, url
    )
