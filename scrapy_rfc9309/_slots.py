"""Everything in the package that touches Scrapy's downloader slots.

Scrapy is renaming them (throttling scopes: ``download_slot`` renamed,
``Downloader.slots`` and ``Slot`` deprecated): the change lands here.
:class:`~scrapy_rfc9309.politeness.Politeness` asks :class:`Slots` which slot
a request will go through and waits until that slot would send it at once.
A slot's own delay is only read, never raised.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from ._compat import crawl_engine, downloader_slot, slot_clock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler

__all__ = ["QUEUE_META", "Slots"]

#: Request meta key: the slot the scheduler's queue filed a request under
#: (:meth:`Slots.note_queue`), for one that may wait in PacingMiddleware (a
#: Crawl-delay turn, a Retry-After pause) after a component moved it.
QUEUE_META = "_robots_queue_slot"


class Slots:
    """The downloader slots of one crawler, read."""

    __slots__ = ("_crawler", "_downloader", "_waiting")

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._downloader: Downloader | None = None
        # Slot key -> how many of its requests wait (:meth:`waiting`).
        self._waiting: dict[str, int] = {}

    def note_queue(self, request: Request) -> None:
        """Note in ``request`` (:data:`QUEUE_META`) the slot the scheduler's
        queue filed it under, as the downloader picks it so far, made if
        need be: a later component (proxy rotation, scrapy-zyte-api) may
        move the request, and :meth:`waiting` then counts it in both.
        Only while crawling."""
        if crawl_engine(self._crawler) is not None:
            request.meta[QUEUE_META] = downloader_slot(self._crawler, request)[0]

    @contextmanager
    def waiting(self, request: Request) -> Iterator[None]:
        """Count ``request``, held before its slot (its turn, a pause, its
        robots.txt), among its slot's active requests while it waits, as
        Scrapy counts the requests waiting in a slot for its
        ``DOWNLOAD_DELAY``: ``DownloaderAwarePriorityQueue`` then hands
        out the requests of less busy slots first.  Counted in the slot it
        was queued under too (:meth:`note_queue`), the one that queue reads,
        when a later component moved the request out of it.  Removed on every
        exit, before the downloader adds it again (a request already in a
        slot is left alone there).

        A slot not made yet (no request of the origin reached the
        downloader: its robots.txt came from a shared store or the HTTP
        cache; or Scrapy dropped the slot, idle for a minute) is made, as
        the downloader would: uncounted, the waiting requests would take
        every place of ``CONCURRENT_REQUESTS``.  Scrapy's slot collector
        (every minute) keeps a slot with active requests, and drops it once
        idle for a minute, like any slot."""
        if crawl_engine(self._crawler) is None:
            # Not crawling (a middleware asked from a script or a test).
            yield
            return
        key, slot = downloader_slot(self._crawler, request)
        counted = [(key, slot)]
        queued = request.meta.get(QUEUE_META)
        if queued is not None and queued != key:
            other = self.downloader.slots.get(queued)
            if other is not None:
                counted.append((queued, other))
        counted = [(key, slot) for key, slot in counted if request not in slot.active]
        waiting = self._waiting
        for key, slot in counted:
            slot.active.add(request)
            waiting[key] = waiting.get(key, 0) + 1
        try:
            yield
        finally:
            for key, slot in counted:
                slot.active.discard(request)
                if waiting[key] > 1:
                    waiting[key] -= 1
                else:
                    del waiting[key]

    def _busy(self, key: str, slot: Slot) -> bool:
        """Whether the slot's transfer places are all taken by requests
        that do not wait (:meth:`waiting`)."""
        return len(slot.active) - self._waiting.get(key, 0) >= slot.concurrency

    @property
    def downloader(self) -> Downloader:
        downloader = self._downloader
        if downloader is None:
            assert self._crawler.engine is not None
            downloader = self._downloader = self._crawler.engine.downloader
        return downloader

    def key(self, request: Request) -> str:
        """The slot as the downloader will pick it, whoever chose it."""
        return self.downloader.get_slot_key(request)

    def free(self, key: str) -> bool:
        """Whether the slot ``key`` would send a request at once (a slot not
        made yet would)."""
        slot = self.downloader.slots.get(key)
        return slot is None or (
            not self._busy(key, slot)
            and slot.lastseen + _longest_delay(slot) <= slot_clock()
        )

    async def ready(
        self, key: str, delay: float, sleep: Callable[[float], Awaitable[float]]
    ) -> float:
        """Wait (``sleep``) until the slot ``key`` would start a request at
        once: its own delay passed since its last request, a transfer place
        free; the end of the last wait (0.0 without one)."""
        # Polled, at most every tenth of the delay: the slot has no event
        # for either.
        poll = min(max(delay / 10, 0.01), 0.1)
        waited = 0.0
        slots = self.downloader.slots
        while (slot := slots.get(key)) is not None:
            wait = slot.lastseen + _longest_delay(slot) - slot_clock()
            if not self._busy(key, slot):
                if wait <= 0:
                    break
            else:
                wait = max(wait, poll)
            waited = await sleep(wait)
        return waited


def _longest_delay(slot: Slot) -> float:
    """The longest delay the slot may draw (its delay with the jitter up)."""
    jitter = getattr(slot, "jitter", None)
    if jitter is None:
        # Scrapy < 2.19: a boolean randomize_delay (0.5x to 1.5x).
        jitter = 0.5 if slot.randomize_delay else 0.0
    return float(slot.delay * (1 + jitter))
