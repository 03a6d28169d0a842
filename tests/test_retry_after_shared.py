"""Retry-After pauses a worker learns from the rest of the fleet (issue 23
item 2), in real crawls of this process with a shared store (SQLite, Redis):
the pauses another worker held in the store, and the pause a retry carries.

The "other worker" is the store written to directly, or a request's meta as
RetryMiddleware copies it into the retry.  Arrivals are measured at the
server, from a moment taken before the pause began, from below only.  Store
calls are counted by :mod:`tests.support.redis_fleet`'s counting stores.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response

from scrapy_rfc9309.politeness import PAUSE_META, PAUSES_EVERY
from scrapy_rfc9309.stores import StoreError
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from scrapy_rfc9309.urls import robots_url
from tests.support.crawl_helpers import RecordingSpider, crawl, middleware, stats
from tests.support.redis_fleet import CountingSQLiteStore
from tests.support.server import Server
from tests.support.utils import coroutine_test, store_settings

#: Longer than ROBOTS_CRAWL_DELAY_MAX + LAG_MAX in the tests with a
#: Crawl-delay: a pause is not a poisoned turn.
PAUSE = 1.5
TOLERANCE = 0.02
LIMIT = 601.0

MakeServer = Callable[..., Server]


@pytest.fixture(params=["sqlite", "redis"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The settings of a shared store that counts its calls."""
    settings = store_settings(request.param, request, tmp_path)
    counting = "SQLite" if request.param == "sqlite" else "Redis"
    settings["ROBOTS_STORE"] = f"tests.support.redis_fleet.Counting{counting}Store"
    return settings


async def hold_elsewhere(settings: dict[str, Any], origin: str, seconds: float) -> None:
    """Hold ``origin`` in the store of ``settings``, as another worker does."""
    store: SQLiteStore | RedisStore
    if "SQLite" in settings["ROBOTS_STORE"]:
        store = SQLiteStore(settings["ROBOTS_STORE_URL"])
    else:
        store = RedisStore(
            settings["ROBOTS_STORE_URL"], prefix=settings["ROBOTS_STORE_PREFIX"]
        )
    await store.hold(origin, seconds, LIMIT)
    await store.close()


def arrivals(server: Server, since: float) -> list[float]:
    return sorted(moment - since for moment in server.times())


class HeldElsewhere(RecordingSpider):
    """Once the crawl is up, another worker holds the origin of the first
    URL for :data:`PAUSE` (``since``: a moment before), then the requests
    are made."""

    def __init__(self, store: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.since = 0.0

    async def start(self) -> AsyncIterator[Any]:
        self.since = time.monotonic()
        origin = robots_url(self.urls[0])
        assert origin is not None
        await hold_elsewhere(self.store, origin, PAUSE)
        async for request in super().start():
            yield request


@pytest.mark.parametrize("crawl_delay", [None, 0.1], ids=["none", "crawl-delay"])
@coroutine_test
async def test_a_worker_honours_a_pause_another_worker_held(
    server: Server, shared: dict[str, Any], crawl_delay: float | None
) -> None:
    robots = "User-agent: *\n"
    if crawl_delay:
        robots += f"Crawl-delay: {crawl_delay}\n"
    server.route("/robots.txt", robots)
    crawler = await crawl(
        [server.url(f"/{i}") for i in range(4)],
        {**shared, "ROBOTS_CRAWL_DELAY_MAX": 0.2},
        spidercls=HeldElsewhere,
        store=shared,
    )
    spider: HeldElsewhere = crawler.spider  # type: ignore[assignment]
    assert len(spider.crawled) == 4
    # Nothing reached the origin before the pause ended, robots.txt included.
    assert min(arrivals(server, spider.since)) >= PAUSE - TOLERANCE
    counted = stats(crawler, "robots/retry_after/")
    assert counted == {"robots/retry_after/fleet": 1}
    assert stats(crawler, "fleet/store/hold") == {}
    assert "robots/store/discarded_turns" not in stats(crawler)


@coroutine_test
async def test_reading_the_pauses_costs_a_store_call_per_interval(
    server: Server, shared: dict[str, Any]
) -> None:
    """An origin without a Crawl-delay: 40 pages, one read of the fleet's
    pauses per PAUSES_EVERY, not one per request."""
    server.route("/robots.txt", "User-agent: *\n")
    crawler = await crawl([server.url(f"/{i}") for i in range(40)], shared)
    assert len(crawler.spider.crawled) == 40  # type: ignore[union-attr]
    times = server.times()
    span = max(times) - min(times)
    reads = stats(crawler, "fleet/store/held").get("fleet/store/held", 0)
    assert 1 <= reads <= 2 + span / PAUSES_EVERY, (reads, span)
    assert stats(crawler, "fleet/store/reserve") == {}


class Retried(RecordingSpider):
    """Starts with a request as RetryMiddleware makes the retry of an answer
    with Retry-After, taken by this worker from the fleet's queue: its meta
    says until when (:data:`PAUSE` from ``since``) the origin is paused."""

    since = 0.0
    #: How the meta says it: as this version writes it, as a queue that
    #: stores JSON gives it back, as the version before wrote it.
    form = "tuple"

    async def start(self) -> AsyncIterator[Any]:
        self.since = time.monotonic()
        self.until = time.time() + PAUSE
        for url in self.urls:
            pause: Any = (robots_url(url), self.until)
            if self.form != "tuple":
                pause = list(pause) if self.form == "list" else self.until
            yield Request(
                url, callback=self.parse, dont_filter=True, meta={PAUSE_META: pause}
            )


@pytest.mark.parametrize("form", ["tuple", "list", "float"])
@coroutine_test
async def test_a_retry_carries_its_pause_to_the_worker_that_sends_it(
    server: Server,
    shared: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    # "float": a retry queued (JOBDIR, scrapy-redis) by the version before,
    # or by a worker not yet upgraded.
    monkeypatch.setattr(Retried, "form", form)
    server.route("/robots.txt", "User-agent: *\n")
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl([server.url("/retried")], shared, spidercls=Retried)
    spider: Retried = crawler.spider  # type: ignore[assignment]
    assert spider.crawled == [server.url("/retried")]
    (arrived,) = arrivals(server, spider.since)[1:]  # after robots.txt
    assert arrived >= PAUSE - TOLERANCE
    assert stats(crawler, "robots/retry_after/") == {"robots/retry_after/fleet": 1}
    said = [
        r.getMessage()
        for r in caplog.records
        if "paused by the fleet" in r.getMessage()
    ]
    assert len(said) == 1


class PassesMeta(RecordingSpider):
    """Follows the answer of its first URL to ``other`` with
    ``meta=response.meta``, as spiders pass a cookiejar or an item on."""

    other = ""

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.follow, dont_filter=True)

    def follow(self, response: Response) -> Iterator[Request]:
        yield Request(
            self.other, callback=self.parse, meta=response.meta, dont_filter=True
        )


@coroutine_test
async def test_a_pause_passed_on_to_another_sites_link_is_not_its_pause(
    make_server: Callable[..., Server],
) -> None:
    # The answer's meta carries its origin's pause (for its retry): a link to
    # another site taking that meta paused that site too, for the whole
    # Retry-After (up to ROBOTS_RETRY_AFTER_MAX), counted as the fleet's.
    busy, other = make_server(), make_server()
    busy.route("/robots.txt", "User-agent: *\n")
    other.route("/robots.txt", "User-agent: *\n")
    busy.route("/busy", "", status=503, headers={"Retry-After": "3"})
    PassesMeta.other = other.url("/page")
    crawler = await crawl(
        [busy.url("/busy")], {"HTTPERROR_ALLOW_ALL": True}, spidercls=PassesMeta
    )
    assert crawler.spider.crawled == [other.url("/page")]  # type: ignore[union-attr]
    assert stats(crawler, "robots/retry_after/") == {
        "robots/retry_after/paused": 1,
        "robots/retry_after/max_seconds": 3.0,
    }
    assert list(middleware(crawler).politeness.paused) == [busy.url("/robots.txt")]


class FailingHeld(CountingSQLiteStore):
    async def held(self, limit: float | None = None) -> dict[str, float]:
        await super().held(limit)
        raise StoreError("held: the disk is gone")


@coroutine_test
async def test_a_store_failing_to_answer_the_pauses_is_left(
    server: Server, tmp_path: Path
) -> None:
    server.route("/robots.txt", "User-agent: *\n")
    settings = {
        "ROBOTS_STORE": f"{__name__}.FailingHeld",
        "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
    }
    crawler = await crawl([server.url(f"/{i}") for i in range(3)], settings)
    assert len(crawler.spider.crawled) == 3  # type: ignore[union-attr]
    counted = stats(crawler, "")
    assert counted["robots/store/errors"] == 1
    # Asked once, then never again: the crawl goes on with memory alone.
    assert counted["fleet/store/held"] == 1
