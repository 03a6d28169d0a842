"""``ProvenanceMiddleware``: the ``robots_provenance`` record of each kept item.

With ``ROBOTS_PROVENANCE = True`` each item leaving a page gets one record
(a dict of plain JSON data, see docs/rights.md) of what allowed it: the
robots.txt part that :class:`~scrapy_rfc9309.RobotsMiddleware` decided when
the request was sent, and the page's own preferences (its ``Content-Usage``
header, its robots directives, the TDMRep values and licences other
components left in meta).  With ``ROBOTS_REPORT`` the items kept are
counted per origin for the report.  It sits nearer the engine than the
package's other spider middlewares, so that it sees only the items they
kept.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured

from ._compat import spider_argument
from ._settings import enabled_components, ensure_enabled, refusals_logged
from .directives import directives_for, stringify_directives
from .provenance import (
    EVIDENCE_KEY,
    FIELD,
    NO_ROBOTS_TXT,
    NOT_CHECKED,
    UNJUDGED,
    ledger_for,
    plain,
    unchecked_facts,
)
from .spidermiddleware import annotate
from .urls import robots_url
from .usage import combine, header_preferences

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["ProvenanceMiddleware"]

logger = logging.getLogger(__name__)

#: Meta keys other components fill, recorded as found: the record's key ->
#: the meta key.  ``tdm``: W3C TDMRep (``robots_tdm``); ``licenses``: RSL
#: licences (``robots_licenses``).
OTHER_FACTS = {"tdm": "robots_tdm", "licenses": "robots_licenses"}


@spider_argument
class ProvenanceMiddleware:
    """Give each kept item its ``robots_provenance`` record
    (``ROBOTS_PROVENANCE``) and count it for ``ROBOTS_REPORT``."""

    def __init__(self, crawler: Crawler) -> None:
        ensure_enabled(crawler, quiet=True)
        ledger = ledger_for(crawler)
        if ledger is None:
            # Not a component a crawl without evidence needs: no message.
            raise NotConfigured
        self.ledger = ledger
        self._records: WeakKeyDictionary[Response, dict[str, Any]] = WeakKeyDictionary()
        _warn_unjudged(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def record(self, response: Response) -> dict[str, Any]:
        """The record of ``response``'s items, made once, when its first
        item leaves: every other middleware has read the page by then."""
        found = self._records.get(response)
        if found is not None:
            return found
        meta = response.meta
        robots = meta.get(EVIDENCE_KEY)
        if not isinstance(robots, dict):
            origin = robots_url(response.url)
            if origin is None:
                reason = NO_ROBOTS_TXT
            elif meta.get("dont_obey_robotstxt"):
                reason = NOT_CHECKED
            else:
                reason = UNJUDGED
            robots = unchecked_facts(origin, reason)
        header = response.headers.getlist("Content-Usage")
        usage = robots["content_usage_robots_txt"]
        record: dict[str, Any] = {
            "url": response.url,
            **robots,
            "user_agent": self.ledger.user_agent,
            "profile": self.ledger.profile,
            "purposes": self.ledger.purposes,
            "content_usage_header": b", ".join(header).decode("latin-1")
            if header
            else None,
            "content_usage": combine([header_preferences(header), usage or None]),
            "directives": stringify_directives(
                directives_for(response, self.ledger.user_agent)
            ),
        }
        for key, meta_key in OTHER_FACTS.items():
            record[key] = meta.get(meta_key)
        # Plain data whose text a UTF-8 feed can write: robots.txt's
        # undecodable octets (a rule, a Content-Signal value, a License URL)
        # as their percent escapes.
        record = self._records[response] = plain(record)
        return record

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if response is None:
            # Items of start(): no page, nothing to record.
            async for output in result:
                yield output
            return
        async for output in result:
            if not isinstance(output, Request) and ItemAdapter.is_item(output):
                record = self.record(response)
                self.ledger.kept(record)
                if self.ledger.provenance:
                    # Each item its own copy: a pipeline editing one record
                    # leaves the others alone.
                    annotate(output, FIELD, copy.deepcopy(record))
            yield output


def _warn_unjudged(crawler: Crawler) -> None:
    """One WARNING when RobotsMiddleware, which judges the requests whose
    items are recorded, is not in the crawl's downloader chain (taken out
    by hand): every record would say ``not_judged``."""
    # Imported here: the middleware imports this module's neighbours.
    from .middleware import RobotsMiddleware

    enabled = enabled_components(crawler, "DOWNLOADER_MIDDLEWARES")
    if enabled is None or any(issubclass(cls, RobotsMiddleware) for cls in enabled):
        return
    logger.warning(
        "ROBOTS_PROVENANCE or ROBOTS_REPORT is on, but"
        " scrapy_rfc9309.middleware.RobotsMiddleware is not enabled in"
        " DOWNLOADER_MIDDLEWARES: no request is judged by robots.txt, and the"
        " records say not_judged (the add-on enables it; see"
        " docs/getting-started.md)",
        extra={"crawler": crawler},
    )
