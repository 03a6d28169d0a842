"""The crawl closing while requests wait inside the package.

A request can wait inside the package before it reaches its downloader
slot: for its Crawl-delay turn or the end of a Retry-After pause
(:mod:`~scrapy_rfc9309.politeness`), for its origin's robots.txt or TDMRep
file, or for another worker's fetch of one (a lease).  Scrapy sends no
signal before it waits for the requests in progress, so each of those waits
looks every so often whether the crawl is :func:`closing`, and then raises
:class:`RobotsCancelled`.  A fetch of robots.txt or of a TDMRep file cancelled so
gives every request waiting for it a :class:`RobotsCancelled` too, never an
outcome judged from a fetch that did not happen.
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK

from ._compat import crawl_engine

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["REQUEUED_META", "RobotsCancelled", "closing", "requeue"]

logger = logging.getLogger(__name__)

#: Request meta key: the ``dont_filter`` of a request put back in the queue
#: at close (:func:`requeue`), past the dupefilter, given back to it when
#: RobotsMiddleware sees it again (its redirects are filtered as usual).
REQUEUED_META = "_robots_requeued_dont_filter"


class RobotsCancelled(IgnoreRequest):
    """A request dropped because the spider closes: one that waited inside
    the package (its turn, a pause, its origin's robots.txt or TDMRep
    file), or the package's own request (robots.txt, a TDMRep file, a
    retry of one) sent no more.  What the request's errback gets
    (``scrapy_rfc9309.RobotsCancelled``); its message says why.  Counted
    in ``robots/cancelled``; a page is put back in the queue when the queue
    outlives the crawl (``JOBDIR``)."""


def closing(crawler: Crawler) -> bool:
    """Whether the engine is stopping or closing the spider (Scrapy sends
    no signal before it waits for the requests in progress).  An engine
    that has not started yet (a component downloading from its
    ``spider_opened`` handler) is not closing."""
    engine = crawl_engine(crawler)
    if engine is None:
        return True
    slot = getattr(engine, "_slot", None)
    if slot is not None and getattr(slot, "closing", None) is not None:
        return True
    stopping = getattr(engine, "_stopping", None)
    if stopping is None:
        # Scrapy 2.13: stopped once it ran (it made _closewait then, after
        # its engine_started handlers) and runs no more.
        return not engine.running and engine._closewait is not None
    return bool(stopping)


def requeue(crawler: Crawler, request: Request, dropped: Iterable[str]) -> bool:
    """Put a copy of ``request`` (without the meta keys ``dropped``) in the
    scheduler's queue, whose persistent queue outlives the crawl
    (``JOBDIR``, scrapy-redis's ``SCHEDULER_PERSIST``); whether it was.  Not
    a component's download (``NO_CALLBACK``: media pipelines), nor one the
    queue cannot keep (a callback not of the spider's, meta that does not
    pickle), which would end in memory with the crawl, unannounced: their
    errback hears of the close."""
    engine = crawl_engine(crawler)
    if engine is None or request.callback is NO_CALLBACK:
        return False
    meta = {key: value for key, value in request.meta.items() if key not in dropped}
    meta[REQUEUED_META] = request.dont_filter
    copy = request.replace(meta=meta, dont_filter=True)
    try:
        pickle.dumps(copy.to_dict(spider=crawler.spider), protocol=4)
    except (ValueError, pickle.PicklingError, AttributeError, TypeError):
        return False
    try:
        engine.crawl(copy)
    except Exception as exc:  # the engine closed meanwhile
        logger.warning(
            "Could not put %(request)s back in the queue: %(error)s",
            {"request": request, "error": exc},
            extra={"spider": crawler.spider},
        )
        return False
    # The copy put back is the request now: the spider's errback hears
    # nothing of this one (IgnoreRequest without an errback is silent).
    request.errback = None
    return True
