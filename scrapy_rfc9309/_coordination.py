"""Coordinating the stores: what :class:`~scrapy_rfc9309.RobotsMiddleware`
asks, so that it only decides (and
:class:`~scrapy_rfc9309.tdmmiddleware.TdmMiddleware` too).

- :class:`GuardedStore` is the crawl's ``ROBOTS_STORE`` beside the memory
  store (:class:`StoreGuard` without the memory store, for TdmMiddleware's
  records): a call of the configured store that fails counts
  ``robots/store/errors``, warns once, and the rest of the crawl goes on with
  the memory store alone (each call then answers as a store that keeps
  nothing would).
- :class:`SingleFlight` runs one fetch of a key at a time in the process:
  whoever asks meanwhile gets its result, each on its own awaitable.
- :class:`Leases` makes it one fetch for the fleet: the process that holds
  a key's lease in the shared store fetches, the others wait for what it
  puts (or take the lease over when it gives up or dies).
- :class:`Outcomes` is "the outcome of this origin, its robots.txt fetched
  once": memory, then the store, then the fetcher, with the three above.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Generic, TypeVar

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rfc9309._compat import crawl_engine, sleep

from . import signals as robots_signals
from ._closing import RobotsCancelled, closing
from ._config import RobotsConfig
from ._store import (
    crawl_delay_scope,
    crawl_store,
    keeps_extends,
    keeps_pauses,
    release_store,
    reserve_turn,
)
from .fetch import Refused
from .outcome import PARSED, UNAVAILABLE, Outcome, unavailable, unreachable
from .parser import RobotParser
from .profiles import RFC9309
from .stores.base import OutcomeStore, StoreError
from .stores.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from .fetch import RobotsFetcher
    from .outcome import Lifetimes
    from .stores.memory import Entry

__all__ = ["GuardedStore", "Leases", "Outcomes", "SingleFlight", "StoreGuard"]

# The messages of the middleware's work, under its name as they always were.
logger = logging.getLogger("scrapy_rfc9309.middleware")

_T = TypeVar("_T")
_V = TypeVar("_V")


class StoreGuard:
    """The crawl's store (:func:`~scrapy_rfc9309._store.crawl_store`),
    every call of it guarded.

    A call that fails counts ``robots/store/errors`` and warns once (the
    warning ends with ``without``: what the component does without the
    store; ``log`` is the component's logger), and the store is left alone
    for the rest of the crawl: each
    call then answers as a store that keeps nothing would.  ``store`` is
    the configured store while it works, ``None`` with the memory store
    configured, once it failed, or (without a failure) once it said it
    keeps no records (``NotImplementedError``).
    """

    def __init__(
        self,
        crawler: Crawler,
        shared: OutcomeStore,
        without: str,
        log: logging.Logger = logger,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.without = without
        # The component's logger: its messages are under its name.
        self.log = log
        # What crawl_store gave: handed back at close.
        self._shared = shared
        self.store: OutcomeStore | None = (
            None if isinstance(shared, MemoryStore) else shared
        )
        #: Whether the configured store failed during the crawl.
        self.failed = False

    @property
    def shared(self) -> bool:
        """Whether other processes use the store too (until it fails)."""
        return self.store is not None and self.store.shared

    async def acquire(self, key: str, ttl: float) -> bool:
        """Whether this process took the lease of ``key`` (``False`` without
        a store)."""
        return await self._call(lambda store: store.acquire(key, ttl), False)

    async def release(self, key: str) -> None:
        await self._call(lambda store: store.release(key), None)

    async def get_record(self, key: str) -> str | None:
        return await self._call(lambda store: store.get_record(key), None, True)

    async def put_record(self, key: str, value: str, retain_until: float) -> None:
        await self._call(
            lambda store: store.put_record(key, value, retain_until), None, True
        )

    async def _call(
        self,
        call: Callable[[OutcomeStore], Awaitable[_T]],
        default: _T,
        optional: bool = False,
    ) -> _T:
        """``call`` the configured store; on failure (or, for an
        ``optional`` method, without it), go on without the store."""
        store = self.store
        if store is None:
            return default
        try:
            return await call(store)
        except Exception as exc:
            if optional and isinstance(exc, NotImplementedError):
                self.store = None
                return default
            self.stats.inc_value("robots/store/errors")
            if self.store is store:
                self.store = None
                self.failed = True
                self.log.warning(
                    "The robots.txt store %(store)s failed (%(error)s); %(without)s",
                    {
                        "store": type(store).__name__,
                        "error": exc,
                        "without": self.without,
                    },
                    exc_info=not isinstance(exc, StoreError),
                    extra={"spider": self.crawler.spider},
                )
            return default

    async def close(self) -> None:
        """Give the crawl's store back (the other component may still hold
        it; a store that failed during the crawl is left alone); a failure
        to close is counted and logged."""
        self.store = None
        shared = self._shared
        await self._closing(
            release_store(self.crawler, shared, failed=self.failed), shared
        )

    async def _closing(self, closing: Awaitable[None], store: OutcomeStore) -> None:
        try:
            await closing
        except Exception as exc:
            self.stats.inc_value("robots/store/errors")
            self.log.warning(
                "Closing the robots.txt store %(store)s failed: %(error)s",
                {"store": type(store).__name__, "error": exc},
                extra={"spider": self.crawler.spider},
            )


class GuardedStore(StoreGuard):
    """The crawl's store, guarded (see :class:`StoreGuard`), beside the
    memory store: RobotsMiddleware's outcomes and the fleet's turns.

    ``memory`` is always there.  ``fleet`` is whether Crawl-delays are
    kept across the fleet (``ROBOTS_CRAWL_DELAY_SCOPE``), which the warning
    of a failure says they no longer are.
    """

    def __init__(
        self, crawler: Crawler, shared: OutcomeStore, clock: Callable[[], float]
    ) -> None:
        super().__init__(
            crawler,
            shared,
            "going on with the memory store alone for the rest of the crawl",
        )
        if isinstance(shared, MemoryStore):
            self.memory = shared
        else:
            self.memory = MemoryStore.from_crawler(crawler)
        self.memory.clock = clock
        config = RobotsConfig.for_crawler(crawler)
        self.fleet = crawl_delay_scope(config, self.store) == "fleet"
        if self.fleet:
            self.without += ", Crawl-delays kept per process"
        #: Whether the store keeps the fleet's Retry-After pauses, and
        #: moves turns to the end of each fetch (its optional methods).
        self.keeps_pauses = self.fleet and keeps_pauses(self.store)
        self.keeps_extends = self.fleet and keeps_extends(self.store)

    @classmethod
    def for_crawl(cls, crawler: Crawler, clock: Callable[[], float]) -> GuardedStore:
        """The crawl's store (built by the first component that asks)."""
        return cls(crawler, crawl_store(crawler), clock)

    async def get(self, origin: str) -> Outcome | None:
        return await self._call(lambda store: store.get(origin), None)

    async def put(self, origin: str, outcome: Outcome) -> None:
        await self._call(lambda store: store.put(origin, outcome), None)

    async def reserve(self, origin: str, interval: float, limit: float) -> float | None:
        """The seconds to wait for the next Crawl-delay turn of ``origin``,
        ``None`` when the store is gone."""
        return await self._call(
            lambda store: reserve_turn(store, origin, interval, limit), None
        )

    async def hold(self, origin: str, seconds: float, limit: float) -> None:
        await self._call(lambda store: store.hold(origin, seconds, limit), None)

    async def held(self, limit: float) -> dict[str, float] | None:
        """The pauses the fleet holds, ``None`` when the store is gone."""
        return await self._call(lambda store: store.held(limit), None)

    async def extend(self, origin: str, delay: float, limit: float) -> None:
        await self._call(lambda store: store.extend(origin, delay, limit), None)

    async def close(self) -> None:
        """Give the crawl's store back (see :meth:`StoreGuard.close`), close
        the memory store."""
        await super().close()
        if self.memory is not self._shared:
            await self._closing(self.memory.close(), self.memory)


class SingleFlight(Generic[_V]):
    """One run at a time of the work that produces a key's value: whoever
    asks for the key meanwhile gets the value of the run in flight.

    Each caller awaits its own Deferred (one Deferred awaited by several
    coroutines gives its result to the first only), and the run is a task
    of its own, so that a caller cancelled does not cancel it for the
    others.  A run that raises gives each caller an ``IgnoreRequest``: the
    work is expected to turn its own errors into a value; one cancelled by
    the crawl closing (:class:`~scrapy_rfc9309.RobotsCancelled`) gives
    each caller a ``RobotsCancelled``.
    """

    def __init__(self) -> None:
        # Key -> the callers waiting for its run in flight.
        self._waiters: dict[str, list[Deferred[_V]]] = {}

    def __contains__(self, key: str) -> bool:
        """Whether a run for ``key`` is in flight."""
        return key in self._waiters

    async def run(self, key: str, produce: Callable[[], Awaitable[_V]]) -> _V:
        """The value of ``key``: ``produce()``'s, unless a run is in flight
        already, whose value it then is."""
        waiter: Deferred[_V] = Deferred()
        waiters = self._waiters.get(key)
        if waiters is None:
            self._waiters[key] = [waiter]
            deferred_from_coro(self._produce(key, produce))
        else:
            waiters.append(waiter)
        return await maybe_deferred_to_future(waiter)

    async def _produce(self, key: str, produce: Callable[[], Awaitable[_V]]) -> None:
        done = False
        error: IgnoreRequest = IgnoreRequest(f"The fetch of {key} was cancelled")
        try:
            value = await produce()
            done = True
        except RobotsCancelled as cancelled:
            error = cancelled  # each caller is dropped alike: no error here
        finally:
            for waiter in self._waiters.pop(key, ()):
                if waiter.called:  # its caller was cancelled
                    continue
                if done:
                    waiter.callback(value)
                else:
                    waiter.errback(type(error)(*error.args))


class Leases:
    """One fetch of a key for the whole fleet, with a shared store: the
    process that holds the key's lease (``ttl`` seconds: one fetch,
    redirects and retries included) fetches, the others poll the store for
    what it puts, for at most ``wait`` seconds."""

    def __init__(
        self,
        stores: StoreGuard,
        ttl: float,
        wait: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stores = stores
        self.ttl = ttl
        self.wait = wait
        self.clock = clock
        # Key -> when this process took its lease, until it lets it go.
        self._taken: dict[str, float] = {}

    async def take(
        self, key: str, look: Callable[[], Awaitable[_V | None]]
    ) -> _V | bool:
        """Take the lease of ``key`` before fetching it; ``look`` reads the
        fresh value another process put (``None`` while there is none).

        The value ``look`` found (there is nothing to fetch), ``True`` when
        this process holds the lease (it fetches, puts, then releases it
        with :meth:`StoreGuard.release`), or ``False`` when it fetches
        without one: the store is not shared, or the wait ran out.
        """
        stores = self.stores
        if not stores.shared:
            return False
        if not await stores.acquire(key, self.ttl):
            waited = await self._wait_for_holder(key, look)
            if waited is not True:
                return waited
        # Another process may have put its value and let the lease go
        # between the caller's lookup and the acquire.
        found = await look()
        if found is not None:
            await stores.release(key)
            return found
        self._taken[key] = self.clock()
        return True

    async def release(self, key: str) -> None:
        """Let the lease of ``key`` go after fetching it; a fetch that took
        longer than the lease (a slow redirect chain, a long Retry-After
        pause), which another process may have repeated, is said."""
        taken = self._taken.pop(key, None)
        stores = self.stores
        if taken is not None and (took := self.clock() - taken) > self.ttl:
            stores.stats.inc_value("robots/store/leases_outlived")
            logger.warning(
                "Fetching %(key)s took %(took).0f s, longer than its lease"
                " (%(ttl).0f s): another process may have fetched it too",
                {"key": key, "took": took, "ttl": self.ttl},
                extra={"spider": stores.crawler.spider},
            )
        await stores.release(key)

    async def _wait_for_holder(
        self, key: str, look: Callable[[], Awaitable[_V | None]]
    ) -> _V | bool:
        """Poll the shared store while another process fetches ``key``: the
        fresh value it put, or whether the lease was taken over (its holder
        gave up or died), or ``False`` when the wait ran out.

        The lease seen first ends within ``wait`` (its ``ttl``): one still
        held then is another waiter's, who took it over from a holder that
        died, and whose fetch is waited for too, as long again."""
        deadline = time.monotonic() + 2 * self.wait
        interval = 0.05
        while time.monotonic() < deadline and self.stores.store is not None:
            await sleep(interval)
            crawler = self.stores.crawler
            # Outside a crawl (no engine: a script's lookup) nothing closes.
            if crawl_engine(crawler) is not None and closing(crawler):
                raise RobotsCancelled(
                    f"the spider closed while another process fetched {key}"
                )
            interval = min(interval * 2, 1.0)
            found = await look()
            if found is not None:
                return found
            if await self.stores.acquire(key, self.ttl):
                return True
        if self.stores.store is not None:
            # The lease outlived the wait: a holder slower than its lease
            # (or a lease key damaged by hand, which never ends).
            stores = self.stores
            stores.stats.inc_value("robots/store/lease_waits_expired")
            logger.warning(
                "Waited %(wait)g s for another process's fetch of %(key)s, whose"
                " lease is still held: fetching it here",
                {"wait": 2 * self.wait, "key": key},
                extra={"spider": stores.crawler.spider},
            )
        return False


class Outcomes:
    """The fresh outcome of each origin, its robots.txt fetched once: in
    memory, else fresh in the store, else fetched by ``fetcher`` (once in
    the process, and with a shared store once in the fleet), then kept in
    memory and put in the store.

    Each outcome obtained is counted (``robots/outcome/<kind>``), logged
    unless parsed, and sent as the ``robots_outcome`` signal (and Scrapy's
    ``robots_parsed`` when a robots.txt came back).  ``on_fetch`` is
    awaited with each entry this process fetched, before the other
    processes can read it.  ``refused_allows`` is ``ROBOTS_REFUSED``: what
    a robots.txt request another component refused makes of its origin.
    """

    def __init__(
        self,
        crawler: Crawler,
        fetcher: RobotsFetcher,
        stores: GuardedStore,
        *,
        lifetimes: Lifetimes,
        refused_allows: bool,
        lease_ttl: float,
        lease_wait: float,
        clock: Callable[[], float],
        on_fetch: Callable[[str, Entry], Awaitable[None]] | None = None,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.fetcher = fetcher
        self.stores = stores
        self.memory = stores.memory
        self.lifetimes = lifetimes
        self.refused_allows = refused_allows
        self.leases = Leases(stores, lease_ttl, lease_wait)
        # An origin's key in the store (its outcome, its lease): the
        # robots.txt URL, with "#<profile>" unless rfc9309.  Crawls of other
        # profiles may share the store, and each reads robots.txt and its
        # HTTP status as its own profile says; no robots.txt URL has a
        # fragment.
        profile = fetcher.profile
        self._suffix = "" if profile == RFC9309 else f"#{profile}"
        self.flight: SingleFlight[Entry] = SingleFlight()
        self.clock = clock
        self.on_fetch = on_fetch
        #: Outcome kind -> how many origins have it as their last (an
        #: origin the memory store let go of counts again when it comes
        #: back): the summary at spider close.
        self.origins: Counter[str] = Counter()

    async def obtain(self, origin: str, request: Request) -> Entry:
        """The fresh entry of ``origin``, fetching robots.txt once for all
        the requests that need it meanwhile (``request`` is the first of
        them, passed on to the signals)."""
        return await self.flight.run(origin, lambda: self._refresh(origin, request))

    async def refuse(self, origin: str, refusal: str, request: Request) -> Outcome:
        """Refuse ``origin`` for good (``ROBOTS_SSRF_GUARD``: one of its
        pages came from an address the guard refuses), in memory and in the
        store, as a refused lookup is; once, however many pages say so."""
        known = self.memory.entry(origin)
        if known is not None and known.outcome.guard_refused:
            return known.outcome
        previous = None if known is None else known.restored()
        outcome = self.fetcher.guard_refused(previous, refusal)
        await self._obtained(origin, outcome, request)
        await self.stores.put(origin + self._suffix, outcome)
        return outcome

    async def _refresh(self, origin: str, request: Request) -> Entry:
        try:
            return await self._fresh_entry(origin, request)
        except RobotsCancelled:
            raise  # the crawl closes: no outcome, the requests are dropped
        except Exception:
            logger.error(
                "Error obtaining %(origin)s; judging it unreachable",
                {"origin": origin},
                exc_info=True,
                extra={"spider": self.crawler.spider},
            )
            outcome = unreachable(
                now=self.clock(), lifetimes=self.lifetimes, detail="internal error"
            )
            return self._remember(origin, outcome)

    async def _fresh_entry(self, origin: str, request: Request) -> Entry:
        now = self.clock()
        known = self.memory.entry(origin)
        previous = None if known is None else known.restored()
        # Rebuilt from what memory keeps, this crawl's agent's rules: a
        # 30-day fallback made of it is not the fleet's (another agent has
        # other groups), so it is kept in this process only.
        slim = known is not None and previous is not known.outcome
        leased: Outcome | bool = False
        key = origin + self._suffix
        if self.stores.store is not None:
            stored = await self.stores.get(key)
            if stored is not None:
                if stored.expires_at > now:
                    return await self._from_store(origin, stored, request)
                # The stored outcome holds whole documents, the memory one
                # only this crawl's agent: the 30-day rule keeps the former.
                if previous is None or stored.fetched_at >= previous.fetched_at:
                    previous, slim = stored, False
            leased = await self.leases.take(key, lambda: self._stored(key))
            if isinstance(leased, Outcome):
                return await self._from_store(origin, leased, request)
        try:
            try:
                # Routed as the first request that needed it (its proxy).
                outcome = await self.fetcher.fetch(origin, previous, via=request)
            except Refused as refused:
                # This process's own components refused it: kept in memory,
                # never shared, as another worker's may let it through.
                return await self._obtained(
                    origin, self._refused(refused, previous), request
                )
            entry = await self._obtained(origin, outcome, request)
            if self.on_fetch is not None:
                await self.on_fetch(origin, entry)
            if not (slim and outcome.fallback is not None):
                await self.stores.put(key, outcome)
        finally:
            if leased:
                await self.leases.release(key)
        return entry

    async def _stored(self, key: str) -> Outcome | None:
        """The outcome of ``key`` (an origin's) in the store, if fresh."""
        stored = await self.stores.get(key)
        if stored is not None and stored.expires_at > self.clock():
            return stored
        return None

    async def _from_store(
        self, origin: str, outcome: Outcome, request: Request
    ) -> Entry:
        """The entry of a fresh ``outcome`` found in the store.

        With ``ROBOTS_SSRF_GUARD`` on, an origin the guard refuses stays
        refused, whatever another process or an earlier run without the
        guard stored for it.
        """
        if not outcome.guard_refused:
            refusal = await self.fetcher.guard_refusal(origin)
            if refusal is not None:
                outcome = self.fetcher.guard_refused(outcome, refusal)
        return await self._obtained(origin, outcome, request)

    def _refused(self, refused: Refused, previous: Outcome | None) -> Outcome:
        """The outcome of a robots.txt request another component refused."""
        self.stats.inc_value("robots/refused")
        detail = f"refused by another component: {refused.reason}".rstrip(": ")
        if self.refused_allows:
            # As Scrapy's RobotsTxtMiddleware: a crawl replayed from the HTTP
            # cache (HTTPCACHE_IGNORE_MISSING) or filtered by the project is
            # not a site that failed to answer.
            return unavailable(
                now=self.clock(), lifetimes=self.lifetimes, detail=detail
            )
        return unreachable(
            now=self.clock(), lifetimes=self.lifetimes, previous=previous, detail=detail
        )

    def _remember(self, origin: str, outcome: Outcome) -> Entry:
        """Keep ``outcome`` of ``origin`` in memory, the origin counted under
        its kind (:attr:`origins`)."""
        previous = self.memory.entry(origin)
        if previous is not None:
            self.origins[previous.outcome.kind] -= 1
        self.origins[outcome.kind] += 1
        return self.memory.store(origin, outcome)

    async def _obtained(self, origin: str, outcome: Outcome, request: Request) -> Entry:
        entry = self._remember(origin, outcome)
        self.stats.inc_value(f"robots/outcome/{outcome.kind}")
        if outcome.kind != PARSED:
            self._log_outcome(origin, outcome)
        self.crawler.signals.send_catch_log(
            signal=robots_signals.robots_outcome,
            origin=origin,
            outcome=outcome,
            request=request,
        )
        if outcome.http_status is not None:
            # A robots.txt came back (any status), as when Scrapy's own
            # middleware sends it; network failures and refusals do not.
            await _send_robots_parsed(
                self.crawler, RobotParser(outcome, clock=self.clock), request
            )
        return entry

    def _log_outcome(self, origin: str, outcome: Outcome) -> None:
        level = logging.INFO
        if outcome.kind == UNAVAILABLE:
            effect = "every URL allowed"
        elif outcome.guard_refused:
            level = logging.WARNING
            effect = "every URL disallowed (ROBOTS_SSRF_GUARD)"
        elif outcome.disallows_all(self.clock()):
            # A whole site not crawled: seen under LOG_LEVEL = "WARNING".
            level = logging.WARNING
            effect = "every URL disallowed for now"
        elif outcome.fallback is not None:
            effect = "unreachable for too long, judged by its last robots.txt"
        else:
            effect = "unreachable for too long, every URL allowed"
        logger.log(
            level,
            "robots.txt %(origin)s is %(kind)s (%(detail)s): %(effect)s",
            {
                "origin": origin,
                "kind": outcome.kind,
                "detail": outcome.detail,
                "effect": effect,
            },
            extra={"spider": self.crawler.spider},
        )


async def _send_robots_parsed(
    crawler: Crawler, parser: RobotParser, request: Request
) -> None:
    """Send Scrapy's ``robots_parsed`` as Scrapy's own middleware does,
    awaiting its async handlers, on Scrapy versions that have it."""
    signal = getattr(signals, "robots_parsed", None)
    if signal is None:
        return
    send_async = getattr(crawler.signals, "send_catch_log_async", None)
    if send_async is None:
        crawler.signals.send_catch_log(
            signal=signal, robotparser=parser, request=request
        )
    else:
        await send_async(signal=signal, robotparser=parser, request=request)
