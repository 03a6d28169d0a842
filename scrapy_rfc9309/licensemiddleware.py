"""``LicensesMiddleware``: the licences a response is under (RSL discovery),
in its meta and its items; never enforced (docs/rights.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request

from ._compat import spider_argument
from .licenses import link_licenses
from .spidermiddleware import annotate

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["LicensesMiddleware"]

#: The meta key and item field.
META_KEY = FIELD = "robots_licenses"


@spider_argument
class LicensesMiddleware:
    """Give each response the licences that apply to it: robots.txt's
    ``License`` lines for the crawl's agent (which
    :class:`~scrapy_rfc9309.RobotsMiddleware` puts in the request's meta)
    and the response's ``Link rel="license"`` headers; items get them in a
    ``robots_licenses`` field.  Nothing is refused for a licence."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def licenses(self, response: Response) -> list[dict[str, Any]]:
        """The licences of ``response``, read once (kept in its meta)."""
        found = response.meta.get(META_KEY)
        if isinstance(found, tuple):
            return list(found)
        robots = list(found or ())
        links = link_licenses(response.headers.getlist(b"Link"), response.url)
        merged = tuple(robots + [link for link in links if link not in robots])
        # A tuple: read, so a second look (or a page passing its meta on)
        # does not add the headers twice.
        response.meta[META_KEY] = merged
        return list(merged)

    def process_spider_input(self, response: Response) -> None:
        self.licenses(response)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        licenses = [] if response is None else self.licenses(response)
        async for output in result:
            if (
                licenses
                and not isinstance(output, Request)
                and ItemAdapter.is_item(output)
            ):
                annotate(output, FIELD, [dict(entry) for entry in licenses])
            yield output
