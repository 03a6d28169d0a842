"""Retry-After pauses in the shared stores (issue 23 item 2, across the
fleet): :meth:`~scrapy_rfc9309.stores.base.OutcomeStore.hold` writes a pause
into the origin's turn record and lists it for
:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.held`.

Each test runs on the SQLite store and on the Redis store alike; what is
checked is what the stores answer and keep, never how long a call took.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.politeness import LAG_MAX, keeps_extends, keeps_pauses
from scrapy_rfc9309.stores.base import DISCARDED_TURNS, OutcomeStore
from scrapy_rfc9309.stores.memory import MemoryStore
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.redis_server import RedisServer
from tests.support.utils import STORE_ORIGIN, coroutine_test

ORIGIN = STORE_ORIGIN
OTHER = "http://other.example/robots.txt"
#: The widened limit of a worker with the default maxima: a pause may be as
#: long as ROBOTS_RETRY_AFTER_MAX (600 s), longer than ROBOTS_CRAWL_DELAY_MAX.
LIMIT = max(30.0, 600.0) + LAG_MAX
#: The limit before pauses were shared: ROBOTS_CRAWL_DELAY_MAX + LAG_MAX.
OLD_LIMIT = 30.0 + LAG_MAX
TEN_YEARS = 10 * 365 * 86400.0


class Backend:
    """A store of one kind, and a way to write into it by hand as another
    program could."""

    def __init__(self, new: Callable[[Crawler | None], Any], poke: Any) -> None:
        self.crawler = get_crawler()
        self._new = new
        self.poke: Callable[[str, str, float], None] = poke
        self.stores: list[Any] = []

    def store(self) -> Any:
        store = self._new(self.crawler)
        self.stores.append(store)
        return store

    def discarded(self) -> int:
        assert self.crawler.stats is not None
        return int(self.crawler.stats.get_value(DISCARDED_TURNS, 0))

    async def close(self) -> None:
        for store in self.stores:
            await store.close()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        db = tmp_path / "robots.sqlite3"

        def poke_sqlite(table: str, origin: str, ahead: float) -> None:
            column = "next_free" if table == "turns" else "ends_at"
            connection = sqlite3.connect(db, isolation_level=None)
            try:
                connection.execute(
                    f"INSERT OR REPLACE INTO {table} (origin, {column}) VALUES (?, ?)",
                    (origin, time.time() + ahead),
                )
            finally:
                connection.close()

        yield Backend(lambda crawler: SQLiteStore(db, crawler=crawler), poke_sqlite)
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix: str = request.getfixturevalue("redis_prefix")
    client = redis.Redis.from_url(server.url)

    def poke_redis(table: str, origin: str, ahead: float) -> None:
        moment = f"{(time.time() + ahead) * 1_000_000:.0f}"
        if table == "turns":
            client.set(f"{prefix}turn:{origin}", moment)
        else:
            client.zadd(f"{prefix}holds", {origin: moment})

    yield Backend(
        lambda crawler: RedisStore(server.url, prefix=prefix, crawler=crawler),
        poke_redis,
    )
    client.close()


@coroutine_test
async def test_a_hold_moves_the_next_turn_to_its_end(backend: Backend) -> None:
    store, other_worker = backend.store(), backend.store()
    assert await store.reserve(ORIGIN, 0.2, LIMIT) == 0.0
    await store.hold(ORIGIN, 5.0, LIMIT)
    # Every worker's next turn waits for the pause, not for the Crawl-delay.
    wait = await other_worker.reserve(ORIGIN, 0.2, LIMIT)
    assert 4.0 < wait <= 5.0, wait
    # Nothing was taken: asked again, the same pause.
    assert 4.0 < await store.reserve(ORIGIN, 0.2, LIMIT) <= wait
    held = await other_worker.held(LIMIT)
    assert list(held) == [ORIGIN]
    assert 4.0 < held[ORIGIN] <= 5.0
    # Another origin is neither held nor listed.
    assert await store.reserve(OTHER, 0.2, LIMIT) == 0.0
    assert backend.discarded() == 0
    await backend.close()


@coroutine_test
async def test_a_hold_never_moves_a_turn_or_a_pause_earlier(backend: Backend) -> None:
    store = backend.store()
    # A turn further ahead than the pause (a Crawl-delay of 20 s).
    assert await store.reserve(ORIGIN, 20.0, LIMIT) == 0.0
    await store.hold(ORIGIN, 2.0, LIMIT)
    assert 19.0 < await store.reserve(ORIGIN, 0.2, LIMIT) <= 20.0
    # A longer pause, then a shorter one: the longer one stands.
    await store.hold(OTHER, 30.0, LIMIT)
    await store.hold(OTHER, 1.0, LIMIT)
    assert 29.0 < await store.reserve(OTHER, 0.2, LIMIT) <= 30.0
    held = await store.held(LIMIT)
    assert 29.0 < held[OTHER] <= 30.0
    assert 1.0 < held[ORIGIN] <= 2.0
    await backend.close()


@coroutine_test
async def test_a_pause_longer_than_the_crawl_delay_maximum_is_kept(
    backend: Backend,
) -> None:
    """A pause of 300 s: beyond ROBOTS_CRAWL_DELAY_MAX + LAG_MAX, within
    ROBOTS_RETRY_AFTER_MAX + LAG_MAX, the widened limit."""
    store, other_worker = backend.store(), backend.store()
    await store.hold(ORIGIN, 300.0, LIMIT)
    assert 299.0 < await other_worker.reserve(ORIGIN, 0.5, LIMIT) <= 300.0
    assert 299.0 < (await other_worker.held(LIMIT))[ORIGIN] <= 300.0
    assert backend.discarded() == 0
    # Under the old limit the same pause was taken for poison.
    assert await other_worker.reserve(ORIGIN, 0.5, OLD_LIMIT) == 0.0
    assert backend.discarded() == 1
    await backend.close()


@pytest.mark.parametrize("table", ["turns", "holds"])
@coroutine_test
async def test_a_pause_beyond_the_widened_limit_is_discarded(
    backend: Backend, table: str
) -> None:
    store = backend.store()
    await store.held(LIMIT)  # the SQLite tables exist from here on
    backend.poke(table, ORIGIN, TEN_YEARS)
    if table == "turns":
        # A turn of 5 s: the next ask, however late a busy machine makes
        # it, is still within it.
        assert await store.reserve(ORIGIN, 5.0, LIMIT) == 0.0
        assert 4.0 < await store.reserve(ORIGIN, 5.0, LIMIT) <= 5.0
    else:
        assert await store.held(LIMIT) == {}
        # Removed, not only left out: counted once.
        assert await store.held(LIMIT) == {}
    assert backend.discarded() == 1
    await backend.close()


@coroutine_test
async def test_a_hold_replaces_a_poisoned_turn_and_pause(backend: Backend) -> None:
    store = backend.store()
    await store.held(LIMIT)
    backend.poke("turns", ORIGIN, TEN_YEARS)
    backend.poke("holds", ORIGIN, TEN_YEARS)
    await store.hold(ORIGIN, 2.0, LIMIT)
    assert 1.0 < await store.reserve(ORIGIN, 0.5, LIMIT) <= 2.0
    assert 1.0 < (await store.held(LIMIT))[ORIGIN] <= 2.0
    # The turn's poison was discarded by hold, the listing's replaced.
    assert backend.discarded() == 1
    await backend.close()


@coroutine_test
async def test_a_pause_ends_on_its_own(backend: Backend) -> None:
    store = backend.store()
    # A second: still listed when asked next, however late (within that) a
    # busy machine makes the ask.
    await store.hold(ORIGIN, 1.0, LIMIT)
    assert ORIGIN in await store.held(LIMIT)
    await asyncio.sleep(1.1)
    assert await store.held(LIMIT) == {}
    assert await store.reserve(ORIGIN, 0.5, LIMIT) == 0.0
    await backend.close()


@coroutine_test
async def test_many_workers_holding_at_once_keep_the_longest(backend: Backend) -> None:
    stores = [backend.store() for _ in range(5)]
    await asyncio.gather(
        *(store.hold(ORIGIN, 10.0 * (i + 1), LIMIT) for i, store in enumerate(stores))
    )
    assert 49.0 < await stores[0].reserve(ORIGIN, 0.5, LIMIT) <= 50.0
    assert 49.0 < (await stores[1].held(LIMIT))[ORIGIN] <= 50.0
    await backend.close()


class _OwnStore(OutcomeStore):
    """A user's shared store written before pauses were shared."""

    shared = True

    async def get(self, origin: str) -> None:
        return None

    async def put(self, origin: str, outcome: Any) -> None:
        pass

    async def acquire(self, origin: str, ttl: float) -> bool:
        return True

    async def release(self, origin: str) -> None:
        pass

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        return 0.0


def test_which_stores_share_pauses(tmp_path: Path) -> None:
    assert keeps_pauses(SQLiteStore(tmp_path / "robots.sqlite3"))
    assert keeps_pauses(RedisStore("redis://127.0.0.1:1"))
    # The memory store is one process's: its pauses are the process's own.
    assert not keeps_pauses(MemoryStore.from_crawler(get_crawler()))
    # A store without hold() keeps working, each process pausing alone.
    assert not keeps_pauses(_OwnStore())
    assert not keeps_pauses(None)


# extend(): the end of a fetch moves the origin's turn (issue 23 item 3),
# never earlier, and is not a pause.


@coroutine_test
async def test_an_extend_moves_the_next_turn_and_lists_no_pause(
    backend: Backend,
) -> None:
    store, other_worker = backend.store(), backend.store()
    assert await store.reserve(ORIGIN, 0.2, LIMIT) == 0.0
    await store.extend(ORIGIN, 5.0, LIMIT)
    wait = await other_worker.reserve(ORIGIN, 0.2, LIMIT)
    assert 4.0 < wait <= 5.0, wait
    # A turn moved, not a pause: no worker lists the origin as paused.
    assert await other_worker.held(LIMIT) == {}
    # A free origin is given a turn record by it too.
    await store.extend(OTHER, 3.0, LIMIT)
    assert 2.0 < await other_worker.reserve(OTHER, 0.2, LIMIT) <= 3.0
    assert await store.held(LIMIT) == {}
    assert backend.discarded() == 0
    await backend.close()


@coroutine_test
async def test_an_extend_never_moves_a_turn_or_a_pause_earlier(
    backend: Backend,
) -> None:
    store = backend.store()
    assert await store.reserve(ORIGIN, 20.0, LIMIT) == 0.0
    await store.extend(ORIGIN, 2.0, LIMIT)
    assert 19.0 < await store.reserve(ORIGIN, 0.2, LIMIT) <= 20.0
    # A pause stands, and stays listed, whatever a shorter extend says.
    await store.hold(OTHER, 30.0, LIMIT)
    await store.extend(OTHER, 1.0, LIMIT)
    assert 29.0 < await store.reserve(OTHER, 0.2, LIMIT) <= 30.0
    assert 29.0 < (await store.held(LIMIT))[OTHER] <= 30.0
    await backend.close()


@coroutine_test
async def test_an_extend_replaces_a_poisoned_turn(backend: Backend) -> None:
    store = backend.store()
    await store.held(LIMIT)  # the SQLite tables exist from here on
    backend.poke("turns", ORIGIN, TEN_YEARS)
    await store.extend(ORIGIN, 2.0, LIMIT)
    assert 1.0 < await store.reserve(ORIGIN, 0.5, LIMIT) <= 2.0
    assert backend.discarded() == 1
    assert await store.held(LIMIT) == {}
    await backend.close()


def test_which_stores_extend_turns(tmp_path: Path) -> None:
    assert keeps_extends(SQLiteStore(tmp_path / "robots.sqlite3"))
    assert keeps_extends(RedisStore("redis://127.0.0.1:1"))
    assert not keeps_extends(MemoryStore.from_crawler(get_crawler()))
    # A store without extend() keeps working: turns from departures only.
    assert not keeps_extends(_OwnStore())
    assert not keeps_extends(None)
