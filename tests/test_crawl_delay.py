"""Crawl-delay, measured where the downloader lets each request go.

Only lower bounds are checked: every gap between two requests leaving the
origin's downloader slot, robots.txt's included, is at least the delay (less
``TIMER_GRANULARITY``); a slow machine makes gaps longer, never shorter.
See ``tests.support.crawl_helpers.Departures`` for why the gaps are not measured at
the server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK

from scrapy_rfc9309 import RobotsCancelled
from scrapy_rfc9309._compat import download, sleep
from scrapy_rfc9309._gates import Moments
from tests.support.crawl_helpers import (
    TIMER_GRANULARITY,
    Burst,
    Departures,
    RecordingSpider,
    crawl,
    crawl_delay_robots,
    make_crawler,
    middleware,
    stats,
)
from tests.support.server import Server
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
DELAY = 0.3
BURST = {"CONCURRENT_REQUESTS_PER_DOMAIN": 8, "CONCURRENT_REQUESTS": 16}
PACING = "scrapy_rfc9309.politeness.PacingMiddleware"


def _assert_spaced(
    departures: Departures, crawler: Any, server: Server, delay: float = DELAY
) -> None:
    """robots.txt and every page of ``server`` left the downloader at least
    ``delay`` apart."""
    gaps = departures.gaps(crawler, key=server.host)
    assert len(gaps) == len(server.hits) - 1, gaps
    assert min(gaps) >= delay - TIMER_GRANULARITY, gaps


#: How much shorter a gap measured at the server (a thread of this
#: process) may be: the trip from the slot to the server varies a little.
TOLERANCE = 0.02


def _slot(crawler: Any, server: Server) -> Any:
    return crawler.engine.downloader.slots.get(server.host)


@coroutine_test
async def test_crawl_delay_spaces_requests(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(5)]
    # DOWNLOAD_DELAY_JITTER (0.5 by default) would make some gaps shorter.
    crawler = await crawl(urls, BURST)
    assert len(crawler.spider.crawled) == 5
    # robots.txt and the five pages, each page at least DELAY after the
    # one before.
    assert len(server.hits) == 6
    _assert_spaced(departures, crawler, server)
    assert stats(crawler)["robots/crawl_delay/origins"] == 1


@coroutine_test
async def test_crawl_delay_with_autothrottle(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(5)]
    crawler = await crawl(
        urls,
        {
            **BURST,
            "AUTOTHROTTLE_ENABLED": True,
            # AutoThrottle would set every slot's delay to at most 0.05 s
            # after each response.
            "AUTOTHROTTLE_START_DELAY": 0.01,
            "AUTOTHROTTLE_MAX_DELAY": 0.05,
            "AUTOTHROTTLE_TARGET_CONCURRENCY": 8,
        },
    )
    _assert_spaced(departures, crawler, server)


@coroutine_test
async def test_crawl_delay_with_a_lower_download_delay_and_jitter(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(5)]
    crawler = await crawl(
        urls, {**BURST, "DOWNLOAD_DELAY": 0.1, "DOWNLOAD_DELAY_JITTER": 0.9}
    )
    _assert_spaced(departures, crawler, server)


@coroutine_test
async def test_a_higher_download_delay_still_wins(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(0.1))
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(urls, {**BURST, "DOWNLOAD_DELAY": 0.4})
    slot = _slot(crawler, server)
    assert slot.delay == 0.4
    # Its jitter (0.5 by default) never brings a gap under the Crawl-delay.
    # Scrapy before 2.19 has no Slot.jitter: its boolean randomize_delay means ±50%.
    jitter = slot.jitter if hasattr(slot, "jitter") else 0.5 * slot.randomize_delay
    assert slot.delay * (1 - jitter) >= 0.1
    _assert_spaced(departures, crawler, server, 0.1)


class TwoBursts(RecordingSpider):
    """Three pages, then (once its downloader slot has been dropped for
    being idle, as Scrapy's slot GC does) three more."""

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls[:3]:
            yield Request(url, callback=self.parse_first, dont_filter=True)

    async def parse_first(self, response: Response) -> AsyncIterator[Any]:
        self.parse(response)
        if len(self.crawled) < 3:
            return
        downloader = self.crawler.engine.downloader
        # What _slot_gc needs to drop a slot: idle, its delay elapsed.
        await sleep(DELAY + 0.05)
        downloader._slot_gc(age=0)
        assert response.meta["download_slot"] not in downloader.slots
        for url in self.urls[3:]:
            yield Request(url, callback=self.parse, dont_filter=True)


@coroutine_test
async def test_crawl_delay_survives_the_slot_being_dropped(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(6)]
    crawler = await crawl(urls, BURST, spidercls=TwoBursts)
    assert len(crawler.spider.crawled) == 6
    # The slot the second burst left from is a new one.
    gaps = departures.gaps(crawler, key=server.host)
    assert len(gaps) == 2, gaps
    assert min(gaps) >= DELAY - TIMER_GRANULARITY, gaps


@coroutine_test
async def test_crawl_delay_over_the_maximum_is_clamped(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(100))
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(urls, {**BURST, "ROBOTS_CRAWL_DELAY_MAX": DELAY})
    assert len(crawler.spider.crawled) == 3
    # The pages came at the maximum's pace, not in 100 s each.
    _assert_spaced(departures, crawler, server)


@coroutine_test
async def test_crawl_delay_over_the_maximum_skips_the_origin(server: Server) -> None:
    server.route("/robots.txt", crawl_delay_robots(100))
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(
        urls,
        {**BURST, "ROBOTS_CRAWL_DELAY_MAX": 10, "ROBOTS_CRAWL_DELAY_OVER_MAX": "skip"},
    )
    assert crawler.spider.crawled == []
    assert {d.cause for d in crawler.spider.dropped.values()} == {"crawl_delay"}
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/forbidden": 3,
        "robots/forbidden/crawl_delay": 3,
    }


@coroutine_test
async def test_crawl_delay_off(server: Server) -> None:
    server.route("/robots.txt", crawl_delay_robots(5))
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(urls, {**BURST, "ROBOTS_CRAWL_DELAY": False})
    assert len(crawler.spider.crawled) == 3
    assert _slot(crawler, server).delay == 0
    assert "robots/crawl_delay/origins" not in stats(crawler)


@coroutine_test
async def test_crawl_delay_of_another_agent_not_applied(server: Server) -> None:
    robots = crawl_delay_robots(5, agent="OtherBot") + "\nUser-agent: *\n"
    server.route("/robots.txt", robots)
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(urls, BURST)
    assert len(crawler.spider.crawled) == 3
    assert _slot(crawler, server).delay == 0
    assert "robots/crawl_delay/origins" not in stats(crawler)


@coroutine_test
async def test_origins_sharing_a_slot_keep_their_own_delays(
    make_server: MakeServer,
) -> None:
    """Two origins of one host (one downloader slot): each keeps its own
    Crawl-delay, and the slower one's never slows the other (issue 23
    item 1; before, the slot took the larger delay for both)."""
    slow = make_server()
    # Same host, another port: another origin, the same downloader slot.
    fast = Server(slow.host)
    try:
        slow.route("/robots.txt", crawl_delay_robots(1.0))
        fast.route("/robots.txt", crawl_delay_robots(0.1))
        urls = [slow.url("/a"), slow.url("/b")] + [fast.url(f"/{i}") for i in range(5)]
        crawler = make_crawler(BURST)
        # When each request reached the slot, which sends it at once (its
        # delay is 0): one slot, so Departures could not tell the origins
        # apart, and at the server a request held up on the way for more
        # than the 0.1 s delay shortens the next gap (docs/crawl-delay.md,
        # "Late departures").
        reached: dict[str, list[float]] = {slow.url("/"): [], fast.url("/"): []}

        def record(request: Request) -> None:
            origin = request.url[: request.url.index("/", len("http://")) + 1]
            reached[origin].append(time.monotonic())

        crawler.signals.connect(record, signal=signals.request_reached_downloader)
        await crawler.crawl_async(urls=urls)
    finally:
        fast.close()
    assert len(crawler.spider.crawled) == 7
    assert crawler.engine is not None
    assert list(crawler.engine.downloader.slots) == [slow.host]
    assert _slot(crawler, slow).delay == 0
    assert min(slow.gaps()) >= 1.0 - TOLERANCE
    # robots.txt and the five pages: five gaps.
    gaps = [b - a for a, b in pairwise(reached[fast.url("/")])]
    assert len(gaps) == 5
    assert min(gaps) >= 0.1 - TIMER_GRANULARITY, gaps
    # Every page of the fast origin came before the slow one's second page,
    # a second after its first: the slot never held them a second apart.
    last_fast = max(fast.times())
    assert last_fast < max(slow.times("/b")), (fast.times(), slow.times())
    assert stats(crawler)["robots/crawl_delay/origins"] == 2


@coroutine_test
async def test_politeness_tables_bounded_by_memory_max_origins(
    make_server: MakeServer,
) -> None:
    """Issue 24 F8: with ROBOTS_MEMORY_MAX_ORIGINS = 5, 30 origins under a
    Crawl-delay leave at most 5 entries in each of Politeness's tables."""
    servers = [make_server() for _ in range(30)]
    for each in servers:
        each.route("/robots.txt", crawl_delay_robots(0.01))
    crawler = await crawl(
        [each.url("/p") for each in servers],
        {**BURST, "ROBOTS_MEMORY_MAX_ORIGINS": 5},
    )
    assert len(crawler.spider.crawled) == 30
    assert all(each.count("/p") == 1 for each in servers)
    politeness = middleware(crawler).politeness
    # Over the bound while turns were still ahead (never dropped then: the
    # origin's next page would skip its delay), by at most the few origins
    # set within one delay; back to it once they passed, as each setting
    # trims a few of the oldest.
    assert politeness.entries["origins"] <= 5 + 10
    # The crawl may end within one delay of its last page: wait until every
    # moment has passed (on a busy machine the last ones are still ahead).
    await sleep(max(0.0, max(politeness._free_at.values()) - time.monotonic()) + 0.01)
    for _ in range(10):
        politeness._free_at.trim()
    assert politeness.entries == {"origins": 5, "gates": 0}
    assert stats(crawler)["robots/crawl_delay/origins"] == 30


@coroutine_test
async def test_origins_over_memory_max_origins_keep_their_delays(
    make_server: MakeServer,
) -> None:
    """Six origins under a Crawl-delay, ROBOTS_MEMORY_MAX_ORIGINS = 2: an
    origin whose next turn is still ahead (or whose pages wait for it) is
    never dropped from the tables, so each page of every origin comes at
    least the delay after the one before, at the server, and each origin is
    counted once. They were dropped: pages came a few ms apart, and the
    origins counted again each time they were met."""
    servers = [make_server() for _ in range(6)]
    for each in servers:
        each.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [each.url(f"/p{i}") for i in range(3) for each in servers]
    crawler = await crawl(
        urls, {**BURST, "CONCURRENT_REQUESTS": 32, "ROBOTS_MEMORY_MAX_ORIGINS": 2}
    )
    assert len(crawler.spider.crawled) == 18
    for each in servers:
        pages = sorted(hit.time for hit in each.hits if hit.path != "/robots.txt")
        gaps = [later - earlier for earlier, later in pairwise(pages)]
        assert len(gaps) == 2
        assert min(gaps) >= DELAY - TOLERANCE, (each.host, gaps)
    assert stats(crawler)["robots/crawl_delay/origins"] == 6
    # Once their moments passed, the tables came back to the bound.
    assert middleware(crawler).politeness.entries["gates"] == 0


def test_a_paused_origin_is_kept_over_memory_max_origins() -> None:
    """A Retry-After pause still running is never dropped to make room
    (three origins paused, a bound of 2): it was, and the origin's requests
    waited for nothing; one whose pause has passed goes."""
    moments = Moments(2, set())
    now = time.monotonic()
    for origin in ("a", "b", "c"):
        moments.later(origin, now + 60)
    assert set(moments) == {"a", "b", "c"}
    moments.later("d", now - 1)  # passed: dropped
    assert set(moments) == {"a", "b", "c"}
    busy = Moments(1, {"a"})
    busy.later("a", now - 1)
    busy.later("b", now - 1)
    assert set(busy) == {"a"}  # requests wait at its gate


class BusySpider(RecordingSpider):
    """Each callback holds the event loop 0.4 s (CPU), longer than the
    Crawl-delay: the next page, waiting for its turn, wakes late."""

    def parse(self, response: Response) -> None:
        super().parse(response)
        until = time.process_time() + 0.4
        while time.process_time() < until:
            pass


@coroutine_test
async def test_late_departures_are_counted_and_move_the_next_back(
    server: Server, departures: Departures
) -> None:
    server.route("/robots.txt", crawl_delay_robots(0.2))
    urls = [server.url(f"/p{i}") for i in range(3)]
    crawler = await crawl(urls, BURST, spidercls=BusySpider)
    assert len(crawler.spider.crawled) == 3
    counted = stats(crawler)
    assert counted["robots/crawl_delay/late"] >= 1, counted
    assert counted["robots/crawl_delay/late_max"] > 0.01
    # Spaced from when each page really left, not from when it was due.
    _assert_spaced(departures, crawler, server, 0.2)


@pytest.mark.parametrize("pacing", [True, False])
@coroutine_test
async def test_requests_dropped_at_close_are_kept_in_jobdir(
    server: Server, tmp_path: Path, pacing: bool
) -> None:
    """A crawl paused in its JOBDIR (closed here by CLOSESPIDER_TIMEOUT)
    while its pages wait for a Crawl-delay of 20 s: they are put back in its
    queue, and the resumed crawl fetches them. They were lost: the queue
    had handed them to the downloader already. Without PacingMiddleware,
    RobotsMiddleware holds them itself."""
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 20\n")
    job = {**BURST, "JOBDIR": str(tmp_path / "job")}
    if not pacing:
        job["DOWNLOADER_MIDDLEWARES"] = {PACING: None}
    urls = [server.url(f"/{i}") for i in range(3)]
    paused = await crawl(urls, {**job, "CLOSESPIDER_TIMEOUT": 1}, spidercls=Burst)
    assert [server.count(f"/{i}") for i in range(3)] == [0, 0, 0]
    counted = stats(paused)
    assert counted["robots/cancelled"] == 3
    assert counted["robots/cancelled/requeued"] == 3
    # Put back, not failed: the spider's errback heard nothing of them.
    assert paused.spider.errors == []  # type: ignore[union-attr]
    server.route("/robots.txt", "User-agent: *\n")
    resumed = await crawl(urls, job, spidercls=Burst)
    assert [server.count(f"/{i}") for i in range(3)] == [1, 1, 1]
    assert sorted(resumed.spider.crawled) == urls  # type: ignore[union-attr]


@coroutine_test
async def test_requests_kept_in_jobdir_are_filtered_again_once_resumed(
    server: Server, tmp_path: Path
) -> None:
    """A request put back in the queue passes the dupefilter once, not for
    good: its redirects are filtered as the same crawl's without a pause
    (Scrapy's RedirectMiddleware copies dont_filter onto them; OffsiteMiddleware
    and the dupefilter let such a request through)."""
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 20\n")
    for number in range(3):
        server.route(f"/r{number}", status=301, headers={"Location": "/home"})
    job = {**BURST, "JOBDIR": str(tmp_path / "job")}
    urls = [server.url("/home")] + [server.url(f"/r{number}") for number in range(3)]
    paused = await crawl(urls, {**job, "CLOSESPIDER_TIMEOUT": 1}, spidercls=Burst)
    assert stats(paused)["robots/cancelled/requeued"] == 4
    server.route("/robots.txt", "User-agent: *\n")
    resumed = await crawl(urls, job, spidercls=Burst)
    assert server.count("/home") == 1
    # The start URLs, seen before the pause, and the three redirects.
    assert stats(resumed, "dupefilter/")["dupefilter/filtered"] == len(urls) + 3


class Downloads(RecordingSpider):
    """Downloads its URLs itself (engine.download_async) as a component
    does (callback=NO_CALLBACK: media pipelines), and records what came of
    each."""

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            request = Request(url, callback=NO_CALLBACK, dont_filter=True)
            try:
                await download(self.crawler, request)
            except RobotsCancelled as cancelled:
                self.errors.append(cancelled)
        return
        yield


@pytest.mark.parametrize(
    "settings",
    [
        # A component's download: no queue keeps it.
        {"JOBDIR": "job"},
        # Scrapy's scheduler keeps nothing with scrapy-redis's setting.
        {"SCHEDULER_PERSIST": True},
    ],
)
@coroutine_test
async def test_requests_no_queue_keeps_are_dropped_not_put_back(
    server: Server, tmp_path: Path, settings: dict[str, Any]
) -> None:
    """Put back in a queue that ends with the crawl (in memory), their
    errback told nothing, counted as requeued: they were lost unannounced."""
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 20\n")
    if "JOBDIR" in settings:
        settings = {"JOBDIR": str(tmp_path / "job")}
        spidercls: type[RecordingSpider] = Downloads
    else:
        spidercls = Burst
    urls = [server.url(f"/{number}") for number in range(3)]
    paused = await crawl(
        urls, {**BURST, **settings, "CLOSESPIDER_TIMEOUT": 1}, spidercls=spidercls
    )
    counted = stats(paused)
    assert "robots/cancelled/requeued" not in counted
    # Their errback (or caller) heard of them.
    errors = paused.spider.errors  # type: ignore[union-attr]
    assert errors
    assert len(errors) == counted["robots/cancelled"] or spidercls is Downloads
