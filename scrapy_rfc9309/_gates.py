"""The per-origin tables of :class:`~scrapy_rfc9309.politeness.Politeness`:
:class:`Gate` (one request of an origin at a time) and :class:`Moments`
(when each origin may get its next request, or until when it is paused).

A :class:`Moments` table keeps about ``ROBOTS_MEMORY_MAX_ORIGINS`` entries,
but never drops one whose moment is still ahead, nor one of an origin whose
requests wait at its gate: dropping it would let the origin's next request
skip its Crawl-delay or pause.  So a table may hold more than the bound, by
the origins whose moment is still ahead (those met within the last
``ROBOTS_CRAWL_DELAY_MAX`` seconds, or paused), until their moments pass.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from time import monotonic
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from collections.abc import Container

__all__ = ["Gate", "Moments"]

#: How many of the oldest entries a table over its bound looks at per entry
#: set: those whose moment passed are dropped, the others moved to the
#: recent end, looked at again later (constant work per request).
_LOOKS = 4


class Gate:
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


class Moments(OrderedDict[str, float]):
    """Origin -> a moment (monotonic seconds), the least recently set first;
    over ``bound`` entries, those whose moment has passed go, the least
    recently set first, unless the origin is in ``busy`` (its gates).

    ``delays`` keeps, for the origins given one, the delay the latest
    moment was set with (a Crawl-delay), dropped with the origin."""

    def __init__(self, bound: int, busy: Container[str]) -> None:
        super().__init__()
        self.bound = bound
        self._busy = busy
        self.delays: dict[str, float] = {}

    def later(self, origin: str, moment: float, delay: float | None = None) -> None:
        """Set ``origin``'s moment to ``moment`` unless it is later already
        (and its delay to ``delay``, given one); then trim the table."""
        self[origin] = max(self.get(origin, 0.0), moment)
        self.move_to_end(origin)
        if delay is not None:
            self.delays[origin] = delay
        self.trim()

    def __delitem__(self, origin: str) -> None:
        super().__delitem__(origin)
        self.delays.pop(origin, None)

    def trim(self) -> None:
        """Drop entries over the bound whose moment has passed (and whose
        origin is not busy), looking at ``_LOOKS`` of the oldest at most."""
        now = monotonic()
        for _ in range(_LOOKS):
            if len(self) <= self.bound:
                return
            origin, moment = next(iter(self.items()))
            if moment <= now and origin not in self._busy:
                del self[origin]
            else:
                self.move_to_end(origin)
