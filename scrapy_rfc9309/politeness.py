"""Crawl-delay per origin, in one process and across a fleet:
:class:`Politeness` and :class:`PacingMiddleware`.

Everything in the package that touches Scrapy's downloader slots is in
:mod:`scrapy_rfc9309._slots`.

:class:`~scrapy_rfc9309.RobotsMiddleware` judges a request and, when its
origin has a Crawl-delay, marks it (:data:`PACE_META`).
:class:`PacingMiddleware`, which the add-on places last in the downloader
middleware chain (after every component that picks a slot: proxy rotation,
``DOWNLOAD_SLOTS``, scrapy-zyte-api at 1000; and after HttpCacheMiddleware,
so a response replayed from the cache never waits), holds the marked
request until its origin may receive it:

- one request of this process at a time per origin
  (:class:`~scrapy_rfc9309._gates.Gate`), the origin's Crawl-delay after
  the previous one left, whichever downloader slot either went through: a
  slot's own delay is never raised, so origins sharing a slot (a proxy's, a
  ``DOWNLOAD_SLOTS`` group, http and https of one host) are never slowed by
  one another's Crawl-delay;
- once the request's final slot would send it at once (its own delay
  passed, a transfer place free), so that the request leaves when its turn
  comes instead of waiting behind others in the slot;
- in the ``fleet`` scope (``ROBOTS_CRAWL_DELAY_SCOPE``, the default with a
  shared store) the origin's *turn* of the fleet, taken in the store
  (:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.reserve`).  A turn is
  taken only when the origin is free now (the store answers how long to wait
  otherwise, and is asked again then), so a stored turn further ahead than
  ``ROBOTS_CRAWL_DELAY_MAX`` can only be hostile or stale: the store discards
  and replaces it.

Departures are stamped when the request is handed to the downloader, after
every wait: a request that leaves late (a busy event loop, a slow store)
moves the next one of the process back with it.  A fleet turn answered more
than ``_MISSED`` later than the store's quickest answer so far is left
unused, since another worker may take the next one on time: the request
takes the next free turn instead.
Either is counted in ``robots/crawl_delay/late`` (the largest lateness, in
seconds, in ``robots/crawl_delay/late_max``).

A request can also reach the wire late after its stamp (its worker
descheduled in between), which nothing measures in advance: so the answer
(or failure) of a request that took a turn moves the origin's next turn to
at least one Crawl-delay after it came back (:meth:`Politeness.fetched`),
in the process and, with a store that has ``extend``, in the fleet.

A worker whose event loop lags holds its fleet turns longer by twice the
lag (at most :data:`LAG_MAX`): a request reaches the network a few loop
turns after it is handed over.  A ``429`` or ``503`` answer with
``Retry-After`` pauses its origin in the process (``ROBOTS_RETRY_AFTER``,
at most ``ROBOTS_RETRY_AFTER_MAX``): :meth:`Politeness.pause`; in the
``fleet`` scope, the fleet too (:func:`keeps_pauses`): the pause is held in
the store's turn record, and read by every worker every :data:`PAUSES_EVERY`.

Without PacingMiddleware in the chain (a project that lists the middlewares
itself), RobotsMiddleware waits for the same turns at its own place in the
chain.  A request waiting for a turn looks every ``_CLOSE_POLL`` whether the
spider is closing, and is then dropped (:class:`~scrapy_rfc9309.RobotsCancelled`,
an ``IgnoreRequest``): Scrapy waits for the requests in progress before it
sends ``spider_closed``.  :meth:`Politeness.wait` counts each request dropped
so in ``robots/cancelled`` (those that waited for their origin's
robots.txt or TDMRep file too), and the requests waiting behind it at its
origin's gate leave at once.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from time import monotonic
from typing import TYPE_CHECKING, TypeVar

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from scrapy_rfc9309._compat import sleep, spider_argument

from ._closing import RobotsCancelled, closing, requeue
from ._config import SCOPES, RobotsConfig
from ._gates import Gate, Moments
from ._retryafter import RETRY_AFTER_STATUSES, retry_after
from ._settings import ensure_enabled, refusals_logged
from ._slots import QUEUE_META, Slots
from ._store import keeps_extends, keeps_pauses, reserve_turn
from .fetch import META_KEY as FETCH_META
from .urls import origin_robots_url

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from ._coordination import GuardedStore

__all__ = [
    "LAG_MAX",
    "PACE_META",
    "PAUSES_EVERY",
    "PAUSE_META",
    "SCOPES",
    "TURN_META",
    "PacingMiddleware",
    "Politeness",
    "keeps_extends",
    "keeps_pauses",
    "politeness_of",
    "reserve_turn",
    "retry_after",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


#: How late after its turn a request may leave; later, it takes another turn
#: (a worker stalled by its machine, a store slow to answer).
_MISSED = 0.01
#: Turns missed in a row before the request leaves all the same.
_TRIES = 10
#: The most a worker's fleet turn is held beyond its Crawl-delay for the lag
#: of its event loop; the other workers trust a stored turn this much
#: further ahead than ``ROBOTS_CRAWL_DELAY_MAX``.
LAG_MAX = 1.0
#: How often (seconds) a worker reads the pauses the fleet holds
#: (:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.held`): a worker hands
#: no request to an origin without a Crawl-delay later than this (and one
#: store answer) after another worker's pause of it reached the store.
PAUSES_EVERY = 0.5
#: How many of the event loop's latest lags a worker keeps.
_LAGS = 8
#: How often a request waiting for a turn looks whether the spider closes
#: (once it does, the requests waiting behind it leave without sleeping).
_CLOSE_POLL = 0.25
#: Request meta key: ``(origin, Crawl-delay)`` of a request RobotsMiddleware
#: marked for :class:`PacingMiddleware` to space.
PACE_META = "_robots_crawl_delay"
#: Request meta key: ``(origin, until when)`` (seconds since the epoch) the
#: Retry-After of its answer paused its origin, carried by its retry to
#: whichever worker sends it.
PAUSE_META = "_robots_retry_after"

#: Request meta key: set when the request took its Crawl-delay turn, until
#: its answer (or failure) comes back (:meth:`Politeness.fetched`).
TURN_META = "_robots_turn"

# Where each crawler's Politeness (its RobotsMiddleware's) is kept for
# PacingMiddleware, built after it: on the crawler, as a WeakKeyDictionary
# value referring to its key (Politeness.crawler) would keep every crawl
# alive.
_ATTRIBUTE = "_scrapy_rfc9309_politeness"


def origin_of(request: Request) -> str | None:
    """The origin (its robots.txt URL) of ``request``; ``None`` without one."""
    parts = urlparse_cached(request)
    return origin_robots_url(parts.scheme, parts.netloc)


def politeness_of(crawler: Crawler) -> Politeness | None:
    """The crawl's :class:`Politeness` (its RobotsMiddleware's), if any."""
    return getattr(crawler, _ATTRIBUTE, None)


class Politeness:
    """Spaces each origin's requests its Crawl-delay apart, whichever
    downloader slot carries them, and, given ``turns`` (the crawl's
    :class:`~scrapy_rfc9309._coordination.GuardedStore`, in the fleet
    scope), across the fleet."""

    def __init__(self, crawler: Crawler, turns: GuardedStore | None = None) -> None:
        config = RobotsConfig.for_crawler(crawler)
        self.crawler = crawler
        self.stats = crawler.stats
        # The shared store that keeps the turns (until it fails), and moves
        # them to the end of each fetch when it can (OutcomeStore.extend).
        self._turns = turns
        self._extends = turns if turns is not None and turns.keeps_extends else None
        #: How many origins each table keeps, the least recently used
        #: dropped first: as many as the memory store keeps origins
        #: (``ROBOTS_MEMORY_MAX_ORIGINS``), beyond which only origins whose
        #: moment has passed and whose requests wait for nothing go
        #: (:class:`~scrapy_rfc9309._gates.Moments`).
        self.max_entries = config.memory_max_origins
        # Origin -> the gate of its requests waiting for their turns.
        self._gates: dict[str, Gate] = {}
        # Origin under a Crawl-delay -> when (monotonic) this process may
        # send it the next request: its last departure plus its delay.
        self._free_at = Moments(self.max_entries, self._gates)
        self.slots = Slots(crawler)
        # The event loop's latest lags (seconds a callback ran later than
        # asked): how late a request handed over now may reach the wire.
        self._lags: deque[float] = deque(maxlen=_LAGS)
        # The store's answers to turns (:meth:`_trip`): how many, and the
        # quickest of them all (a worker whose loop lags gets them all late
        # for a while: its latest would hide that).
        self._trips, self._fastest = 0, math.inf
        #: Whether a 429 or 503 with Retry-After pauses its origin
        #: (``ROBOTS_RETRY_AFTER``), and for at most how long.
        self.retry_after = config.retry_after
        self.retry_after_max = config.retry_after_max
        self.queue_kept = config.queue_kept
        # Origin -> until when (monotonic) a Retry-After pauses it.
        self.paused = Moments(self.max_entries, self._gates)
        #: How far ahead a stored turn (or pause) is trusted: the longest
        #: Crawl-delay or pause a worker writes, and its lag.
        self.turn_limit = LAG_MAX + max(
            config.crawl_delay_max,
            self.retry_after_max if self.retry_after else 0.0,
        )
        # The shared store's pauses, when they are shared (else None), and
        # when (monotonic) the next read of them is due.
        self._pauses = (
            turns
            if self.retry_after and turns is not None and turns.keeps_pauses
            else None
        )
        self.pauses_due = 0.0 if self._pauses is not None else math.inf
        self._pauses_gate = Gate()
        #: Whether :class:`PacingMiddleware` holds the turns, last in the
        #: downloader middleware chain (else RobotsMiddleware does).
        self.paced_later = False
        setattr(crawler, _ATTRIBUTE, self)

    @property
    def fleet(self) -> bool:
        """Whether Crawl-delays are held across the fleet (until the store
        is lost)."""
        return self._turns is not None

    def mark(self, request: Request, origin: str, delay: float) -> None:
        """Mark ``request`` as one to space ``delay`` after the previous
        request to ``origin``."""
        request.meta[PACE_META] = (origin, delay)
        if self.paced_later:
            self.slots.note_queue(request)
        free_at = self._free_at
        if origin in free_at:
            free_at.move_to_end(origin)
            return
        self.stats.inc_value("robots/crawl_delay/origins")
        # Its robots.txt has just come back: as if it had left now.
        self._left(origin, delay, monotonic())
        logger.debug(
            "Crawl-delay %(delay)s s of %(origin)s applied",
            {"delay": delay, "origin": origin},
            extra={"spider": self.crawler.spider},
        )

    async def take_turn(self, request: Request, origin: str, delay: float) -> None:
        """Wait until ``request`` may go to ``origin``, then stamp its
        departure: it is handed to its downloader slot, which sends it at
        once, as soon as this returns.

        Raises :class:`~scrapy_rfc9309.RobotsCancelled` when the spider
        closes meanwhile: a request waiting for a turn never holds the
        crawl open."""
        slots = self.slots
        key = slots.key(request)
        gate = self._gates.get(origin)
        if gate is None:
            gate = self._gates[origin] = Gate()
        # When the request could have left at the earliest: the end of the
        # last wait, or its arrival.  Its departure after that is lateness.
        due = monotonic()
        await gate.enter()
        try:
            missed, late = 0, 0.0
            while True:
                due = max(due, await self._own_turn(origin, delay))
                waited = await slots.ready(key, delay, lambda s: self._sleep(s, origin))
                if waited:  # an answer or a pause meanwhile may move the turn
                    due = max(due, waited)
                    continue
                held = delay + await self._lag()
                asked = monotonic()
                wait = await self._turn(origin, held)
                if wait > 0:
                    # Another worker holds the origin: ask again once free.
                    due = max(due, await self._sleep(wait, origin))
                    continue
                now = monotonic()
                if self.fleet:
                    # The turn started during the question: due when its
                    # answer could have come back (the store's round trip,
                    # the same for every worker, brings no two closer).
                    due = max(due, asked + self._trip())
                    if now - due > _MISSED and missed < _TRIES:
                        # Too long ago: another worker may take the next
                        # turn on time.  Left unused, the next taken.
                        missed += 1
                        late = max(late, now - due)
                        logger.debug(
                            "Turn of %(origin)s taken %(late).3f s late;"
                            " taking the next",
                            {"origin": origin, "late": now - due},
                            extra={"spider": self.crawler.spider},
                        )
                        continue
                if not slots.free(key):
                    # Another origin's request took the slot meanwhile.
                    continue
                self._left(origin, delay, now)
                self._count_late(max(late, now - due))
                request.meta[TURN_META] = True
                return
        finally:
            if not gate.leave() and self._gates.get(origin) is gate:
                del self._gates[origin]

    async def _own_turn(self, origin: str, delay: float) -> float:
        """Wait until this process's last request to ``origin`` left its
        Crawl-delay ago (``delay``, when it is longer than the one that
        request took: a renewed robots.txt raised it); when that was."""
        # Again after each wait: an answer coming back meanwhile moves it.
        table = self._free_at
        while True:
            free_at = table.get(origin, 0.0)
            if free_at:
                free_at += max(delay - table.delays.get(origin, delay), 0.0)
            free_at = max(free_at, self.paused.get(origin, 0.0))
            if free_at <= monotonic():
                break
            await self._sleep(free_at - monotonic(), origin)
        self._unless_closing(origin)
        return free_at

    async def _lag(self) -> float:
        """How much longer than its delay this worker's fleet turn is held:
        twice the largest recent lag of its event loop, 0 when under
        ``_MISSED``.

        A request handed to the downloader reaches the wire a few loop
        turns later; in a worker whose loop is busy (callbacks parsing large
        pages) that is when another worker's request, on time, could come
        closer than the delay.  Measured now, by one turn of the loop, and
        by how late the waits woke."""
        if not self.fleet:
            return 0.0
        asked = monotonic()
        await sleep(0)
        self._lags.append(monotonic() - asked)
        lag = max(self._lags)
        return min(2 * lag, LAG_MAX) if lag > _MISSED else 0.0

    async def unpaused(self, origin: str) -> None:
        """Wait until no Retry-After pauses ``origin``: read again after
        each wait (the fleet's pauses too, when due), as a longer answer
        meanwhile, this process's or another worker's, extends the pause."""
        while (until := self.paused.get(origin)) is not None:
            if until <= monotonic():
                del self.paused[origin]
                return
            await self._sleep(until - monotonic(), origin)
            if monotonic() >= self.pauses_due:
                await self.read_pauses()

    async def pause(self, response: Response, request: Request) -> None:
        """Pause the origin of ``request`` for as long as ``response`` (a
        429 or 503) asks with ``Retry-After``, at most
        ``ROBOTS_RETRY_AFTER_MAX``; across the fleet when pauses are
        shared."""
        header = response.headers.get(b"Retry-After")
        origin = origin_of(request)
        if header is None or origin is None:
            return
        wait = retry_after(header)
        if wait is None:
            self.stats.inc_value("robots/retry_after/invalid")
            return
        if wait <= 0:
            return  # "0", or a date past: no pause
        capped = wait > self.retry_after_max
        if capped:
            self.stats.inc_value("robots/retry_after/capped")
            wait = self.retry_after_max
        until = monotonic() + wait
        # Its retry carries the pause to whichever worker sends it.
        request.meta[PAUSE_META] = (origin, time.time() + wait)
        if self.paused.get(origin, 0.0) >= until:
            return  # already paused as long: one pause, one log line
        if self._paused_until(origin, until):
            self.stats.inc_value("robots/retry_after/paused")
            logger.info(
                "%(url)s answered %(status)s with Retry-After %(header)r: no"
                " request to its origin (%(origin)s) for %(wait)g s%(capped)s",
                {
                    "url": response.url,
                    "origin": origin,
                    "status": response.status,
                    # Escaped, as the site wrote it (quoted, control
                    # characters shown): a date may carry escape sequences.
                    "header": header.decode("latin-1"),
                    "wait": wait,
                    "capped": " (ROBOTS_RETRY_AFTER_MAX)" if capped else "",
                },
                extra={"spider": self.crawler.spider},
            )
        self.stats.max_value("robots/retry_after/max_seconds", wait)
        if self._pauses is not None:
            await self._pauses.hold(origin, wait, self.turn_limit)

    def carried(self, request: Request, pause: object) -> None:
        """Pause the origin of ``request``, the retry of an answer with
        Retry-After, as its :data:`PAUSE_META` says, unless that is past or
        another origin's (the answer's meta passed on to a link)."""
        origin = origin_of(request)
        if isinstance(pause, float):  # an earlier version's: its own origin's
            pause = (origin, pause)
        if origin and isinstance(pause, (tuple, list)) and list(pause[:1]) == [origin]:
            left = pause[-1] - time.time() if isinstance(pause[-1], float) else 0
            if left > 0:
                self._learned(origin, min(left, self.retry_after_max))

    def _learned(self, origin: str, left: float) -> None:
        """Pause ``origin`` ``left`` more seconds, as the fleet says (the
        store, or a retry carrying it): counted and logged once."""
        if self._paused_until(origin, monotonic() + left):
            self.stats.inc_value("robots/retry_after/fleet")
            logger.info(
                "%(origin)s is paused by the fleet (Retry-After) for %(left).1f s more",
                {"origin": origin, "left": left},
                extra={"spider": self.crawler.spider},
            )

    def _paused_until(self, origin: str, until: float) -> bool:
        """Pause ``origin`` until ``until`` (monotonic), unless it is paused
        longer already; whether it was not paused before."""
        paused = self.paused
        before = paused.get(origin, 0.0)
        if before >= until:
            return False
        paused.later(origin, until)
        return before <= monotonic()

    async def read_pauses(self) -> None:
        """Learn the pauses the fleet holds in the shared store (one call
        per :data:`PAUSES_EVERY` for the whole worker: the requests arriving
        meanwhile wait for the one read in flight)."""
        gate = self._pauses_gate
        await gate.enter()
        try:
            pauses = self._pauses
            if pauses is None or monotonic() < self.pauses_due:
                return  # read meanwhile, by the request before
            asked = monotonic()
            held = await pauses.held(self.turn_limit)
            if held is None:  # the store is gone: each process on its own
                self._pauses, self.pauses_due = None, math.inf
                return
            self.pauses_due = asked + PAUSES_EVERY
            for origin, left in held.items():
                self._learned(origin, left)
        finally:
            gate.leave()

    async def fetched(self, request: Request) -> None:
        """The answer (or failure) of ``request`` came back: if it took a
        Crawl-delay turn, the next request to its origin, of this process
        and (with a store that has ``extend``) of the fleet, waits the delay
        from now as well as from its departure: a request that reached the
        wire later than it was handed over cannot let the next one follow
        it closer than the delay."""
        mark = request.meta.get(PACE_META)
        if request.meta.pop(TURN_META, None) is None or mark is None:
            return
        origin, delay = mark
        self._left(origin, delay, monotonic())
        if self._extends is not None and self._turns is not None:
            await self._extends.extend(origin, delay, self.turn_limit)

    def _left(self, origin: str, delay: float, now: float) -> None:
        """A request to ``origin`` leaves (or its answer comes back) at
        ``now``: the next one waits ``delay`` from then at least, however
        late this one is."""
        self._free_at.later(origin, now + delay, delay)

    def _count_late(self, late: float) -> None:
        """Count a request ``late`` seconds late for its turn (a missed fleet
        turn, or a departure after the moment it was due)."""
        if late > _MISSED:
            self.stats.inc_value("robots/crawl_delay/late")
            self.stats.max_value("robots/crawl_delay/late_max", round(late, 3))

    def _unless_closing(self, origin: str) -> None:
        if closing(self.crawler):
            raise RobotsCancelled(
                f"the spider closed while waiting for its turn at {origin}"
                " (its Crawl-delay or a Retry-After pause)"
            )

    async def wait(self, request: Request, waiting: Awaitable[_T]) -> _T:
        """Await ``waiting``: ``request``'s turn, the end of its origin's
        pause, or its origin's robots.txt; counted in its slots meanwhile
        (:meth:`Slots.waiting`).  A request dropped meanwhile, the spider
        closing, is counted, logged, and put back in the queue first when
        the queue outlives the crawl (:meth:`keep`)."""
        try:
            with self.slots.waiting(request):
                return await waiting
        except RobotsCancelled as cancelled:
            self.dropped(request, cancelled)
            raise

    def dropped(self, request: Request, cancelled: RobotsCancelled) -> None:
        """Count and log ``request``, dropped at close (``cancelled`` says
        why: what it waited for inside the package, or that it is the
        package's own, sent no more); :meth:`keep` it."""
        self.stats.inc_value("robots/cancelled")
        logger.debug(
            "Dropped %(request)s: %(why)s",
            {"request": request, "why": cancelled},
            extra={"spider": self.crawler.spider},
        )
        self.keep(request)

    def keep(self, request: Request) -> None:
        """Put ``request``, cancelled while the spider closes, back in the
        scheduler when its queue outlives the crawl (:func:`requeue`): the
        resumed crawl, or another worker, sends it.  The package's own
        requests (robots.txt, a TDMRep file) are made again when needed."""
        if not self.queue_kept or FETCH_META in request.meta:
            return
        if requeue(self.crawler, request, (PACE_META, TURN_META, QUEUE_META)):
            self.stats.inc_value("robots/cancelled/requeued")

    async def _sleep(self, seconds: float, origin: str) -> float:
        """Sleep ``seconds``, waking every ``_CLOSE_POLL`` at most to see
        whether the spider is closing (then raise RobotsCancelled); the
        moment it was meant to end."""
        deadline = monotonic() + seconds
        while (left := deadline - monotonic()) > 0:
            # Before each sleep too: the requests waiting behind one that
            # saw the close leave its origin's gate at once, not a poll each.
            self._unless_closing(origin)
            await sleep(min(left, _CLOSE_POLL))
            self._unless_closing(origin)
        if seconds > 0:
            self._lags.append(max(monotonic() - deadline, 0.0))
        return deadline

    async def turn_taken(self, origin: str, delay: float) -> None:
        """Count a request that went to ``origin`` without its turn (its
        robots.txt, fetched before the delay was known) as one, so that
        no other worker's request follows it sooner than ``delay``: wait
        for the fleet's next turn and take it.  A robots.txt of an origin
        known under a Crawl-delay took its own turn (:meth:`own_mark`)."""
        if origin in self._free_at:
            return
        try:
            while (wait := await self._turn(origin, delay)) > 0:
                await self._sleep(wait, origin)
        except RobotsCancelled:
            return  # the spider closes: the outcome is kept all the same

    async def pace(self, request: Request) -> bool:
        """Wait for ``request``'s Crawl-delay turn and take it, if it has
        one: the mark RobotsMiddleware gave it (:data:`PACE_META`), or, for
        the package's own request, its origin's (:meth:`own_mark`); whether
        it had one.  Where the turn is taken: :class:`PacingMiddleware`, or
        RobotsMiddleware without it."""
        meta = request.meta
        mark = meta.get(PACE_META)
        if mark is None and FETCH_META in meta:
            mark = self.own_mark(request)
        if mark is None:
            return False
        await self.wait(request, self.take_turn(request, *mark))
        return True

    def own_mark(self, request: Request) -> tuple[str, float] | None:
        """Mark the package's own request (robots.txt, a TDMRep file: its
        meta has :data:`~scrapy_rfc9309.fetch.META_KEY`) to an origin this
        process knows under a Crawl-delay, to take its turn like a page;
        the mark, or ``None`` for an origin without one."""
        origin = origin_of(request)
        delay = None if origin is None else self._free_at.delays.get(origin)
        if origin is None or not delay:
            return None
        mark = request.meta[PACE_META] = (origin, delay)
        return mark

    async def _turn(self, origin: str, delay: float) -> float:
        turns = self._turns
        if turns is None:
            return 0.0
        asked = monotonic()
        wait = await turns.reserve(origin, delay, self.turn_limit)
        self._trips += 1
        self._fastest = min(self._fastest, monotonic() - asked)
        if wait is None:
            # The store is gone (and said so): from now on each process
            # keeps the delay on its own.
            self._turns = None
            return 0.0
        return wait

    def _trip(self) -> float:
        """The store's round trip, as its quickest answer to a turn took
        (``0`` until two are known)."""
        return self._fastest if self._trips > 1 else 0.0

    @property
    def entries(self) -> dict[str, int]:
        """How many entries each table holds now (gates only while requests
        wait for a turn)."""
        return {"origins": len(self._free_at), "gates": len(self._gates)}


@spider_argument
class PacingMiddleware:
    """Downloader middleware, last in the chain: holds each request that
    :class:`~scrapy_rfc9309.RobotsMiddleware` marked under a Crawl-delay
    until its origin may receive it (see the module)."""

    def __init__(self, crawler: Crawler) -> None:
        politeness = politeness_of(crawler)
        if politeness is None:
            # Off with the package (bare, as RobotsMiddleware said why), else
            # a chain without RobotsMiddleware: that is worth a warning.
            ensure_enabled(crawler, quiet=True)
            raise NotConfigured(
                "PacingMiddleware needs scrapy_rfc9309.RobotsMiddleware"
                " enabled, before it in DOWNLOADER_MIDDLEWARES"
            )
        self.politeness = politeness
        politeness.paced_later = True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    async def process_request(self, request: Request) -> None:
        """Wait for the turn of a marked request, or the end of a pause; let
        any other pass."""
        # The per-request path: two meta lookups (Politeness.pace) for
        # requests to origins without a Crawl-delay, while no origin is
        # paused (and a read of the fleet's pauses every PAUSES_EVERY, when
        # they are shared).
        politeness = self.politeness
        if monotonic() >= politeness.pauses_due:
            await politeness.read_pauses()
        meta = request.meta
        if PAUSE_META in meta:
            politeness.carried(request, meta[PAUSE_META])
        if await politeness.pace(request):
            return
        if politeness.paused:
            origin = origin_of(request)
            if origin is not None:
                await politeness.wait(request, politeness.unpaused(origin))

    async def process_response(self, request: Request, response: Response) -> Response:
        """Space the next turn from this answer's arrival; pause the origin
        of a 429 or 503 with ``Retry-After`` (before RetryMiddleware retries
        it: the retry then waits for the pause)."""
        if TURN_META in request.meta and "cached" not in response.flags:
            await self.politeness.fetched(request)
        if (
            response.status in RETRY_AFTER_STATUSES
            and self.politeness.retry_after
            and "cached" not in response.flags
        ):
            await self.politeness.pause(response, request)
        return response

    async def process_exception(self, request: Request, exception: Exception) -> None:
        """Space the next turn from this failure's arrival (a timeout, a
        refused connection); let it go on to the other middlewares."""
        if TURN_META in request.meta:
            await self.politeness.fetched(request)
