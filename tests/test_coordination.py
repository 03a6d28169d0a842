"""The store coordination's contract (scrapy_rfc9309._coordination), without
a crawl: one run per key for any number of waiters, one fetch per origin
for two processes sharing a store, a store failing mid-crawl (one warning,
counted, memory goes on alone)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request

from scrapy_rfc9309._coordination import GuardedStore, Leases, SingleFlight, StoreGuard
from scrapy_rfc9309.middleware import RobotsDisallowed, RobotsMiddleware
from scrapy_rfc9309.outcome import Lifetimes, Outcome, parsed
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.stores.base import OutcomeStore, StoreError

from .support.crawl_helpers import make_crawler, stats
from .support.utils import STORE_ORIGIN, FakeClock, coroutine_test, stored_outcome

#: How long a test waits for awaitables that should all be done: a guard
#: against a hang, never a bound the test measures.
HANG = 60.0
WAITERS = 20


async def _all_done(futures: list[asyncio.Future[Any]]) -> list[Any]:
    _, pending = await asyncio.wait(futures, timeout=HANG)
    assert not pending, f"{len(pending)} of {len(futures)} waiters never answered"
    return [future.result() for future in futures]


@coroutine_test
async def test_many_waiters_of_one_key_share_one_run() -> None:
    flight: SingleFlight[int] = SingleFlight()
    runs: list[str] = []
    gate = asyncio.Event()

    async def produce(key: str) -> int:
        runs.append(key)
        await gate.wait()
        return len(runs)

    waiters = [
        asyncio.ensure_future(flight.run("a", lambda: produce("a")))
        for _ in range(WAITERS)
    ]
    other = asyncio.ensure_future(flight.run("b", lambda: produce("b")))
    await asyncio.sleep(0)
    assert "a" in flight
    assert "b" in flight
    gate.set()
    values = await _all_done([*waiters, other])
    # One run per key, whatever the number waiting: each waiter has the
    # value of its key's run.
    assert sorted(runs) == ["a", "b"]
    assert len(set(values[:WAITERS])) == 1
    assert "a" not in flight
    # Done, the next call runs again.
    assert await flight.run("a", lambda: produce("a")) == 3


@coroutine_test
async def test_a_cancelled_waiter_does_not_cancel_the_run() -> None:
    flight: SingleFlight[str] = SingleFlight()
    runs = 0
    gate = asyncio.Event()

    async def produce() -> str:
        nonlocal runs
        runs += 1
        await gate.wait()
        return "value"

    waiters = [asyncio.ensure_future(flight.run("k", produce)) for _ in range(3)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    await asyncio.sleep(0)
    gate.set()
    assert await _all_done(waiters[1:]) == ["value", "value"]
    assert waiters[0].cancelled()
    assert runs == 1


class FlakyStore(OutcomeStore):
    """A shared store keeping turns that answers ``works`` calls, then
    fails every call; counts the calls that reached it."""

    shared = True

    def __init__(self, works: int) -> None:
        self.works = works
        self.calls = 0
        self.closed = False
        self.outcomes: dict[str, Outcome] = {}

    def _call(self) -> None:
        self.calls += 1
        if self.calls > self.works:
            raise StoreError("connection lost")

    async def get(self, origin: str) -> Outcome | None:
        self._call()
        return self.outcomes.get(origin)

    async def put(self, origin: str, outcome: Outcome) -> None:
        self._call()
        self.outcomes[origin] = outcome

    async def acquire(self, origin: str, ttl: float) -> bool:
        self._call()
        return True

    async def release(self, origin: str) -> None:
        self._call()

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        self._call()
        return 0.0

    async def close(self) -> None:
        self.closed = True


@coroutine_test
async def test_a_store_failing_mid_crawl_warns_once_and_memory_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = make_crawler()
    store = FlakyStore(works=2)
    guarded = GuardedStore(crawler, store, FakeClock())
    assert guarded.fleet
    assert guarded.shared
    assert not guarded.failed
    outcome = stored_outcome()
    with caplog.at_level(logging.WARNING):
        await guarded.put(STORE_ORIGIN, outcome)
        assert await guarded.get(STORE_ORIGIN) == outcome
        # The third call fails: answered as by a store keeping nothing.
        assert await guarded.acquire(STORE_ORIGIN, 10.0) is False
        # The store is left alone from then on.
        assert await guarded.get(STORE_ORIGIN) is None
        assert await guarded.reserve(STORE_ORIGIN, 1.0, 10.0) is None
        assert await guarded.held(10.0) is None
        await guarded.put(STORE_ORIGIN, outcome)
        await guarded.release(STORE_ORIGIN)
    assert store.calls == 3
    assert guarded.store is None
    assert guarded.failed
    assert not guarded.shared
    assert stats(crawler)["robots/store/errors"] == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "The robots.txt store FlakyStore failed (connection lost); going on with"
        " the memory store alone for the rest of the crawl, Crawl-delays kept"
        " per process"
    ]
    # The memory store goes on.
    guarded.memory.store(STORE_ORIGIN, outcome)
    assert guarded.memory.entry(STORE_ORIGIN) is not None
    # A store that failed is not closed at the end; nothing else failed.
    await guarded.close()
    assert not store.closed
    assert stats(crawler)["robots/store/errors"] == 1


ROBOTS = "User-agent: *\nDisallow: /private\n"


class Fetches:
    """Stands for the fetcher of a middleware: counts the fetches, each
    held until the test opens ``gate``."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.origins: list[str] = []

    async def fetch(
        self, origin: str, previous: Outcome | None, *, via: Request | None = None
    ) -> Outcome:
        self.origins.append(origin)
        await self.gate.wait()
        return parsed(parse(ROBOTS), now=time.time(), lifetimes=Lifetimes())


def _middleware(settings: dict[str, Any], fetches: Fetches) -> RobotsMiddleware:
    middleware = RobotsMiddleware(make_crawler(settings))
    middleware.fetcher.fetch = fetches.fetch  # type: ignore[method-assign]
    return middleware


@coroutine_test
async def test_waiters_of_one_origin_cost_one_fetch() -> None:
    gate = asyncio.Event()
    fetches = Fetches(gate)
    middleware = _middleware({}, fetches)
    url = "http://example.com/page"
    waiters = [
        asyncio.ensure_future(middleware.outcome_for(url)) for _ in range(WAITERS)
    ]
    await asyncio.sleep(0)
    gate.set()
    outcomes = await _all_done(waiters)
    assert fetches.origins == ["http://example.com/robots.txt"]
    assert all(outcome is not None and outcome.kind == "parsed" for outcome in outcomes)
    assert stats(middleware.crawler)["robots/outcome/parsed"] == 1
    await middleware.stores.close()


@coroutine_test
async def test_two_processes_sharing_a_store_fetch_an_origin_once(
    tmp_path: Path,
) -> None:
    """Two middlewares (as two workers) on one SQLite file: the one that
    holds the lease fetches, the other waits for what it puts."""
    gate = asyncio.Event()
    fetches = Fetches(gate)
    settings = {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": str(tmp_path / "r.db")}
    first, second = _middleware(settings, fetches), _middleware(settings, fetches)
    url = "http://example.com/page"
    asked = [
        asyncio.ensure_future(middleware.process_request(Request(url)))
        for middleware in (first, second)
    ]
    # The first to take the lease fetches; the other waits for it.
    while not fetches.origins:
        await asyncio.sleep(0.01)
    gate.set()
    assert await _all_done(asked) == [None, None]
    assert fetches.origins == ["http://example.com/robots.txt"]
    for middleware in (first, second):
        assert stats(middleware.crawler)["robots/outcome/parsed"] == 1
        assert "robots/store/errors" not in stats(middleware.crawler)
        with pytest.raises(RobotsDisallowed):
            await middleware.process_request(Request("http://example.com/private"))
        await middleware.stores.close()


class LeaseStore(FlakyStore):
    """A shared store whose ``acquire`` answers as scripted (then ``True``),
    holding ``outcome`` from the ``put_after``-th ``get`` on; records the
    lease calls."""

    def __init__(self, acquired: list[bool], put_after: int | None = None) -> None:
        super().__init__(works=1_000)
        self.acquired = acquired
        self.put_after = put_after
        self.gets = 0
        self.leases: list[str] = []
        self.outcome = stored_outcome()

    async def get(self, origin: str) -> Outcome | None:
        self.gets += 1
        if self.put_after is not None and self.gets >= self.put_after:
            return self.outcome
        return None

    async def acquire(self, origin: str, ttl: float) -> bool:
        self.leases.append("acquire")
        return self.acquired.pop(0) if self.acquired else True

    async def release(self, origin: str) -> None:
        self.leases.append("release")


async def _take(store: LeaseStore) -> Outcome | bool:
    guarded = GuardedStore(make_crawler(), store, FakeClock())
    leases = Leases(guarded, ttl=10.0, wait=HANG)
    return await leases.take(STORE_ORIGIN, lambda: guarded.get(STORE_ORIGIN))


@coroutine_test
async def test_a_process_waiting_for_the_holder_takes_what_it_put() -> None:
    store = LeaseStore(acquired=[False, False, False], put_after=2)
    assert await _take(store) is store.outcome
    # Polled (a lookup, then the lease) until the holder put its outcome:
    # no fetch, no lease to give back.
    assert store.leases == ["acquire", "acquire"]


@coroutine_test
async def test_a_lease_its_holder_gave_up_is_taken_over() -> None:
    store = LeaseStore(acquired=[False, False, True])
    assert await _take(store) is True
    assert store.leases == ["acquire", "acquire", "acquire"]
    # Looked up once more after taking it over, before fetching.
    assert store.gets == 3


@coroutine_test
async def test_an_outcome_put_just_before_the_lease_is_taken_is_used() -> None:
    store = LeaseStore(acquired=[True], put_after=1)
    assert await _take(store) is store.outcome
    assert store.leases == ["acquire", "release"]


@coroutine_test
async def test_no_lease_without_a_shared_store() -> None:
    store = LeaseStore(acquired=[True])
    store.shared = False
    assert await _take(store) is False
    assert store.leases == []


TDM_WITHOUT = "TDMRep files are kept in memory alone for the rest of the crawl"


@coroutine_test
async def test_a_store_without_records_is_left_alone_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """TdmMiddleware's guard: a store that keeps no records (the base
    class's NotImplementedError) is no failure: not counted, no warning,
    and it is closed at the end as any store."""
    crawler = make_crawler()
    store = FlakyStore(works=1_000)
    guard = StoreGuard(crawler, store, TDM_WITHOUT)
    with caplog.at_level(logging.WARNING):
        assert await guard.get_record("key") is None
        await guard.put_record("key", "value", 0.0)
    assert guard.store is None
    assert not guard.failed
    assert store.calls == 0
    assert "robots/store/errors" not in stats(crawler)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    await guard.close()
    assert store.closed


class RecordStore(FlakyStore):
    async def get_record(self, key: str) -> str | None:
        self._call()
        return None


@coroutine_test
async def test_a_records_store_failing_warns_once_with_what_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = make_crawler()
    store = RecordStore(works=1)
    guard = StoreGuard(crawler, store, TDM_WITHOUT)
    with caplog.at_level(logging.WARNING):
        assert await guard.get_record("key") is None
        assert await guard.get_record("key") is None
        assert await guard.acquire("key", 10.0) is False
        assert await guard.get_record("key") is None
    assert store.calls == 2
    assert guard.failed
    assert stats(crawler)["robots/store/errors"] == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"The robots.txt store RecordStore failed (connection lost); {TDM_WITHOUT}"
    ]
    await guard.close()
    assert not store.closed


@coroutine_test
async def test_a_lease_held_past_the_wait_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A holder slower than its lease, or a lease key damaged by hand that
    # never ends: the waiter fetches itself, and says so once.
    store = LeaseStore(acquired=[False] * 1_000)
    crawler = make_crawler()
    guarded = GuardedStore(crawler, store, FakeClock())
    leases = Leases(guarded, ttl=10.0, wait=0.2)
    with caplog.at_level(logging.WARNING):
        assert (
            await leases.take(STORE_ORIGIN, lambda: guarded.get(STORE_ORIGIN)) is False
        )
    (said,) = [r.getMessage() for r in caplog.records if "lease" in r.getMessage()]
    assert f"another process's fetch of {STORE_ORIGIN}" in said
    assert crawler.stats.get_value("robots/store/lease_waits_expired") == 1  # type: ignore[union-attr]


@coroutine_test
async def test_a_waiter_waits_for_the_worker_that_took_a_dead_holders_lease(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The holder died: once its lease ends (within the wait, which is its
    # ttl), another waiter takes it over and fetches.  This one, looking
    # after 0.05, 0.15, 0.35, 0.75 and 1.55 s, still finds the lease held at
    # the end of its wait (0.5 s): it waits for that fetch (put before its
    # fifth look) rather than fetch too.
    store = LeaseStore(acquired=[False] * 1_000, put_after=5)
    crawler = make_crawler()
    guarded = GuardedStore(crawler, store, FakeClock())
    leases = Leases(guarded, ttl=0.5, wait=0.5)
    with caplog.at_level(logging.WARNING):
        took = await leases.take(STORE_ORIGIN, lambda: guarded.get(STORE_ORIGIN))
    assert took == store.outcome
    assert store.gets == 5
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "robots/store/lease_waits_expired" not in stats(crawler)


@pytest.mark.parametrize(("took", "said"), [(9.0, False), (11.0, True)])
@coroutine_test
async def test_a_fetch_that_outlived_its_lease_is_said(
    caplog: pytest.LogCaptureFixture, took: float, said: bool
) -> None:
    # A slow redirect chain or a long Retry-After pause: the lease ran out
    # while this process fetched, so another one may have fetched too.
    store = LeaseStore(acquired=[True])
    crawler = make_crawler()
    guarded = GuardedStore(crawler, store, FakeClock())
    clock = FakeClock(100.0)
    leases = Leases(guarded, ttl=10.0, wait=10.0, clock=clock)
    with caplog.at_level(logging.WARNING):
        assert await leases.take(STORE_ORIGIN, lambda: guarded.get(STORE_ORIGIN))
        clock.now += took
        await leases.release(STORE_ORIGIN)
    assert store.leases == ["acquire", "release"]
    warnings = [r.getMessage() for r in caplog.records if "lease" in r.getMessage()]
    assert bool(warnings) is said
    assert stats(crawler).get("robots/store/leases_outlived", 0) == int(said)
    if said:
        assert warnings == [
            f"Fetching {STORE_ORIGIN} took 11 s, longer than its lease (10 s):"
            " another process may have fetched it too"
        ]
