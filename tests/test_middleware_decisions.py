"""Deciding: agents, skipped requests, Content-Signal, SSRF guard, settings,
stats and the robots_outcome signal."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import signals as robots_signals
from scrapy_rfc9309.fetch import _is_public
from scrapy_rfc9309.middleware import RobotsDisallowed, RobotsMiddleware
from scrapy_rfc9309.outcome import Lifetimes, parsed, unavailable
from scrapy_rfc9309.parse import parse
from tests.support.crawl_helpers import (
    RecordingSpider,
    crawl,
    make_crawler,
    middleware,
    stats,
)
from tests.support.server import Server
from tests.support.utils import coroutine_test, utf8_log_file

MakeServer = Callable[..., Server]
AGENTS = (
    "User-agent: TestBot\nDisallow: /test\n\n"
    "User-agent: SpiderBot\nDisallow: /spider\n\n"
    "User-agent: SettingBot\nDisallow: /setting\n\n"
    "User-agent: *\nDisallow: /all\n"
)
PAGES = ["/test", "/spider", "/setting", "/all"]


def _crawled_paths(crawler: Any, server: Server) -> set[str]:
    return {url[len(server.origin) :] for url in crawler.spider.crawled}


@coroutine_test
async def test_agent_from_user_agent(server: Server) -> None:
    server.route("/robots.txt", AGENTS)
    crawler = await crawl([server.url(p) for p in PAGES])
    assert _crawled_paths(crawler, server) == {"/spider", "/setting", "/all"}


@coroutine_test
async def test_agent_from_robots_user_agent_setting(server: Server) -> None:
    server.route("/robots.txt", AGENTS)
    crawler = await crawl(
        [server.url(p) for p in PAGES], {"ROBOTS_USER_AGENT": "SettingBot/2"}
    )
    assert _crawled_paths(crawler, server) == {"/test", "/spider", "/all"}


@coroutine_test
async def test_agent_from_robotstxt_user_agent_setting(server: Server) -> None:
    server.route("/robots.txt", AGENTS)
    crawler = await crawl(
        [server.url(p) for p in PAGES], {"ROBOTSTXT_USER_AGENT": "SettingBot"}
    )
    assert _crawled_paths(crawler, server) == {"/test", "/spider", "/all"}


class AgentSpider(RecordingSpider):
    robots_user_agent = "SpiderBot/3.0"


@coroutine_test
async def test_agent_from_the_spider_attribute(server: Server) -> None:
    server.route("/robots.txt", AGENTS)
    crawler = await crawl(
        [server.url(p) for p in PAGES],
        {"ROBOTS_USER_AGENT": "SettingBot"},
        spidercls=AgentSpider,
    )
    assert _crawled_paths(crawler, server) == {"/test", "/setting", "/all"}


@coroutine_test
async def test_unknown_agent_follows_the_wildcard_group(server: Server) -> None:
    server.route("/robots.txt", AGENTS)
    crawler = await crawl([server.url(p) for p in PAGES], {"USER_AGENT": "Nobody/1"})
    assert _crawled_paths(crawler, server) == {"/test", "/spider", "/setting"}


class MetaSpider(RecordingSpider):
    async def start(self) -> Any:
        for url in self.urls:
            yield Request(
                url,
                meta={"dont_obey_robotstxt": True},
                callback=self.parse,
                errback=self.failed,
            )


@coroutine_test
async def test_dont_obey_robotstxt_skips_every_check(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    crawler = await crawl([server.url("/page")], spidercls=MetaSpider)
    assert crawler.spider.crawled == [server.url("/page")]
    assert [hit.path for hit in server.hits] == ["/page"]
    assert stats(crawler) == {}


@coroutine_test
async def test_data_and_file_urls_are_not_checked(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html></html>")
    urls = ["data:text/plain,hello", page.as_uri()]
    crawler = await crawl(urls)
    assert sorted(crawler.spider.crawled) == sorted(urls)
    assert stats(crawler) == {}


def _middleware(settings: dict[str, Any] | None = None) -> RobotsMiddleware:
    crawler = get_crawler(Spider, {"USER_AGENT": "TestBot/1", **(settings or {})})
    return RobotsMiddleware(crawler)


@coroutine_test
async def test_other_schemes_have_no_robots_txt() -> None:
    mw = _middleware()
    for url in ("s3://bucket/key", "ftp://example.com/file"):
        assert await mw.process_request(Request(url)) is None
    assert len(mw.memory) == 0


@coroutine_test
async def test_http_and_https_are_different_origins() -> None:
    mw = _middleware()
    lifetimes = Lifetimes()
    now = time.time()
    disallow_all = parse("User-agent: *\nDisallow: /\n")
    mw.memory.store(
        "http://example.com/robots.txt",
        parsed(disallow_all, now=now, lifetimes=lifetimes),
    )
    mw.memory.store(
        "https://example.com/robots.txt", unavailable(now=now, lifetimes=lifetimes)
    )
    mw.memory.store(
        "http://example.com:8080/robots.txt", unavailable(now=now, lifetimes=lifetimes)
    )
    with pytest.raises(RobotsDisallowed) as info:
        await mw.process_request(Request("http://example.com/page"))
    assert info.value.origin == "http://example.com/robots.txt"
    # Same origin: default port and case do not matter, userinfo is dropped.
    with pytest.raises(RobotsDisallowed):
        await mw.process_request(Request("HTTP://user:pw@Example.COM:80/page"))
    assert await mw.process_request(Request("https://example.com/page")) is None
    assert await mw.process_request(Request("http://example.com:8080/page")) is None


@pytest.mark.parametrize(
    ("purposes", "crawled"),
    [
        ({}, True),
        ({"ai-train": True}, False),
        ({"AI-Train": True}, False),
        ({"ai-train": False}, True),  # not a purpose of this crawl
        ({"search": True}, True),  # the site says yes
        ({"ai-input": True}, True),  # the site says nothing
        ({"search": True, "ai-train": True}, False),
    ],
)
@coroutine_test
async def test_content_signals(
    server: Server, purposes: dict[str, bool], crawled: bool
) -> None:
    server.route(
        "/robots.txt", "User-agent: *\nContent-Signal: search=yes, ai-train=no\n"
    )
    crawler = await crawl([server.url("/page")], {"ROBOTS_CONTENT_SIGNALS": purposes})
    assert crawler.spider.crawled == ([server.url("/page")] if crawled else [])
    if not crawled:
        assert crawler.spider.dropped[server.url("/page")].cause == "content_signal"
        assert stats(crawler)["robots/forbidden/content_signal"] == 1


@coroutine_test
async def test_content_signals_of_another_agent_do_not_apply(server: Server) -> None:
    server.route(
        "/robots.txt",
        # A user-agent line only starts a new group after a rule.
        "User-agent: OtherBot\nContent-Signal: ai-train=no\nDisallow: /x\n\n"
        "User-agent: *\nAllow: /\n",
    )
    crawler = await crawl(
        [server.url("/page")], {"ROBOTS_CONTENT_SIGNALS": {"ai-train": True}}
    )
    assert crawler.spider.crawled == [server.url("/page")]


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False),
        ("127.0.0.5", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # shared address space
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00:ec2::254", False),  # AWS metadata over IPv6
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
    ],
)
def test_ssrf_guard_addresses(address: str, public: bool) -> None:
    assert _is_public(address) is public


@coroutine_test
async def test_ssrf_guard_refuses_loopback(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    crawler = await crawl([server.url("/page")], {"ROBOTS_SSRF_GUARD": True})
    # robots.txt was never requested; unreachable disallows the page.
    assert server.hits == []
    assert crawler.spider.dropped[server.url("/page")].cause == "unreachable"


@coroutine_test
async def test_ssrf_guard_resolves_names() -> None:
    mw = _middleware({"ROBOTS_SSRF_GUARD": True})
    refusal = await mw.fetcher._ssrf_refusal("http://localhost:1234/robots.txt")
    assert refusal is not None
    assert "localhost" in refusal


@pytest.mark.parametrize(
    ("guard", "address", "meta", "refused"),
    [
        (True, "10.0.0.1", {}, True),
        (True, "::ffff:127.0.0.1", {}, True),
        (True, "93.184.216.34", {}, False),
        # Through a proxy the address is the proxy's, often a private one.
        (True, "10.0.0.1", {"proxy": "http://10.0.0.1:3128"}, False),
        # A handler (or a cached response) that tells no address.
        (True, None, {}, False),
        (False, "10.0.0.1", {}, False),
    ],
)
def test_ssrf_guard_checks_the_address_a_response_came_from(
    guard: bool, address: str | None, meta: dict[str, str], refused: bool
) -> None:
    mw = _middleware({"ROBOTS_SSRF_GUARD": guard})
    url = "http://example.com/robots.txt"
    # As a downloader middleware gets it: not tied to its request yet.
    response = Response(
        url, ip_address=None if address is None else ipaddress.ip_address(address)
    )
    refusal = mw.fetcher.address_refusal(Request(url, meta=meta), response)
    assert (refusal is not None) is refused
    if refused:
        assert f"refused example.com ({ipaddress.ip_address(address)}" in refusal


@pytest.mark.parametrize("guard", [True, False])
@coroutine_test
async def test_ssrf_guard_drops_a_page_answered_from_a_refused_address(
    guard: bool,
) -> None:
    """DNS rebinding after robots.txt was fetched: the pages answered from
    a private address are dropped, and the origin is refused for good, once
    however many pages say so."""
    mw = _middleware({"ROBOTS_SSRF_GUARD": guard})
    origin = "http://example.com/robots.txt"
    now = time.time()
    allow_all = parse("User-agent: *\nAllow: /\n")
    mw.memory.store(origin, parsed(allow_all, now=now, lifetimes=Lifetimes()))
    public = ipaddress.ip_address("93.184.216.34")
    request = Request("http://example.com/public")
    response = Response(request.url, ip_address=public)
    assert await mw.process_response(request, response) is response

    private = ipaddress.ip_address("10.0.0.1")
    for path in ("/a", "/b"):
        request = Request("http://example.com" + path)
        response = Response(request.url, ip_address=private)
        if not guard:
            assert await mw.process_response(request, response) is response
            continue
        with pytest.raises(RobotsDisallowed) as raised:
            await mw.process_response(request, response)
        assert raised.value.cause == "unreachable"
        assert "refused example.com (10.0.0.1" in raised.value.why
    if not guard:
        assert stats(mw.crawler) == {}
        return
    entry = mw.memory.entry(origin)
    assert entry is not None
    assert entry.outcome.guard_refused
    counted = stats(mw.crawler)
    assert counted["robots/outcome/unreachable"] == 1
    assert counted["robots/forbidden/unreachable"] == 2
    # The origin's other pages are dropped before they are downloaded.
    with pytest.raises(RobotsDisallowed):
        await mw.process_request(Request("http://example.com/c"))


@coroutine_test
async def test_ssrf_guard_off_by_default(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    crawler = await crawl([server.url("/page")])
    assert crawler.spider.crawled == [server.url("/page")]


@coroutine_test
async def test_exact_stats(make_server: MakeServer) -> None:
    rules, missing, failing = make_server(), make_server(), make_server()
    rules.route("/robots.txt", "User-agent: *\nDisallow: /private\nCrawl-delay: 0.01\n")
    missing.route("/robots.txt", "", status=404)
    failing.route("/robots.txt", "", status=503)
    urls = [
        rules.url("/a"),
        rules.url("/private/1"),
        rules.url("/private/2"),
        missing.url("/a"),
        missing.url("/b"),
        failing.url("/a"),
        failing.url("/b"),
        failing.url("/c"),
    ]
    crawler = await crawl(urls)
    # How late a request left (robots/crawl_delay/late*) measures the
    # machine's load, not the crawl.
    counted = {k: v for k, v in stats(crawler).items() if "/late" not in k}
    assert counted == {
        "robots/fetch_count": 3,
        "robots/outcome/parsed": 1,
        "robots/outcome/unavailable": 1,
        "robots/outcome/unreachable": 1,
        "robots/crawl_delay/origins": 1,
        "robots/forbidden": 5,
        "robots/forbidden/rule": 2,
        "robots/forbidden/unreachable": 3,
    }
    assert len(crawler.spider.crawled) == 3


@coroutine_test
async def test_robots_outcome_signal(make_server: MakeServer) -> None:
    rules, failing = make_server(), make_server()
    rules.route("/robots.txt", "User-agent: *\nSitemap: /sitemap.xml\n")
    failing.route("/robots.txt", "", status=500)
    crawler = make_crawler()
    received: list[dict[str, Any]] = []

    def on_outcome(**kwargs: Any) -> None:
        received.append(kwargs)

    crawler.signals.connect(on_outcome, signal=robots_signals.robots_outcome)
    urls = [rules.url("/a"), rules.url("/b"), failing.url("/a")]
    await crawler.crawl_async(urls=urls)
    by_origin = {item["origin"]: item for item in received}
    assert len(received) == 2
    sent = by_origin[rules.url("/robots.txt")]
    assert sent["outcome"].kind == "parsed"
    # The whole document, sitemaps included.
    assert sent["outcome"].document.sitemaps == ("/sitemap.xml",)
    assert sent["request"].url in (rules.url("/a"), rules.url("/b"))
    assert by_origin[failing.url("/robots.txt")]["outcome"].kind == "unreachable"


@coroutine_test
async def test_google_profile(server: Server) -> None:
    # Google's matcher does not decode %-escapes of the URL; RFC 9309 does.
    server.route("/robots.txt", "User-agent: *\nDisallow: /a\n")
    url = server.url("/%61")
    assert (await crawl([url])).spider.crawled == []
    crawler = await crawl([url], {"ROBOTS_PROFILE": "google"})
    assert crawler.spider.crawled == [url]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ROBOTS_PROFILE": "strict"}, "ROBOTS_PROFILE"),
        ({"ROBOTS_CRAWL_DELAY_OVER_MAX": "wait"}, "ROBOTS_CRAWL_DELAY_OVER_MAX"),
        ({"ROBOTS_MAX_BYTES": 0}, "ROBOTS_MAX_BYTES"),
        ({"ROBOTS_MAX_REDIRECTS": -1}, "ROBOTS_MAX_REDIRECTS"),
        ({"ROBOTS_CACHE_LIFETIME": "a day"}, "ROBOTS_CACHE_LIFETIME"),
        # Numbers no store could write back: never a lifetime.
        ({"ROBOTS_CACHE_LIFETIME": "inf"}, "ROBOTS_CACHE_LIFETIME"),
        ({"ROBOTS_UNREACHABLE_GRACE": float("nan")}, "ROBOTS_UNREACHABLE_GRACE"),
        ({"ROBOTS_UNREACHABLE_LIFETIME": "1e300"}, "ROBOTS_UNREACHABLE_LIFETIME"),
        ({"ROBOTS_CRAWL_DELAY_MAX": "-inf"}, "ROBOTS_CRAWL_DELAY_MAX"),
        ({"ROBOTS_CONTENT_SIGNALS": "ai-train"}, "ROBOTS_CONTENT_SIGNALS"),
        ({"ROBOTS_STORE": "nowhere.Store"}, "ROBOTS_STORE"),
        ({"ROBOTS_STORE": "tests.test_middleware_decisions.NotAStore"}, "ROBOTS_STORE"),
    ],
)
def test_bad_settings_are_a_clear_error(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _middleware(settings)


class NotAStore:
    pass


def test_disabled() -> None:
    with pytest.raises(NotConfigured, match="ROBOTS_ENABLED"):
        _middleware({"ROBOTS_ENABLED": False})


@coroutine_test
async def test_disabled_crawl_fetches_no_robots_txt(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    crawler = await crawl([server.url("/page")], {"ROBOTS_ENABLED": False})
    assert crawler.spider.crawled == [server.url("/page")]
    assert [hit.path for hit in server.hits] == ["/page"]
    assert middleware(crawler) is None


def test_robots_disallowed_pickles() -> None:
    import pickle

    from scrapy.exceptions import IgnoreRequest

    from scrapy_rfc9309.match import Decision

    exc = RobotsDisallowed(
        Decision(False, "unreachable", None),
        "http://a/robots.txt",
        "unreachable",
        "unreachable, HTTP 503",
    )
    again = pickle.loads(pickle.dumps(exc))
    assert isinstance(again, IgnoreRequest)
    assert (again.decision, again.origin, again.cause, again.why) == (
        exc.decision,
        exc.origin,
        exc.cause,
        "unreachable, HTTP 503",
    )


@pytest.mark.parametrize(
    ("robots", "settings", "cause", "why"),
    [
        (
            "User-agent: *\nDisallow: /p\n",
            {},
            "rule",
            "line 2: Disallow: /p",
        ),
        (
            "User-agent: *\nContent-Signal: search=no, ai-train=no\n",
            {"ROBOTS_CONTENT_SIGNALS": {"search": True, "ai-train": True}},
            "content_signal",
            "Content-Signal search=no, Content-Signal ai-train=no",
        ),
        (
            "User-agent: *\nCrawl-delay: 5\n",
            {"ROBOTS_CRAWL_DELAY_MAX": 1, "ROBOTS_CRAWL_DELAY_OVER_MAX": "skip"},
            "crawl_delay",
            "Crawl-delay 5 over ROBOTS_CRAWL_DELAY_MAX 1",
        ),
    ],
)
@coroutine_test
async def test_the_refusal_carries_what_the_log_line_says(
    server: Server,
    caplog: pytest.LogCaptureFixture,
    robots: str,
    settings: dict[str, object],
    cause: str,
    why: str,
) -> None:
    server.route("/robots.txt", robots)
    with caplog.at_level("DEBUG", logger="scrapy_rfc9309.middleware"):
        crawler = await crawl([server.url("/page")], settings)
    dropped = crawler.spider.dropped[server.url("/page")]
    assert (dropped.cause, dropped.why) == (cause, why)
    # Built once: the log line gives the same words.
    assert f"({server.url('/robots.txt')} {why})" in caplog.text


#: Invalid UTF-8 (docs/reliability.md): each octet stands for itself.
UNDECODABLE = b"User-agent: *\nDisallow: /\xe9t\xe9\nContent-Usage: /u\xe9 train-ai=n\n"


@coroutine_test
async def test_a_refusal_quoting_undecodable_octets_reaches_a_utf8_log_file(
    server: Server, tmp_path: Path
) -> None:
    server.route("/robots.txt", UNDECODABLE)
    with utf8_log_file(tmp_path / "log.txt", "scrapy_rfc9309.middleware"):
        crawler = await crawl(
            [server.url("/%E9t%E9"), server.url("/u%E9")],
            {"ROBOTS_PURPOSES": "train-ai", "ROBOTS_TDMREP": "off"},
        )
    # Each octet as the escape a URL matches it with.
    whys = {
        server.url("/%E9t%E9"): "line 2: Disallow: /%E9t%E9",
        server.url("/u%E9"): "Content-Usage refuses train-ai"
        " (line 3: Content-Usage: /u%E9 train-ai=n)",
    }
    assert {url: e.why for url, e in crawler.spider.dropped.items()} == whys
    logged = (tmp_path / "log.txt").read_text(encoding="utf-8")
    robots = server.url("/robots.txt")
    for url, why in whys.items():
        assert f"Forbidden by robots.txt: <GET {url}> ({robots} {why})" in logged


@coroutine_test
async def test_outcome_for() -> None:
    mw = _middleware()
    stored = unavailable(now=time.time(), lifetimes=Lifetimes(), http_status=404)
    mw.memory.store("https://example.com/robots.txt", stored)
    assert await mw.outcome_for("https://EXAMPLE.com:443/a?b") == stored
    assert await mw.outcome_for("ftp://example.com/file") is None


@coroutine_test
async def test_outcome_for_fetches_once(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /x\n")

    class Asking(RecordingSpider):
        async def start(self) -> Any:
            mw = self.crawler.get_downloader_middleware(RobotsMiddleware)
            self.outcomes = [await mw.outcome_for(url) for url in self.urls]
            for url in self.urls:
                yield Request(url, callback=self.parse, errback=self.failed)

    crawler = await crawl([server.url("/a"), server.url("/x")], spidercls=Asking)
    assert [o.kind for o in crawler.spider.outcomes] == ["parsed", "parsed"]
    assert server.count("/robots.txt") == 1
    assert crawler.spider.crawled == [server.url("/a")]
