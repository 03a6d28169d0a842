"""Crawl-delay on downloader slots: :class:`Politeness`.

An origin's Crawl-delay becomes the least delay of its downloader slot, held
against what resets it (an idle slot dropped and made anew, AutoThrottle
rewriting ``slot.delay`` after each response, a randomized delay).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request, signals

if TYPE_CHECKING:
    from scrapy.core.downloader import Downloader
    from scrapy.crawler import Crawler

__all__ = ["Politeness"]

logger = logging.getLogger(__name__)


class Politeness:
    """Keeps each downloader slot at least at the Crawl-delay of its origins."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        # Downloader slot key -> the Crawl-delay it must keep.
        self._slot_delays: dict[str, float] = {}
        self._delayed_origins: set[str] = set()
        self._downloader: Downloader | None = None

    def keep(self, request: Request, origin: str, delay: float) -> None:
        """Hold the downloader slot of ``request`` to ``origin``'s Crawl-delay."""
        downloader = self._downloader
        if downloader is None:
            downloader = self._downloader = self.crawler.engine.downloader
        if origin not in self._delayed_origins:
            self._delayed_origins.add(origin)
            self.stats.inc_value("robots/crawl_delay/origins")
        key = downloader.get_slot_key(request)
        if self._slot_delays.get(key, 0.0) >= delay:
            return
        if not self._slot_delays:
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
        self._slot_delays[key] = delay
        self._raise_slot_delay(key, delay)
        logger.debug(
            "Crawl-delay %(delay)s s of %(origin)s applied to slot %(slot)s",
            {"delay": delay, "origin": origin, "slot": key},
            extra={"spider": self.crawler.spider},
        )

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
