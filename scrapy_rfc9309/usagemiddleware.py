"""``UsageMiddleware``: the ``Content-Usage`` response header in a Scrapy crawl.

A crawl that declares purposes (``ROBOTS_PURPOSES``, or
``ROBOTS_CONTENT_SIGNALS``) drops, or annotates, the items of responses
whose usage preferences refuse one of them: those of the response's
``Content-Usage`` header combined with those of robots.txt, which
:class:`~scrapy_rfc9309.RobotsMiddleware` left in the request's meta (any
``n`` wins, draft-ietf-aipref-vocab-08 section 5.1).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured

from ._compat import spider_argument
from ._config import RobotsConfig
from ._settings import ensure_enabled, refusals_logged
from .middleware import USAGE_META_KEY
from .provenance import ledger_for
from .spidermiddleware import annotate
from .usage import Preferences, combine, header_preferences, refused

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["UsageMiddleware"]

logger = logging.getLogger(__name__)

#: The item field that ``annotate`` mode fills.
FIELD = USAGE_META_KEY


@spider_argument
class UsageMiddleware:
    """Obey ``Content-Usage`` for the purposes of the crawl.

    Every response reaching the spider gets the preferences that applied in
    ``response.meta["robots_usage"]``.  With ``ROBOTS_USAGE = "drop"`` the
    items of a response refusing a purpose in use are dropped (stat
    ``robots/usage/items_dropped``); with ``"annotate"`` items get a
    ``robots_usage`` field instead.  Requests are left alone: preferences
    govern the use of this content, not the pages it links to.
    """

    def __init__(self, crawler: Crawler):
        # Quiet when off: the crawl's other components already say why.
        ensure_enabled(crawler, quiet=True)
        config = RobotsConfig.for_crawler(crawler)
        mode = config.usage
        self.purposes = config.usage_purposes
        if mode == "off" or not self.purposes:
            # Not a component a crawl without purposes needs: no message.
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.drop = mode == "drop"
        self._read: WeakKeyDictionary[Response, Preferences] = WeakKeyDictionary()
        #: The crawl's evidence (ROBOTS_REPORT counts the items dropped).
        self.ledger = ledger_for(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def preferences(self, response: Response) -> Preferences:
        """The preferences that apply to ``response``, combined once."""
        found = self._read.get(response)
        if found is None:
            header = header_preferences(response.headers.getlist("Content-Usage"))
            robots = response.meta.get(USAGE_META_KEY)
            statements = [header, robots] if isinstance(robots, dict) else [header]
            found = self._read[response] = combine(statements)
            response.meta[USAGE_META_KEY] = found
        return found

    def process_spider_input(self, response: Response) -> None:
        self.preferences(response)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response is None:
            async for output in result:
                yield output
            return
        preferences = self.preferences(response)
        purpose = refused(preferences, self.purposes)
        async for output in result:
            if isinstance(output, Request) or not ItemAdapter.is_item(output):
                yield output
            elif not self.drop:
                annotate(output, FIELD, dict(preferences))
                yield output
            elif purpose is None:
                yield output
            else:
                self.stats.inc_value("robots/usage/items_dropped")
                if self.ledger is not None:
                    self.ledger.item_dropped(
                        response.url, "usage", f"Content-Usage refuses {purpose}"
                    )
                logger.debug(
                    "Dropped %(output)r of %(url)s: Content-Usage refuses %(purpose)s",
                    {"output": output, "url": response.url, "purpose": purpose},
                    extra={"spider": self.crawler.spider},
                )
