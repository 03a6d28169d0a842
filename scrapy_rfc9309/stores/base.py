"""The interface every outcome store implements.

A store maps an origin's robots.txt URL (``scrapy_rfc9309.robots_url``) to
the last :class:`~scrapy_rfc9309.outcome.Outcome` obtained for it.  Stores
hold entries past their ``expires_at``: a stale outcome is still needed for
the 30-day rule (the last parsed copy of an origin that has become
unreachable), so an entry is kept until ``outcome.retain_until``, and the
middleware, not the store, decides whether an entry is fresh.

Single flight across processes uses a lease: the worker that gets the lease
fetches robots.txt and puts the outcome; the others poll ``get`` until a
fresh outcome appears, or until their bounded wait ends and they fetch
themselves.  A lease expires on its own after ``ttl`` seconds, so a holder
that dies never stalls the others for longer than that.

A shared store also keeps Crawl-delay turns (:meth:`OutcomeStore.reserve`):
per origin, the moment the next request of the fleet may start, checked and
taken in one atomic step, so that the requests of every worker reach the
origin at least its Crawl-delay apart.  A turn is only taken when the origin
is free now, so no honest record is further ahead than one Crawl-delay (or a
pause, below); one further ahead than ``limit`` (another version, a worker with a larger
``ROBOTS_CRAWL_DELAY_MAX``, a key written by hand) is discarded, counted in
``robots/store/discarded_turns`` and replaced.  A turn's record lasts no
longer than the turn, so a worker that dies holds nobody up.

A pause (a ``429`` or ``503`` with ``Retry-After``) is written into the same
record by :meth:`OutcomeStore.hold`, so that no worker's next turn comes
before it ends, and listed for :meth:`OutcomeStore.held`, which each worker
reads every half second for the origins it sends requests without turns.
Both are optional: a store without them keeps pauses in each process.

When the answer to a request under a Crawl-delay comes back, the worker
moves the origin's turn to at least one Crawl-delay from then
(:meth:`OutcomeStore.extend`, unlisted), so that the fleet's next request
follows the end of this fetch by the delay as well as its start, however
late it left.  Optional too: without it the turns count from departures
only.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..outcome import Outcome

logger = logging.getLogger(__name__)

#: Stats key: stored Crawl-delay turns further ahead than the largest
#: allowed Crawl-delay, discarded and replaced.
DISCARDED_TURNS = "robots/store/discarded_turns"
#: The most pauses :meth:`OutcomeStore.held` answers at once.
HELD_MAX = 10_000


class OutcomeStore(ABC):
    """Where ``RobotsMiddleware`` keeps outcomes.

    Methods are coroutines and must not block the event loop.  A store
    raises :class:`StoreError` when its backend fails; the middleware then
    degrades to the memory store.
    """

    #: Whether several processes can share this store (and the lease means
    #: anything beyond this process).
    shared: bool = False

    @classmethod
    def implements(cls, *methods: str) -> bool:
        """Whether this class has its own ``methods``: the optional ones
        (``reserve``, ``hold``, ``held``, ``extend``, ``get_record``) raise
        ``NotImplementedError`` here, and a store without them is used
        without them."""
        return all(
            getattr(cls, name) is not getattr(OutcomeStore, name) for name in methods
        )

    @abstractmethod
    async def get(self, origin: str) -> Outcome | None:
        """The outcome stored for ``origin``, fresh or stale, or ``None``."""

    @abstractmethod
    async def put(self, origin: str, outcome: Outcome) -> None:
        """Store ``outcome``, kept until ``outcome.retain_until``."""

    @abstractmethod
    async def acquire(self, origin: str, ttl: float) -> bool:
        """Try to take the fetch lease of ``origin`` for ``ttl`` seconds."""

    @abstractmethod
    async def release(self, origin: str) -> None:
        """Give the lease back (a no-op when it is not held)."""

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        """Try to take the turn of ``origin``: ``0.0`` when it was free and
        is now taken (the next one then starts ``interval`` seconds from
        now), else the seconds until it is free (nothing taken: ask again
        then).

        A stored turn further than ``limit`` seconds ahead (the largest
        Crawl-delay allowed) is not trusted: it is discarded (see
        :func:`turn_discarded`) and the turn taken as if the origin were
        free.

        Only shared stores implement it (and only they are asked, see
        ``ROBOTS_CRAWL_DELAY_SCOPE``); within one process Scrapy's downloader
        slot keeps the delay.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no turns")

    async def hold(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        """Pause ``origin`` for the fleet: no turn of it (:meth:`reserve`)
        before ``seconds`` from now, by the store's clock, and the origin
        listed by :meth:`held` until then.  Never moves a turn or a pause
        earlier; one further than ``limit`` seconds ahead (see
        :meth:`reserve`) is discarded and replaced.  Checked and written in
        one atomic step.

        Optional: a store without it (the default raises
        ``NotImplementedError``; the middleware then never calls it, nor
        :meth:`held`) keeps each pause in the process that got it.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no pauses")

    async def extend(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        """Move the turn of ``origin`` (:meth:`reserve`) to at least
        ``seconds`` from now, by the store's clock: called when the answer
        to a request that took a turn comes back, so that the next turn
        starts no sooner than a Crawl-delay after it.  Like :meth:`hold`,
        but not a pause: the origin is not listed by :meth:`held`.  Never
        moves a turn or a pause earlier; one further than ``limit`` seconds
        ahead is discarded and replaced.  Checked and written in one atomic
        step.

        Optional: a store without it (the default raises
        ``NotImplementedError``; the middleware then never calls it) spaces
        turns from each request's departure only.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no turns")

    async def held(self, limit: float | None = None) -> dict[str, float]:
        """The origins paused by :meth:`hold` now, each with the seconds its
        pause has left (at most :data:`HELD_MAX` of them).  A pause further
        than ``limit`` seconds ahead is discarded (see :func:`turn_discarded`)
        and left out (``None``: none is).  Optional, with :meth:`hold`."""
        raise NotImplementedError(f"{type(self).__name__} keeps no pauses")

    async def get_record(self, key: str) -> str | None:
        """The text stored under ``key`` by :meth:`put_record`, or ``None``.

        Records are what the package keeps beside outcomes (an origin's
        TDMRep file, ``key`` its URL).  Optional: a store that keeps none
        raises ``NotImplementedError`` (the default), and the records then
        stay in this process's memory.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no records")

    async def put_record(self, key: str, value: str, retain_until: float) -> None:
        """Store ``value`` under ``key`` until ``retain_until`` (seconds since
        the epoch); see :meth:`get_record`."""
        raise NotImplementedError(f"{type(self).__name__} keeps no records")

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; called when the spider closes."""


class StoreError(Exception):
    """The store's backend failed (connection lost, file unwritable, ...)."""


def turn_discarded(crawler: Crawler | None, origin: str, ahead: float) -> None:
    """Count and log a stored turn of ``origin`` found ``ahead`` seconds in
    the future, further than any allowed Crawl-delay."""
    if crawler is None:
        return
    assert crawler.stats is not None
    crawler.stats.inc_value(DISCARDED_TURNS)
    logger.warning(
        "The stored Crawl-delay turn of %(origin)s was %(ahead).0f s ahead,"
        " more than ROBOTS_CRAWL_DELAY_MAX (or ROBOTS_RETRY_AFTER_MAX):"
        " discarded and replaced",
        {"origin": origin, "ahead": ahead},
        extra={"spider": crawler.spider},
    )
