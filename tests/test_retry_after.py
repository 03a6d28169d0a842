"""Retry-After on 429 and 503 pauses the origin (issue 23 item 2), in one
process, measured at the server: no request reaches the origin before the
time the answer gave, counted from when the server sent it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_rfc9309._retryafter import http_date
from scrapy_rfc9309.fetch import _stored_at as stored_at
from scrapy_rfc9309.politeness import Politeness, retry_after
from tests.support.crawl_helpers import (
    Departures,
    RecordingSpider,
    crawl,
    make_crawler,
    stats,
)
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test

TOLERANCE = 0.02
NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (b"2", 2.0),
        (" 120 ", 120.0),
        (format_datetime(datetime.fromtimestamp(NOW + 30, timezone.utc), True), 30.0),
        (format_datetime(datetime.fromtimestamp(NOW - 30, timezone.utc), True), 0.0),
        ("-1", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        ("\u0662", None),  # a digit, but not an ASCII one
    ],
)
def test_retry_after_values(value: bytes | str, seconds: float | None) -> None:
    assert retry_after(value, now=NOW) == seconds


#: One moment, 30 s after NOW, in every way an HTTP-date may say it: an
#: HTTP-date is GMT (RFC 9110 5.6.7; asctime says no zone), and so is
#: "-0000" (RFC 5322 3.3) and a zone name unknown (RFC 5322 4.3).
_LATER = datetime.fromtimestamp(NOW + 30, timezone.utc)
SAME_MOMENT = [
    _LATER.strftime("%a, %d %b %Y %H:%M:%S GMT"),
    _LATER.strftime("%a, %d %b %Y %H:%M:%S -0000"),
    _LATER.strftime("%a, %d %b %Y %H:%M:%S +0000"),
    _LATER.strftime("%A, %d-%b-%y %H:%M:%S GMT"),
    _LATER.strftime("%a %b %d %H:%M:%S %Y"),
    _LATER.strftime("%a, %d %b %Y %H:%M:%S XYZ"),
    (_LATER + timedelta(hours=2)).strftime("%a, %d %b %Y %H:%M:%S +0200"),
]


@pytest.mark.parametrize("value", SAME_MOMENT)
def test_every_form_of_an_http_date_is_the_same_moment(value: str) -> None:
    assert http_date(value) == http_date(value.encode()) == NOW + 30
    assert retry_after(value, now=NOW) == 30.0


@pytest.mark.parametrize("value", SAME_MOMENT)
def test_a_cached_answer_is_dated_as_retry_after_reads_its_date(value: str) -> None:
    # The HTTP cache's age of a robots.txt, from its Date header (Scrapy
    # before 2.19 gives no cache_timestamp), reads dates as Retry-After does.
    response = Response(
        "http://a.test/robots.txt",
        headers={"Date": value},
        request=Request("http://a.test/robots.txt"),
    )
    assert stored_at(response) == NOW + 30


class FollowUps(RecordingSpider):
    """Starts with ``/busy`` (429 once) and ``/slow``, whose answer comes
    while ``/busy``'s pause runs and brings three more pages."""

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, callback=self.parse_start, dont_filter=True)

    def parse_start(self, response: Response) -> Iterator[Request]:
        self.parse(response)
        if response.url.endswith("/slow"):
            for i in range(3):
                yield Request(response.urljoin(f"/more{i}"), callback=self.parse)


def _busy_once(server: Server, value: str, status: int = 429) -> None:
    answered = []

    def busy(handler: BaseHTTPRequestHandler) -> None:
        first = not answered
        answered.append(True)
        handler.send_response(status if first else 200)
        if first:
            handler.send_header("Retry-After", value)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    server.routes["/busy"] = Route(handler=busy)
    server.route("/slow", "<html></html>", delay=0.3)


def _after_the_answer(server: Server) -> list[float]:
    """How long after the first /busy each later request arrived."""
    hits = sorted(server.hits, key=lambda hit: hit.time)
    first = next(hit.time for hit in hits if hit.path == "/busy")
    return [
        hit.time - first
        for hit in hits
        if hit.time > first and hit.path not in ("/slow", "/robots.txt")
    ]


RETRY = {"RETRY_ENABLED": True, "RETRY_TIMES": 2, "CONCURRENT_REQUESTS": 16}


@pytest.mark.parametrize("status", [429, 503])
@coroutine_test
async def test_retry_after_pauses_the_origin(server: Server, status: int) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    _busy_once(server, "1", status)
    crawler = await crawl(
        [server.url("/busy"), server.url("/slow")], RETRY, spidercls=FollowUps
    )
    assert len(crawler.spider.crawled) == 5  # type: ignore[union-attr]
    after = _after_the_answer(server)
    # The retry of /busy and the three pages /slow brought, all after the
    # pause (before: three of them within it).
    assert len(after) == 4, after
    assert min(after) >= 1 - TOLERANCE, after
    counted = stats(crawler, "robots/retry_after/")
    assert counted == {
        "robots/retry_after/paused": 1,
        "robots/retry_after/max_seconds": 1.0,
    }


@coroutine_test
async def test_retry_after_over_the_maximum_is_capped(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    _busy_once(server, "3600")
    with caplog.at_level("INFO"):
        crawler = await crawl(
            [server.url("/busy"), server.url("/slow")],
            {**RETRY, "ROBOTS_RETRY_AFTER_MAX": 1},
            spidercls=FollowUps,
        )
    assert len(crawler.spider.crawled) == 5  # type: ignore[union-attr]
    assert min(_after_the_answer(server)) >= 1 - TOLERANCE
    counted = stats(crawler, "robots/retry_after/")
    assert counted["robots/retry_after/capped"] == 1
    logged = [r.getMessage() for r in caplog.records if "Retry-After" in r.getMessage()]
    assert len(logged) == 1
    assert "for 1 s (ROBOTS_RETRY_AFTER_MAX)" in logged[0]
    # The page that answered, not the origin's robots.txt.
    assert logged[0].startswith(f"{server.url('/busy')} answered 429")
    assert f"its origin ({server.url('/robots.txt')})" in logged[0]


@coroutine_test
async def test_retry_after_off(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    _busy_once(server, "3600")
    crawler = await crawl(
        [server.url("/busy"), server.url("/slow")],
        {**RETRY, "ROBOTS_RETRY_AFTER": False},
        spidercls=FollowUps,
    )
    # An hour's pause would have outlasted the test.
    assert len(crawler.spider.crawled) == 5  # type: ignore[union-attr]
    assert stats(crawler, "robots/retry_after/") == {}


@coroutine_test
async def test_an_invalid_retry_after_is_counted_and_ignored(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    _busy_once(server, "tomorrow")
    crawler = await crawl(
        [server.url("/busy"), server.url("/slow")], RETRY, spidercls=FollowUps
    )
    assert len(crawler.spider.crawled) == 5  # type: ignore[union-attr]
    assert stats(crawler, "robots/retry_after/") == {"robots/retry_after/invalid": 1}


@coroutine_test
async def test_retry_after_on_robots_txt_pauses_the_origin_too(server: Server) -> None:
    # robots.txt answers 429 with Retry-After: 1 once, then its rules: the
    # site asked this crawler to wait, so robots.txt's retry (Scrapy's
    # RetryMiddleware, which side requests pass through as well) and the
    # pages wait too.
    answered = []

    def robots(handler: BaseHTTPRequestHandler) -> None:
        first = not answered
        answered.append(True)
        body = b"" if first else b"User-agent: *\nDisallow: /private\n"
        handler.send_response(429 if first else 200)
        if first:
            handler.send_header("Retry-After", "1")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server.routes["/robots.txt"] = Route(handler=robots)
    server.route("/page", "<html></html>")
    crawler = await crawl([server.url("/page"), server.url("/private")], RETRY)
    assert crawler.spider.crawled == [server.url("/page")]  # type: ignore[union-attr]
    hits = sorted(server.hits, key=lambda hit: hit.time)
    assert [hit.path for hit in hits] == ["/robots.txt", "/robots.txt", "/page"]
    assert hits[1].time - hits[0].time >= 1 - TOLERANCE
    assert stats(crawler, "robots/retry_after/") == {
        "robots/retry_after/paused": 1,
        "robots/retry_after/max_seconds": 1.0,
    }
    assert stats(crawler, "robots/fetch")["robots/fetch_count"] == 1


@coroutine_test
async def test_the_log_line_escapes_the_header(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Retry-After date followed by terminal escape sequences still
    parses; the INFO line shows the header escaped, as written, and no
    control character reaches the log."""
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_rfc9309.Addon": 100}})
    crawler.spider = Spider("x")
    politeness = Politeness(crawler)
    header = b"Fri, 31 Dec 2100 23:59:59 GMT \x1b]0;pwned\x07 \x1b[2J"
    request = Request("http://a.example/page")
    answer = Response(
        request.url, status=429, headers={"Retry-After": header}, request=request
    )
    with caplog.at_level("INFO"):
        await politeness.pause(answer, request)
    logged = [r.getMessage() for r in caplog.records if "Retry-After" in r.getMessage()]
    assert len(logged) == 1
    assert "\x1b" not in logged[0]
    assert "\x07" not in logged[0]
    assert r"'Fri, 31 Dec 2100 23:59:59 GMT \x1b]0;pwned\x07 \x1b[2J'" in logged[0]


@coroutine_test
async def test_a_pause_made_longer_while_a_request_waits_holds_it() -> None:
    """A request waiting for the end of a pause leaves at the end of the
    longer pause an answer (of this worker, or of the fleet) gave meanwhile,
    not at the end of the first one."""
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_rfc9309.Addon": 100}})
    crawler.spider = Spider("x")
    crawler.engine = SimpleNamespace(running=True, _slot=None)  # type: ignore[assignment]
    politeness = Politeness(crawler)
    request = Request("http://a.example/page")
    origin = "http://a.example/robots.txt"  # origins are named so
    politeness.carried(request, (origin, time.time() + 0.2))
    waiting = asyncio.ensure_future(politeness.unpaused(origin))
    await asyncio.sleep(0)
    politeness.carried(request, (origin, time.time() + 0.6))
    assert not waiting.done()
    await waiting
    assert politeness.paused.get(origin, 0.0) <= time.monotonic()


def _slow_503(
    seconds: float, retry_after: str
) -> Callable[[BaseHTTPRequestHandler], None]:
    def handler(request: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)  # a slow site
        request.send_response(503)
        request.send_header("Retry-After", retry_after)
        request.send_header("Content-Length", "0")
        request.end_headers()

    return handler


@pytest.mark.parametrize(
    "settings",
    [
        # The slot takes one request at a time: /b waits for a place.
        {"CONCURRENT_REQUESTS_PER_DOMAIN": 1},
        # The slot's own delay is longer than the Crawl-delay: /b waits for it.
        {"DOWNLOAD_DELAY": 1.0},
    ],
)
@coroutine_test
async def test_a_pause_coming_while_a_request_waits_for_its_slot_holds_it(
    server: Server, departures: Departures, settings: dict[str, Any]
) -> None:
    # /b has its Crawl-delay turn, then waits for its slot; meanwhile /a's
    # 503 pauses the origin. /b left as soon as the slot let it, during the
    # pause.
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 0.2\n")
    server.routes["/a"] = Route(handler=_slow_503(0.5, "2"))
    crawler = make_crawler(
        {**settings, "HTTPERROR_ALLOW_ALL": True, "RETRY_ENABLED": False}
    )
    answered: list[float] = []

    def received(response: Response, request: Request) -> None:
        if response.url.endswith("/a"):
            answered.append(time.monotonic())

    crawler.signals.connect(received, signal=signals.response_received)
    await crawler.crawl_async(urls=[server.url("/a"), server.url("/b")])
    assert sorted(crawler.spider.crawled) == [server.url("/a"), server.url("/b")]  # type: ignore[union-attr]
    (slot,) = [
        s for s in departures.by_slot if s in crawler.engine.downloader.slots.values()
    ]
    left_b = departures.by_slot[slot][-1]
    # The pause began before the engine heard the answer.
    assert left_b - answered[0] >= 2 - TOLERANCE


@pytest.mark.parametrize("value", ["0", "Sun, 06 Nov 1994 08:49:37 GMT"])
@coroutine_test
async def test_a_retry_after_of_no_time_is_no_pause(
    server: Server, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    server.route("/busy", "", status=503, headers={"Retry-After": value})
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl([server.url("/busy")], {"RETRY_ENABLED": False})
    assert stats(crawler, "robots/retry_after/") == {}
    assert [r for r in caplog.records if "Retry-After" in r.getMessage()] == []
