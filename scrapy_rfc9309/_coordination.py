"""Coordinating the stores: what :class:`~scrapy_rfc9309.RobotsMiddleware`
asks, so that it only decides.

:class:`GuardedStore` is the crawl's ``ROBOTS_STORE`` beside the memory
store: a call of the configured store that fails counts
``robots/store/errors``, warns once, and the rest of the crawl goes on with
the memory store alone (each call then answers as a store that keeps
nothing would).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

from ._store import (
    crawl_store,
    keeps_extends,
    keeps_pauses,
    release_store,
    reserve_turn,
)
from .politeness import crawl_delay_scope
from .stores.base import OutcomeStore, StoreError
from .stores.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.crawler import Crawler

    from .outcome import Outcome

__all__ = ["GuardedStore"]

# The messages of the middleware's work, under its name as they always were.
logger = logging.getLogger("scrapy_rfc9309.middleware")

_T = TypeVar("_T")


class GuardedStore:
    """The crawl's store (:func:`~scrapy_rfc9309._store.crawl_store`) and
    the memory store, with every call of the former guarded.

    ``memory`` is always there; ``store`` is the configured store while it
    works, ``None`` with the memory store configured or once it failed.
    ``fleet`` is whether Crawl-delays are kept across the fleet
    (``ROBOTS_CRAWL_DELAY_SCOPE``), which the warning of a failure says
    they no longer are.
    """

    def __init__(
        self, crawler: Crawler, shared: OutcomeStore, clock: Callable[[], float]
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        # What crawl_store gave: handed back at close.
        self._shared = shared
        self.store: OutcomeStore | None
        if isinstance(shared, MemoryStore):
            self.memory, self.store = shared, None
        else:
            self.memory = MemoryStore.from_crawler(crawler)
            self.store = shared
        self.memory.clock = clock
        self.fleet = crawl_delay_scope(crawler.settings, self.store) == "fleet"
        #: Whether the store keeps the fleet's Retry-After pauses, and
        #: moves turns to the end of each fetch (its optional methods).
        self.keeps_pauses = self.fleet and keeps_pauses(self.store)
        self.keeps_extends = self.fleet and keeps_extends(self.store)

    @classmethod
    def for_crawl(cls, crawler: Crawler, clock: Callable[[], float]) -> GuardedStore:
        """The crawl's store (built by the first component that asks)."""
        return cls(crawler, crawl_store(crawler), clock)

    @property
    def shared(self) -> bool:
        """Whether other processes use the store too (until it fails)."""
        return self.store is not None and self.store.shared

    @property
    def failed(self) -> bool:
        """Whether the configured store failed during the crawl."""
        return self.store is None and self._shared is not self.memory

    # -- the store's methods, each guarded ------------------------------------

    async def get(self, origin: str) -> Outcome | None:
        return await self._call(lambda store: store.get(origin), None)

    async def put(self, origin: str, outcome: Outcome) -> None:
        await self._call(lambda store: store.put(origin, outcome), None)

    async def acquire(self, key: str, ttl: float) -> bool:
        """Whether this process took the lease of ``key`` (``False`` without
        a store)."""
        return await self._call(lambda store: store.acquire(key, ttl), False)

    async def release(self, key: str) -> None:
        await self._call(lambda store: store.release(key), None)

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

    async def get_record(self, key: str) -> str | None:
        return await self._call(lambda store: store.get_record(key), None)

    async def put_record(self, key: str, value: str, retain_until: float) -> None:
        await self._call(lambda store: store.put_record(key, value, retain_until), None)

    async def _call(
        self, call: Callable[[OutcomeStore], Awaitable[_T]], default: _T
    ) -> _T:
        """``call`` the configured store; on failure, go on with memory alone."""
        store = self.store
        if store is None:
            return default
        try:
            return await call(store)
        except Exception as exc:
            self.stats.inc_value("robots/store/errors")
            if self.store is store:
                self.store = None
                logger.warning(
                    "The robots.txt store %(store)s failed (%(error)s); going on"
                    " with the memory store alone for the rest of the crawl%(delay)s",
                    {
                        "store": type(store).__name__,
                        "error": exc,
                        "delay": ", Crawl-delays kept per process"
                        if self.fleet
                        else "",
                    },
                    exc_info=not isinstance(exc, StoreError),
                    extra={"spider": self.crawler.spider},
                )
            return default

    # -- closing --------------------------------------------------------------

    async def close(self) -> None:
        """Give the crawl's store back (TdmMiddleware may still hold it; a
        store that failed during the crawl is left alone), close the memory
        store; a failure to close is counted and logged."""
        shared = self._shared
        await self._closing(
            release_store(self.crawler, shared, failed=self.failed), shared
        )
        if self.memory is not shared:
            await self._closing(self.memory.close(), self.memory)

    async def _closing(self, closing: Awaitable[None], store: OutcomeStore) -> None:
        try:
            await closing
        except Exception as exc:
            self.stats.inc_value("robots/store/errors")
            logger.warning(
                "Closing the robots.txt store %(store)s failed: %(error)s",
                {"store": type(store).__name__, "error": exc},
                extra={"spider": self.crawler.spider},
            )
