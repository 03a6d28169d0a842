"""Crawl-delay per origin, whatever downloader slot carries the request
(issue 23 item 1), in real crawls measured at the server.

Components that pick a request's slot after RobotsMiddleware (proxy
rotation, scrapy-zyte-api, a ``DOWNLOAD_SLOTS`` group) used to leave the
origin with no delay at all.  Gaps are measured where the requests leave
the downloader middlewares (:class:`Sent`, after PacingMiddleware), per
origin, whatever the slot: the server, a thread of this process, can be
starved on a loaded machine (see ``tests.support.crawl_helpers.Departures``); the
server only counts.  ``tests/test_crawl_delay_lag.py`` measures gaps at a
server in another process than the workers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from itertools import count, pairwise
from pathlib import Path
from time import monotonic
from typing import Any, ClassVar

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from scrapy_rfc9309._compat import sleep, spider_argument
from scrapy_rfc9309.politeness import Politeness, politeness_of
from tests.support.crawl_helpers import (
    TIMER_GRANULARITY,
    Burst,
    RecordingSpider,
    crawl,
    crawl_delay_robots,
    stats,
)
from tests.support.server import Server
from tests.support.utils import coroutine_test

HERE = __name__
DELAY = 0.3
BURST = {"CONCURRENT_REQUESTS_PER_DOMAIN": 8, "CONCURRENT_REQUESTS": 16}
PACING = "scrapy_rfc9309.politeness.PacingMiddleware"

MakeServer = Callable[..., Server]


@spider_argument
class Sent:
    """Records when each request leaves the downloader middlewares (placed
    after PacingMiddleware): ``(monotonic time, URL)``."""

    times: ClassVar[list[tuple[float, str]]] = []

    def process_request(self, request: Request) -> None:
        self.times.append((monotonic(), request.url))


SENT = {f"{HERE}.Sent": 2_000_000}


@pytest.fixture(autouse=True)
def _nothing_sent() -> None:
    Sent.times = []


def _gaps(server: Server) -> list[float]:
    """The gaps between the requests to ``server`` as they left (robots.txt
    included)."""
    times = sorted(t for t, url in Sent.times if url.startswith(server.origin))
    assert len(times) == len(server.hits)
    return [later - earlier for earlier, later in pairwise(times)]


def _slots_used(crawler: Crawler) -> set[str]:
    """The downloader slots that sent a request.  The others, the host's
    slot that the requests waiting for their robots.txt and turns were
    counted in (the one the scheduler's queue reads) when a later component
    moved them, are idle and left to Scrapy's slot collector, which drops
    them (run here at once)."""
    assert crawler.engine is not None
    downloader = crawler.engine.downloader
    used = {key for key, slot in downloader.slots.items() if slot.lastseen}
    downloader._slot_gc()
    assert set(downloader.slots) == used
    return used


@spider_argument
class RotatingSlots:
    """Puts each request in one of three slots, one per "proxy", as
    scrapy-rotating-proxies does (placed at 610, after RobotsMiddleware)."""

    numbers = count()

    def process_request(self, request: Request) -> None:
        request.meta["download_slot"] = f"proxy{next(self.numbers) % 3}"


@spider_argument
class ZyteApiLike:
    """As scrapy-zyte-api's downloader middleware (at 1000): each request to
    a ``zyte-api@<slot>`` slot whose delay it sets to 0."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ZyteApiLike:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        key = f"zyte-api@{downloader.get_slot_key(request)}"
        request.meta["download_slot"] = key
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay = 0


@spider_argument
class OneGroup:
    """Sends every request through the slot ``group`` (of DOWNLOAD_SLOTS)."""

    def process_request(self, request: Request) -> None:
        request.meta["download_slot"] = "group"


@pytest.mark.parametrize(
    ("component", "priority"), [("RotatingSlots", 610), ("ZyteApiLike", 1000)]
)
@coroutine_test
async def test_crawl_delay_holds_whatever_slot_a_later_component_picks(
    server: Server, component: str, priority: int
) -> None:
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(6)]
    crawler = await crawl(
        urls,
        {
            **BURST,
            "DOWNLOADER_MIDDLEWARES": {f"{HERE}.{component}": priority, **SENT},
        },
    )
    assert len(crawler.spider.crawled) == 6  # type: ignore[union-attr]
    slots = _slots_used(crawler)
    assert server.host not in slots or component == "ZyteApiLike", slots
    assert len(slots) == (3 if component == "RotatingSlots" else 1), slots
    # robots.txt and the six pages, each at least the delay after the one
    # before (before: 0.004 s and 0.000 s).
    assert len(server.hits) == 7
    assert min(_gaps(server)) >= DELAY - TIMER_GRANULARITY, _gaps(server)
    assert stats(crawler)["robots/crawl_delay/origins"] == 1


@coroutine_test
async def test_a_download_slots_group_keeps_each_origins_delay(
    make_server: MakeServer,
) -> None:
    """Two origins with Crawl-delays 1 s and 0.05 s in one DOWNLOAD_SLOTS
    slot: each keeps its own, the slow one never slows the other."""
    slow, fast = make_server(), make_server()
    slow.route("/robots.txt", crawl_delay_robots(1.0))
    fast.route("/robots.txt", crawl_delay_robots(0.05))
    urls = [slow.url("/a"), slow.url("/b")] + [fast.url(f"/{i}") for i in range(5)]
    crawler = await crawl(
        urls,
        {
            **BURST,
            "DOWNLOADER_MIDDLEWARES": {f"{HERE}.OneGroup": 610, **SENT},
            "DOWNLOAD_SLOTS": {"group": {"concurrency": 8, "delay": 0}},
        },
    )
    assert len(crawler.spider.crawled) == 7  # type: ignore[union-attr]
    assert _slots_used(crawler) == {"group"}
    assert min(_gaps(slow)) >= 1.0 - TIMER_GRANULARITY, _gaps(slow)
    assert min(_gaps(fast)) >= 0.05 - TIMER_GRANULARITY, _gaps(fast)
    # All the fast origin's pages left before the slow one's second page.
    sent = {url: t for t, url in Sent.times}
    assert (
        max(t for url, t in sent.items() if url.startswith(fast.origin))
        < sent[slow.url("/b")]
    )


@coroutine_test
async def test_without_the_pacing_middleware_robots_middleware_paces(
    server: Server,
) -> None:
    """A project that takes PacingMiddleware out of the chain: the origin
    is still spaced, where RobotsMiddleware sits."""
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(4)]
    crawler = await crawl(
        urls,
        {
            **BURST,
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy_rfc9309.politeness.PacingMiddleware": None,
                **SENT,
            },
        },
    )
    assert len(crawler.spider.crawled) == 4  # type: ignore[union-attr]
    assert min(_gaps(server)) >= DELAY - TIMER_GRANULARITY, _gaps(server)


@coroutine_test
async def test_responses_from_the_http_cache_never_wait(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crawl replayed from the HTTP cache (robots.txt included, with its
    Crawl-delay of 30 s): no request waits for a turn, the server sees
    nothing, every page is crawled."""
    server.route("/robots.txt", crawl_delay_robots(30))
    urls = [server.url(f"/p{i}") for i in range(3)]
    cache: dict[str, Any] = {
        **BURST,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
        # Any wait would outlast this: the pages would then be dropped.
        "CLOSESPIDER_TIMEOUT": 10,
    }
    # The first crawl, without Crawl-delay, fills the cache.
    first = await crawl(urls, {**cache, "ROBOTS_CRAWL_DELAY": False})
    assert len(first.spider.crawled) == 3  # type: ignore[union-attr]
    seen = len(server.hits)
    turns: list[str] = []
    take_turn = Politeness.take_turn

    async def counted(self: Politeness, request: Request, *args: Any) -> None:
        turns.append(request.url)
        await take_turn(self, request, *args)

    monkeypatch.setattr(Politeness, "take_turn", counted)
    replay = await crawl(urls, cache)
    assert len(replay.spider.crawled) == 3  # type: ignore[union-attr]
    assert len(server.hits) == seen
    assert turns == []
    # The Crawl-delay was read (from the cached robots.txt) all the same.
    assert stats(replay)["robots/crawl_delay/origins"] == 1
    assert "robots/cancelled" not in stats(replay)
    assert replay.stats.get_value("finish_reason") == "finished"  # type: ignore[union-attr]


async def _fast_site_first(
    slow: Server, fast: Server, pacing: bool, settings: dict[str, Any]
) -> Crawler:
    """A crawl of 8 pages of ``slow`` (under a Crawl-delay of 1 s) and 8 of
    ``fast`` (none), all queued at once, with DownloaderAwarePriorityQueue
    and CONCURRENT_REQUESTS = 4 (and ``settings``; PacingMiddleware left
    out unless ``pacing``): every page of ``fast`` arrives before the
    second of ``slow``."""
    fast.route("/robots.txt", "User-agent: *\nDisallow:\n")
    urls = [slow.url(f"/a{i}") for i in range(8)]
    urls += [fast.url(f"/b{i}") for i in range(8)]
    settings = {
        **settings,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "CONCURRENT_REQUESTS": 4,
        # The delayed site's pages left waiting are dropped then.
        "CLOSESPIDER_TIMEOUT": 4,
    }
    if not pacing:
        settings["DOWNLOADER_MIDDLEWARES"] = {PACING: None}
    crawler = await crawl(urls, settings, spidercls=Burst)
    assert len(fast.times("/b")) == 8, (fast.times(), slow.times())
    # Counted where the last page of ``fast`` arrived: at most the first of
    # ``slow`` before it.  On a loaded machine CLOSESPIDER_TIMEOUT may end
    # the crawl before ``slow`` sends its second page: no failure.
    last_fast = max(fast.times("/b"))
    slow_before = [t for t in slow.times("/a") if t <= last_fast]
    assert len(slow_before) <= 1, (fast.times(), slow.times())
    return crawler


@pytest.mark.parametrize("pacing", [True, False])
@coroutine_test
async def test_waiting_requests_count_in_their_slot_for_the_queue(
    make_server: Callable[..., Server], pacing: bool
) -> None:
    """With DownloaderAwarePriorityQueue (Scrapy's advice for broad crawls)
    and CONCURRENT_REQUESTS = 4, the requests of a site under a Crawl-delay
    waiting for their turns (or their robots.txt) count among their slot's
    active ones, as those waiting for a DOWNLOAD_DELAY do: the queue hands
    out the other site's pages, which all arrive before the delayed site's
    second page. They were paced at the delayed site's Crawl-delay, the
    queue seeing the delayed site's slot empty."""
    slow, fast = make_server(), make_server()
    slow.route("/robots.txt", crawl_delay_robots(1.0))
    await _fast_site_first(slow, fast, pacing, {})


@coroutine_test
async def test_waiting_requests_count_in_the_slot_they_were_queued_under(
    make_server: Callable[..., Server],
) -> None:
    """As above, with a component after RobotsMiddleware moving each request
    to a proxy's slot (RotatingSlots, as scrapy-rotating-proxies does).
    The queue filed each request under its host's slot, and reads that
    slot's active requests: the requests waiting for their turns in
    PacingMiddleware count there too, not only in the proxy's slot. They
    counted only in the proxy's: the queue saw the delayed site's slot
    empty and the other site's pages came at its pace."""
    slow, fast = make_server(), make_server()
    slow.route("/robots.txt", crawl_delay_robots(1.0))
    rotating = {"DOWNLOADER_MIDDLEWARES": {f"{HERE}.RotatingSlots": 610}}
    crawler = await _fast_site_first(slow, fast, True, rotating)
    assert crawler.engine is not None
    slots = crawler.engine.downloader.slots
    assert not any(slot.active for slot in slots.values())


class AfterThePause(RecordingSpider):
    """Requests its first URL; once an origin is paused (its 429 with
    Retry-After), puts all the others in the scheduler's queue, and half a
    second later (the pause lasts 2 s) notes how many requests each
    downloader slot counts active (``during``)."""

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.parse, errback=self.failed)
        politeness = politeness_of(self.crawler)
        engine = self.crawler.engine
        assert politeness is not None
        assert engine is not None
        while not politeness.paused:
            await sleep(0.01)
        for url in self.urls[1:]:
            engine.crawl(Request(url, callback=self.parse, errback=self.failed))
        await sleep(0.5)
        self.during = {k: len(s.active) for k, s in engine.downloader.slots.items()}


@coroutine_test
async def test_requests_waiting_for_a_pause_count_in_their_queue_slot(
    server: Server,
) -> None:
    """A site pauses the crawl (429, Retry-After: 2) and a component after
    RobotsMiddleware moves each request to a proxy's slot (RotatingSlots):
    its requests waiting for the pause in PacingMiddleware count in its
    host's slot too, the one DownloaderAwarePriorityQueue filed them under
    and reads (as for a Crawl-delay turn, above). They counted only in the
    proxies' slots: the queue saw the host's slot empty (0 here) and handed
    out the paused site's pages, which took every place."""
    server.route("/robots.txt", "User-agent: *\nDisallow:\n")
    server.route("/first", "slow down", status=429, headers={"Retry-After": "2"})
    urls = [server.url("/first")] + [server.url(f"/a{i}") for i in range(8)]
    crawler = await crawl(
        urls,
        {
            "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
            "CONCURRENT_REQUESTS": 4,
            "DOWNLOADER_MIDDLEWARES": {f"{HERE}.RotatingSlots": 610},
            "CLOSESPIDER_TIMEOUT": 6,
        },
        spidercls=AfterThePause,
    )
    during = crawler.spider.during  # type: ignore[union-attr]
    # The 4 places, each taken by a page waiting for the pause's end.
    assert during[server.host] == 4, during
    assert sum(n for key, n in during.items() if key.startswith("proxy")) == 4
    assert len(crawler.spider.crawled) == 8  # type: ignore[union-attr]


@pytest.mark.parametrize("pacing", [True, False])
@coroutine_test
async def test_an_origin_known_from_the_store_waits_in_its_slot(
    make_server: Callable[..., Server], tmp_path: Path, pacing: bool
) -> None:
    """The delayed site's robots.txt read from a SQLite store of an earlier
    run: no request of it has reached the downloader yet, so it has no
    slot. Its requests waiting for their turns count in a slot all the
    same, the queue hands out the other site's pages, which all arrive
    before the delayed site's second page. Its waiting requests were left
    out, no slot to count them in: they took every place, and the other
    site's pages came at the delayed site's pace."""
    slow, fast = make_server(), make_server()
    slow.route("/robots.txt", crawl_delay_robots(1.0))
    store = {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": str(tmp_path / "r.db")}
    await crawl([slow.url("/first")], store)
    crawler = await _fast_site_first(slow, fast, pacing, store)
    assert slow.count("/robots.txt") == 1  # the second run read the store
    assert crawler.engine is not None
    assert not crawler.engine.downloader.slots[slow.host].active
