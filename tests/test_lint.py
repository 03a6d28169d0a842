from __future__ import annotations

import pytest

from scrapy_rfc9309.lint import CODES, Diagnostic, lint
from scrapy_rfc9309.match import explain
from scrapy_rfc9309.parse import MAX_LINE_BYTES, parse


def codes(
    source: str | bytes, profile: str = "rfc9309", **kwargs: int
) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in lint(source, profile=profile, **kwargs)]


def test_clean_file_has_no_findings() -> None:
    assert (
        lint(
            "User-agent: *\nDisallow: /private/\nAllow: /private/ok\nCrawl-delay: 1\n"
            "Content-Signal: search=yes, ai-train=no\n"
            # Unknown keys and parameters are fine; so is any order.
            "Content-Usage: train-ai=n, future-use=y;p=1\nDisallow: /x\n"
            "Content-Usage: /ai-ok/\ttrain-ai=y\n\n"
            "Sitemap: https://example.com/sitemap.xml\n"
        )
        == []
    )


def test_diagnostic_shape() -> None:
    assert lint("User-agent: *\nDisallow: private\n") == [
        Diagnostic(
            2,
            "warning",
            "pattern-not-rooted",
            "'private' does not start with '/' or '*', so it matches no URL; "
            "did you mean '/private'?",
        )
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Disallow: /\nUser-agent: *\nAllow: /\n", [(1, "rule-outside-group")]),
        # After a first line, as parse() reads it by the cut at each
        # "Disallow: " line.
        (
            "# note\nDisallow: /\nUser-agent: *\nAllow: /\n",
            [(2, "rule-outside-group")],
        ),
        ("User-agent: *\nFoo: bar\nAllow: /\n", [(2, "unknown-directive")]),
        ("User-agent: *\nHost: a.com\nAllow: /\n", [(2, "unsupported-directive")]),
        ("User-agent: *\nDisallow /x\n", [(2, "missing-colon")]),
        ("User-agent: *\nDisallow /x /y\nAllow: /\n", [(2, "unparsable-line")]),
        ("User-agent: *\n: /x\nAllow: /\n", [(2, "unparsable-line")]),
        ("useragent: *\nAllow: /\n", [(1, "typo-accepted")]),
        ("User-agent: *\nDissallow: /x\n", [(2, "typo-accepted")]),
        ("User-agent: *\nDisallow: x/\n", [(2, "pattern-not-rooted")]),
        ("User-agent: *\nDisallow: https://a/x\n", [(2, "pattern-not-rooted")]),
        # rfc9309 decodes escapes to compare: this is "/admin".
        ("User-agent: *\nDisallow: %2fadmin\n", []),
        ("User-agent: *\nCrawl-delay: soon\nAllow: /\n", [(2, "invalid-crawl-delay")]),
        (
            "User-agent: *\nCrawl-delay: 1\nCrawl-delay: 2\nAllow: /\n",
            [(3, "duplicate-crawl-delay")],
        ),
        ("Crawl-delay: 1\nUser-agent: *\nAllow: /\n", [(1, "directive-outside-group")]),
        (
            "User-agent: *\nContent-Signal: search=yes, junk\nAllow: /\n",
            [(2, "invalid-content-signal")],
        ),
        (
            "User-agent: *\nContent-Signal: ai-train=later\nAllow: /\n",
            [(2, "content-signal-value")],
        ),
        (
            "User-agent: *\nContent-Usage: train-ai=n,\nAllow: /\n",
            [(2, "invalid-content-usage")],
        ),
        (
            "User-agent: *\nContent-Usage: /a/ ai=n train-ai=n\nAllow: /\n",
            [(2, "invalid-content-usage")],
        ),
        (
            "User-agent: *\nContent-Usage: /a/\nAllow: /\n",
            [(2, "invalid-content-usage")],
        ),
        (
            "User-agent: *\nContent-Usage: *.pdf train-ai=n\nAllow: /\n",
            [(2, "content-usage-not-rooted")],
        ),
        (
            # A tab separates a path from the preference as a space does.
            "User-agent: *\nContent-Usage: *.pdf\ttrain-ai=n\nAllow: /\n",
            [(2, "content-usage-not-rooted")],
        ),
        (
            "User-agent: *\nContent-Usage: train-ai=no\nAllow: /\n",
            [(2, "content-usage-value")],
        ),
        (
            'User-agent: *\nContent-Usage: search="n"\nAllow: /\n',
            [(2, "content-usage-value")],
        ),
        (
            "Content-Usage: train-ai=n\nUser-agent: *\nAllow: /\n",
            [(1, "directive-outside-group")],
        ),
        ("User-agent:\nAllow: /\n", [(1, "empty-user-agent")]),
        ("User-agent: Foo/1.0\nAllow: /\n", [(1, "user-agent-not-token")]),
        (
            "User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n",
            [(3, "sitemap-not-absolute")],
        ),
        (
            "User-agent: *\nAllow: /\nSitemap: https://a/s\nSitemap: https://a/s\n",
            [(4, "duplicate-sitemap")],
        ),
        # RSL's License: read, not unknown; left out unless absolute.
        (
            "User-agent: *\nLicense: https://a/l.xml\nLicense: /l.xml\nAllow: /\n",
            [(3, "license-not-absolute")],
        ),
        ("User-agent: *\nDisallow: /x\nDisallow: /x\n", [(3, "duplicate-rule")]),
        ("User-agent: *\nDisallow: /x\nAllow: /x\n", [(3, "conflicting-rules")]),
        ("User-agent: a\nDisallow: /\nUser-agent: b\n", [(3, "group-without-rules")]),
        # Its agent's rules are in another group, which it is merged with.
        ("User-agent: a\nDisallow: /\n\nUser-agent: a\nCrawl-delay: 3\n", []),
        ("Sitemap: https://a/s\n", [(0, "no-groups")]),
        (b"\xef\xbb\xbfUser-agent: *\nAllow: /\n", [(1, "byte-order-mark")]),
        (
            b"\xef\xbbUser-agent: *\nAllow: /\n",
            [(1, "broken-byte-order-mark")],
        ),
        (b"User-agent: *\nAllow: /\xff\n", [(2, "invalid-utf8")]),
        (b"User-agent: *\nAllow: /\x00x\n", [(2, "nul-byte")]),
        (
            "User-agent: *\nAllow: /" + "x" * MAX_LINE_BYTES + "\n",
            [(2, "line-too-long")],
        ),
    ],
)
def test_codes(source: str | bytes, expected: list[tuple[int, str]]) -> None:
    assert codes(source) == expected


def test_html_body() -> None:
    found = codes("<!DOCTYPE html>\n<html><body>\n<p>Not Found</p>\n</body></html>\n")
    assert (1, "html-body") in found
    assert {code for _, code in found} == {
        "html-body",
        "unparsable-line",
        "unknown-directive",
        "no-groups",
    }


def test_body_too_large() -> None:
    source = "User-agent: *\nDisallow: /a\nDisallow: /b\n"
    assert codes(source, max_bytes=30) == [(3, "body-too-large")]
    assert codes(source, max_bytes=len(source)) == []


def test_invalid_utf8_says_what_the_bytes_match() -> None:
    robots = b"User-agent: *\nDisallow: /caf\xe9\n"
    (diagnostic,) = lint(robots)
    assert "(%XX in a URL)" in diagnostic.message
    assert explain(parse(robots), "bot", "/caf%E9").allowed is False


def test_crlf_line_numbers() -> None:
    assert codes(b"User-agent: *\r\n\r\nAllow: /\xff\r\n") == [(3, "invalid-utf8")]


def test_google_profile() -> None:
    assert codes("User-agent: *\nDisallowed: /x\n", profile="google") == [
        (2, "typo-accepted")
    ]
    assert (
        codes("User-agent: *\nDisallowed: /x\n")
        == [
            (2, "unknown-directive"),
            (1, "group-without-rules"),
        ][::-1]
    )
    assert (1, "unsupported-directive") in codes(
        "User-agent: *\nCrawl-delay: 3\nAllow: /\n", profile="google"
    )


def test_every_code_is_documented_with_a_severity() -> None:
    assert set(CODES.values()) <= {"error", "warning", "info"}


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="profile"):
        lint("", profile="msn")


def test_every_event_the_linter_hears_is_a_reader_event() -> None:
    # The linter is a reader Handler: a method misspelt would never be
    # called, so every method it defines is one of the Handler's or one of
    # its own few.
    from scrapy_rfc9309._read import Handler
    from scrapy_rfc9309.lint import _Linter

    own = {"add", "html", "rules"}
    defined = {name for name in vars(_Linter) if not name.startswith("_")}
    assert defined - own <= set(vars(Handler))
    assert own <= defined


def test_the_reader_tells_a_handler_typed_events_and_line_facts() -> None:
    from scrapy_rfc9309._bytes import body_text
    from scrapy_rfc9309._read import read_document
    from tests.support.utils import Recorder

    long_line = b"Disallow: /" + b"z" * MAX_LINE_BYTES
    kept = (
        b"\xef\xbbUseragent: a\nDisallow /x\nAllow: /\0y\n"
        + long_line
        + b"\nSitemap: /\xff\n"
    )
    body = kept + b"Crawl-delay: 1\n"
    recorder = Recorder()
    read_document(body_text(body, len(kept), recorder), "rfc9309", recorder)
    assert recorder.events == [
        (6, "body_cut", (len(body), len(kept))),
        (1, "byte_order_mark", (2,)),
        (5, "invalid_utf8", ()),
        (1, "typo_accepted", ("useragent", "user-agent")),
        (1, "user_agent", ("a",)),
        (2, "missing_colon", ("Disallow",)),
        (3, "nul_byte", ()),
        (4, "line_too_long", (len(long_line),)),
        (5, "sitemap", ("/\udcff",)),
    ]
