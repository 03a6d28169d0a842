"""The crawl closing while requests wait inside the package.

A request can wait inside the package before it reaches its downloader
slot: for its Crawl-delay turn or the end of a Retry-After pause
(:mod:`~scrapy_rfc9309.politeness`), for its origin's robots.txt or TDMRep
file, or for another worker's fetch of one (a lease).  Scrapy sends no
signal before it waits for the requests in progress, so each of those waits
looks every so often whether the crawl is :func:`closing`, and then raises
:class:`Cancelled`.  A fetch of robots.txt or of a TDMRep file cancelled so
gives every request waiting for it a :class:`Cancelled` too, never an
outcome judged from a fetch that did not happen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from ._compat import crawl_engine

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["Cancelled", "closing"]


class Cancelled(IgnoreRequest):
    """A request dropped while it waited inside the package (its turn, a
    pause, its origin's robots.txt or TDMRep file), the spider closing."""


def closing(crawler: Crawler) -> bool:
    """Whether the engine is stopping or closing the spider (Scrapy sends
    no signal before it waits for the requests in progress)."""
    engine = crawl_engine(crawler)
    if engine is None or not engine.running:
        return True
    slot = getattr(engine, "_slot", None)
    return slot is not None and getattr(slot, "closing", None) is not None
