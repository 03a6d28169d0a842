"""Crawl-delay across a fleet (``ROBOTS_CRAWL_DELAY_SCOPE``), in real crawls
of this process: two crawlers sharing a store act as two workers.

What the stores are asked is recorded by subclasses of the real stores
(:class:`Recording`).  Gaps are measured at the server, as in
``test_crawl_delay.py``, with a tolerance for timer granularity only: each
crawler first downloads a page of another server (:class:`WarmSpider`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from scrapy_rfc9309._compat import download
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.crawl_helpers import (
    TIMER_GRANULARITY,
    Departures,
    RecordingSpider,
    make_crawler,
    stats,
)
from tests.support.redis_server import RedisServer
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test, store_settings

HERE = __name__
DELAY = 0.3
TOLERANCE = 0.02
# Enough concurrency for several requests to an origin to be on their way
# at once: the turns, not the slot, must keep them apart.
BURST = {"CONCURRENT_REQUESTS_PER_DOMAIN": 8, "CONCURRENT_REQUESTS": 16}

MakeServer = Callable[..., Server]


class Recording:
    """Records each call (method, origin, interval) of a real store."""

    calls: ClassVar[list[tuple[str, str, float | None]]] = []

    async def get(self, origin: str) -> Any:
        self.calls.append(("get", origin, None))
        return await super().get(origin)  # type: ignore[misc]

    async def put(self, origin: str, outcome: Any) -> None:
        self.calls.append(("put", origin, None))
        await super().put(origin, outcome)  # type: ignore[misc]

    async def acquire(self, origin: str, ttl: float) -> bool:
        self.calls.append(("acquire", origin, None))
        return await super().acquire(origin, ttl)  # type: ignore[misc,no-any-return]

    async def release(self, origin: str) -> None:
        self.calls.append(("release", origin, None))
        await super().release(origin)  # type: ignore[misc]

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        self.calls.append(("reserve", origin, interval))
        wait: float = await super().reserve(origin, interval, limit)  # type: ignore[misc]
        if wait == 0:
            self.calls.append(("taken", origin, interval))
        return wait


class RecordingSQLiteStore(Recording, SQLiteStore):
    pass


class RecordingRedisStore(Recording, RedisStore):
    pass


class WarmSpider(RecordingSpider):
    """Downloads the ``WARMUP_URL`` setting before its URLs, outside
    robots.txt.

    The first download of a crawl also sets up its HTTP client (a
    reactor-less crawl starts its aiohttp session), which on a loaded
    machine keeps that request from the server for tens of milliseconds
    after it left the slot: latency, not spacing, kept out of the measured
    server.
    """

    async def start(self) -> AsyncIterator[Any]:
        await download(
            self.crawler,
            Request(self.settings["WARMUP_URL"], meta={"dont_obey_robotstxt": True}),
        )
        async for request in super().start():
            yield request


@pytest.fixture(autouse=True)
def _no_calls() -> None:
    Recording.calls = []


@pytest.fixture
def new_crawler(make_server: MakeServer) -> Callable[..., Crawler]:
    """A crawler of :class:`WarmSpider` with the given settings; crawl it
    with ``crawl_async(urls=...)``."""
    warmup = make_server().url("/")

    def new(settings: dict[str, Any]) -> Crawler:
        return make_crawler({**settings, "WARMUP_URL": warmup}, WarmSpider)

    return new


@pytest.fixture(params=["sqlite", "redis"])
def shared(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], dict[str, Any]]:
    """The settings of a shared store, one SQLite file or one Redis prefix
    for the test; each call gives them to one more worker."""
    settings = store_settings(request.param, request, tmp_path)
    recording = "SQLite" if request.param == "sqlite" else "Redis"
    settings["ROBOTS_STORE"] = f"{HERE}.Recording{recording}Store"
    return lambda: dict(settings)


def robots(delay: float | None) -> str:
    text = "User-agent: *\nDisallow: /private\n"
    return text if delay is None else text + f"Crawl-delay: {delay}\n"


def calls(method: str, server: Server | None = None) -> list[float | None]:
    """The recorded calls of ``method`` (for ``server``'s origin only)."""
    origin = None if server is None else server.url("/robots.txt")
    return [
        interval
        for name, called, interval in Recording.calls
        if name == method and origin in (None, called)
    ]


def of_the_delay(intervals: list[float | None], delay: float) -> bool:
    """Whether the turns were of ``delay`` (robots.txt's always is), or
    longer: a worker whose event loop lags holds its turns longer by twice
    the lag (see scrapy_rfc9309.politeness)."""
    return delay in intervals and all(
        each is not None and each >= delay for each in intervals
    )


async def crawl_together(crawlers: list[Crawler], urls: list[list[str]]) -> None:
    """Run the crawlers at once, as workers of one fleet."""
    await asyncio.gather(
        *(
            crawler.crawl_async(urls=u)
            for crawler, u in zip(crawlers, urls, strict=True)
        )
    )


@coroutine_test
async def test_two_workers_keep_the_delay_between_them(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    server.route("/robots.txt", robots(DELAY))
    workers = [new_crawler({**BURST, **shared()}) for _ in range(2)]
    pages = [[server.url(f"/w{w}/{i}") for i in range(4)] for w in range(2)]
    await crawl_together(workers, pages)
    for worker, urls in zip(workers, pages, strict=True):
        assert sorted(worker.spider.crawled) == sorted(urls)  # type: ignore[union-attr]
        assert "robots/store/errors" not in stats(worker)
    assert server.count("/robots.txt") == 1
    # Measured where the slots send the requests (a server thread of this
    # process can be starved on a loaded machine: tests.support.crawl_helpers
    # Departures).
    gaps = departures.gaps(*workers, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= DELAY - TOLERANCE, gaps
    # A turn for each page and one for robots.txt, all of the delay (and
    # one more for each turn a stalled worker missed).
    turns = calls("reserve")
    assert of_the_delay(turns, DELAY), turns
    assert len(turns) >= 9


@coroutine_test
async def test_a_slower_slot_never_sends_a_request_after_its_turn(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    """Each worker's own DOWNLOAD_DELAY (or AutoThrottle) is longer than the
    Crawl-delay: a turn taken before the slot is ready would be spent
    waiting in the slot, and the request sent late, on top of the next
    worker's turn."""
    server.route("/robots.txt", robots(DELAY))
    settings = {**BURST, "DOWNLOAD_DELAY": 2.5 * DELAY, "DOWNLOAD_DELAY_JITTER": 0}
    workers = [new_crawler({**settings, **shared()}) for _ in range(2)]
    pages = [[server.url(f"/w{w}/{i}") for i in range(3)] for w in range(2)]
    await crawl_together(workers, pages)
    assert sum(len(w.spider.crawled) for w in workers) == 6  # type: ignore[union-attr]
    gaps = departures.gaps(*workers, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= DELAY - TOLERANCE, gaps
    for worker in workers:
        # Each worker's own requests kept its DOWNLOAD_DELAY: measured where
        # Scrapy's slot spaces them, from their departures. At the server
        # the gap also holds the difference between two trips to it, which
        # a loaded machine makes tens of ms (0.726 s seen there); the turns,
        # counted from the end of each fetch, keep only the Crawl-delay.
        gaps = departures.gaps(worker, key=server.host)
        assert len(gaps) >= 2, gaps
        assert min(gaps) >= 2.5 * DELAY - TIMER_GRANULARITY, gaps


class SlowFirstTurn(RecordingSQLiteStore):
    """Answers its second turn taken (the first page's) 50 ms late, as a
    store on a loaded machine, or a stalled worker, would."""

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        wait = await super().reserve(origin, interval, limit)
        if wait == 0 and len(calls("taken")) == 2:
            await asyncio.sleep(0.05)
        return wait


@coroutine_test
async def test_a_missed_turn_is_left_unused(
    server: Server,
    tmp_path: Path,
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    server.route("/robots.txt", robots(DELAY))
    crawler = new_crawler(
        {
            **BURST,
            "ROBOTS_STORE": f"{HERE}.SlowFirstTurn",
            "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
        }
    )
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(2)])
    assert len(crawler.spider.crawled) == 2  # type: ignore[union-attr]
    # robots.txt's turn, the first page's missed one and the one it took
    # instead, the second page's (each page also asked while the origin was
    # held); and one more for each other turn a busy machine answered late
    # (a SQLite call in its thread over 10 ms), each counted late as the
    # first page's was.
    late = stats(crawler).get("robots/crawl_delay/late", 0)
    assert 4 <= len(calls("taken")) <= 3 + late, (calls("taken"), late)
    assert of_the_delay(calls("taken"), DELAY)
    assert of_the_delay(calls("reserve"), DELAY)
    gaps = departures.gaps(crawler, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= DELAY - TOLERANCE, gaps


class FarStore(RecordingSQLiteStore):
    """A store 30 ms away, as a Redis in another data centre: each call
    takes its round trip."""

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        await asyncio.sleep(0.015)
        wait = await super().reserve(origin, interval, limit)
        await asyncio.sleep(0.015)
        return wait


@coroutine_test
async def test_a_far_store_costs_no_turn(
    server: Server, tmp_path: Path, new_crawler: Callable[..., Crawler]
) -> None:
    """A round trip over 10 ms, the same for every worker, brings no two
    requests closer at the site: each page takes one turn.  Each turn was
    left unused as late, 10 in a row, and the whole fleet waited for each."""
    server.route("/robots.txt", robots(DELAY))
    crawler = new_crawler(
        {
            **BURST,
            "ROBOTS_STORE": f"{HERE}.FarStore",
            "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
        }
    )
    pages = 4
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(pages)])
    assert len(crawler.spider.crawled) == pages  # type: ignore[union-attr]
    # Each late request counts once, and takes one more turn for each turn
    # a busy machine answered later than the store's usual round trip.
    late = stats(crawler).get("robots/crawl_delay/late", 0)
    assert late < pages
    assert 1 + pages <= len(calls("taken")) <= 1 + pages + 10 * late


@coroutine_test
async def test_origins_without_a_crawl_delay_cost_no_store_call(
    make_server: MakeServer,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
) -> None:
    free, delayed = make_server(), make_server()
    free.route("/robots.txt", robots(None))
    delayed.route("/robots.txt", robots(DELAY))
    urls = [free.url(f"/{i}") for i in range(6)] + [delayed.url("/a"), free.url("/x")]
    crawler = new_crawler({**BURST, **shared()})
    await crawler.crawl_async(urls=urls)
    assert len(crawler.spider.crawled) == 8  # type: ignore[union-attr]
    # robots.txt of the free origin went through the store once; its pages
    # never did.
    origin = free.url("/robots.txt")
    free_calls = [name for name, called, _ in Recording.calls if called == origin]
    assert free_calls == ["get", "acquire", "get", "put", "release"]
    assert calls("reserve", free) == []
    # robots.txt's turn and the page's (and one more for each turn a busy
    # machine left unused: each such turn was counted late).
    late = stats(crawler).get("robots/crawl_delay/late", 0)
    assert 2 <= len(calls("taken", delayed)) <= 2 + late
    assert of_the_delay(calls("taken", delayed), DELAY)


@coroutine_test
async def test_process_scope_takes_no_turns(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    server.route("/robots.txt", robots(DELAY))
    crawler = new_crawler({**BURST, **shared(), "ROBOTS_CRAWL_DELAY_SCOPE": "process"})
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(3)])
    assert len(crawler.spider.crawled) == 3  # type: ignore[union-attr]
    assert calls("reserve") == []
    # The slot keeps the delay in this process.
    gaps = departures.gaps(crawler, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= DELAY - TOLERANCE, gaps


@coroutine_test
async def test_clamped_delays_are_the_maximum_fleet_wide(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    server.route("/robots.txt", robots(100))
    settings = {**BURST, "ROBOTS_CRAWL_DELAY_MAX": DELAY}
    workers = [new_crawler({**settings, **shared()}) for _ in range(2)]
    pages = [[server.url(f"/w{w}/{i}") for i in range(3)] for w in range(2)]
    await crawl_together(workers, pages)
    assert sum(len(w.spider.crawled) for w in workers) == 6  # type: ignore[union-attr]
    turns = calls("reserve")
    assert of_the_delay(turns, DELAY), turns
    assert len(turns) >= 7
    gaps = departures.gaps(*workers, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= DELAY - TOLERANCE, gaps


@coroutine_test
async def test_skipped_origins_take_no_turns(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
) -> None:
    server.route("/robots.txt", robots(100))
    crawler = new_crawler(
        {
            **BURST,
            **shared(),
            "ROBOTS_CRAWL_DELAY_MAX": DELAY,
            "ROBOTS_CRAWL_DELAY_OVER_MAX": "skip",
        }
    )
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(3)])
    assert stats(crawler)["robots/forbidden/crawl_delay"] == 3
    assert calls("reserve") == []


@pytest.mark.parametrize(
    ("settings", "scope"),
    [
        ({"ROBOTS_STORE": "memory"}, "process"),
        ({"ROBOTS_STORE": "memory", "ROBOTS_CRAWL_DELAY_SCOPE": "fleet"}, "process"),
        ({"ROBOTS_STORE": "sqlite"}, "fleet"),
        (
            {"ROBOTS_STORE": "sqlite", "ROBOTS_CRAWL_DELAY_SCOPE": " Process "},
            "process",
        ),
    ],
)
def test_scope_setting(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, Any],
    scope: str,
) -> None:
    crawler = make_crawler({**settings, "JOBDIR": str(tmp_path)})
    with caplog.at_level(logging.WARNING):
        middleware = RobotsMiddleware(crawler)
    assert middleware.politeness.fleet == (scope == "fleet")
    warned = [r for r in caplog.records if "ROBOTS_CRAWL_DELAY_SCOPE" in r.message]
    # Asked for the fleet scope without a shared store: said so, once.
    assert len(warned) == (settings.get("ROBOTS_CRAWL_DELAY_SCOPE") == "fleet")


def test_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="ROBOTS_CRAWL_DELAY_SCOPE must be"):
        RobotsMiddleware(make_crawler({"ROBOTS_CRAWL_DELAY_SCOPE": "cluster"}))


# The store lost in the middle of a crawl


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
@coroutine_test
async def test_store_lost_mid_crawl_falls_back_to_process_delays(
    server: Server,
    make_redis_server: Callable[[], RedisServer],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    new_crawler: Callable[..., Crawler],
    departures: Departures,
) -> None:
    if kind == "redis":
        redis_server = make_redis_server()
        settings = {"ROBOTS_STORE": "redis", "ROBOTS_STORE_URL": redis_server.url}
    else:
        settings = {
            "ROBOTS_STORE": "sqlite",
            "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
        }
    crawler = new_crawler({**BURST, **settings})
    pages = 6
    hits = 0

    def page(handler: BaseHTTPRequestHandler) -> None:
        nonlocal hits
        hits += 1
        if hits == 2:
            # Lost while requests wait for their turns.
            if kind == "redis":
                redis_server.stop()
            else:
                # The file turned read-only (file modes do not stop root).
                store = crawler.get_downloader_middleware(RobotsMiddleware).store
                assert isinstance(store, SQLiteStore)
                store._executor.submit(
                    lambda: store._db().execute("PRAGMA query_only = ON")
                ).result()
        body = b"<html></html>"
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server.route("/robots.txt", robots(DELAY))
    server.default = Route(handler=page)
    with caplog.at_level(logging.WARNING):
        await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(pages)])
    # Every page fetched once, the crawl finished, the failure counted and
    # logged once.
    assert len(crawler.spider.crawled) == pages  # type: ignore[union-attr]
    assert hits == pages
    assert stats(crawler)["robots/store/errors"] == 1
    warnings = [r for r in caplog.records if "robots.txt store" in r.getMessage()]
    assert len(warnings) == 1
    assert "Crawl-delays kept per process" in warnings[0].getMessage()
    assert crawler.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]
    # The process's delays took over: measured where the slot sends each
    # request. At the server, a thread of this process, a loaded machine
    # made one gap 0.964 s and the next 0.095 s (the server starved, the
    # requests sent on time).
    gaps = departures.gaps(crawler, key=server.host)
    assert len(gaps) == pages, gaps
    assert min(gaps) >= DELAY - TIMER_GRANULARITY, gaps


# Turns read back from the store (issue 24, F6)


async def poison_turn(settings: dict[str, Any], origin: str, ahead: float) -> None:
    """Write, as another program could, a turn of ``origin`` starting
    ``ahead`` seconds from now into the store of ``settings``."""
    store: SQLiteStore | RedisStore
    if "SQLite" in settings["ROBOTS_STORE"]:
        sqlite = store = SQLiteStore(settings["ROBOTS_STORE_URL"])
        await store.reserve(origin, 1.0)
        moment = time.time() + ahead
        await sqlite._run(
            lambda: sqlite._db().execute(
                "UPDATE turns SET next_free = ? WHERE origin = ?", (moment, origin)
            )
        )
    else:
        redis = store = RedisStore(
            settings["ROBOTS_STORE_URL"], prefix=settings["ROBOTS_STORE_PREFIX"]
        )
        await store.reserve(origin, 1.0)
        moment_us = f"{(time.time() + ahead) * 1_000_000:.0f}"
        await redis._client.set(redis._key("turn", origin), moment_us)
    await store.close()


TEN_YEARS = 10 * 365 * 86400.0


@coroutine_test
async def test_a_turn_further_ahead_than_the_largest_delay_is_discarded(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One key setting the origin's next turn to now + 10 years: the turn is
    discarded and replaced, counted and logged once, and every page is
    fetched (before, none was, and the crawl outlived CLOSESPIDER_TIMEOUT)."""
    server.route("/robots.txt", robots(DELAY))
    settings = shared()
    await poison_turn(settings, server.url("/robots.txt"), TEN_YEARS)
    crawler = new_crawler({**BURST, **settings, "CLOSESPIDER_TIMEOUT": 20})
    with caplog.at_level(logging.WARNING):
        await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(3)])
    assert server.count("/robots.txt") == 1
    assert sum(server.count(f"/{i}") for i in range(3)) == 3
    assert stats(crawler)["robots/store/discarded_turns"] == 1
    assert "robots/store/errors" not in stats(crawler)
    warned = [r for r in caplog.records if "Crawl-delay turn" in r.getMessage()]
    assert len(warned) == 1
    assert "more than ROBOTS_CRAWL_DELAY_MAX" in warned[0].getMessage()
    assert crawler.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]


@coroutine_test
async def test_a_worker_with_a_larger_maximum_does_not_hold_the_others(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
) -> None:
    """A turn within the writer's ROBOTS_CRAWL_DELAY_MAX but beyond this
    worker's (here 1 s, and its longest pause 1 s) is discarded too."""
    server.route("/robots.txt", robots(DELAY))
    settings = shared()
    await poison_turn(settings, server.url("/robots.txt"), 600)
    crawler = new_crawler(
        {
            **BURST,
            **settings,
            "ROBOTS_CRAWL_DELAY_MAX": 1,
            "ROBOTS_RETRY_AFTER_MAX": 1,
        }
    )
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(2)])
    assert sum(server.count(f"/{i}") for i in range(2)) == 2
    assert stats(crawler)["robots/store/discarded_turns"] == 1


@coroutine_test
async def test_requests_waiting_for_a_turn_never_hold_the_crawl_open(
    server: Server,
    shared: Callable[[], dict[str, Any]],
    new_crawler: Callable[..., Crawler],
) -> None:
    """Crawl-delay 20 s and CLOSESPIDER_TIMEOUT 1 s: the pages waiting for
    their turns are dropped, counted, when Scrapy closes the spider (it
    waited for each of them before: 60 s and three pages fetched)."""
    server.route("/robots.txt", robots(20))
    crawler = new_crawler({**BURST, **shared(), "CLOSESPIDER_TIMEOUT": 1})
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(3)])
    assert server.count("/robots.txt") == 1
    assert sum(server.count(f"/{i}") for i in range(3)) == 0
    assert stats(crawler)["robots/cancelled"] == 3
    assert crawler.stats.get_value("finish_reason") == "closespider_timeout"  # type: ignore[union-attr]
