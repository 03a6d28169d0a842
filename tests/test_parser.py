"""``scrapy_rfc9309.RobotParser``: Scrapy's parser interface, answered by
RFC 9309 (the behaviours of Scrapy's parser-interface tests, and where
RFC 9309 answers otherwise)."""

from __future__ import annotations

import time

import pytest
from scrapy.robotstxt import RobotParser as ScrapyRobotParser
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import RobotParser
from scrapy_rfc9309.outcome import Lifetimes, parsed, unavailable, unreachable
from scrapy_rfc9309.parse import parse


def _parser(body: bytes) -> RobotParser:
    # Scrapy builds parsers with build_from_crawler; its tests pass no crawler.
    return build_from_crawler(RobotParser, None, body)  # type: ignore[arg-type]


WILDCARDS = b"""User-agent: first
Disallow: /disallowed/*/end$

User-agent: second
Allow: /*allowed
Disallow: /
"""

UNICODE = """
User-Agent: *
Disallow: /admin/
# taken from https://en.wikipedia.org/robots.txt
Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:
Disallow: /wiki/Käyttäjä:

User-Agent: UnicödeBöt
Disallow: /some/randome/page.html""".encode()


@pytest.mark.parametrize(
    ("body", "agent", "path", "allowed"),
    [
        (b"User-agent: * \nDisallow: /no \nAllow: /yes", "*", "/yes", True),
        (b"User-agent: * \nDisallow: /no \nAllow: /yes", "*", "/no", False),
        (WILDCARDS, "first", "/disallowed", True),
        (WILDCARDS, "first", "/disallowed/xyz/end", False),
        (WILDCARDS, "first", "/disallowed/xyz/endinglater", True),
        (WILDCARDS, "second", "/is_still_allowed", True),
        (WILDCARDS, "second", "/other", False),
        # The longest match wins, whatever the order: RFC 9309 (and Protego);
        # Scrapy's "order based precedence" test expects the opposite.
        (b"User-agent: * \nDisallow: / \nAllow: /page", "*", "/page", True),
        (b"User-agent: * \nAllow: /page\nDisallow: / ", "*", "/page", True),
        (UNICODE, "*", "/", True),
        (UNICODE, "*", "/admin/", False),
        (UNICODE, "*", "/wiki/K%C3%A4ytt%C3%A4j%C3%A4:", False),
        (UNICODE, "*", "/wiki/Käyttäjä:", False),
        (UNICODE, "UnicödeBöt", "/admin/", True),
        (UNICODE, "UnicödeBöt", "/some/randome/page.html", False),
        # A whole User-Agent string: its product token is matched.
        (WILDCARDS, "Second/2.0 (+https://x; like First)", "/other", False),
    ],
)
def test_allowed(body: bytes, agent: str, path: str, allowed: bool) -> None:
    parser = _parser(body)
    assert parser.allowed(f"https://site.local{path}", agent) is allowed
    # Scrapy's interface takes bytes as well.
    assert parser.allowed(f"https://site.local{path}".encode(), agent.encode()) is (
        allowed
    )


@pytest.mark.parametrize("body", [b"", b"GIF89a\xd3\x00\xfe\x00\xa2", b"<html>"])
@pytest.mark.parametrize("agent", ["*", "chrome"])
def test_empty_or_garbage_allows_all(body: bytes, agent: str) -> None:
    parser = _parser(body)
    for path in ("/", "/index.html", "/disallowed"):
        assert parser.allowed(f"https://site.local{path}", agent)
    assert parser.crawl_delay(agent) is None


@pytest.mark.parametrize(
    ("body", "delay"),
    [
        (b"User-agent: *\nDisallow: /private\nCrawl-delay: 10\n", 10.0),
        (b"User-agent: *\nDisallow: /private\n", None),
    ],
)
def test_crawl_delay(body: bytes, delay: float | None) -> None:
    parser = _parser(body)
    assert isinstance(parser, ScrapyRobotParser)
    assert parser.crawl_delay("*") == delay


def test_crawl_settings_are_read() -> None:
    """With a crawler: its ROBOTS_PROFILE and ROBOTS_MAX_BYTES."""
    body = b"User-agent: *\nDisallow: /%7Efoo\n" + b"#" * 100 + b"\nDisallow: /b\n"
    crawler = get_crawler(
        settings_dict={"ROBOTS_PROFILE": "google", "ROBOTS_MAX_BYTES": 60}
    )
    parser = build_from_crawler(RobotParser, crawler, body)
    # Google's matcher compares "/%7Efoo" as written; the file is cut
    # before "Disallow: /b".
    assert parser.allowed("https://site.local/~foo", "bot")
    assert parser.allowed("https://site.local/b", "bot")
    rfc = _parser(body)
    assert not rfc.allowed("https://site.local/~foo", "bot")
    assert not rfc.allowed("https://site.local/b", "bot")


def test_a_bad_profile_setting_is_refused() -> None:
    """As the middleware refuses it: never a silent answer by another profile."""
    crawler = get_crawler(settings_dict={"ROBOTS_PROFILE": " Yahoo "})
    with pytest.raises(ValueError, match=r"^ROBOTS_PROFILE must be one of "):
        build_from_crawler(RobotParser, crawler, b"User-agent: *\nDisallow: /\n")


def test_outcomes_other_than_parsed() -> None:
    """The parser sent with robots_parsed answers for the whole outcome."""
    now = time.time()
    lifetimes = Lifetimes()
    missing = RobotParser(unavailable(now=now, lifetimes=lifetimes, http_status=404))
    assert missing.allowed("https://site.local/x", "bot")
    failing = RobotParser(
        unreachable(now=now, lifetimes=lifetimes, http_status=503), clock=lambda: now
    )
    assert not failing.allowed("https://site.local/x", "bot")
    assert failing.allowed("https://site.local/robots.txt", "bot")
    assert failing.crawl_delay("bot") is None
    # Past the 30-day grace: judged by the last robots.txt.
    last = parse("User-agent: *\nDisallow: /x\nCrawl-delay: 3\n")
    earlier = parsed(last, now=now - 2_600_000, lifetimes=lifetimes)
    since = now - lifetimes.grace - 60
    long_gone = unreachable(
        now=since, lifetimes=lifetimes, previous=earlier, http_status=503
    )
    # Within the grace, the last robots.txt is kept but not used.
    within = RobotParser(long_gone, clock=lambda: since + 60)
    assert not within.allowed("https://site.local/y", "bot")
    assert within.crawl_delay("bot") is None
    judged = RobotParser(long_gone, clock=lambda: now)
    assert not judged.allowed("https://site.local/x", "bot")
    assert judged.allowed("https://site.local/y", "bot")
    assert judged.crawl_delay("bot") == 3


def test_matchers_bounded() -> None:
    parser = _parser(b"User-agent: *\nDisallow: /x\n")
    for index in range(200):
        assert not parser.allowed("https://site.local/x", f"bot{index}")
    assert len(parser._matchers) <= 64
