"""Real crawls for the middleware tests: a spider that records what it got.

``await crawl(urls, settings)`` runs one crawl with the add-on enabled and
returns the crawler; ``crawler.spider.crawled`` lists the URLs that reached a
callback and ``crawler.spider.dropped`` the ``RobotsDisallowed`` exceptions of
the requests that did not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import pairwise
from typing import Any, ClassVar

import pytest
from scrapy import Request, Spider, signals, version_info
from scrapy.core.downloader import Slot
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler, get_reactor_settings
from twisted.python.failure import Failure

from scrapy_rfc9309._compat import spider_argument
from scrapy_rfc9309.middleware import RobotsDisallowed, RobotsMiddleware
from tests.support.server import LoopbackServer

try:
    from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError
except ImportError:  # Scrapy 2.13, 2.14: a download fails with Twisted's errors
    from twisted.internet import error

    CannotResolveHostError = error.DNSLookupError  # type: ignore[misc]
    DownloadConnectionRefusedError = error.ConnectionRefusedError  # type: ignore[misc]

if not hasattr(Crawler, "crawl_async"):  # Scrapy 2.13: the Deferred form

    async def _crawl_async(self: Crawler, *args: Any, **kwargs: Any) -> None:
        await maybe_deferred_to_future(self.crawl(*args, **kwargs))

    Crawler.crawl_async = _crawl_async  # type: ignore[attr-defined]

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


class Burst(RecordingSpider):
    """All its requests at once, in one go (and through the dupefilter)."""

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, callback=self.parse, errback=self.failed)


class ItemSpider(RecordingSpider):
    """Yields one item per page (``{"url": ...}``) and keeps each response's
    ``meta[meta_key]`` (``None`` when unset) in ``kept``, by URL."""

    meta_key = ""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kept: dict[str, Any] = {}

    def parse(self, response: Response) -> Iterator[Any]:  # type: ignore[override]
        super().parse(response)
        self.kept[response.url] = response.meta.get(self.meta_key)
        yield {"url": response.url}


class Routed(RecordingSpider):
    """Requests its URLs with ``meta`` (a proxy, site credentials...)."""

    meta: ClassVar[dict[str, Any]] = {}

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(
                url,
                callback=self.parse,
                errback=self.failed,
                meta=dict(self.meta),
                dont_filter=True,
            )


def through_proxy(proxy: LoopbackServer, **meta: Any) -> type[Routed]:
    """A :class:`Routed` spider whose requests go through ``proxy`` (as
    ``user:pw``), with more ``meta``."""

    class Through(Routed):
        name = "through"

    Through.meta = {"proxy": f"http://user:pw@{proxy.host}:{proxy.port}", **meta}
    return Through


@spider_argument
class IgnoreRobots:
    """A downloader middleware of the crawl's own (not the site) refusing
    every robots.txt request."""

    def process_request(self, request: Request) -> None:
        if request.url.endswith("/robots.txt"):
            raise IgnoreRequest("not today")


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


async def crawl_items(crawler: Crawler, **kwargs: Any) -> list[Any]:
    """Run ``crawler``'s crawl (``crawl_async(**kwargs)``) to its end: the
    items it scraped, in order."""
    items: list[Any] = []

    def scraped(item: Any) -> None:
        items.append(item)

    # Scrapy keeps a weak reference to ``scraped``: this frame holds it
    # until the crawl is over.
    crawler.signals.connect(scraped, signal=signals.item_scraped)
    await crawler.crawl_async(**kwargs)
    return items


def crawl_delay_robots(delay: float, agent: str = "*") -> str:
    """A robots.txt of one group for ``agent``: ``delay`` and /private
    disallowed."""
    return f"User-agent: {agent}\nCrawl-delay: {delay}\nDisallow: /private\n"


def stats(crawler: Crawler, prefix: str = "robots/") -> dict[str, Any]:
    """The crawl's stats whose key starts with ``prefix``."""
    assert crawler.stats is not None
    return {
        key: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith(prefix)
    }


#: How much shorter than a Crawl-delay a gap between two departures may be:
#: float rounding of the slot's own monotonic arithmetic, nothing more.
TIMER_GRANULARITY = 0.001


class Departures:
    """When each request left its downloader slot for the network.

    Scrapy records that instant as the slot's ``lastseen`` (monotonic
    seconds) and spaces departures by the slot's delay, which is where
    Crawl-delay is applied; this keeps every value it records, per slot.
    Measured at the slot, not at the server: on a loaded machine the way
    from one to the other (a thread handing over the GIL, a connection set
    up) varies by tens of milliseconds, which would make a correctly spaced
    gap look short.  Gaps are only ever checked from below.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.by_slot: dict[Slot, list[float]] = {}
        # Slot is a dataclass with __slots__ (Scrapy 2.15): its own
        # descriptor keeps the value, wrapped to hear every assignment.
        # Before, the instance's __dict__ kept it.
        stored = Slot.__dict__.get("lastseen")
        by_slot = self.by_slot

        def get(slot: Slot) -> float:
            if stored is None:
                return slot.__dict__["lastseen"]  # type: ignore[no-any-return]
            return stored.__get__(slot, Slot)  # type: ignore[no-any-return]

        def set_(slot: Slot, value: float) -> None:
            if stored is None:
                slot.__dict__["lastseen"] = value
            else:
                stored.__set__(slot, value)
            if value:  # 0: a new slot, nothing left yet
                by_slot.setdefault(slot, []).append(value)

        monkeypatch.setattr(Slot, "lastseen", property(get, set_), raising=False)

    def gaps(self, *crawlers: Crawler, key: str) -> list[float]:
        """The gaps between the departures from slot ``key`` (a host) of
        ``crawlers``, the workers of one fleet in this process, together."""
        times = []
        for crawler in crawlers:
            assert crawler.engine is not None
            times += self.by_slot.get(crawler.engine.downloader.slots[key], [])
        times.sort()
        return [later - earlier for earlier, later in pairwise(times)]


#: Scrapy's ``robots_parsed`` signal (Scrapy 2.18), ``None`` on older
#: releases, where the package has nothing to send.
ROBOTS_PARSED = getattr(signals, "robots_parsed", None)
#: For the tests of what the package sends through it.
needs_robots_parsed = pytest.mark.skipif(
    ROBOTS_PARSED is None, reason="Scrapy's robots_parsed signal is Scrapy 2.18"
)


def httpx_ignores_proxies() -> bool:
    """Whether this run's crawls download with Scrapy 2.15's httpx handler,
    which takes no proxy (it logs that it ignores the ``proxy`` meta key;
    docs/reliability.md says so)."""
    return httpx_downloads() and version_info < (2, 16)


def httpx_downloads() -> bool:
    """Whether this run's crawls download with Scrapy's httpx handler: the
    one ``get_crawler`` names without a reactor on Scrapy 2.15 to 2.18 (2.19
    names aiohttp there; under a reactor both download with Twisted).

    Where httpx answers differently the tests say so, and
    docs/reliability.md lists the differences."""
    handler = get_reactor_settings().get("DOWNLOAD_HANDLERS", {}).get("http")
    return isinstance(handler, str) and "._httpx." in handler


def middleware(crawler: Crawler) -> RobotsMiddleware:
    return crawler.get_downloader_middleware(RobotsMiddleware)  # type: ignore[return-value]
