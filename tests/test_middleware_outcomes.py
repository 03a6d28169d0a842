"""Every row of the outcome table, in real crawls against real servers."""

from __future__ import annotations

import gzip
import logging
import socket
import struct
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest
from scrapy import Request

from scrapy_rfc9309._compat import spider_argument
from tests.support.crawl_helpers import (
    CannotResolveHostError,
    RecordingSpider,
    crawl,
    stats,
)
from tests.support.server import Server, truncated
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
IGNORE_ROBOTS = "tests.support.crawl_helpers.IgnoreRobots"
DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


def _paths(server: Server) -> list[str]:
    return [hit.path for hit in server.hits]


@coroutine_test
async def test_2xx_parsed(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    crawler = await crawl([server.url("/public"), server.url("/private/1")])
    assert crawler.spider.crawled == [server.url("/public")]
    dropped = crawler.spider.dropped[server.url("/private/1")]
    assert dropped.cause == "rule"
    assert dropped.origin == server.url("/robots.txt")
    assert dropped.decision.rule is not None
    assert dropped.decision.rule.line == 2
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/forbidden": 1,
        "robots/forbidden/rule": 1,
    }


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
@coroutine_test
async def test_4xx_unavailable_whatever_the_body_says(
    server: Server, status: int
) -> None:
    # Scrapy's built-in parses this body and blocks everything.
    server.route("/robots.txt", DISALLOW_ALL, status=status)
    crawler = await crawl([server.url("/a"), server.url("/b")])
    assert sorted(crawler.spider.crawled) == [server.url("/a"), server.url("/b")]
    assert stats(crawler) == {"robots/fetch_count": 1, "robots/outcome/unavailable": 1}


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 501, 505, 520])
@coroutine_test
async def test_429_and_5xx_unreachable_whatever_the_body_says(
    server: Server, status: int
) -> None:
    # Scrapy's built-in parses this (empty) body and allows everything.
    server.route("/robots.txt", "User-agent: *\nAllow: /\n", status=status)
    crawler = await crawl([server.url("/a"), server.url("/b")])
    assert crawler.spider.crawled == []
    assert {d.cause for d in crawler.spider.dropped.values()} == {"unreachable"}
    assert _paths(server) == ["/robots.txt"]
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/unreachable": 1,
        "robots/forbidden": 2,
        "robots/forbidden/unreachable": 2,
    }


@coroutine_test
async def test_connection_refused_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port now.
    crawler = await crawl([f"http://127.0.0.1:{port}/page"])
    assert list(crawler.spider.dropped) == [f"http://127.0.0.1:{port}/page"]
    assert (
        crawler.spider.dropped[f"http://127.0.0.1:{port}/page"].cause == "unreachable"
    )
    assert stats(crawler)["robots/outcome/unreachable"] == 1


@spider_argument
class FailDNS:
    """Fails the resolution of hosts ending in ``.unresolvable``, as Scrapy's
    resolver does (the tests touch no real DNS)."""

    def process_request(self, request: Request) -> None:
        if request.url.split("/")[2].endswith(".unresolvable"):
            raise CannotResolveHostError("DNS lookup failed: no such host")


@coroutine_test
async def test_dns_failure_unreachable() -> None:
    crawler = await crawl(
        ["http://nowhere.unresolvable/page"],
        {"DOWNLOADER_MIDDLEWARES": {f"{__name__}.FailDNS": 950}},
    )
    assert crawler.spider.dropped["http://nowhere.unresolvable/page"].cause == (
        "unreachable"
    )
    assert stats(crawler)["robots/outcome/unreachable"] == 1


@coroutine_test
async def test_timeout_unreachable(server: Server) -> None:
    server.route("/robots.txt", "", delay=3)
    crawler = await crawl([server.url("/page")], {"DOWNLOAD_TIMEOUT": 0.5})
    assert crawler.spider.dropped[server.url("/page")].cause == "unreachable"
    assert _paths(server) == ["/robots.txt"]


def _reset(handler: BaseHTTPRequestHandler) -> None:
    # SO_LINGER 0: closing sends a TCP RST instead of a FIN.
    handler.connection.setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
    )
    handler.connection.close()
    handler.close_connection = True


_truncated = truncated(b"User-agent: *\nAllow: /\n")


@pytest.mark.parametrize(
    ("handler", "settings"),
    [
        (_reset, {}),
        (_truncated, {}),
        (_truncated, {"DOWNLOAD_FAIL_ON_DATALOSS": False}),
    ],
    ids=["reset", "truncated", "truncated-no-fail"],
)
@coroutine_test
async def test_broken_transfers_unreachable(
    server: Server, handler: Any, settings: dict[str, Any]
) -> None:
    server.route("/robots.txt", handler=handler)
    crawler = await crawl([server.url("/page")], settings)
    assert crawler.spider.dropped[server.url("/page")].cause == "unreachable"
    # aiohttp (reactor-less mode) tries a reset connection once more itself.
    assert set(_paths(server)) == {"/robots.txt"}


@coroutine_test
async def test_tls_failure_unreachable(server: Server) -> None:
    # The server speaks plain HTTP: the TLS handshake fails.
    url = f"https://{server.host}:{server.port}/page"
    crawler = await crawl([url])
    assert crawler.spider.dropped[url].cause == "unreachable"
    assert stats(crawler)["robots/outcome/unreachable"] == 1


@coroutine_test
async def test_robots_request_refused_by_another_middleware_allows(
    server: Server,
) -> None:
    server.route("/robots.txt", DISALLOW_ALL)
    crawler = await crawl(
        [server.url("/page")],
        {"DOWNLOADER_MIDDLEWARES": {IGNORE_ROBOTS: 10}},
    )
    # As Scrapy: the crawl's own components said no, the site said nothing.
    assert crawler.spider.crawled == [server.url("/page")]
    assert _paths(server) == ["/page"]
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/refused": 1,
        "robots/outcome/unavailable": 1,
    }


@coroutine_test
async def test_robots_request_refused_disallows_when_set(server: Server) -> None:
    crawler = await crawl(
        [server.url("/page")],
        {
            "DOWNLOADER_MIDDLEWARES": {IGNORE_ROBOTS: 10},
            "ROBOTS_REFUSED": "disallow",
        },
    )
    dropped = crawler.spider.dropped[server.url("/page")]
    assert dropped.cause == "unreachable"
    assert server.hits == []
    assert stats(crawler)["robots/refused"] == 1


@coroutine_test
async def test_retries_apply_to_robots_txt(server: Server) -> None:
    answers = iter([503, 200])

    def flaky(handler: BaseHTTPRequestHandler) -> None:
        status = next(answers)
        body = b"User-agent: *\nDisallow: /private\n"
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server.route("/robots.txt", handler=flaky)
    crawler = await crawl(
        [server.url("/private"), server.url("/public")],
        {"RETRY_ENABLED": True, "RETRY_TIMES": 1, "CONCURRENT_REQUESTS": 1},
    )
    assert _paths(server).count("/robots.txt") == 2
    assert crawler.spider.crawled == [server.url("/public")]
    assert crawler.spider.dropped[server.url("/private")].cause == "rule"
    assert stats(crawler)["robots/fetch_count"] == 1
    assert stats(crawler)["robots/outcome/parsed"] == 1


class Greedy(RecordingSpider):
    handle_httpstatus_all = True
    handle_httpstatus_list: ClassVar[list[int]] = [301, 302, 404, 503]


@coroutine_test
async def test_handle_httpstatus_all_changes_nothing(make_server: MakeServer) -> None:
    missing, failing, moved, target = (make_server() for _ in range(4))
    missing.route("/robots.txt", DISALLOW_ALL, status=404)
    failing.route("/robots.txt", "", status=503)
    moved.route(
        "/robots.txt", status=301, headers={"Location": target.url("/robots.txt")}
    )
    target.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    urls = [
        missing.url("/a"),
        failing.url("/a"),
        moved.url("/a"),
        moved.url("/private"),
    ]
    crawler = await crawl(urls, spidercls=Greedy)
    assert sorted(crawler.spider.crawled) == sorted(
        [missing.url("/a"), moved.url("/a")]
    )
    assert crawler.spider.dropped[failing.url("/a")].cause == "unreachable"
    assert crawler.spider.dropped[moved.url("/private")].cause == "rule"


@pytest.mark.parametrize(
    ("status", "level"),
    [(503, logging.WARNING), (429, logging.WARNING), (404, logging.INFO)],
)
@coroutine_test
async def test_outcomes_other_than_parsed_logged_once(
    server: Server, caplog: pytest.LogCaptureFixture, status: int, level: int
) -> None:
    server.route("/robots.txt", "", status=status)
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawl([server.url("/a"), server.url("/b")])
    logged = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name.startswith("scrapy_rfc9309")
        and server.url("/robots.txt") in r.getMessage()
    ]
    # One line for the origin, not one per request; an unreachable origin
    # (nothing crawled) is a WARNING, seen under LOG_LEVEL = "WARNING".
    assert len(logged) == 1, logged
    assert logged[0][0] == level
    assert f"HTTP {status}" in logged[0][1]


@coroutine_test
async def test_dropped_requests_logged_at_debug_with_line_and_rule(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    server.route("/robots.txt", "User-agent: *\n# comment\nDisallow: /private\n")
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309.middleware"):
        await crawl([server.url("/private/x")])
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(
        server.url("/robots.txt") in m
        and "line 3" in m
        and "Disallow: /private" in m
        and server.url("/private/x") in m
        for m in debug
    ), debug


@coroutine_test
async def test_gzip_encoded_robots_txt(server: Server) -> None:
    body = gzip.compress(b"User-agent: *\nDisallow: /private\n")
    server.route("/robots.txt", body, headers={"Content-Encoding": "gzip"})
    crawler = await crawl([server.url("/private"), server.url("/public")])
    assert crawler.spider.crawled == [server.url("/public")]
    assert crawler.spider.dropped[server.url("/private")].cause == "rule"


@coroutine_test
async def test_gzip_without_http_compression_middleware(server: Server) -> None:
    body = gzip.compress(b"User-agent: *\nDisallow: /private\n")
    server.route("/robots.txt", body, headers={"Content-Encoding": "gzip"})
    crawler = await crawl(
        [server.url("/private"), server.url("/public")],
        {"COMPRESSION_ENABLED": False},
    )
    assert crawler.spider.crawled == [server.url("/public")]
