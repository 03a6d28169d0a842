from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
import redis
import redis.asyncio.connection as redis_connection
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.outcome import FORMAT
from scrapy_rfc9309.stores import StoreError
from scrapy_rfc9309.stores._codec import encode
from scrapy_rfc9309.stores.redis import DEFAULT_PREFIX, RedisStore, redis_url
from tests.support.redis_server import RedisServer
from tests.support.utils import STORE_ORIGIN, coroutine_test, stored_outcome

ORIGIN = STORE_ORIGIN
outcome = stored_outcome


@pytest.fixture
def client(redis_server: RedisServer) -> redis.Redis:
    return redis.Redis.from_url(redis_server.url)


@pytest.fixture
def new_store(redis_server: RedisServer, redis_prefix: str) -> Callable[[], RedisStore]:
    """Stores on the session's Redis, under this test's prefix."""
    return lambda: RedisStore(redis_server.url, prefix=redis_prefix)


async def closing(*stores: RedisStore) -> None:
    for store in stores:
        await store.close()


def assert_ttl_ends_at(pttl: int, ends_at: float, before: float, after: float) -> None:
    """A key's TTL in ms (``pttl``), set and read between the real times
    ``before`` and ``after``, makes it expire at ``ends_at``: bracketed by
    the times measured around it, however long the steps took."""
    # The store rounds the TTL down to a whole ms; Redis rounds what is left.
    assert (ends_at - after) * 1000 - 2 <= pttl <= (ends_at - before) * 1000 + 1


@coroutine_test
async def test_stored_as_outcome_json_under_the_prefix(
    new_store: Callable[[], RedisStore], client: redis.Redis, redis_prefix: str
) -> None:
    store = new_store()
    value = outcome(1000)
    before = time.time()
    await store.put(ORIGIN, value)
    key = f"{redis_prefix}outcome:{ORIGIN}"
    assert client.get(key) == encode(value)
    # Expires with the entry's retain_until, by Redis TTL.
    assert_ttl_ends_at(client.pttl(key), value.retain_until, before, time.time())
    await closing(store)


@coroutine_test
async def test_prefixes_keep_stores_apart(
    new_store: Callable[[], RedisStore], redis_server: RedisServer, redis_prefix: str
) -> None:
    store = new_store()
    elsewhere = RedisStore(redis_server.url, prefix=redis_prefix + "elsewhere:")
    await store.put(ORIGIN, outcome())
    assert await elsewhere.get(ORIGIN) is None
    assert await store.acquire(ORIGIN, 30)
    assert await elsewhere.acquire(ORIGIN, 30)
    await closing(store, elsewhere)


@coroutine_test
async def test_entry_gone_after_retain_until(
    new_store: Callable[[], RedisStore], client: redis.Redis, redis_prefix: str
) -> None:
    store = new_store()
    kept = outcome(3600)
    before = time.time()
    await store.put(ORIGIN, kept)
    assert await store.get(ORIGIN) == kept
    key = f"{redis_prefix}outcome:{ORIGIN}"
    assert_ttl_ends_at(client.pttl(key), kept.retain_until, before, time.time())
    # Gone once retain_until has passed (waited for, not raced).
    await store.put(ORIGIN, outcome(0.25))
    await asyncio.sleep(0.3)
    assert await store.get(ORIGIN) is None
    assert not client.exists(key)
    await closing(store)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"null",
        b"[]",
        b'{"format": 1, "kind": "par',
        b'{"format": 1}',
        b'{"format": 1, "kind": "other", "fetched_at": 0, "expires_at": 0,'
        b' "retain_until": 0}',
        b"{\xff}",
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
@coroutine_test
async def test_undecodable_entries_are_missing(
    new_store: Callable[[], RedisStore],
    client: redis.Redis,
    redis_prefix: str,
    data: bytes,
) -> None:
    store = new_store()
    client.set(f"{redis_prefix}outcome:{ORIGIN}", data)
    assert await store.get(ORIGIN) is None
    await closing(store)


@coroutine_test
async def test_keys_of_another_type_are_missing_not_a_failure(
    new_store: Callable[[], RedisStore],
    client: redis.Redis,
    redis_prefix: str,
) -> None:
    # Written by another program on a shared Redis: a list where an outcome
    # goes, a hash where a turn goes.  Redis answered WRONGTYPE, which took
    # the whole store down for the crawl.
    client.rpush(f"{redis_prefix}outcome:{ORIGIN}", "x")
    client.hset(f"{redis_prefix}turn:{ORIGIN}", "a", "b")
    client.rpush(f"{redis_prefix}record:tdm", "x")
    store = new_store()
    assert await store.get(ORIGIN) is None
    assert await store.get_record("tdm") is None
    assert await store.reserve(ORIGIN, 0.2) == 0.0
    await store.extend(ORIGIN, 0.2)
    # Written over by the next put, as any entry is.
    fetched = stored_outcome()
    await store.put(ORIGIN, fetched)
    assert await store.get(ORIGIN) == fetched
    await closing(store)


@coroutine_test
async def test_unknown_format_version_is_missing(
    new_store: Callable[[], RedisStore],
    client: redis.Redis,
    redis_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    future = outcome().to_dict()
    future["format"] = FORMAT + 1
    client.set(f"{redis_prefix}outcome:{ORIGIN}", json.dumps(future))
    store = new_store()
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        assert await store.get(ORIGIN) is None
    assert "unsupported outcome format" in caplog.text
    await closing(store)


@coroutine_test
async def test_an_entry_without_the_body_hash_still_reads(
    new_store: Callable[[], RedisStore], client: redis.Redis, redis_prefix: str
) -> None:
    # Entries written before the hash was kept (or by such a worker).
    value = outcome()
    older = value.to_dict()
    del older["body_sha256"]
    client.set(f"{redis_prefix}outcome:{ORIGIN}", json.dumps(older))
    store = new_store()
    assert await store.get(ORIGIN) == replace(value, body_sha256=None)
    await closing(store)


# Leases


@coroutine_test
async def test_lease_expires_by_ttl(
    new_store: Callable[[], RedisStore], client: redis.Redis, redis_prefix: str
) -> None:
    a, b = new_store(), new_store()
    before = time.time()
    assert await a.acquire(ORIGIN, 30.5)
    pttl = client.pttl(f"{redis_prefix}lease:{ORIGIN}")
    assert_ttl_ends_at(pttl, before + 30.5, before, time.time())
    assert not await b.acquire(ORIGIN, 30)
    # Free again once the TTL has passed (waited for, not raced).
    other = "http://other.example/robots.txt"
    assert await a.acquire(other, 0.25)
    await asyncio.sleep(0.3)
    assert await b.acquire(other, 30)
    await closing(a, b)


@coroutine_test
async def test_release_after_expiry_keeps_the_new_holder(
    new_store: Callable[[], RedisStore],
) -> None:
    a, b, c = new_store(), new_store(), new_store()
    assert await a.acquire(ORIGIN, 0.2)
    await asyncio.sleep(0.3)
    assert await b.acquire(ORIGIN, 30)
    await a.release(ORIGIN)
    assert not await c.acquire(ORIGIN, 30)
    await b.release(ORIGIN)
    assert await c.acquire(ORIGIN, 30)
    await closing(a, b, c)


# Crawl-delay turns


@coroutine_test
async def test_a_turn_expires_with_its_moment(
    new_store: Callable[[], RedisStore], client: redis.Redis, redis_prefix: str
) -> None:
    store = new_store()
    key = f"{redis_prefix}turn:{ORIGIN}"
    assert await store.reserve(ORIGIN, 0.2) == 0.0
    assert await store.reserve(ORIGIN, 0.2) > 0.0
    # One turn taken: the record lasts until the next one may start.
    assert 0 < client.pttl(key) <= 200
    await asyncio.sleep(0.25)
    assert client.get(key) is None
    assert await store.reserve(ORIGIN, 0.2) == 0.0
    await closing(store)


@pytest.mark.parametrize("stored", ["{ahead}", "inf", "1e400"])
@coroutine_test
async def test_a_turn_further_ahead_than_the_limit_is_replaced(
    new_store: Callable[[], RedisStore],
    client: redis.Redis,
    redis_prefix: str,
    stored: str,
) -> None:
    key = f"{redis_prefix}turn:{ORIGIN}"
    store = new_store()
    ten_years = f"{(time.time() + 10 * 365 * 86400) * 1_000_000:.0f}"
    client.set(key, stored.format(ahead=ten_years))
    # Within the limit the turn is trusted, beyond it replaced and taken.
    assert await store.reserve(ORIGIN, 0.5, limit=30) == 0.0
    now_us = time.time() * 1_000_000
    assert now_us < int(client.get(key)) <= now_us + 500_000
    client.set(key, f"{(time.time() + 20) * 1_000_000:.0f}")
    assert 19 < await store.reserve(ORIGIN, 0.5, limit=30) <= 20
    await closing(store)


# Failures and configuration


@coroutine_test
async def test_redis_down_raises_store_error_quickly(
    make_redis_server: Callable[[], RedisServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_redis_server()
    store = RedisStore(server.url, prefix="down:")
    await store.put(ORIGIN, outcome())
    server.stop()
    # Counted rather than timed: the connection attempts each call makes.
    attempts = 0
    connect = redis_connection.Connection._connect

    async def counted(self: redis_connection.Connection) -> None:
        nonlocal attempts
        attempts += 1
        await connect(self)

    monkeypatch.setattr(redis_connection.Connection, "_connect", counted)
    for call in (
        store.get(ORIGIN),
        store.put(ORIGIN, outcome()),
        store.acquire(ORIGIN, 30),
        store.reserve(ORIGIN, 1.0),
    ):
        attempts = 0
        with pytest.raises(StoreError, match="Redis store"):
            await call
        # Bounded by the store's short retry (two more tries, backoff capped
        # at 0.2 s), not by a retry policy that keeps a crawl waiting.
        assert 1 <= attempts <= 3
    await store.close()


@coroutine_test
async def test_nothing_listening_raises_store_error() -> None:
    store = RedisStore("redis://127.0.0.1:1/0")
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1"):
        await store.get(ORIGIN)
    await store.close()


@coroutine_test
async def test_error_messages_hide_the_password() -> None:
    store = RedisStore("redis://user:s3cret@127.0.0.1:1/0")
    with pytest.raises(StoreError) as info:
        await store.get(ORIGIN)
    assert "s3cret" not in str(info.value)
    assert "redis://***@127.0.0.1:1" in str(info.value)
    await store.close()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, "redis://localhost:6379"),
        ({"REDIS_HOST": "10.0.0.5"}, "redis://10.0.0.5:6379"),
        ({"REDIS_HOST": "r", "REDIS_PORT": "6380"}, "redis://r:6380"),
        ({"REDIS_URL": "redis://r:1/2", "REDIS_HOST": "x"}, "redis://r:1/2"),
        (
            {"ROBOTS_STORE_URL": "rediss://s:1/0", "REDIS_URL": "redis://r:1/2"},
            "rediss://s:1/0",
        ),
        ({"ROBOTS_STORE_URL": "unix:///tmp/r.sock"}, "unix:///tmp/r.sock"),
    ],
)
def test_url_from_settings(settings: dict[str, str], expected: str) -> None:
    assert redis_url(get_crawler(settings_dict=settings).settings) == expected


def test_url_of_another_kind_is_refused() -> None:
    crawler = get_crawler(settings_dict={"ROBOTS_STORE_URL": "/tmp/robots.db"})
    with pytest.raises(ValueError, match="must be a Redis URL"):
        RedisStore.from_crawler(crawler)


def test_from_crawler() -> None:
    crawler = get_crawler(
        settings_dict={
            "REDIS_URL": "redis://127.0.0.1:7/0",
            "ROBOTS_STORE_PREFIX": "crawl-1:robots:",
        }
    )
    store = RedisStore.from_crawler(crawler)
    assert store.shared
    assert store.url == "redis://127.0.0.1:7/0"
    assert store.prefix == "crawl-1:robots:"
    assert RedisStore.from_crawler(get_crawler()).prefix == DEFAULT_PREFIX


def test_missing_redis_py_names_the_extra() -> None:
    import configparser
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; sys.modules['redis'] = None\nimport scrapy_rfc9309.stores.redis\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    # The extra's requirement, as setup.cfg declares it: the package is
    # installed from a checkout (docs/getting-started.md), not by its name.
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parent.parent / "setup.cfg")
    (requirement,) = setup["options.extras_require"]["redis"].split()
    assert (
        "ROBOTS_STORE='redis' needs redis-py, the package's redis extra:"
        f' pip install "{requirement}"'
    ) in result.stderr


def test_without_asyncio_the_store_fails_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a reactor without asyncio the middleware gets a StoreError (and
    goes on with the memory store) instead of failing on every call."""
    from scrapy_rfc9309.stores import redis as module

    monkeypatch.setattr(module, "is_asyncio_available", lambda: False)
    with pytest.raises(StoreError, match="asyncio"):
        RedisStore.from_crawler(get_crawler())
