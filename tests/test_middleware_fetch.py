"""Fetching robots.txt: size limit, compression, single flight, lifetimes."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace
from typing import Any

import brotli
import pytest
from scrapy import Request
from scrapy.extensions.httpcache import FilesystemCacheStorage
from scrapy.http import Headers

from scrapy_rfc9309 import fetch
from scrapy_rfc9309._compat import DownloadTimeoutError
from scrapy_rfc9309.fetch import RobotsFetcher
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.outcome import Lifetimes
from scrapy_rfc9309.parse import Rule
from scrapy_rfc9309.signals import robots_outcome
from tests.support.crawl_helpers import (
    Burst,
    RecordingSpider,
    crawl,
    make_crawler,
    middleware,
    stats,
)
from tests.support.server import Route, Server, truncated
from tests.support.utils import FakeClock, coroutine_test

MakeServer = Callable[..., Server]
LIMIT = 512_000


def _big_robots(size: int) -> bytes:
    """A robots.txt of ``size`` bytes: /early disallowed at the top,
    /late disallowed at the very end, comments between."""
    head = b"User-agent: *\nDisallow: /early\n"
    tail = b"Disallow: /late\n"
    line = b"# " + b"x" * 77 + b"\n"
    filler = line * ((size - len(head) - len(tail)) // len(line) + 1)
    return head + filler[: size - len(head) - len(tail) - 1] + b"\n" + tail


def test_big_robots_shape() -> None:
    body = _big_robots(600 * 1024)
    assert len(body) == 600 * 1024
    assert body.index(b"/late") > LIMIT


@pytest.mark.parametrize("encoding", [None, "gzip", "deflate"])
@coroutine_test
async def test_600_kib_robots_txt_cut_at_the_limit(
    server: Server, encoding: str | None
) -> None:
    body = _big_robots(600 * 1024)
    headers = {}
    if encoding == "gzip":
        body, headers = gzip.compress(body), {"Content-Encoding": "gzip"}
    elif encoding == "deflate":
        body, headers = zlib.compress(body), {"Content-Encoding": "deflate"}
    server.route("/robots.txt", body, headers=headers)
    crawler = await crawl([server.url("/early"), server.url("/late")])
    # The rule past ROBOTS_MAX_BYTES is not read; the one before it is.
    assert crawler.spider.crawled == [server.url("/late")]
    assert crawler.spider.dropped[server.url("/early")].cause == "rule"
    assert stats(crawler)["robots/outcome/parsed"] == 1


@coroutine_test
async def test_large_plain_robots_txt_transfer_stops(server: Server) -> None:
    server.route("/robots.txt", _big_robots(8 * 1024 * 1024))
    crawler = await crawl([server.url("/early"), server.url("/late")])
    assert crawler.spider.crawled == [server.url("/late")]
    # Far less than 8 MiB was read.
    assert (
        stats(crawler, "downloader/response_bytes")["downloader/response_bytes"]
        < 2 * LIMIT
    )


@coroutine_test
async def test_gzip_bomb_is_decoded_only_up_to_the_limit(server: Server) -> None:
    # 64 MiB of comment lines, a few dozen KiB compressed.
    decoded = b"User-agent: *\nDisallow: /early\n" + b"#\n" * (32 * 1024 * 1024)
    server.route(
        "/robots.txt", gzip.compress(decoded), headers={"Content-Encoding": "gzip"}
    )
    crawler = await crawl([server.url("/early"), server.url("/other")])
    assert crawler.spider.crawled == [server.url("/other")]
    assert crawler.spider.dropped[server.url("/early")].cause == "rule"
    # HttpCompressionMiddleware never decoded the robots.txt: only the page.
    assert stats(crawler, "httpcompression/").get(
        "httpcompression/response_bytes", 0
    ) < (LIMIT)


@coroutine_test
async def test_download_maxsize_never_fails_robots_txt(server: Server) -> None:
    server.route("/robots.txt", _big_robots(600 * 1024))
    crawler = await crawl(
        [server.url("/early"), server.url("/late")], {"DOWNLOAD_MAXSIZE": 10_000}
    )
    assert crawler.spider.crawled == [server.url("/late")]


def _chunked(body: bytes) -> Route:
    """A route sending ``body`` chunked: no Content-Length to warn about
    before the bytes arrive."""

    def send(handler: BaseHTTPRequestHandler) -> None:
        handler.protocol_version = "HTTP/1.1"
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for start in range(0, len(body), 8192):
            part = body[start : start + 8192]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        handler.wfile.write(b"0\r\n\r\n")

    return Route(handler=send)


@coroutine_test
async def test_download_warnsize_never_warns_of_robots_txt(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # ROBOTS_MAX_BYTES bounds robots.txt: a DOWNLOAD_WARNSIZE under it warns
    # neither of the size announced (Content-Length) nor of the bytes
    # received (chunked); a page over it still warns.
    announced, chunked = make_server(), make_server()
    announced.route("/robots.txt", _big_robots(600 * 1024))
    chunked.routes["/robots.txt"] = _chunked(_big_robots(600 * 1024))
    announced.route("/big", b"<html>" + b"x" * 20_000 + b"</html>")
    urls = [announced.url("/late"), chunked.url("/late"), announced.url("/big")]
    crawler = await crawl(urls, {"DOWNLOAD_WARNSIZE": 10_000})
    assert sorted(crawler.spider.crawled) == sorted(urls)
    warned = [
        r.getMessage() for r in caplog.records if "download warn size" in r.getMessage()
    ]
    assert [message for message in warned if "robots.txt" in message] == []
    # The page's (twice on Scrapy 2.13: the size announced, then received).
    assert warned
    assert all(announced.url("/big") in message for message in warned)


@coroutine_test
async def test_max_bytes_setting(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /a\nDisallow: /b\n")
    crawler = await crawl(
        [server.url("/a"), server.url("/b")], {"ROBOTS_MAX_BYTES": 30}
    )
    assert crawler.spider.crawled == [server.url("/b")]


@coroutine_test
async def test_robots_txt_stalling_past_the_download_timeout(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nAllow: /\n", delay=2)
    crawler = await crawl(
        [server.url("/a"), server.url("/b")], {"DOWNLOAD_TIMEOUT": 0.3}
    )
    assert crawler.spider.crawled == []
    assert {d.cause for d in crawler.spider.dropped.values()} == {"unreachable"}
    assert stats(crawler)["robots/fetch_count"] == 1


@coroutine_test
async def test_fifty_waiters_each_get_their_own_decision(server: Server) -> None:
    # Scrapy's built-in middleware gives the parser to the first waiter only
    # and lets the others through unchecked (see
    # test_middleware_vs_builtin.py::test_concurrent_waiters).
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n", delay=0.5)
    urls = [server.url(f"/private/{i}") for i in range(50)]
    crawler = await crawl(
        [*urls, server.url("/public")],
        {"CONCURRENT_REQUESTS": 100, "CONCURRENT_REQUESTS_PER_DOMAIN": 100},
        spidercls=Burst,
    )
    assert [hit.path for hit in server.hits] == ["/robots.txt", "/public"]
    assert sorted(crawler.spider.dropped) == sorted(urls)
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/forbidden": 50,
        "robots/forbidden/rule": 50,
    }


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(RobotsMiddleware, "clock", fake)
    return fake


class Steps(RecordingSpider):
    """Requests its URLs one after the other; ``before(i)`` runs before
    request ``i`` is made (to move the clock, change the server)."""

    def __init__(self, before: Callable[[int], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.before = before

    async def start(self) -> AsyncIterator[Any]:
        for request in self._step(0):
            yield request

    def _step(self, index: int) -> Iterator[Request]:
        if index < len(self.urls):
            self.before(index)
            yield Request(
                self.urls[index],
                callback=self.parse_step,
                errback=self.failed_step,
                cb_kwargs={"index": index},
                dont_filter=True,
            )

    def parse_step(self, response: Any, index: int) -> Iterator[Request]:
        self.parse(response)
        yield from self._step(index + 1)

    def failed_step(self, failure: Any) -> Iterator[Request]:
        self.failed(failure)
        yield from self._step(failure.request.cb_kwargs["index"] + 1)


async def _steps(
    urls: list[str],
    before: Callable[[int], None],
    settings: dict[str, Any] | None = None,
) -> Any:
    return await crawl(urls, settings, spidercls=Steps, before=before)


@coroutine_test
async def test_parsed_outcome_reused_for_its_lifetime_then_fetched_again(
    server: Server, clock: FakeClock
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    times = [0, 3599, 3601, 3602]

    def before(index: int) -> None:
        clock.now = 1_700_000_000.0 + times[index]
        if index == 2:
            server.route("/robots.txt", "User-agent: *\nDisallow: /\n")

    urls = [server.url(f"/page{i}") for i in range(4)]
    crawler = await _steps(urls, before, {"ROBOTS_CACHE_LIFETIME": 3600})
    assert crawler.spider.crawled == urls[:2]
    assert server.count("/robots.txt") == 2
    assert stats(crawler)["robots/fetch_count"] == 2
    assert stats(crawler)["robots/forbidden/rule"] == 2


@coroutine_test
async def test_cache_control_max_age_shortens_the_lifetime(
    server: Server, clock: FakeClock
) -> None:
    server.route(
        "/robots.txt", "User-agent: *\n", headers={"Cache-Control": "max-age=60"}
    )
    times = [0, 599, 601]

    def before(index: int) -> None:
        clock.now = 1_700_000_000.0 + times[index]

    urls = [server.url(f"/page{i}") for i in range(3)]
    await _steps(urls, before)
    # max-age=60 is raised to the 10-minute floor.
    assert server.count("/robots.txt") == 2


@coroutine_test
async def test_unreachable_retried_after_its_lifetime(
    server: Server, clock: FakeClock
) -> None:
    server.route("/robots.txt", "", status=503)
    times = [0, 300, 599, 601]

    def before(index: int) -> None:
        clock.now = 1_700_000_000.0 + times[index]
        if index == 3:
            server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")

    urls = [server.url(f"/page{i}") for i in range(4)]
    crawler = await _steps(urls, before)
    # Requests meanwhile are dropped without asking again.
    assert server.count("/robots.txt") == 2
    assert sorted(crawler.spider.dropped) == sorted(urls[:3])
    assert crawler.spider.crawled == urls[3:]
    assert stats(crawler)["robots/forbidden/unreachable"] == 3


DAY = 86_400


@coroutine_test
async def test_thirty_day_rule_uses_the_last_parsed_robots_txt(
    server: Server, clock: FakeClock
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    times = [0, 2 * DAY, 20 * DAY, 32 * DAY + 1, 32 * DAY + 2]
    start = 1_700_000_000.0

    def before(index: int) -> None:
        clock.now = start + times[index]
        if index == 1:
            server.route("/robots.txt", "", status=500)

    urls = [
        server.url("/a"),  # parsed
        server.url("/b"),  # unreachable since day 2: dropped
        server.url("/c"),  # still unreachable on day 20: dropped
        server.url("/d"),  # day 32: judged by the last parsed copy: allowed
        server.url("/private/e"),  # ... which disallows this
    ]
    crawler = await _steps(urls, before, {"ROBOTS_CACHE_LIFETIME": DAY})
    assert crawler.spider.crawled == [server.url("/a"), server.url("/d")]
    causes = {url: d.cause for url, d in crawler.spider.dropped.items()}
    assert causes == {
        server.url("/b"): "unreachable",
        server.url("/c"): "unreachable",
        server.url("/private/e"): "rule",
    }
    assert server.count("/robots.txt") == 4


@coroutine_test
async def test_thirty_day_rule_without_a_parsed_copy_allows(
    server: Server, clock: FakeClock
) -> None:
    server.route("/robots.txt", "", status=503)
    times = [0, 29 * DAY, 30 * DAY + 1]
    start = 1_700_000_000.0

    def before(index: int) -> None:
        clock.now = start + times[index]

    urls = [server.url(f"/page{i}") for i in range(3)]
    crawler = await _steps(urls, before)
    assert crawler.spider.crawled == urls[2:]
    assert stats(crawler)["robots/outcome/unreachable"] == 3


@coroutine_test
async def test_memory_store_holds_only_the_agents_rules(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-agent: TestBot\nDisallow: /mine\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: OtherBot\nDisallow: /other\n\nSitemap: /sitemap.xml\n",
    )
    crawler = await crawl([server.url("/mine"), server.url("/yours")])
    assert crawler.spider.crawled == [server.url("/yours")]
    entry = middleware(crawler).memory.entry(server.url("/robots.txt"))
    assert entry is not None
    # The matcher of the agent's rules and the sitemaps, no document.
    assert entry.outcome.document is None
    assert entry.matcher is not None
    assert entry.matcher.explain("/mine").rule == Rule(False, "/mine", 2)
    assert entry.matcher.explain("/other").allowed
    assert entry.sitemaps == "/sitemap.xml"


@coroutine_test
async def test_memory_store_bound(make_server: MakeServer) -> None:
    servers = [make_server() for _ in range(3)]
    crawler = await crawl(
        [s.url("/page") for s in servers],
        {"ROBOTS_MEMORY_MAX_ORIGINS": 2, "CONCURRENT_REQUESTS": 1},
    )
    assert len(middleware(crawler).memory) == 2


@pytest.mark.parametrize("encoding", ["gzip", "br", "gzip, gzip"])
@coroutine_test
async def test_http_cache_replay_of_an_encoded_robots_txt(
    server: Server, tmp_path: Any, encoding: str
) -> None:
    # A replayed response never streams: its body is decoded whole, still
    # within ROBOTS_MAX_BYTES, and HttpCompressionMiddleware leaves it alone.
    body = _big_robots(600 * 1024)
    for coding in encoding.split(", "):
        body = brotli.compress(body) if coding == "br" else gzip.compress(body)
    server.route("/robots.txt", body, headers={"Content-Encoding": encoding})
    settings = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path)}
    for _ in range(2):
        crawler = await crawl([server.url("/early"), server.url("/late")], settings)
        assert crawler.spider.crawled == [server.url("/late")]
        assert crawler.spider.dropped[server.url("/early")].cause == "rule"
        assert (
            stats(crawler, "httpcompression/").get("httpcompression/response_bytes", 0)
            < LIMIT
        )
    assert server.count("/robots.txt") == 1
    assert stats(crawler, "httpcache/")["httpcache/hit"] >= 1


def test_a_body_still_dripping_after_the_download_timeout_fails_as_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx (Scrapy 2.15 to 2.18 without a reactor) bounds each read, not the
    # download: the fetcher ends a body that outlasts download_timeout
    # (tests/test_faults.py meets a real drip under httpx in --oldest).
    clock = FakeClock(100.0)
    monkeypatch.setattr(fetch, "time", SimpleNamespace(monotonic=clock))
    fetcher = RobotsFetcher(make_crawler(), lifetimes=Lifetimes(), clock=clock)
    body = fetch._Body(500_000)
    meta = {fetch._BODY_KEY: body, "download_timeout": 5}
    request = Request("http://127.0.0.1/robots.txt", meta=meta)
    fetcher._headers_received(Headers(), request)
    clock.now += 5
    fetcher._bytes_received(b"User-agent: *\n", request)
    clock.now += 0.5
    with pytest.raises(fetch.BodyTimeout) as raised:
        fetcher._bytes_received(b"Disallow: /\n", request)
    # Failed, so an errback (retried as a timeout), not a short response.
    assert raised.value.fail
    assert isinstance(raised.value, DownloadTimeoutError)
    assert str(raised.value) == "robots.txt body not received within 5 s"


def test_a_download_handler_giving_no_response_is_no_signal_error() -> None:
    # scrapy-zyte-api's handler gives None for a body over DOWNLOAD_MAXSIZE;
    # Scrapy sends response_downloaded with it, then fails the download.
    fetcher = RobotsFetcher(make_crawler(), lifetimes=Lifetimes(), clock=time.time)
    meta = {fetch._BODY_KEY: fetch._Body(500_000)}
    fetcher._response_downloaded(
        None, Request("http://127.0.0.1/robots.txt", meta=meta)
    )


class ApiError(Exception):
    """As Zyte API's ``RequestError`` (an aiohttp ``ClientResponseError``):
    a status, an error type in its body, and a text holding the answer's
    headers and body."""

    request_info = None
    message = ""

    def __init__(self, status: int, kind: str | None) -> None:
        super().__init__()
        self.status, self.kind = status, kind

    @property
    def parsed(self) -> SimpleNamespace:
        if self.kind is None:
            raise ValueError("no JSON")
        return SimpleNamespace(type=self.kind)

    def __str__(self) -> str:
        return f"ApiError: {self.status}, headers=<...>, body=b'{{...}}'"


class Named(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            ApiError(520, "/download/temporary-error"),
            "ApiError: HTTP 520 /download/temporary-error",
        ),
        (ApiError(521, None), "ApiError: HTTP 521"),
        (Named("Named: boom"), "Named: boom"),
        (Named(), "Named"),
        (ValueError("x" * 1000), "ValueError: " + "x" * 287 + "\u2026"),
    ],
)
def test_a_failed_downloads_reason_is_one_bounded_line(
    exc: Exception, reason: str
) -> None:
    # Given with each request it drops, and logged: never an API answer's
    # headers and body, nor the exception's name twice.
    assert fetch._reason(exc) == reason


class ForeignBodyKey(RecordingSpider):
    """Requests carrying the fetcher's meta key with a value of their own,
    after a first request to the ``slow`` origin; keeps each body."""

    def __init__(self, slow: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.slow = slow
        self.bodies: dict[str, bytes] = {}

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.slow, callback=self.parse, dont_filter=True)
        for url in self.urls:
            meta = {"_robots_txt_body": "mine"}
            yield Request(url, callback=self.parse, meta=meta, dont_filter=True)

    def parse(self, response: Any) -> None:
        super().parse(response)
        self.bodies[response.url] = response.body


@coroutine_test
async def test_a_page_carrying_the_fetchers_meta_key_is_left_alone(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # While a robots.txt is on its way, the fetcher hears every response's
    # headers and bytes: a page whose meta holds the fetcher's key with
    # another value is not the fetcher's, and keeps its Content-Encoding.
    slow, fast = make_server(), make_server()
    page_first: list[int] = []

    def slow_robots(handler: BaseHTTPRequestHandler) -> None:
        # Answers once the fast page was downloaded (within 10 s).
        for _ in range(200):
            if fast.count("/page") or slow.closing.wait(0.05):
                break
        page_first.append(fast.count("/page"))
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    slow.routes["/robots.txt"] = Route(handler=slow_robots)
    fast.route("/robots.txt", "User-agent: *\n")
    page = b"<html>" + b"x" * 20_000 + b"</html>"
    headers = {"Content-Encoding": "gzip"}
    fast.route("/page", gzip.compress(page), headers=headers)
    crawler = await crawl(
        [fast.url("/page")], spidercls=ForeignBodyKey, slow=slow.url("/a")
    )
    assert crawler.spider.bodies[fast.url("/page")] == page
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    # The fast page came while the slow robots.txt was still on its way.
    assert page_first == [1]


# -- Scrapy's HTTP cache never outlives an outcome's lifetime --------------------

RULES_A = "User-agent: *\nDisallow: /a\n"
RULES_B = "User-agent: *\nDisallow: /b\n"
ONE_YEAR = {"Cache-Control": "max-age=31536000"}
POLICIES = {
    "dummy": "scrapy.extensions.httpcache.DummyPolicy",
    "rfc2616": "scrapy.extensions.httpcache.RFC2616Policy",
}


def _http_cache(tmp_path: Any, policy: str = "dummy") -> dict[str, Any]:
    """Scrapy's HTTP cache in ``tmp_path``: DummyPolicy (the default) with
    HTTPCACHE_EXPIRATION_SECS = 0 (the default) keeps an answer for ever."""
    return {
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path),
        "HTTPCACHE_POLICY": POLICIES[policy],
    }


@pytest.mark.parametrize("status", [503, 429])
@coroutine_test
async def test_a_failure_in_the_http_cache_is_asked_again_next_run(
    server: Server, tmp_path: Any, status: int
) -> None:
    # A 5xx or a 429 is temporary (RFC 9309 2.3.1.4): replayed in the next
    # run, it would keep the site unreachable after it recovered.
    server.route("/robots.txt", "busy", status=status)
    first = await crawl([server.url("/a")], _http_cache(tmp_path))
    assert first.spider.dropped[server.url("/a")].cause == "unreachable"
    assert stats(first, "httpcache/")["httpcache/store"] == 1
    server.route("/robots.txt", RULES_A)
    second = await crawl([server.url("/a"), server.url("/b")], _http_cache(tmp_path))
    assert server.count("/robots.txt") == 2
    assert second.spider.crawled == [server.url("/b")]
    assert second.spider.dropped[server.url("/a")].cause == "rule"
    assert stats(second)["robots/httpcache/bypassed"] == 1
    # The cache had it, and now has the new answer in its place: the next
    # run is answered by the cache, offline too (HTTPCACHE_IGNORE_MISSING).
    assert stats(second, "httpcache/")["httpcache/hit"] == 1
    offline = {**_http_cache(tmp_path), "HTTPCACHE_IGNORE_MISSING": True}
    third = await crawl([server.url("/a"), server.url("/b")], offline)
    assert server.count("/robots.txt") == 2
    assert third.spider.crawled == [server.url("/b")]
    assert third.spider.dropped[server.url("/a")].cause == "rule"
    assert "robots/httpcache/bypassed" not in stats(third)


@pytest.mark.parametrize("flags_kept", [True, False])
@coroutine_test
async def test_a_truncated_robots_txt_is_never_replayed_as_whole(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, flags_kept: bool
) -> None:
    # DOWNLOAD_FAIL_ON_DATALOSS = False hands over a cut body flagged
    # "dataloss": no answer of the site's, so its origin is unreachable.
    # Scrapy's cache before 2.19 (flags_kept False, as on every release
    # before it) stores it without the flag: replayed, the cut file was
    # obeyed as whole, and /a, which its lost lines disallow, was crawled.
    if not flags_kept:
        retrieve = FilesystemCacheStorage.retrieve_response

        def without_flags(self: Any, spider: Any, request: Request) -> Any:
            response = retrieve(self, spider, request)
            return None if response is None else response.replace(flags=[])

        monkeypatch.setattr(FilesystemCacheStorage, "retrieve_response", without_flags)
    # Cut after its first lines (the rest would have disallowed /a).
    server.route(
        "/robots.txt", handler=truncated(b"User-agent: *\nDisallow: /elsewhere\n")
    )
    settings = {**_http_cache(tmp_path), "DOWNLOAD_FAIL_ON_DATALOSS": False}
    for run in (1, 2):
        crawler = await crawl([server.url("/a")], settings)
        assert crawler.spider.dropped[server.url("/a")].cause == "unreachable"
        assert server.count("/robots.txt") == run
        # Stored (again, marked), counted once.
        assert stats(crawler, "httpcache/")["httpcache/store"] == 1
    assert stats(crawler)["robots/httpcache/bypassed"] == 1
    assert [hit.path for hit in server.hits] == ["/robots.txt"] * 2
    # Whole again: its replay, and then the cache, answer.
    server.route("/robots.txt", RULES_A)
    whole = await crawl([server.url("/a"), server.url("/b")], settings)
    assert whole.spider.dropped[server.url("/a")].cause == "rule"
    replay = await crawl([server.url("/a")], settings)
    assert replay.spider.dropped[server.url("/a")].cause == "rule"
    assert server.count("/robots.txt") == 3


@coroutine_test
async def test_a_whole_robots_txt_with_the_truncated_marker_is_replayed(
    server: Server, tmp_path: Any
) -> None:
    # A server sending the header the package marks truncated answers with:
    # stored without it, the next run is answered by the cache (it was read
    # as truncated, downloaded again in every run, and unreachable offline).
    server.route("/robots.txt", RULES_A, headers={fetch.TRUNCATED_HEADER.decode(): "1"})
    urls = [server.url("/a"), server.url("/b")]
    for _ in range(2):
        crawler = await crawl(urls, _http_cache(tmp_path))
        assert crawler.spider.crawled == [server.url("/b")]
    assert server.count("/robots.txt") == 1
    assert "robots/httpcache/bypassed" not in stats(crawler)


@coroutine_test
async def test_an_answer_the_http_cache_cannot_store_is_used_all_the_same(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    server.route("/robots.txt", "busy", status=503)
    await crawl([server.url("/a")], _http_cache(tmp_path))
    server.route("/robots.txt", RULES_A)
    store = FilesystemCacheStorage.store_response

    def full(self: Any, spider: Any, request: Request, response: Any) -> None:
        if request.meta.get("dont_cache"):  # the answer downloaded past it
            raise OSError(28, "No space left on device")
        store(self, spider, request, response)

    monkeypatch.setattr(FilesystemCacheStorage, "store_response", full)
    second = await crawl([server.url("/a"), server.url("/b")], _http_cache(tmp_path))
    assert second.spider.crawled == [server.url("/b")]
    assert second.spider.dropped[server.url("/a")].cause == "rule"
    [warning] = [r.getMessage() for r in caplog.records if r.name.endswith(".fetch")]
    assert warning == (
        f"Could not store <GET {server.url('/robots.txt')}> in the HTTP cache:"
        " OSError: [Errno 28] No space left on device"
    )


@pytest.mark.parametrize("policy", list(POLICIES))
@coroutine_test
async def test_the_http_cache_answers_for_the_lifetime_of_the_outcome_only(
    server: Server, tmp_path: Any, clock: FakeClock, policy: str
) -> None:
    # RFC 9309 2.4: a cached robots.txt SHOULD NOT be used for more than
    # 24 hours. Its age counts from when the cache stored it, whatever the
    # cache's policy says (RFC2616Policy: max-age of a year).
    server.route("/robots.txt", RULES_A, headers=ONE_YEAR)
    cache = _http_cache(tmp_path, policy)
    urls = [server.url("/a"), server.url("/b")]
    clock.now = time.time()
    await crawl(urls, cache)
    server.route("/robots.txt", RULES_B, headers=ONE_YEAR)
    # An hour later, the cached copy is obeyed (an offline replay works) ...
    clock.now = time.time() + 3600
    replay = await crawl(urls, cache)
    assert server.count("/robots.txt") == 1
    assert replay.spider.crawled == [server.url("/b")]
    assert "robots/httpcache/bypassed" not in stats(replay)
    # ... a day later, the site is asked again, and its new rules obeyed.
    clock.now = time.time() + DAY + 60
    later = await crawl(urls, cache)
    assert server.count("/robots.txt") == 2
    assert later.spider.crawled == [server.url("/a")]
    assert stats(later)["robots/httpcache/bypassed"] == 1


@coroutine_test
async def test_a_replayed_robots_txt_holds_only_what_is_left_of_its_lifetime(
    server: Server, tmp_path: Any, clock: FakeClock
) -> None:
    # Stored 20 hours ago: used for the 4 hours left, not for a new day.
    server.route("/robots.txt", RULES_A)
    cache = _http_cache(tmp_path)
    start = time.time()
    clock.now = start
    await crawl([server.url("/b")], cache)
    server.route("/robots.txt", RULES_B)
    times = [20 * 3600, 23 * 3600, DAY + 60]

    def before(index: int) -> None:
        clock.now = start + times[index]

    urls = [server.url(f"/a/{i}") for i in range(3)]
    crawler = await _steps(urls, before, cache)
    # A from the cache at 20 h, still A from memory at 23 h, B at 24 h.
    assert server.count("/robots.txt") == 2
    assert sorted(crawler.spider.dropped) == urls[:2]
    assert crawler.spider.crawled == urls[2:]
    assert stats(crawler)["robots/httpcache/bypassed"] == 1


@coroutine_test
async def test_within_a_run_an_expired_outcome_is_not_answered_by_the_http_cache(
    server: Server, tmp_path: Any, clock: FakeClock
) -> None:
    # The site answers 503, then A, then B: each lifetime's end (10 minutes
    # unreachable, an hour parsed) asks the site, never the cache.
    answers = iter([(503, "busy"), (200, RULES_A), (200, RULES_B)])

    def robots(handler: BaseHTTPRequestHandler) -> None:
        status, body = next(answers)
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body.encode())

    server.routes["/robots.txt"] = Route(handler=robots)
    start = time.time()
    times = [0, 601, 602, 601 + 3601]

    def before(index: int) -> None:
        clock.now = start + times[index]

    urls = [server.url("/a"), server.url("/b"), server.url("/a"), server.url("/a")]
    settings = {**_http_cache(tmp_path), "ROBOTS_CACHE_LIFETIME": 3600}
    crawler = await _steps(urls, before, settings)
    assert server.count("/robots.txt") == 3
    # /a: unreachable, /b: allowed by A, /a: disallowed by A, /a: allowed by B.
    assert crawler.spider.crawled == [server.url("/b"), server.url("/a")]
    assert stats(crawler)["robots/httpcache/bypassed"] == 2


class DatelessStorage(FilesystemCacheStorage):
    """A storage that tells no ``cache_timestamp`` (Scrapy before 2.19, and
    storages of other packages): an answer's age is read from its Date."""

    def retrieve_response(self, spider: Any, request: Request) -> Any:
        response = super().retrieve_response(spider, request)
        request.meta.pop("cache_timestamp", None)
        return response


@coroutine_test
async def test_a_date_ahead_of_the_clock_leaves_the_age_unknown(
    server: Server, tmp_path: Any, clock: FakeClock
) -> None:
    # A server whose clock (its Date) is years ahead: read as "stored now",
    # its answer would be replayed as fresh in every run, for ever.
    ahead = {"Date": "Fri, 31 Dec 9999 23:59:59 GMT"}
    server.route("/robots.txt", RULES_A, headers=ahead)
    cache = {
        **_http_cache(tmp_path),
        "HTTPCACHE_STORAGE": f"{__name__}.DatelessStorage",
    }
    urls = [server.url("/a"), server.url("/b")]
    clock.now = time.time()
    await crawl(urls, cache)
    server.route("/robots.txt", RULES_B, headers=ahead)
    clock.now = time.time() + 2 * DAY
    later = await crawl(urls, cache)
    assert server.count("/robots.txt") == 2
    assert later.spider.crawled == [server.url("/a")]
    assert stats(later)["robots/httpcache/bypassed"] == 1


@coroutine_test
async def test_a_redirect_in_the_http_cache_is_followed_for_a_day_only(
    server: Server, tmp_path: Any, clock: FakeClock
) -> None:
    # Each hop is its own answer: a redirect stored over a day ago is asked
    # again, and the site no longer redirects.
    server.route("/robots.txt", status=301, headers={"Location": "/moved.txt"})
    server.route("/moved.txt", RULES_A)
    cache = _http_cache(tmp_path)
    urls = [server.url("/a"), server.url("/b")]
    clock.now = time.time()
    await crawl(urls, cache)
    server.route("/robots.txt", RULES_B)
    clock.now = time.time() + DAY + 60
    later = await crawl(urls, cache)
    assert later.spider.crawled == [server.url("/a")]
    hits = ["/robots.txt", "/moved.txt", "/b", "/robots.txt", "/a"]
    assert [hit.path for hit in server.hits] == hits


# A large robots.txt whose last rule matters: /private.
LARGE = (
    b"User-agent: *\n"
    + b"".join(b"Disallow: /p%d/%x\n" % (n, n * 2654435761) for n in range(6_000))
    + b"Disallow: /private\n"
)


@pytest.mark.parametrize(
    ("coding", "compress"),
    [("br", brotli.compress), ("gzip", gzip.compress), ("deflate", zlib.compress)],
)
@coroutine_test
async def test_a_large_encoded_robots_txt_is_read_to_its_last_rule(
    server: Server, coding: str, compress: Callable[[bytes], bytes]
) -> None:
    # brotli 1.2 kept part of its output: a 221 KB file served as br was
    # read to about 100 KB, its last rules never obeyed.
    server.route("/robots.txt", compress(LARGE), headers={"Content-Encoding": coding})
    crawler = await crawl([server.url("/private/x"), server.url("/free")])
    assert crawler.spider.crawled == [server.url("/free")]
    assert crawler.spider.dropped[server.url("/private/x")].cause == "rule"


def _close_delimited(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    """Answers gzip-encoded ``body`` without a Content-Length: it ends when
    the connection closes."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Encoding", "gzip")
        request.end_headers()
        request.wfile.write(body)
        request.wfile.flush()
        request.close_connection = True

    return handler


@pytest.mark.parametrize("delimited", ["content-length", "connection close"])
@coroutine_test
async def test_a_compressed_robots_txt_cut_short_is_unreachable(
    server: Server, delimited: str
) -> None:
    # Half a gzip stream, with a length that says it is whole (a proxy's
    # cut copy) or ended by the connection (Scrapy flags it "partial", not
    # "dataloss"): its start was obeyed as the whole file.
    encoded = gzip.compress(LARGE)
    half = encoded[: len(encoded) // 2]
    if delimited == "content-length":
        server.route("/robots.txt", half, headers={"Content-Encoding": "gzip"})
    else:
        server.route("/robots.txt", handler=_close_delimited(half))
    crawler = await crawl([server.url("/private/x")])
    dropped = crawler.spider.dropped[server.url("/private/x")]
    assert dropped.cause == "unreachable"
    assert "truncated gzip or deflate stream" in dropped.why


def _two_cache_control_lines(request: BaseHTTPRequestHandler) -> None:
    body = b"User-agent: *\nDisallow: /private\n"
    request.send_response(200)
    request.send_header("Content-Length", str(len(body)))
    request.send_header("Cache-Control", "max-age=900")
    request.send_header("Cache-Control", "public")
    request.end_headers()
    request.wfile.write(body)


@coroutine_test
async def test_cache_control_on_several_lines_is_one_value(server: Server) -> None:
    # RFC 9110 5.3: the lines say "max-age=900, public"; the last alone
    # gave the 24 h default.
    server.route("/robots.txt", handler=_two_cache_control_lines)
    crawler = make_crawler()
    lifetimes: list[float] = []

    def seen(origin: str, outcome: Any, request: Request) -> None:
        lifetimes.append(outcome.expires_at - outcome.fetched_at)

    crawler.signals.connect(seen, signal=robots_outcome)
    await crawler.crawl_async(urls=[server.url("/a")])
    assert lifetimes == [900.0]
