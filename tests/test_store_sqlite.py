from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.test import get_crawler
from twisted.internet.defer import DeferredList

from scrapy_rfc9309._compat import is_asyncio_available, sleep
from scrapy_rfc9309.outcome import (
    FORMAT,
)
from scrapy_rfc9309.stores import StoreError
from scrapy_rfc9309.stores._codec import encode
from scrapy_rfc9309.stores.sqlite import FILE_NAME, SQLiteStore, sqlite_path
from tests.support.utils import STORE_ORIGIN, FakeClock, coroutine_test, stored_outcome

ORIGIN = STORE_ORIGIN
outcome = stored_outcome

_T = TypeVar("_T")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store" / FILE_NAME


async def gather(*coros: Coroutine[Any, Any, _T]) -> list[_T]:
    """``asyncio.gather`` that also runs under a reactor without asyncio,
    where the store hands its calls to the reactor's threads."""
    if is_asyncio_available():
        return await asyncio.gather(*coros)
    results = await maybe_deferred_to_future(
        DeferredList(
            [deferred_from_coro(coro) for coro in coros], fireOnOneErrback=True
        )
    )
    return [result for _, result in results]


def raw(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(db, isolation_level=None)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


@coroutine_test
async def test_survives_a_restart(db: Path) -> None:
    first = SQLiteStore(db)
    value = outcome()
    await first.put(ORIGIN, value)
    await first.close()
    second = SQLiteStore(db)
    assert await second.get(ORIGIN) == value
    await second.close()


#: A step of the fake clock that sums with its times exactly.
TICK = 2**-10


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(SQLiteStore, "clock", fake)
    return fake


@coroutine_test
async def test_kept_until_retain_until_then_gone(db: Path, clock: FakeClock) -> None:
    store = SQLiteStore(db)
    await store.put(ORIGIN, outcome(0.25, now=clock.now))
    # Binary fractions: the sums are exact, so the last instant is tested.
    clock.now += 0.25 - TICK
    assert await store.get(ORIGIN) is not None
    clock.now += TICK
    assert await store.get(ORIGIN) is None
    await store.close()
    # Reopening purges what is past its retain_until.
    assert raw(db, "SELECT count(*) FROM outcomes") == [(1,)]
    reopened = SQLiteStore(db)
    assert await reopened.get(ORIGIN) is None
    assert raw(db, "SELECT count(*) FROM outcomes") == [(0,)]
    await reopened.close()


@coroutine_test
async def test_corrupt_entry_is_missing(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(db)
    await store.put(ORIGIN, outcome())
    raw(db, "UPDATE outcomes SET outcome = ?", '{"format": 1, "kind": "par')
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        assert await store.get(ORIGIN) is None
    assert "Ignoring the stored outcome of http://example.com/robots.txt" in caplog.text
    # The origin can be stored again.
    value = outcome()
    await store.put(ORIGIN, value)
    assert await store.get(ORIGIN) == value
    await store.close()


@pytest.mark.parametrize(
    "data",
    [
        "null",
        "[]",
        '"text"',
        '{"format": 1, "kind": "par',
        "{}",
        '{"format": 1}',
        '{"format": 1, "kind": "parsed", "fetched_at": 0, "expires_at": 0,'
        ' "retain_until": 0}',
        '{"format": 1, "kind": "other", "fetched_at": 0, "expires_at": 0,'
        ' "retain_until": 0}',
        '{"format": 1, "kind": "unavailable", "fetched_at": "x", "expires_at": 0,'
        ' "retain_until": 0}',
        '{"format": 1, "kind": "parsed", "fetched_at": 0, "expires_at": 0,'
        ' "retain_until": 0, "document": 7}',
        "[" * 100_000 + "]" * 100_000,
        b"{\xff}",
        b"",
        42,
    ],
)
@coroutine_test
async def test_undecodable_entries_are_missing(db: Path, data: object) -> None:
    store = SQLiteStore(db)
    await store.put(ORIGIN, outcome())
    raw(db, "UPDATE outcomes SET outcome = ?", data)
    assert await store.get(ORIGIN) is None
    await store.close()


@coroutine_test
async def test_text_that_is_not_utf8_is_missing(db: Path) -> None:
    store = SQLiteStore(db)
    await store.put(ORIGIN, outcome())
    raw(db, "UPDATE outcomes SET outcome = CAST(x'7bff7d' AS TEXT)")
    assert await store.get(ORIGIN) is None
    await store.close()


@coroutine_test
async def test_unknown_format_version_is_missing(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(db)
    future = outcome().to_dict()
    future["format"] = FORMAT + 1
    await store.put(ORIGIN, outcome())
    raw(db, "UPDATE outcomes SET outcome = ?", json.dumps(future))
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        assert await store.get(ORIGIN) is None
    assert "unsupported outcome format" in caplog.text
    await store.close()


@coroutine_test
async def test_an_entry_without_the_body_hash_still_reads(db: Path) -> None:
    # Entries written before the hash was kept (or by such a worker).
    store = SQLiteStore(db)
    value = outcome()
    older = value.to_dict()
    del older["body_sha256"]
    await store.put(ORIGIN, value)
    raw(db, "UPDATE outcomes SET outcome = ?", json.dumps(older))
    assert await store.get(ORIGIN) == replace(value, body_sha256=None)
    await store.close()


@coroutine_test
async def test_stored_as_the_outcome_json(db: Path) -> None:
    store = SQLiteStore(db)
    value = outcome()
    await store.put(ORIGIN, value)
    await store.close()
    [(data, retain_until)] = raw(db, "SELECT outcome, retain_until FROM outcomes")
    assert data == encode(value)
    assert retain_until == value.retain_until


# Leases


@coroutine_test
async def test_lease_expires(db: Path, clock: FakeClock) -> None:
    a, b = SQLiteStore(db), SQLiteStore(db)
    assert await a.acquire(ORIGIN, 0.25)
    clock.now += 0.25 - TICK
    assert not await b.acquire(ORIGIN, 30)
    clock.now += TICK
    assert await b.acquire(ORIGIN, 30)
    await a.close()
    await b.close()


@coroutine_test
async def test_release_after_expiry_keeps_the_new_holder(
    db: Path, clock: FakeClock
) -> None:
    a, b, c = SQLiteStore(db), SQLiteStore(db), SQLiteStore(db)
    assert await a.acquire(ORIGIN, 0.25)
    clock.now += 0.25
    assert await b.acquire(ORIGIN, 30)
    await a.release(ORIGIN)
    assert not await c.acquire(ORIGIN, 30)
    await b.release(ORIGIN)
    assert await c.acquire(ORIGIN, 30)
    for store in (a, b, c):
        await store.close()


# Crawl-delay turns


def next_free(db: Path) -> float:
    ((moment,),) = raw(db, "SELECT next_free FROM turns WHERE origin = ?", ORIGIN)
    assert isinstance(moment, float)
    return moment


@pytest.mark.parametrize("stored", [10 * 365 * 86400.0, "soon", float("inf")])
@coroutine_test
async def test_a_turn_further_ahead_than_the_limit_is_replaced(
    db: Path, stored: float | str
) -> None:
    store = SQLiteStore(db)
    await store.reserve(ORIGIN, 0.5)
    value = time.time() + stored if isinstance(stored, float) else stored
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE turns SET next_free = ?", (value,))
    # Beyond the limit (or not a moment at all): replaced and taken, the
    # next turn 5 s on (within a second of the check on a busy machine).
    assert await store.reserve(ORIGIN, 5.0, limit=30) == 0.0
    assert time.time() + 4 < next_free(db) <= time.time() + 5
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE turns SET next_free = ?", (time.time() + 20,))
    # Within it: trusted.
    assert 19 < await store.reserve(ORIGIN, 0.5, limit=30) <= 20
    await store.close()


@coroutine_test
async def test_a_past_turn_changes_nothing_and_is_purged(db: Path) -> None:
    store = SQLiteStore(db)
    await store.reserve(ORIGIN, 0.1)
    await sleep(0.15)
    assert await store.reserve(ORIGIN, 0.1) == 0.0
    await store.close()
    await sleep(0.15)
    # Opening the file purges turns whose moment has passed.
    store = SQLiteStore(db)
    await store.get(ORIGIN)
    assert raw(db, "SELECT * FROM turns") == []
    await store.close()


@pytest.mark.parametrize("writer", ["put_record", "hold", "extend"])
@coroutine_test
async def test_every_writer_counts_toward_the_purge(
    db: Path, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fleet worker under a Crawl-delay writes mostly turns' extensions and
    # holds: the purge must not wait for the next open of the file.
    monkeypatch.setattr("scrapy_rfc9309.stores.sqlite._PURGE_EVERY", 3)
    store = SQLiteStore(db)
    await store.get(ORIGIN)
    past = time.time() - 1
    with sqlite3.connect(db, isolation_level=None) as connection:
        connection.execute("INSERT INTO records VALUES ('old', 'x', ?)", (past,))
    for number in range(3):
        if writer == "put_record":
            await store.put_record(f"k{number}", "v", time.time() + 60)
        else:
            await getattr(store, writer)(ORIGIN, 5.0, 30.0)
    assert raw(db, "SELECT key FROM records WHERE key = 'old'") == []
    await store.close()


# Failures and configuration


@coroutine_test
async def test_unwritable_location_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = SQLiteStore(blocker / FILE_NAME)
    with pytest.raises(StoreError, match="SQLite store"):
        await store.get(ORIGIN)
    with pytest.raises(StoreError):
        await store.put(ORIGIN, outcome())
    with pytest.raises(StoreError):
        await store.acquire(ORIGIN, 30)
    with pytest.raises(StoreError):
        await store.reserve(ORIGIN, 1.0)
    await store.close()


@coroutine_test
async def test_not_a_database_raises_store_error(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a SQLite database, just some text" * 100)
    store = SQLiteStore(db)
    with pytest.raises(StoreError, match="not a database"):
        await store.get(ORIGIN)
    await store.close()


@coroutine_test
async def test_read_only_database_raises_store_error(db: Path) -> None:
    store = SQLiteStore(db)
    await store.put(ORIGIN, outcome())
    # File modes do not stop root, who may run the tests: make the store's
    # connection itself read-only, on the store's own thread.
    await store._run(lambda: store._db().execute("PRAGMA query_only = ON"))
    with pytest.raises(StoreError, match="readonly"):
        await store.put(ORIGIN, outcome())
    with pytest.raises(StoreError, match="readonly"):
        await store.reserve(ORIGIN, 1.0)
    # The failed turn left no transaction open behind it.
    assert not await store._run(lambda: store._db().in_transaction)
    assert await store.get(ORIGIN) is not None
    await store.close()


@coroutine_test
async def test_newer_schema_is_refused(db: Path) -> None:
    store = SQLiteStore(db)
    await store.get(ORIGIN)
    await store.close()
    raw(db, "PRAGMA user_version = 99")
    store = SQLiteStore(db)
    with pytest.raises(StoreError, match="newer version"):
        await store.get(ORIGIN)
    await store.close()


@coroutine_test
async def test_wal_mode(db: Path) -> None:
    store = SQLiteStore(db)
    await store.get(ORIGIN)
    assert raw(db, "PRAGMA journal_mode") == [("wal",)]
    await store.close()


def test_path_defaults_to_jobdir(tmp_path: Path) -> None:
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path / "job")})
    assert sqlite_path(crawler) == tmp_path / "job" / FILE_NAME


def test_path_without_jobdir_is_in_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SCRAPY_SETTINGS_MODULE", raising=False)
    assert sqlite_path(get_crawler()) == Path(".scrapy", FILE_NAME)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/var/lib/robots.db", Path("/var/lib/robots.db")),
        ("robots.db", Path("robots.db")),
        ("sqlite:///robots.db", Path("robots.db")),
        ("sqlite:////var/lib/robots.db", Path("/var/lib/robots.db")),
    ],
)
def test_path_from_store_url(tmp_path: Path, url: str, expected: Path) -> None:
    crawler = get_crawler(
        settings_dict={"ROBOTS_STORE_URL": url, "JOBDIR": str(tmp_path / "job")}
    )
    assert sqlite_path(crawler) == expected


def test_store_url_of_another_kind_is_refused() -> None:
    crawler = get_crawler(settings_dict={"ROBOTS_STORE_URL": "redis://localhost"})
    with pytest.raises(ValueError, match="not a SQLite path"):
        sqlite_path(crawler)


def test_from_crawler(tmp_path: Path) -> None:
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    store = SQLiteStore.from_crawler(crawler)
    assert store.shared
    assert store.path == tmp_path / FILE_NAME


_RACER = """
import asyncio, sys, time
from scrapy_rfc9309.stores.sqlite import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])
    start = float(sys.argv[2])
    await asyncio.sleep(max(0.0, start - time.time()))
    won = await store.acquire("http://example.com/robots.txt", 60)
    await store.close()
    print("won" if won else "lost")

asyncio.run(main())
"""


def test_processes_opening_a_new_file_at_once_agree_on_one_holder(db: Path) -> None:
    """Several processes create the file and race for one lease: one wins."""
    import subprocess
    import sys

    start = time.time() + 2
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(db), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [racer.communicate(timeout=60) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), results
    assert sorted(out.strip() for out, _ in results) == ["lost"] * 5 + ["won"]


async def _put(store: SQLiteStore, origin: str) -> str:
    """What a put for ``origin`` gave: the StoreError's message, or ``ok``."""
    try:
        await store.put(origin, stored_outcome())
    except StoreError as exc:
        return str(exc)
    return "ok"


@coroutine_test
async def test_calls_queued_behind_a_locked_file_fail_at_once(db: Path) -> None:
    # Another process holds the file locked: the first write waits out the
    # busy timeout, and those queued behind it on the store's one thread
    # failed only after waiting it out too, one after the other.
    store = SQLiteStore(db, busy_timeout=0.2)
    await store.put(STORE_ORIGIN, stored_outcome())
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        said = await gather(*(_put(store, f"{STORE_ORIGIN}{i}") for i in range(5)))
    finally:
        locker.close()
    assert ["locked" in message for message in said] == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert all("a call before this one failed" in message for message in said[1:])
    # A call made after the failure tries the file again: unlocked now.
    assert await _put(store, STORE_ORIGIN) == "ok"
    await store.close()
