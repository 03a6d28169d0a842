"""What every :class:`~scrapy_rfc9309.stores.base.OutcomeStore` promises, as
checks anyone can run on a store.

``new_store`` is a callable returning a new store: for a shared store, each
call is another worker of one fleet (one backend, the same prefix or file),
starting empty.  :func:`check_store` runs every check that applies to the
store (turns for stores that keep them, their extension and pauses for those
that keep them, records for those that keep them)
and raises :class:`AssertionError` naming the promise a store breaks.  The
package's tests run each check on the memory, SQLite and Redis stores
(``tests/test_store_contract.py``); a store of your own is checked the same
way, from any test runner that can await a coroutine::

    from scrapy_rfc9309.stores.contract import check_store

    async def test_my_store():
        await check_store(lambda: MyStore("my://backend/test-prefix"))

What a check cannot see from outside (keys expiring in the backend, files
surviving a restart, poisoned records) stays with each store's own tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ..outcome import Lifetimes, Outcome, parsed, unavailable, unreachable
from ..parse import parse
from .base import OutcomeStore

__all__ = ["CHECKS", "SAMPLE_SHA256", "check_store", "checks_for", "sample_outcome"]

_T = TypeVar("_T")
NewStore = Callable[[], OutcomeStore]
Check = Callable[[NewStore], Awaitable[None]]

LIFETIMES = Lifetimes()


def _origins(check: str) -> tuple[str, str]:
    """Two origins of the check's own: checks run one after the other on
    one backend leave each other nothing to trip on."""
    host = check.replace("_", "-")
    return (
        f"http://{host}.example/robots.txt",
        f"http://other-{host}.example/robots.txt",
    )


def sample_outcome(retain: float = 3600.0, now: float | None = None) -> Outcome:
    """A parsed outcome, fresh for a minute at most and kept ``retain``
    seconds from ``now`` (default: the real time), with every kind of line a
    store must keep (Content-Usage rules, a sitemap, an RSL licence) and a
    body hash."""
    if now is None:
        now = time.time()
    return Outcome(
        kind="parsed",
        fetched_at=now,
        expires_at=now + min(retain, 60.0),
        retain_until=now + retain,
        http_status=200,
        document=parse(
            "User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n\n"
            "Content-Usage: /open/ train-ai=y, search=y\nSitemap: /s.xml\n"
            "License: https://example.com/license.xml\n"
        ),
        detail="HTTP 200",
        body_sha256=SAMPLE_SHA256,
    )


#: The ``body_sha256`` of :func:`sample_outcome`.
SAMPLE_SHA256 = "ab" * 32


async def _gather(*coros: Coroutine[Any, Any, _T]) -> list[_T]:
    """The coroutines run at once: ``asyncio.gather``, or, under a Twisted
    reactor without asyncio, Deferreds."""
    from .._compat import is_asyncio_available

    if is_asyncio_available():
        return list(await asyncio.gather(*coros))
    from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
    from twisted.internet.defer import DeferredList

    results = await maybe_deferred_to_future(
        DeferredList([deferred_from_coro(c) for c in coros], fireOnOneErrback=True)
    )
    return [result for _, result in results]


async def _closing(*stores: OutcomeStore) -> None:
    for store in stores:
        await store.close()


async def round_trips(new_store: NewStore) -> None:
    """``get`` gives back what ``put`` stored, for that origin only, and,
    in a shared store, to every worker."""
    origin, elsewhere = _origins("round_trips")
    store, other = new_store(), new_store()
    try:
        value = sample_outcome()
        assert await store.get(origin) is None, "a new store holds nothing"
        await store.put(origin, value)
        assert await store.get(origin) == value, "get returns what put stored"
        assert await store.get(elsewhere) is None, "an entry is its origin's only"
        if store.shared:
            assert await other.get(origin) == value, "every worker sees it"
    finally:
        await _closing(store, other)


async def put_replaces(new_store: NewStore) -> None:
    """A second ``put`` replaces the first."""
    origin = _origins("put_replaces")[0]
    store = new_store()
    try:
        await store.put(origin, sample_outcome(100))
        newer = sample_outcome(200)
        await store.put(origin, newer)
        assert await store.get(origin) == newer, "the newer outcome replaces"
    finally:
        await store.close()


async def keeps_every_kind(new_store: NewStore) -> None:
    """Parsed, unavailable and unreachable outcomes (with the fallback of
    the 30-day rule) come back equal, and so does a robots.txt that is not
    UTF-8."""
    now = time.time()
    document = parse("User-agent: a\nAllow: /\nCrawl-delay: 2\n")
    latin1 = parse(b"User-agent: *\nDisallow: /caf\xe9\xa0\nAllow: /\xe2\x82\xac\n")
    values = {
        "http://a.example/robots.txt": parsed(document, now=now, lifetimes=LIFETIMES),
        "http://b.example/robots.txt": unavailable(
            now=now, lifetimes=LIFETIMES, http_status=404
        ),
        "http://c.example/robots.txt": unreachable(
            now=now,
            lifetimes=LIFETIMES,
            previous=parsed(document, now=now - 10, lifetimes=LIFETIMES),
            http_status=503,
        ),
        "http://d.example/robots.txt": parsed(latin1, now=now, lifetimes=LIFETIMES),
    }
    store = new_store()
    try:
        for origin, value in values.items():
            await store.put(origin, value)
        for origin, value in values.items():
            assert await store.get(origin) == value, f"{value.kind} kept as it was"
    finally:
        await store.close()


async def keeps_a_stale_outcome(new_store: NewStore) -> None:
    """An entry past its ``expires_at`` but not its ``retain_until`` is still
    returned: the 30-day rule needs it."""
    origin = _origins("keeps_a_stale_outcome")[0]
    now = time.time()
    value = Outcome(
        kind="unreachable",
        fetched_at=now - 100,
        expires_at=now - 50,
        retain_until=now + 3600,
        http_status=503,
        unreachable_since=now - 1000,
        grace_ends_at=now + 1000,
        fallback=parse("User-agent: *\nDisallow: /x\n"),
    )
    store = new_store()
    try:
        await store.put(origin, value)
        assert await store.get(origin) == value, "stale but retained: returned"
    finally:
        await store.close()


async def drops_what_is_past_retention(new_store: NewStore) -> None:
    """Putting an outcome already past its ``retain_until`` removes the
    origin's entry."""
    origin = _origins("drops_what_is_past_retention")[0]
    store = new_store()
    try:
        await store.put(origin, sample_outcome())
        await store.put(origin, sample_outcome(-1))
        assert await store.get(origin) is None, "past retain_until: gone"
    finally:
        await store.close()


async def leases_are_exclusive(new_store: NewStore) -> None:
    """One holder of an origin's lease at a time (across the workers of a
    shared store); releasing frees it; releasing without holding changes
    nothing."""
    origin, elsewhere = _origins("leases_are_exclusive")
    first = new_store()
    second = new_store() if first.shared else first
    try:
        await first.release(origin)  # not held: a no-op
        assert await first.acquire(origin, 30), "a free lease is taken"
        assert not await second.acquire(origin, 30), "a held lease is not"
        assert not await first.acquire(origin, 30), "not even by its holder"
        assert await second.acquire(elsewhere, 30), "each origin has its own"
        await first.release(origin)
        assert await second.acquire(origin, 30), "released, it is free"
    finally:
        await _closing(*{id(s): s for s in (first, second)}.values())


async def one_of_concurrent_acquires_wins(new_store: NewStore) -> None:
    """Eight workers asking for one lease at once: exactly one gets it."""
    origin = _origins("one_of_concurrent_acquires_wins")[0]
    first = new_store()
    stores = [first] + [new_store() if first.shared else first for _ in range(7)]
    try:
        won = await _gather(*(store.acquire(origin, 30) for store in stores))
        assert sorted(won) == [False] * 7 + [True], f"one winner, not {won}"
    finally:
        await _closing(*{id(s): s for s in stores}.values())


async def turns_are_taken_while_free(new_store: NewStore) -> None:
    """``reserve`` takes a free origin's turn (``0.0``), then tells every
    worker how long until it is free, taking nothing meanwhile; each origin
    has its own turn."""
    origin, elsewhere = _origins("turns_are_taken_while_free")
    stores = [new_store() for _ in range(4)]
    try:
        assert await stores[0].reserve(origin, 0.5) == 0.0, "free: taken now"
        waits = await _gather(*(store.reserve(origin, 0.5) for store in stores))
        assert all(0.0 < wait <= 0.5 for wait in waits), f"held: {waits}"
        again = await stores[1].reserve(origin, 0.5)
        assert 0.0 < again <= max(waits), "asking takes nothing"
        assert await stores[0].reserve(elsewhere, 0.5) == 0.0, "each origin its own"
    finally:
        await _closing(*stores)


async def turns_are_extended(new_store: NewStore) -> None:
    """``extend`` moves an origin's turn to at least its seconds from now
    for every worker, never earlier, and lists no pause (``held``)."""
    origin, elsewhere = _origins("turns_are_extended")
    store, other = new_store(), new_store()
    try:
        assert await store.reserve(origin, 0.5) == 0.0, "free: taken now"
        await store.extend(origin, 5.0, 30.0)
        wait = await other.reserve(origin, 0.5, 30.0)
        assert 4.0 < wait <= 5.0, f"extended to 5 s: {wait}"
        await store.extend(origin, 1.0, 30.0)
        wait = await other.reserve(origin, 0.5, 30.0)
        assert 4.0 < wait <= 5.0, f"never earlier: {wait}"
        await store.extend(elsewhere, 2.0, 30.0)
        wait = await other.reserve(elsewhere, 0.5, 30.0)
        assert 1.0 < wait <= 2.0, f"a free origin extended: {wait}"
        if type(store).held is not OutcomeStore.held:
            held = await other.held(30.0)
            assert origin not in held, "not a pause"
            assert elsewhere not in held, "not a pause"
    finally:
        await _closing(store, other)


async def pauses_are_held(new_store: NewStore) -> None:
    """``hold`` pauses an origin for every worker (no turn before its end),
    never earlier, and lists it for ``held`` with the seconds it has left."""
    origin, elsewhere = _origins("pauses_are_held")
    store, other = new_store(), new_store()
    try:
        await store.hold(origin, 5.0, 30.0)
        await store.hold(origin, 1.0, 30.0)
        wait = await other.reserve(origin, 0.5, 30.0)
        assert 4.0 < wait <= 5.0, f"paused for 5 s: {wait}"
        held = await other.held(30.0)
        assert 4.0 < held.get(origin, 0.0) <= 5.0, f"listed: {held}"
        assert elsewhere not in held, "each origin its own"
    finally:
        await _closing(store, other)


async def records_round_trip(new_store: NewStore) -> None:
    """``put_record`` / ``get_record``: text kept under its key, for every
    worker of a shared store."""
    origin = _origins("records_round_trip")[0]
    store, other = new_store(), new_store()
    try:
        key = origin.replace("robots.txt", ".well-known/tdmrep.json")
        assert await store.get_record(key) is None, "a new store holds nothing"
        await store.put_record(key, '[{"location": "/"}]\u00e9', time.time() + 60)
        reader = other if store.shared else store
        assert await reader.get_record(key) == '[{"location": "/"}]\u00e9'
        assert await reader.get_record(key + "x") is None
    finally:
        await _closing(store, other)


async def closes_twice(new_store: NewStore) -> None:
    """``close`` may be called again."""
    origin = _origins("closes_twice")[0]
    store = new_store()
    await store.put(origin, sample_outcome())
    await store.close()
    await store.close()


#: Every check, by name.
CHECKS: dict[str, Check] = {
    check.__name__: check
    for check in (
        round_trips,
        put_replaces,
        keeps_every_kind,
        keeps_a_stale_outcome,
        drops_what_is_past_retention,
        leases_are_exclusive,
        one_of_concurrent_acquires_wins,
        turns_are_taken_while_free,
        turns_are_extended,
        pauses_are_held,
        records_round_trip,
        closes_twice,
    )
}


def checks_for(store: OutcomeStore | type[OutcomeStore]) -> list[str]:
    """The names of the checks that apply to ``store`` (a store or its
    class): turns only for a store that keeps them (``reserve``), records
    for one that keeps them (``get_record``)."""
    kind = store if isinstance(store, type) else type(store)
    names = list(CHECKS)
    if not kind.implements("reserve"):
        names.remove("turns_are_taken_while_free")
    if not kind.implements("reserve", "extend"):
        names.remove("turns_are_extended")
    if not kind.implements("reserve", "hold", "held"):
        names.remove("pauses_are_held")
    if not kind.implements("get_record"):
        names.remove("records_round_trip")
    return names


async def check_store(new_store: NewStore) -> None:
    """Run every check that applies to the stores ``new_store`` makes."""
    probe = new_store()
    names = checks_for(probe)
    await probe.close()
    for name in names:
        await _named(name, CHECKS[name](new_store))


async def _named(name: str, check: Awaitable[None]) -> None:
    try:
        await check
    except AssertionError as exc:
        raise AssertionError(f"{name}: {exc}") from exc
