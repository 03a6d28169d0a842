"""Where Scrapy's built-in RobotsTxtMiddleware and RobotsMiddleware differ.

Each test runs the same crawl twice, once with the built-in
(``ROBOTSTXT_OBEY = True``, no add-on) and once with the add-on, and asserts
what each does.  The built-in's side documents Scrapy 2.19 as it is: if
Scrapy fixes one of these, its assertion fails and the README's comparison
table needs the same update.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

from scrapy import Request

from tests.crawl_helpers import TIMER_GRANULARITY, Departures, RecordingSpider, crawl
from tests.server import Route, Server
from tests.utils import coroutine_test

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


class Burst(RecordingSpider):
    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, callback=self.parse, errback=self.failed)


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
    assert ours.engine.downloader.slots[server.host].delay == 0.3
    # And robots.txt and the pages leave spaced by it (from below only, as
    # in test_crawl_delay.py).
    gaps = departures.gaps(ours, server.host)
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


class IgnoreRobots:
    def process_request(self, request: Request) -> None:
        if request.url.endswith("/robots.txt"):
            from scrapy.exceptions import IgnoreRequest

            raise IgnoreRequest("no robots.txt for you")


@coroutine_test
async def test_robots_request_ignored(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    builtin, ours = await _both(
        [server.url("/page")],
        {"DOWNLOADER_MIDDLEWARES": {f"{__name__}.IgnoreRobots": 10}},
    )
    assert builtin == [server.url("/page")]  # silently allow all
    assert ours == []  # unreachable
