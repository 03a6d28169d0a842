"""Everything in the package that touches Scrapy's downloader slots.

Scrapy is renaming them (throttling scopes: ``download_slot`` renamed,
``Downloader.slots`` and ``Slot`` deprecated): the change lands here.
:class:`~scrapy_rfc9309.politeness.Politeness` asks :class:`Slots` which slot
a request will go through and waits until that slot would send it at once.
A slot's own delay is only read, never raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._compat import slot_clock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler

__all__ = ["Slots"]


class Slots:
    """The downloader slots of one crawler, read."""

    __slots__ = ("_crawler", "_downloader")

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._downloader: Downloader | None = None

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
            len(slot.active) < slot.concurrency
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
            if len(slot.active) < slot.concurrency:
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
