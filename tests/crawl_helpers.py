"""Real crawls for the middleware tests: a spider that records what it got.

``await crawl(urls, settings)`` runs one crawl with the add-on enabled and
returns the crawler; ``crawler.spider.crawled`` lists the URLs that reached a
callback and ``crawler.spider.dropped`` the ``RobotsDisallowed`` exceptions of
the requests that did not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from scrapy_rfc9309.middleware import RobotsDisallowed, RobotsMiddleware

ADDON = {"scrapy_rfc9309.Addon": 100}

# Fast, quiet, deterministic crawls: no retries unless a test asks, short
# timeouts, no jitter on delays, and only the test's own requests.
BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": ADDON,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 5,
    "LOG_LEVEL": "INFO",
    "USER_AGENT": "TestBot/1.0 (+http://127.0.0.1/bot)",
}


class RecordingSpider(Spider):
    """Requests ``urls`` (in order) and records what happens to each."""

    name = "recording"

    def __init__(self, urls: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = list(urls or [])
        self.crawled: list[str] = []
        self.statuses: dict[str, int] = {}
        #: URL -> why robots.txt dropped it.
        self.dropped: dict[str, RobotsDisallowed] = {}
        self.errors: list[Failure] = []

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(
                url, callback=self.parse, errback=self.failed, dont_filter=True
            )

    def parse(self, response: Response) -> None:
        self.crawled.append(response.url)
        self.statuses[response.url] = response.status

    def failed(self, failure: Failure) -> None:
        if isinstance(failure.value, RobotsDisallowed):
            self.dropped[failure.request.url] = failure.value  # type: ignore[attr-defined]
        else:
            self.errors.append(failure)


def make_crawler(
    settings: dict[str, Any] | None = None,
    spidercls: type[Spider] = RecordingSpider,
) -> Crawler:
    return get_crawler(spidercls, {**BASE_SETTINGS, **(settings or {})})


async def crawl(
    urls: list[str],
    settings: dict[str, Any] | None = None,
    spidercls: type[Spider] = RecordingSpider,
    **spider_kwargs: Any,
) -> Crawler:
    crawler = make_crawler(settings, spidercls)
    await crawler.crawl_async(urls=urls, **spider_kwargs)
    return crawler


def stats(crawler: Crawler, prefix: str = "robots/") -> dict[str, Any]:
    """The crawl's stats whose key starts with ``prefix``."""
    assert crawler.stats is not None
    return {
        key: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith(prefix)
    }


def middleware(crawler: Crawler) -> RobotsMiddleware:
    return crawler.get_downloader_middleware(RobotsMiddleware)  # type: ignore[return-value]
