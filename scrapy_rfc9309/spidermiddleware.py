"""``DirectivesMiddleware``: X-Robots-Tag and robots meta in a Scrapy crawl."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured

from ._compat import spider_argument
from ._config import RobotsConfig
from ._settings import ensure_enabled, refusals_logged
from .directives import DirectiveSet, directives_for
from .provenance import ledger_for
from .rights import AI_TOKENS, IMAGE_FIELDS, ai_refusal, ai_tokens, is_training
from .sitemaps import give_back

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["DirectivesMiddleware"]

logger = logging.getLogger(__name__)

#: Where the merged directives of a response are kept, and the item field
#: that ``annotate`` mode fills.
META_KEY = FIELD = "robots_directives"
# The reasons counted on their own as well (what a training crawl refused).
AI_STATS = frozenset(AI_TOKENS)


def annotate(item: Any, field: str, value: Any) -> None:
    """Set ``field`` of ``item`` to ``value`` where the item takes it."""
    adapter = ItemAdapter(item)
    # Item classes (Scrapy Item, dataclass, attrs, pydantic) reject fields
    # they do not declare; only dicts take any key.  A value the spider set
    # itself is left alone.
    if adapter.get(field) is None and (
        isinstance(item, dict) or field in adapter.field_names()
    ):
        adapter[field] = value


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


@spider_argument
class DirectivesMiddleware:
    """Obey the page directives (``X-Robots-Tag``, ``<meta name="robots">``).

    Every response reaching the spider gets its merged :class:`DirectiveSet`
    in ``response.meta["robots_directives"]``.  With ``ROBOTS_DIRECTIVES =
    "drop"`` the items of a noindex page (or one past its
    ``unavailable_after``) and the requests of a nofollow page are dropped;
    with ``"annotate"`` items get a ``robots_directives`` field instead.
    A crawl for training (``ROBOTS_PURPOSES`` naming ``train-ai``) in
    ``drop`` mode also drops the items of a page saying ``noai`` or ``noml``
    (``noimageai``: its image items); other crawls get those items with a
    ``robots_directives`` field (docs/rights.md).
    """

    #: What "now" is for ``unavailable_after``; replaceable in tests.
    clock: Callable[[], datetime] = staticmethod(_utcnow)

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        ensure_enabled(crawler)
        config = RobotsConfig.for_crawler(crawler)
        mode = config.directives
        if mode == "off":
            raise NotConfigured("ROBOTS_DIRECTIVES is off")
        self.crawler = crawler
        self.stats = crawler.stats
        self.drop = mode == "drop"
        self.user_agent = config.user_agent
        self.training = is_training(config.usage_purposes)
        self.image_fields = tuple(
            dict.fromkeys(
                [
                    str(settings.get("IMAGES_URLS_FIELD") or IMAGE_FIELDS[0]),
                    str(settings.get("IMAGES_RESULT_FIELD") or IMAGE_FIELDS[1]),
                ]
            )
        )
        self._read: WeakKeyDictionary[Response, DirectiveSet] = WeakKeyDictionary()
        #: The crawl's evidence (ROBOTS_REPORT counts the items dropped).
        self.ledger = ledger_for(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def directives(self, response: Response) -> DirectiveSet:
        """The directives of ``response`` for the crawl's agent, read once."""
        # Keyed by the response itself, not read back from its meta: spiders
        # often pass ``meta=response.meta`` on, which would hand a page's
        # directives to the pages it links to.
        found = self._read.get(response)
        if found is None:
            found = self._read[response] = directives_for(response, self.user_agent)
            response.meta[META_KEY] = found
        return found

    def process_spider_input(self, response: Response) -> None:
        self.directives(response)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response is None:
            async for output in result:
                yield output
            return
        directives = self.directives(response)
        ai = ai_tokens(directives)
        if not self.drop:
            async for output in result:
                if not isinstance(output, Request) and ItemAdapter.is_item(output):
                    annotate(output, FIELD, directives)
                yield output
            return
        drop_items = directives.noindex or directives.is_expired(self.clock())
        if not (drop_items or directives.nofollow or ai):
            async for output in result:
                yield output
            return
        async for output in result:
            if isinstance(output, Request):
                if directives.nofollow and not output.meta.get("dont_obey_robotstxt"):
                    self._dropped("requests", output, response, "nofollow")
                    if self.crawler.spider is not None:
                        give_back(self.crawler.spider, output)
                    continue
            elif ItemAdapter.is_item(output):
                reason = self._item_refusal(directives, ai, output, response)
                if reason is not None:
                    self._dropped("items", output, response, reason)
                    continue
                if ai:
                    annotate(output, FIELD, directives)
            yield output

    def _item_refusal(
        self,
        directives: DirectiveSet,
        ai: tuple[str, ...],
        item: Any,
        response: Response,
    ) -> str | None:
        """Why the page refuses ``item`` (drop mode), if it does."""
        if directives.noindex:
            return "noindex"
        if directives.is_expired(self.clock()):
            return f"unavailable_after: {directives.unavailable_after}"
        if ai and self.training:
            content_type = response.headers.get(b"Content-Type") or b""
            return ai_refusal(
                ai, item, content_type.decode("latin-1"), self.image_fields
            )
        return None

    def _dropped(self, kind: str, output: Any, response: Response, reason: str) -> None:
        self.stats.inc_value(f"robots/directives/{kind}_dropped")
        if reason in AI_STATS:
            self.stats.inc_value(f"robots/directives/{kind}_dropped/{reason}")
        if kind == "items" and self.ledger is not None:
            # Counted by reason, not by each page's own date.
            why = (
                reason.partition(":")[0]
                if reason.startswith("unavailable_after")
                else reason
            )
            self.ledger.item_dropped(response.url, "directives", why)
        logger.debug(
            "Dropped %(output)r of %(url)s: the page says %(reason)s",
            {"output": output, "url": response.url, "reason": reason},
            extra={"spider": self.crawler.spider},
        )
