"""The crawl closing while requests wait inside the package.

A request waits inside the package for its Crawl-delay turn, a Retry-After
pause, its origin's robots.txt or TDMRep file, or another worker's fetch of
one.  When the crawl closes, each wait ends (the close is not held for the
turns: Scrapy would download the requests its own slots queue), and each
request is dropped, counted in ``robots/cancelled``: never
judged from a fetch that did not happen (allowed, forbidden, or a file
stored as unreachable for the fleet).  Closed here by
``CLOSESPIDER_TIMEOUT``, seconds before the turns they wait for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, signals

from scrapy_rfc9309 import RobotsCancelled, politeness
from scrapy_rfc9309._closing import closing
from scrapy_rfc9309._compat import download, sleep
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.crawl_helpers import (
    Burst,
    RecordingSpider,
    crawl,
    make_crawler,
    stats,
)
from tests.support.server import Server
from tests.support.utils import FakeClock, coroutine_test

BURST = {"CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32}


def _cancelled(spider: Any) -> list[Any]:
    """What the spider's errback heard: a RobotsCancelled for each request."""
    errors = spider.errors
    assert all(isinstance(error.value, RobotsCancelled) for error in errors), errors
    return errors  # type: ignore[no-any-return]


@coroutine_test
async def test_the_requests_behind_a_cancelled_turn_leave_without_sleeping(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty pages under a Crawl-delay of 30 s: once the first sees the
    close, the nineteen waiting behind it at the origin's gate leave at
    once.  Each slept one more poll first (0.25 s each, one after the
    other: 5 s more of close, 25 s with CONCURRENT_REQUESTS = 100)."""
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 30\n")
    crawler = make_crawler({**BURST, "CLOSESPIDER_TIMEOUT": 1}, Burst)
    after_close: list[float] = []

    async def counting(seconds: float) -> None:
        if seconds > 0 and closing(crawler):
            after_close.append(seconds)
        await sleep(seconds)

    monkeypatch.setattr(politeness, "sleep", counting)
    await crawler.crawl_async(urls=[server.url(f"/{i}") for i in range(20)])
    assert [hit.path for hit in server.hits] == ["/robots.txt"]
    assert stats(crawler)["robots/cancelled"] == 20
    assert len(_cancelled(crawler.spider)) == 20
    assert after_close == []


class Later(RecordingSpider):
    """Its first page, then (0.3 s later, robots.txt's lifetime over by
    ``clock``) its second."""

    clock = FakeClock()

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.parse, errback=self.failed)
        await sleep(0.3)
        self.clock.now += 3 * 86400
        yield Request(self.urls[1], callback=self.parse, errback=self.failed)


@coroutine_test
async def test_a_robots_txt_cancelled_while_it_waits_for_its_turn_allows_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """robots.txt expired, fetched again, waits for its origin's turn
    (Crawl-delay 20 s) when the crawl closes: the page waiting for it is
    dropped.  It was fetched: the cancelled fetch counted as refused by a
    component, which ROBOTS_REFUSED = 'allow' made an origin without
    robots.txt, and the page, disallowed by the file, went out without its
    Crawl-delay."""
    monkeypatch.setattr(RobotsMiddleware, "clock", Later.clock)
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 20\nDisallow: /no\n")
    urls = [server.url("/a"), server.url("/no")]
    crawler = await crawl(urls, {**BURST, "CLOSESPIDER_TIMEOUT": 3}, Later)
    assert [hit.path for hit in server.hits] == ["/robots.txt"]
    counted = stats(crawler)
    # /a waiting for its turn, robots.txt for its own, /no for robots.txt.
    assert counted["robots/cancelled"] == 3
    assert counted["robots/outcome/parsed"] == 1
    assert "robots/refused" not in counted
    assert "robots/outcome/unavailable" not in counted
    assert len(_cancelled(crawler.spider)) == 2


@coroutine_test
async def test_pages_waiting_for_a_paused_robots_txt_are_not_forbidden(
    server: Server,
) -> None:
    """robots.txt answers 503 with Retry-After 30: its retry waits for the
    pause when the crawl closes.  The pages waiting for it are dropped as
    cancelled; they were counted forbidden (robots/forbidden/unreachable)
    with ROBOTS_REFUSED = 'disallow', and the spider heard RobotsDisallowed."""
    server.route("/robots.txt", "busy", status=503, headers={"Retry-After": "30"})
    settings = {
        **BURST,
        "RETRY_ENABLED": True,
        "CLOSESPIDER_TIMEOUT": 1,
        "ROBOTS_REFUSED": "disallow",
    }
    urls = [server.url(f"/{i}") for i in range(3)]
    crawler = await crawl(urls, settings, Burst)
    assert sum(server.count(f"/{i}") for i in range(3)) == 0
    counted = stats(crawler)
    assert "robots/forbidden" not in counted
    assert "robots/refused" not in counted
    # The retry of robots.txt and the three pages.
    assert counted["robots/cancelled"] == 4
    assert crawler.spider.dropped == {}  # type: ignore[attr-defined]
    assert len(_cancelled(crawler.spider)) == 3


@coroutine_test
async def test_a_cancelled_tdmrep_file_is_not_stored_as_unreachable(
    server: Server, tmp_path: Path
) -> None:
    """The TDMRep file's retry waits for a Retry-After pause when the crawl
    closes: nothing is stored for the fleet.  It was stored as unreachable
    (no TDMRep rules for ROBOTS_UNREACHABLE_LIFETIME, for every worker)."""
    path = str(tmp_path / "robots.sqlite3")
    server.route("/robots.txt", "User-agent: *\n")
    server.route(
        "/.well-known/tdmrep.json", "busy", status=503, headers={"Retry-After": "30"}
    )
    settings = {
        **BURST,
        "RETRY_ENABLED": True,
        "CLOSESPIDER_TIMEOUT": 1,
        "ROBOTS_PURPOSES": ["train-ai"],
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": path,
    }
    urls = [server.url(f"/{i}") for i in range(3)]
    crawler = await crawl(urls, settings, Burst)
    assert sum(server.count(f"/{i}") for i in range(3)) == 0
    counted = stats(crawler)
    assert "robots/tdm/file/unreachable" not in counted
    # The retry of the file and the three pages.
    assert counted["robots/cancelled"] == 4
    store = SQLiteStore(path)
    try:
        assert await store.get_record(server.url("/.well-known/tdmrep.json")) is None
    finally:
        await store.close()


@coroutine_test
async def test_a_wait_for_another_worker_s_fetch_ends_at_close(
    server: Server, tmp_path: Path
) -> None:
    """Another worker holds the lease of the origin's robots.txt (its fetch
    in flight, or the worker dead): the pages waiting for it are dropped at
    close.  The close waited for the lease (10 s here, 18 minutes with
    Scrapy's defaults: DOWNLOAD_TIMEOUT 180, two retries), then fetched
    robots.txt and the pages."""
    path = str(tmp_path / "robots.sqlite3")
    store = SQLiteStore(path)
    assert await store.acquire(server.url("/robots.txt"), 600)
    await store.close()
    settings = {
        **BURST,
        "CLOSESPIDER_TIMEOUT": 1,
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": path,
    }
    urls = [server.url(f"/{i}") for i in range(3)]
    crawler = await crawl(urls, settings, Burst)
    assert server.hits == []
    counted = stats(crawler)
    assert counted["robots/cancelled"] == 3
    assert "robots/store/lease_waits_expired" not in counted
    assert len(_cancelled(crawler.spider)) == 3


@coroutine_test
async def test_a_download_before_the_engine_starts_takes_its_turn(
    server: Server,
) -> None:
    """A component downloading a page from its ``spider_opened`` handler (a
    login, a configuration), before the engine starts: the page waits for
    its origin's Crawl-delay turn and is downloaded, then the crawl goes
    on.  It was dropped at once as "the spider closed", the engine not
    running yet read as closing."""
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 0.2\n")
    crawler = make_crawler(BURST)
    statuses: list[int] = []

    async def opened(spider: Any) -> None:
        response = await download(crawler, Request(server.url("/login")))
        statuses.append(response.status)

    crawler.signals.connect(opened, signal=signals.spider_opened)
    await crawler.crawl_async(urls=[server.url("/a")])
    assert statuses == [200]
    assert [hit.path for hit in server.hits] == ["/robots.txt", "/login", "/a"]
    assert "robots/cancelled" not in stats(crawler)
    assert crawler.spider.crawled == [server.url("/a")]  # type: ignore[union-attr]


@coroutine_test
async def test_a_robots_txt_is_not_retried_once_the_crawl_closes(
    server: Server,
) -> None:
    """robots.txt answers 503 after 1.5 s; the crawl closes meanwhile (at
    0.5 s): the answer is not retried (RETRY_TIMES 2), as a page's retry
    is not sent once the spider closes, and nothing is concluded from it:
    the page waiting for it is dropped as cancelled, the origin not
    recorded unreachable. The close waited for two more downloads of 1.5 s
    each, and judged the page by the last."""
    server.route("/robots.txt", "busy", status=503, delay=1.5)
    settings = {**BURST, "RETRY_ENABLED": True, "RETRY_TIMES": 2}
    crawler = await crawl([server.url("/a")], {**settings, "CLOSESPIDER_TIMEOUT": 0.5})
    assert [hit.path for hit in server.hits] == ["/robots.txt"]
    counted = stats(crawler)
    assert counted["robots/cancelled"] == 2  # robots.txt and /a
    assert "robots/outcome/unreachable" not in counted
    assert len(_cancelled(crawler.spider)) == 1


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        # Scrapy 2.13: no _stopping. Before start, during its engine_started
        # handlers (start_time set, not running yet), running, stopped.
        ({"running": False, "start_time": None, "_closewait": None}, False),
        ({"running": False, "start_time": 1.0, "_closewait": None}, False),
        ({"running": True, "start_time": 1.0, "_closewait": object()}, False),
        ({"running": False, "start_time": 1.0, "_closewait": object()}, True),
        # Scrapy 2.14 and newer say it.
        ({"running": False, "_stopping": False}, False),
        ({"running": True, "_stopping": False}, False),
        ({"running": False, "_stopping": True}, True),
        # Closing the spider, whatever the release.
        ({"running": True, "_stopping": False, "_slot": "closing"}, True),
    ],
)
def test_closing_on_every_release(engine: dict[str, Any], expected: bool) -> None:
    """Only a spider closing or an engine stopping is closing: an engine
    that has not started (or runs its engine_started handlers) is not."""
    slot = engine.pop("_slot", None)
    fake = SimpleNamespace(
        **engine, _slot=SimpleNamespace(closing=object() if slot else None)
    )
    assert closing(SimpleNamespace(engine=fake)) is expected  # type: ignore[arg-type]
