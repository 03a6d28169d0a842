"""Crawl-delay, in one process and across a fleet: :class:`Politeness`.

In every scope an origin's Crawl-delay becomes the least delay of its
downloader slot, held against what resets it (an idle slot dropped and made
anew, AutoThrottle rewriting ``slot.delay`` after each response, a
randomized delay).  That spaces the requests of one process.

In the ``fleet`` scope (``ROBOTS_CRAWL_DELAY_SCOPE``, the default with a
shared store) each request to an origin with a Crawl-delay also takes a
*turn* in the store (:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.reserve`)
and waits for it before going on to the downloader, so that the requests
of every worker sharing the store reach the origin the delay apart.  A
turn is only worth anything if the request leaves when it comes, so a
request takes its turn only once its slot would send it at once: the
process's requests to one slot go through one at a time (:class:`_Gate`),
each waiting first for the slot's own delay since the last request and for
a free transfer place.  The slot's delay then never adds to the fleet's
(one request per delay, not one per two), while still keeping the process
polite on its own if the store is lost: its turns then stop and the slot's
delay goes on alone.  A turn is taken only when the origin is free now (the
store answers how long to wait otherwise, and is asked again then), so a
stored turn further ahead than ``ROBOTS_CRAWL_DELAY_MAX`` can only be
hostile or stale: the store discards and replaces it.  A request whose turn
was answered more than ``_MISSED`` after it was asked leaves that turn
unused and takes the next one.  A request waiting for its turn looks every
``_CLOSE_POLL`` whether the spider is closing, and is then dropped
(``IgnoreRequest``, counted in ``robots/crawl_delay/cancelled``): Scrapy
waits for the requests in progress before it sends ``spider_closed``.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict, deque
from functools import cache
from time import monotonic
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rfc9309._compat import sleep

from ._settings import choice, positive_int, setting
from .stores.base import OutcomeStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    #: Takes the next turn of an origin for an interval: the seconds to wait
    #: for it, or ``None`` when the store is gone.
    Turns = Callable[[str, float], Awaitable[float | None]]

__all__ = ["SCOPES", "Politeness", "crawl_delay_scope", "reserve_turn"]

logger = logging.getLogger(__name__)

SCOPES = ("fleet", "process")

#: How late after its turn a request may leave; later, it takes another turn
#: (a worker stalled by its machine, a store slow to answer).
_MISSED = 0.01
#: Turns missed in a row before the request leaves all the same.
_TRIES = 10
#: How often a request waiting for a turn looks whether the spider closes.
_CLOSE_POLL = 0.25


def keeps_turns(store: OutcomeStore | None) -> bool:
    """Whether ``store`` is shared and keeps Crawl-delay turns."""
    return (
        store is not None
        and store.shared
        and type(store).reserve is not OutcomeStore.reserve
    )


def reserve_turn(
    store: OutcomeStore, origin: str, interval: float, limit: float
) -> Awaitable[float]:
    """``store.reserve(origin, interval, limit)``, without ``limit`` for a
    store written before it was a parameter."""
    if _takes_limit(type(store)):
        return store.reserve(origin, interval, limit)
    return store.reserve(origin, interval)


@cache
def _takes_limit(store_type: type[OutcomeStore]) -> bool:
    try:
        parameters = inspect.signature(store_type.reserve).parameters
    except (TypeError, ValueError):
        return False
    return "limit" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def crawl_delay_scope(settings: BaseSettings, store: OutcomeStore | None) -> str:
    """``ROBOTS_CRAWL_DELAY_SCOPE``: ``fleet`` or ``process``.

    Unset, it is ``fleet`` with a store that keeps turns (``redis``,
    ``sqlite``), else ``process``.  ``fleet`` with a store that does not
    (``memory``) is kept per process, with a warning.
    """
    value = setting(settings, "ROBOTS_CRAWL_DELAY_SCOPE")
    shared = keeps_turns(store)
    if value is None or value == "":
        return "fleet" if shared else "process"
    scope = choice(settings, "ROBOTS_CRAWL_DELAY_SCOPE", SCOPES)
    if scope == "fleet" and not shared:
        logger.warning(
            "ROBOTS_CRAWL_DELAY_SCOPE = 'fleet' needs a shared ROBOTS_STORE"
            " ('redis' or 'sqlite'); with %(store)s each process keeps"
            " Crawl-delays on its own",
            {"store": type(store).__name__ if store is not None else "MemoryStore"},
        )
        return "process"
    return scope


class _Gate:
    """Lets one request through at a time, first come first served.

    Each waiter has its own Deferred (one Deferred awaited by several gives
    its result to the first only), so that it works with or without a
    reactor.
    """

    __slots__ = ("_owner", "_waiters", "held")

    def __init__(self) -> None:
        self.held = False
        self._waiters: deque[Deferred[None]] = deque()
        self._owner: Deferred[None] | None = None

    async def enter(self) -> None:
        if not self.held:
            self.held = True
            return
        waiter: Deferred[None] = Deferred()
        self._waiters.append(waiter)
        try:
            await maybe_deferred_to_future(waiter)
        except BaseException:
            # Cancelled after the gate was handed over, before taking it:
            # hand it on, or nobody would ever leave it.
            if self._owner is waiter:
                self.leave()
            raise

    def leave(self) -> bool:
        """Let the next waiter through; whether one was waiting."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.called:  # else its request was cancelled
                self._owner = waiter
                waiter.callback(None)
                return True
        self.held = False
        self._owner = None
        return False


class Politeness:
    """Keeps each downloader slot at least at the Crawl-delay of its origins
    and, given ``turns`` (the fleet scope), each origin's requests a delay
    apart across the fleet."""

    def __init__(self, crawler: Crawler, turns: Turns | None = None) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self._turns = turns
        #: How many slots and origins each table keeps, the least recently
        #: used dropped first: as many as the memory store keeps origins
        #: (``ROBOTS_MEMORY_MAX_ORIGINS``).  A slot dropped is held again by
        #: the next request to one of its origins, which comes through
        #: :meth:`keep` before it reaches the slot.
        self.max_entries = positive_int(
            crawler.settings, "ROBOTS_MEMORY_MAX_ORIGINS", minimum=1
        )
        # Downloader slot key -> the Crawl-delay it must keep.
        self._slot_delays: OrderedDict[str, float] = OrderedDict()
        # The origins under a Crawl-delay (counted once while kept here).
        self._delayed_origins: OrderedDict[str, None] = OrderedDict()
        self._enforcing = False
        self._downloader: Downloader | None = None
        # Downloader slot key -> the gate of its requests taking turns.
        self._gates: dict[str, _Gate] = {}

    @property
    def fleet(self) -> bool:
        """Whether Crawl-delays are held across the fleet (until the store
        is lost)."""
        return self._turns is not None

    def keep(self, request: Request, origin: str, delay: float) -> None:
        """Hold the downloader slot of ``request`` to ``origin``'s Crawl-delay."""
        downloader = self._downloader
        if downloader is None:
            downloader = self._downloader = self.crawler.engine.downloader
        delayed = self._delayed_origins
        if origin in delayed:
            delayed.move_to_end(origin)
        else:
            delayed[origin] = None
            if len(delayed) > self.max_entries:
                delayed.popitem(last=False)
            self.stats.inc_value("robots/crawl_delay/origins")
        key = downloader.get_slot_key(request)
        slot_delays = self._slot_delays
        if key in slot_delays:
            slot_delays.move_to_end(key)
            if slot_delays[key] >= delay:
                return
        if not self._enforcing:
            self._enforcing = True
            self.crawler.signals.connect(
                self.enforce, signal=signals.request_reached_downloader
            )
            # Connected after AutoThrottle's handler, so it runs after it
            # and undoes any delay lowered below the Crawl-delay.
            self.crawler.signals.connect(
                self.enforce, signal=signals.response_downloaded
            )
        # Origins sharing a slot (http and https, other ports) share its
        # delay: the largest of theirs.
        slot_delays[key] = delay
        if len(slot_delays) > self.max_entries:
            slot_delays.popitem(last=False)
        self._raise_slot_delay(key, delay)
        logger.debug(
            "Crawl-delay %(delay)s s of %(origin)s applied to slot %(slot)s",
            {"delay": delay, "origin": origin, "slot": key},
            extra={"spider": self.crawler.spider},
        )

    async def take_turn(self, request: Request, origin: str, delay: float) -> None:
        """Wait until ``request`` may go to ``origin``: its turn of the fleet,
        taken when its downloader slot would send it at once.

        Raises :class:`~scrapy.exceptions.IgnoreRequest` when the spider
        closes meanwhile: a request waiting for a turn never holds the
        crawl open."""
        downloader = self._downloader
        assert downloader is not None  # keep() came first
        key = downloader.get_slot_key(request)
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = _Gate()
        await gate.enter()
        try:
            await self._slot_ready(downloader, key, delay, origin)
            missed = 0
            while True:
                self._unless_closing(origin)
                asked = monotonic()
                wait = await self._turn(origin, delay)
                if wait > 0:
                    # Another request holds the origin: ask again once free.
                    await self._sleep(wait, origin)
                    continue
                # Taken: the turn started between the question and the
                # answer.  An answer that took longer than _MISSED would
                # bring the request too close to the next turn, which
                # another worker may take: that turn goes unused, and the
                # request takes the next free one.
                late = monotonic() - asked
                if late <= _MISSED or not self.fleet or missed >= _TRIES:
                    return
                missed += 1
                logger.debug(
                    "Turn of %(origin)s taken %(late).3f s late; taking the next",
                    {"origin": origin, "late": late},
                    extra={"spider": self.crawler.spider},
                )
        finally:
            if not gate.leave() and self._gates.get(key) is gate:
                del self._gates[key]

    def _closing(self) -> bool:
        """Whether the engine is stopping or closing the spider (Scrapy
        sends no signal before it waits for the requests in progress)."""
        engine = self.crawler.engine
        if engine is None or not engine.running:
            return True
        slot = getattr(engine, "_slot", None)
        return slot is not None and getattr(slot, "closing", None) is not None

    def _unless_closing(self, origin: str) -> None:
        if self._closing():
            self.stats.inc_value("robots/crawl_delay/cancelled")
            logger.debug(
                "Dropped a request waiting for the Crawl-delay turn of"
                " %(origin)s: the spider is closing",
                {"origin": origin},
                extra={"spider": self.crawler.spider},
            )
            raise IgnoreRequest(
                f"the spider closed while waiting for the Crawl-delay turn of {origin}"
            )

    async def _sleep(self, seconds: float, origin: str) -> None:
        """Sleep ``seconds``, waking every ``_CLOSE_POLL`` at most to see
        whether the spider is closing (then raise IgnoreRequest)."""
        deadline = monotonic() + seconds
        while (left := deadline - monotonic()) > 0:
            await sleep(min(left, _CLOSE_POLL))
            self._unless_closing(origin)

    async def turn_taken(self, origin: str, delay: float) -> None:
        """Count a request that went to ``origin`` without its turn (its
        robots.txt, fetched before the delay was known) as one, so that
        no other worker's request follows it sooner than ``delay``."""
        await self._turn(origin, delay)

    async def _turn(self, origin: str, delay: float) -> float:
        turns = self._turns
        if turns is None:
            return 0.0
        wait = await turns(origin, delay)
        if wait is None:
            # The store is gone (and said so): from now on the slot's delay
            # keeps each process polite on its own.
            self._turns = None
            return 0.0
        return wait

    async def _slot_ready(
        self, downloader: Downloader, key: str, delay: float, origin: str
    ) -> None:
        """Wait until the slot ``key`` would start a request at once: its own
        delay passed since its last request, a transfer place free."""
        # Polled, at most every tenth of the delay: the slot has no event
        # for either, and only this process's own traffic delays it.
        poll = min(max(delay / 10, 0.01), 0.1)
        while (slot := downloader.slots.get(key)) is not None:
            wait = slot.lastseen + _longest_delay(slot) - monotonic()
            if len(slot.transferring) + len(slot.queue) < slot.concurrency:
                if wait <= 0:
                    return
            else:
                wait = max(wait, poll)
            await self._sleep(wait, origin)

    @property
    def entries(self) -> dict[str, int]:
        """How many entries each table holds now (gates only while requests
        wait for a turn)."""
        return {
            "slot_delays": len(self._slot_delays),
            "delayed_origins": len(self._delayed_origins),
            "gates": len(self._gates),
        }

    def enforce(self, request: Request) -> None:
        """Keep the slot of ``request`` at least at its Crawl-delay.

        Run when a request reaches the downloader and after each response:
        a slot dropped for being idle comes back with the default delay,
        AutoThrottle rewrites ``slot.delay`` after each response, and a
        jitter would make some gaps shorter than the delay.
        """
        key = request.meta.get("download_slot")
        if key is not None:
            delay = self._slot_delays.get(key)
            if delay is not None:
                self._raise_slot_delay(key, delay)

    def _raise_slot_delay(self, key: str, delay: float) -> None:
        assert self._downloader is not None
        slot = self._downloader.slots.get(key)
        if slot is None:
            return
        if not hasattr(slot, "jitter"):
            # Scrapy < 2.19: a boolean randomize_delay (0.5x to 1.5x).
            if slot.delay < delay or slot.delay * 0.5 < delay:
                slot.delay = max(slot.delay, delay)
                slot.randomize_delay = False
            return
        if slot.delay < delay:
            slot.delay = delay
            slot.jitter = 0.0
        elif slot.jitter and slot.delay * (1 - slot.jitter) < delay:
            # A higher DOWNLOAD_DELAY keeps as much of its jitter as leaves
            # every gap at least the Crawl-delay.
            slot.jitter = 1 - delay / slot.delay


def _longest_delay(slot: Slot) -> float:
    """The longest delay the slot may draw (its delay with the jitter up)."""
    jitter = getattr(slot, "jitter", None)
    if jitter is None:
        # Scrapy < 2.19: a boolean randomize_delay (0.5x to 1.5x).
        jitter = 0.5 if slot.randomize_delay else 0.0
    return float(slot.delay * (1 + jitter))
