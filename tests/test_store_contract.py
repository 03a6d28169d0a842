"""The store contract (scrapy_rfc9309.stores.contract) on every store the
package ships: each promise a test of its own, then the whole contract as a
user with a store of their own runs it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scrapy_rfc9309.stores.base import OutcomeStore
from scrapy_rfc9309.stores.contract import CHECKS, check_store, checks_for
from scrapy_rfc9309.stores.memory import MemoryStore
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import FILE_NAME, SQLiteStore
from tests.support.redis_server import RedisServer
from tests.support.utils import coroutine_test

KINDS: dict[str, type[OutcomeStore]] = {
    "memory": MemoryStore,
    "sqlite": SQLiteStore,
    "redis": RedisStore,
}


@pytest.fixture
def new_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], OutcomeStore]:
    """The store kind of the test, a new instance per call (for SQLite and
    Redis: another worker on the same file or prefix)."""
    kind = request.param
    if kind == "memory":
        return MemoryStore
    if kind == "sqlite":
        return lambda: SQLiteStore(tmp_path / FILE_NAME)
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix: str = request.getfixturevalue("redis_prefix")
    return lambda: RedisStore(server.url, prefix=prefix)


@pytest.mark.parametrize(
    ("new_store", "check"),
    [
        pytest.param(kind, name, id=f"{kind}-{name}")
        for kind, store in KINDS.items()
        for name in checks_for(store)
    ],
    indirect=["new_store"],
)
@coroutine_test
async def test_each_promise(new_store: Callable[[], OutcomeStore], check: str) -> None:
    await CHECKS[check](new_store)


@pytest.mark.parametrize("new_store", list(KINDS), indirect=True)
@coroutine_test
async def test_the_whole_contract(new_store: Callable[[], OutcomeStore]) -> None:
    await check_store(new_store)


def test_what_applies_to_each_store() -> None:
    # The memory store keeps no fleet turns and no records (the middleware
    # keeps those in memory itself); the shared stores keep both.
    assert set(CHECKS) - set(checks_for(MemoryStore)) == {
        "turns_are_taken_while_free",
        "turns_are_extended",
        "pauses_are_held",
        "records_round_trip",
    }
    assert checks_for(SQLiteStore) == checks_for(RedisStore) == list(CHECKS)


class _GreedyLeases(MemoryStore):
    """A store breaking one promise: every acquire wins."""

    async def acquire(self, origin: str, ttl: float) -> bool:
        return True


class _ForgetfulStore(MemoryStore):
    """A store breaking another: stale entries are dropped."""

    async def get(self, origin: str):  # type: ignore[no-untyped-def]
        outcome = await super().get(origin)
        if outcome is not None and outcome.expires_at <= self.clock():
            return None
        return outcome


@pytest.mark.parametrize(
    ("store", "broken"),
    [
        (_GreedyLeases, "leases_are_exclusive"),
        (_ForgetfulStore, "keeps_a_stale_outcome"),
    ],
)
@coroutine_test
async def test_a_store_breaking_a_promise_is_told_which(
    store: type[MemoryStore], broken: str
) -> None:
    with pytest.raises(AssertionError, match=f"^{broken}: "):
        await check_store(store)
