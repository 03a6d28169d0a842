"""Where Scrapy's built-in RobotsTxtMiddleware and RobotsMiddleware differ,
and where they agree on purpose (what RFC 9309 leaves open).

Each test runs the same crawl twice, once with the built-in
(``ROBOTSTXT_OBEY = True``, no add-on) and once with the add-on, and asserts
what each does.  The built-in's side documents Scrapy 2.19 as it is: if
Scrapy fixes one of these, its assertion fails and the README's comparison
table needs the same update.  The tests at the end go through Scrapy's own
tests of its middleware, behaviour by behaviour, with the project's own code.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scrapy import Request

from tests.support.crawl_helpers import (
    ROBOTS_PARSED,
    TIMER_GRANULARITY,
    Burst,
    Departures,
    RecordingSpider,
    crawl,
)
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
BUILTIN = {"ADDONS": {}, "ROBOTSTXT_OBEY": True}


async def _both(
    urls: list[str], settings: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[list[str], list[str]]:
    """The URLs crawled with the built-in, and with RobotsMiddleware."""
    settings = settings or {}
    builtin = await crawl(urls, {**settings, **BUILTIN}, **kwargs)
    ours = await crawl(urls, settings, **kwargs)
    return sorted(builtin.spider.crawled), sorted(ours.spider.crawled)


@coroutine_test
async def test_5xx(server: Server) -> None:
    server.route("/robots.txt", "<html>Internal error</html>", status=500)
    builtin, ours = await _both([server.url("/page")])
    assert builtin == [server.url("/page")]  # the error page parsed: allow all
    assert ours == []  # unreachable: disallow all


@coroutine_test
async def test_429(server: Server) -> None:
    server.route("/robots.txt", "slow down", status=429)
    builtin, ours = await _both([server.url("/page")])
    assert builtin == [server.url("/page")]
    assert ours == []


@coroutine_test
async def test_network_error(server: Server) -> None:
    server.route("/robots.txt", "", delay=3)
    builtin, ours = await _both([server.url("/page")], {"DOWNLOAD_TIMEOUT": 1})
    # The page itself is served at once; only robots.txt stalls.
    assert builtin == [server.url("/page")]
    assert ours == []


@coroutine_test
async def test_4xx_body(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n", status=404)
    builtin, ours = await _both([server.url("/page")])
    assert builtin == []  # the 404 body parsed as rules
    assert ours == [server.url("/page")]  # unavailable: allow all


@coroutine_test
async def test_concurrent_waiters(make_server: MakeServer) -> None:
    rules = b"User-agent: *\nDisallow: /private\n"
    page_reached = threading.Event()

    def page(handler: BaseHTTPRequestHandler) -> None:
        page_reached.set()
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def robots(handler: BaseHTTPRequestHandler) -> None:
        # Pending until a page got past the built-in while it waited (at
        # most 30 s), not for a fixed time that a loaded machine may let
        # the other requests miss.
        page_reached.wait(30)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(rules)))
        handler.end_headers()
        handler.wfile.write(rules)

    settings = {"CONCURRENT_REQUESTS": 100, "CONCURRENT_REQUESTS_PER_DOMAIN": 100}
    server = make_server(default=Route(handler=page))
    server.routes["/robots.txt"] = Route(handler=robots)
    urls = [server.url(f"/private/{i}") for i in range(50)]
    builtin = await crawl(urls, {**settings, **BUILTIN}, spidercls=Burst)
    # Only the first waiter gets the parser; the others pass unchecked.
    assert len(builtin.spider.crawled) > 0

    server = make_server()
    server.route("/robots.txt", rules, delay=0.5)
    urls = [server.url(f"/private/{i}") for i in range(50)]
    ours = await crawl(urls, settings, spidercls=Burst)
    # Every waiter gets a decision, however late it came.
    assert ours.spider.crawled == []
    assert len(ours.spider.dropped) == 50


@coroutine_test
async def test_crawl_delay(server: Server, departures: Departures) -> None:
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 0.3\n")
    urls = [server.url(f"/p{i}") for i in range(4)]
    settings = {"CONCURRENT_REQUESTS_PER_DOMAIN": 8}
    builtin = await crawl(urls, {**settings, **BUILTIN})
    # Crawl-delay ignored: the origin's slot keeps DOWNLOAD_DELAY (0), so
    # the pages go out together (read from the slot, not from a clock).
    assert builtin.engine.downloader.slots[server.host].delay == 0
    server.hits.clear()
    ours = await crawl(urls, settings)
    # The delay is held per origin, not by the slot (issue 23).
    assert ours.stats.get_value("robots/crawl_delay/origins") == 1
    # And robots.txt and the pages leave spaced by it (from below only, as
    # in test_crawl_delay.py).
    gaps = departures.gaps(ours, key=server.host)
    assert len(gaps) == 4
    assert min(gaps) >= 0.3 - TIMER_GRANULARITY, gaps


@coroutine_test
async def test_body_over_download_maxsize(server: Server) -> None:
    body = "User-agent: *\nDisallow: /early\n" + "# filler\n" * 70_000
    server.route("/robots.txt", body)
    builtin, ours = await _both([server.url("/early")], {"DOWNLOAD_MAXSIZE": 100_000})
    assert builtin == [server.url("/early")]  # download cancelled: allow all
    assert ours == []  # the first ROBOTS_MAX_BYTES parsed


@coroutine_test
async def test_redirect_outside_allowed_domains(make_server: MakeServer) -> None:
    first, second = make_server(), make_server()
    first.route("/robots.txt", status=301, headers={"Location": second.url("/r.txt")})
    second.route("/r.txt", "User-agent: *\nDisallow: /\n")
    builtin, ours = await _both([first.url("/page")], allowed_domains=[first.host])
    assert builtin == [first.url("/page")]  # the hop dropped as offsite: allow all
    assert ours == []  # the hop followed: its rules apply


class ThreeXXHandled(RecordingSpider):
    handle_httpstatus_list: ClassVar[list[int]] = [301]


@coroutine_test
async def test_handle_httpstatus_list_with_a_redirect(make_server: MakeServer) -> None:
    first, second = make_server(), make_server()
    first.route(
        "/robots.txt", "", status=301, headers={"Location": second.url("/r.txt")}
    )
    second.route("/r.txt", "User-agent: *\nDisallow: /\n")
    builtin, ours = await _both([first.url("/page")], spidercls=ThreeXXHandled)
    assert builtin == [first.url("/page")]  # the empty 301 body parsed
    assert ours == []


@coroutine_test
async def test_user_agent_matched_by_product_token(server: Server) -> None:
    server.route("/robots.txt", "User-agent: Googlebot\nDisallow: /\n")
    builtin, ours = await _both(
        [server.url("/page")],
        {"USER_AGENT": "TestBot/1.0 (compatible; like Googlebot)"},
    )
    # Protego finds "googlebot" anywhere in the User-Agent string.
    assert builtin == []
    # RFC 9309: the product token, "testbot", is what is matched.
    assert ours == [server.url("/page")]


@coroutine_test
async def test_robots_request_ignored(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    builtin, ours = await _both(
        [server.url("/page")],
        {"DOWNLOADER_MIDDLEWARES": {"tests.support.crawl_helpers.IgnoreRobots": 10}},
    )
    # Refused by the crawl's own components, not by the site: both allow.
    assert builtin == ours == [server.url("/page")]


# -- where they agree: what RFC 9309 leaves open, done as Scrapy does ------------
# (Scrapy 2.19's tests/test_downloadermiddleware_robotstxt.py, behaviour by
# behaviour, in real crawls.)


@pytest.mark.parametrize(
    "body", [b"GIF89a\xd3\x00\xfe\x00\xa2", b"", b"<html><body>Hi</body></html>"]
)
@coroutine_test
async def test_garbage_or_empty_body_allows_all(server: Server, body: bytes) -> None:
    server.route("/robots.txt", body)
    urls = [server.url("/"), server.url("/admin/main"), server.url("/static/")]
    builtin, ours = await _both(urls)
    assert builtin == ours == sorted(urls)


@coroutine_test
async def test_non_ascii_paths_escaped_or_not(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-Agent: *\nDisallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:\nDisallow: /static/\n",
    )
    urls = [
        server.url("/wiki/K%C3%A4ytt%C3%A4j%C3%A4:x"),
        server.url("/wiki/Käyttäjä:y"),
        server.url("/static/a"),
        server.url("/wiki/Main"),
    ]
    # One request at a time: the built-in lets through the requests that
    # wait for robots.txt beside the first (see test_concurrent_waiters).
    builtin, ours = await _both(urls, {"CONCURRENT_REQUESTS": 1})
    assert builtin == ours == [server.url("/wiki/Main")]


@coroutine_test
async def test_dont_obey_robotstxt_meta(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")

    class NotObeying(RecordingSpider):
        async def start(self) -> AsyncIterator[Any]:
            for url in self.urls:
                yield Request(
                    url,
                    callback=self.parse,
                    meta={"dont_obey_robotstxt": True},
                    dont_filter=True,
                )

    urls = [server.url("/admin/main"), server.url("/static/")]
    builtin, ours = await _both(urls, spidercls=NotObeying)
    assert builtin == ours == sorted(urls)
    # Neither asked for robots.txt: nothing needed it.
    assert server.count("/robots.txt") == 0


@coroutine_test
async def test_urls_without_robots_txt(server: Server, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html></html>")
    urls = ["data:text/plain,Hello", page.as_uri()]
    builtin, ours = await _both(urls)
    assert builtin == ours == sorted(urls)


@coroutine_test
async def test_robotstxt_user_agent_wins_over_user_agent(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-agent: examplebot\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n",
    )
    urls = [server.url("/page"), server.url("/private/x")]
    builtin, ours = await _both(
        urls,
        {"ROBOTSTXT_USER_AGENT": "Examplebot", "USER_AGENT": "Mozilla/5.0 (X11)"},
    )
    assert builtin == ours == [server.url("/page")]


@coroutine_test
async def test_one_fetch_and_one_robots_parsed_for_concurrent_requests(
    server: Server,
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /admin\n", delay=0.3)
    # Allowed URLs only: the built-in lets disallowed waiters through.
    urls = [server.url(f"/allowed{i}") for i in range(4)]
    counts = []
    for settings in (BUILTIN, {}):
        seen: list[Request] = []

        class Listening(RecordingSpider):
            seen_here = seen

            @classmethod
            def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
                spider = super().from_crawler(crawler, *args, **kwargs)
                if ROBOTS_PARSED is not None:
                    crawler.signals.connect(
                        lambda robotparser, request: cls.seen_here.append(request),
                        signal=ROBOTS_PARSED,
                        weak=False,
                    )
                return spider

        before = server.count("/robots.txt")
        crawler = await crawl(urls, settings, Listening)
        assert sorted(crawler.spider.crawled) == urls
        if ROBOTS_PARSED is not None:
            (asked,) = seen
            assert asked.url in urls
        counts.append(server.count("/robots.txt") - before)
    assert counts == [1, 1]


@coroutine_test
async def test_request_user_agent_header_does_not_choose_the_group(
    server: Server,
) -> None:
    server.route("/robots.txt", "User-agent: examplebot\nDisallow: /\n")

    class WithHeader(RecordingSpider):
        async def start(self) -> AsyncIterator[Any]:
            for url in self.urls:
                yield Request(
                    url,
                    callback=self.parse,
                    headers={"User-Agent": "ExampleBot/2.0"},
                    dont_filter=True,
                )

    builtin, ours = await _both([server.url("/page")], spidercls=WithHeader)
    # Scrapy matches the request's own User-Agent header when
    # ROBOTSTXT_USER_AGENT is not set; here the crawl's agent (USER_AGENT,
    # "TestBot") is matched, whatever one request sends.
    assert builtin == []
    assert ours == [server.url("/page")]
