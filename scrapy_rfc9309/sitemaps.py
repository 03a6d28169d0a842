"""``SitemapsMiddleware``: the ``Sitemap:`` lines of robots.txt in a crawl.

With ``ROBOTS_SITEMAPS = True``, each sitemap that a parsed robots.txt names
is requested once in the whole crawl, as an ordinary scheduled request
(dupefilter, ``allowed_domains`` and robots.txt apply to it), and the page
URLs it lists are fed to the spider.  A ``SitemapSpider`` gets them through
its own ``_parse_sitemap``, so its ``sitemap_rules``, ``sitemap_follow`` and
``sitemap_alternate_links`` decide; any other spider gets them in ``parse``
(or the method named by its ``robots_sitemap_callback`` attribute), with
sitemap indexes followed down to ``ROBOTS_SITEMAP_MAX_DEPTH``.

Sitemaps come from untrusted servers, so every way they could grow a crawl
is bounded, each skip counted under ``robots/sitemaps/skipped/`` and logged:
sitemaps on another site than the robots.txt (or index) naming them are
skipped unless ``ROBOTS_SITEMAP_OTHER_SITES`` is on; at most
``ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT`` sitemaps of one robots.txt and
``ROBOTS_SITEMAP_MAX_REQUESTS`` in the whole crawl are requested; and a
sitemap is downloaded and decompressed up to ``ROBOTS_SITEMAP_MAX_BYTES``.

Whatever ``ROBOTS_SITEMAPS`` says, a ``SitemapSpider`` whose
``sitemap_urls`` name a robots.txt gets its sitemaps from the outcome
``RobotsMiddleware`` holds, instead of downloading robots.txt a second time.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from types import MethodType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.spiders import SitemapSpider
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap
from tldextract import TLDExtract

from . import signals as robots_signals
from ._settings import ensure_enabled, flag, positive_int, refusals_logged
from .middleware import RobotsMiddleware
from .outcome import PARSED
from .urls import http_url, robots_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.http.request import CallbackT
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

    from .outcome import Outcome

__all__ = ["CALLBACK_ATTRIBUTE", "DEPTH_KEY", "SitemapsMiddleware"]

logger = logging.getLogger(__name__)

#: The spider attribute holding the callback of sitemap requests for spiders
#: other than ``SitemapSpider``.  A bound method kept on the spider itself is
#: what ``Request.to_dict`` can name and ``request_from_dict`` find again, so
#: these requests survive ``JOBDIR``.
CALLBACK_ATTRIBUTE = "_robots_parse_sitemap"
#: Request meta key: how far below robots.txt a sitemap is (1 for the
#: sitemaps robots.txt names, 2 for those of a sitemap index they are, ...).
DEPTH_KEY = "robots_sitemap_depth"

_SCHEMES = ("http", "https")

#: Stats: sitemaps named by robots.txt and requested (SPEC), and sitemaps
#: named by sitemap indexes and requested; both count towards
#: ``ROBOTS_SITEMAP_MAX_REQUESTS``.
_DISCOVERED = "robots/sitemaps/discovered"
_FOLLOWED = "robots/sitemaps/followed"
_SKIPPED = "robots/sitemaps/skipped/"

# Registrable domains from the public suffix list bundled with tldextract
# (a dependency of Scrapy): no download, no cache written.  Private suffixes
# count, so two blogs on one hosting domain are two sites.
_SITES = TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


def _site(url: str) -> str:
    """The registrable domain of ``url``'s host (``example.co.uk`` for
    ``www.example.co.uk``), or the host itself (an IP address, a name under
    no public suffix)."""
    host = urlsplit(url).hostname or ""
    parts = _SITES(host)
    return f"{parts.domain}.{parts.suffix}" if parts.domain and parts.suffix else host


@dataclass(frozen=True)
class _Limits:
    """The ``ROBOTS_SITEMAP_*`` bounds of a crawl."""

    per_robots_txt: int
    per_crawl: int
    #: The ``download_maxsize`` of sitemap requests: Scrapy's downloader,
    #: HttpCompressionMiddleware and the gzip reading of sitemaps honour it.
    max_bytes: int
    other_sites: bool

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> _Limits:
        max_bytes = positive_int(settings, "ROBOTS_SITEMAP_MAX_BYTES", minimum=1)
        download_maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        if download_maxsize > 0:
            max_bytes = min(max_bytes, download_maxsize)
        return cls(
            per_robots_txt=positive_int(
                settings, "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT", minimum=0
            ),
            per_crawl=positive_int(settings, "ROBOTS_SITEMAP_MAX_REQUESTS", minimum=0),
            max_bytes=max_bytes,
            other_sites=flag(settings, "ROBOTS_SITEMAP_OTHER_SITES"),
        )


class _Budget:
    """The crawl's bounds, and how many more sitemaps it may request.

    Kept on the spider (see :func:`_budget`), where the middleware and the
    sitemap callback both find it; not in the stats, which a project may
    turn off (``DummyStatsCollector``).
    """

    def __init__(self, limits: _Limits) -> None:
        self.limits = limits
        self.left = limits.per_crawl

    def take(self) -> bool:
        """Whether one more sitemap may be requested (then counted)."""
        if self.left <= 0:
            return False
        self.left -= 1
        return True


_BUDGET_ATTRIBUTE = "_robots_sitemap_budget"


def _budget(spider: Spider) -> _Budget:
    """The crawl's :class:`_Budget`, made on first use."""
    budget: _Budget | None = getattr(spider, _BUDGET_ATTRIBUTE, None)
    if budget is None:
        budget = _Budget(_Limits.from_settings(spider.crawler.settings))
        setattr(spider, _BUDGET_ATTRIBUTE, budget)
    return budget


class _Skips:
    """Sitemaps skipped while reading one robots.txt or sitemap index:
    counted one by one, logged once per reason."""

    def __init__(self) -> None:
        #: Reason -> (how many, the first URL skipped).
        self.reasons: dict[str, tuple[int, str]] = {}

    def add(self, reason: str, url: str) -> None:
        count, first = self.reasons.get(reason, (0, url))
        self.reasons[reason] = (count + 1, first)

    def report(self, stats: StatsCollector, source: str, spider: Spider) -> None:
        for reason, (count, first) in self.reasons.items():
            stats.inc_value(_SKIPPED + reason, count)
            logger.info(
                "Skipped %(count)s sitemap(s) named by %(source)s, such as"
                " %(url)s: %(why)s",
                {"count": count, "source": source, "url": first, "why": _WHY[reason]},
                extra={"spider": spider},
            )


_WHY = {
    "other_site": "on another site (ROBOTS_SITEMAP_OTHER_SITES is off)",
    "robots_txt_limit": "over ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT",
    "crawl_limit": "over ROBOTS_SITEMAP_MAX_REQUESTS for the crawl",
}


class _Follow:
    """Which sitemaps named by one sitemap index are requested: those on
    the index's site (unless ROBOTS_SITEMAP_OTHER_SITES), while the crawl's
    ROBOTS_SITEMAP_MAX_REQUESTS lasts."""

    def __init__(self, spider: Spider, index_url: str) -> None:
        crawler = spider.crawler
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.budget = _budget(spider)
        self.limits = self.budget.limits
        self.spider = spider
        self.index_url = index_url
        self.site = _site(index_url)
        self.skips = _Skips()

    def admit(self, url: str) -> bool:
        """Whether to request ``url`` (counted if so, kept for the report
        if not)."""
        if not self.limits.other_sites and _site(url) != self.site:
            self.skips.add("other_site", url)
        elif not self.budget.take():
            self.skips.add("crawl_limit", url)
        else:
            self.stats.inc_value(_FOLLOWED)
            return True
        return False

    def done(self) -> None:
        self.skips.report(self.stats, self.index_url, self.spider)


class SitemapsMiddleware:
    """Spider middleware feeding robots.txt sitemaps to the spider.

    Active when ``ROBOTS_ENABLED`` is on and either ``ROBOTS_SITEMAPS`` is on
    or the spider is a ``SitemapSpider`` (see the module docstring).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        spider = crawler.spider
        if spider is None:
            raise NotConfigured
        self.sitemap_spider = isinstance(spider, SitemapSpider)
        if not self.sitemap_spider:
            # Attached whatever the settings: sitemap requests queued in a
            # JOBDIR by an earlier run still need their callback when the
            # crawl is resumed with ROBOTS_SITEMAPS (or robots.txt) off.
            setattr(spider, CALLBACK_ATTRIBUTE, MethodType(_parse_sitemap, spider))
        self.feed = flag(settings, "ROBOTS_SITEMAPS")
        # Without a reason, so that Scrapy logs no warning: being off is
        # the default, and RobotsMiddleware already warns when it is off.
        ensure_enabled(crawler, quiet=True)
        if not self.feed and not self.sitemap_spider:
            raise NotConfigured
        self.crawler = crawler
        self.spider = spider
        self.stats = crawler.stats
        self.callback: CallbackT
        if isinstance(spider, SitemapSpider):
            self.callback = spider._parse_sitemap
        else:
            # Checked now, so that a misnamed callback stops the crawl at
            # once rather than failing on every sitemap.
            _max_depth(settings)
            _page_callback(spider)
            self.callback = getattr(spider, CALLBACK_ATTRIBUTE)
        # Sitemap URLs requested so far: each one once in the crawl, however
        # many origins name it and however often their robots.txt is
        # fetched again.
        self._requested: set[str] = set()
        self._robots: RobotsMiddleware | None = None
        self.budget = _budget(spider)
        # SitemapSpider robots.txt start requests being answered.
        self._robots_steps = 0
        if self.feed:
            crawler.signals.connect(
                self._outcome_obtained, signal=robots_signals.robots_outcome
            )
        if self.sitemap_spider:
            crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """Bound the sitemaps a ``SitemapSpider`` follows below those of
        robots.txt: its own code follows sitemap indexes (other spiders get
        the same bounds from :func:`_index_requests`)."""
        if (
            not self.sitemap_spider
            or response is None
            or DEPTH_KEY not in response.meta
        ):
            async for output in result:
                yield output
            return
        follow = _Follow(self.spider, response.url)
        depth = int(response.meta[DEPTH_KEY]) + 1
        async for output in result:
            if isinstance(output, Request) and output.callback == self.callback:
                if not follow.admit(output.url):
                    continue
                output.meta[DEPTH_KEY] = depth
                output.meta["download_maxsize"] = follow.limits.max_bytes
            yield output
        follow.done()

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Answer a ``SitemapSpider``'s robots.txt start requests from the
        outcome ``RobotsMiddleware`` fetches anyway."""
        async for request in start:
            robots = self._robots_middleware()
            if robots is not None and self._is_robots_step(request):
                # Each in its own task: the start requests go on meanwhile,
                # and many robots.txt files are fetched at once, as the
                # spider's own requests for them would have been.
                self._robots_steps += 1
                deferred_from_coro(self._robots_step(robots, request))
            else:
                yield request

    def _robots_middleware(self) -> RobotsMiddleware | None:
        if not self.sitemap_spider:
            return None
        if self._robots is None:
            # Only known once the engine exists.
            self._robots = self.crawler.get_downloader_middleware(RobotsMiddleware)
            if self._robots is None:
                # RobotsMiddleware taken out of the chain by hand: the spider
                # reads robots.txt itself, as it would without this package.
                self.sitemap_spider = False
        return self._robots

    def _is_robots_step(self, request: Any) -> bool:
        if not isinstance(request, Request) or request.callback != self.callback:
            return False
        parts = urlsplit(request.url)
        return (
            parts.path == "/robots.txt"
            and not parts.query
            and robots_url(request.url) is not None
        )

    async def _robots_step(self, robots: RobotsMiddleware, request: Request) -> None:
        try:
            outcome = await robots.outcome_for(request.url, request)
            origin = robots_url(request.url)
            if outcome is not None and origin is not None:
                # As SitemapSpider does at this step: every sitemap that
                # robots.txt names, sitemap_follow applying only to indexes.
                self._schedule(self._new_sitemaps(origin, outcome))
        except IgnoreRequest:
            pass  # the crawl is closing
        except Exception:
            # In a task of its own, nothing else would report it.
            logger.error(
                "Error reading the sitemaps of %(request)s",
                {"request": request},
                exc_info=True,
                extra={"spider": self.spider},
            )
        finally:
            self._robots_steps -= 1

    def _spider_idle(self) -> None:
        if self._robots_steps:
            # A robots.txt still on its way may have sitemaps to crawl.
            raise DontCloseSpider

    def _outcome_obtained(
        self, origin: str, outcome: Outcome, request: Request
    ) -> None:
        self._schedule(self._new_sitemaps(origin, outcome))

    def _schedule(self, sitemaps: list[Request]) -> None:
        engine = self.crawler.engine
        if not sitemaps or engine.spider is None:
            return
        for sitemap in sitemaps:
            # Through the scheduler: the dupefilter, OffsiteMiddleware and
            # RobotsMiddleware see it as they see any request, and JOBDIR
            # keeps it.
            engine.crawl(sitemap)

    def _new_sitemaps(self, origin: str, outcome: Outcome) -> list[Request]:
        """Requests for the sitemaps of ``outcome`` not requested yet."""
        document = outcome.document
        if outcome.kind != PARSED or document is None:
            return []
        limits = self.budget.limits
        site = _site(origin)
        requests = []
        skips = _Skips()
        listed = 0
        for value in document.sitemaps:
            url = http_url(origin, value)
            if url is None:
                logger.debug(
                    "Ignoring Sitemap %(url)r of %(origin)s: not an http(s) URL",
                    {"url": value, "origin": origin},
                    extra={"spider": self.spider},
                )
                continue
            if not limits.other_sites and _site(url) != site:
                skips.add("other_site", url)
                continue
            listed += 1
            if listed > limits.per_robots_txt:
                skips.add("robots_txt_limit", url)
                continue
            request = _sitemap_request(url, self.callback, 1, limits)
            if request.url in self._requested:
                continue
            if not self.budget.take():
                skips.add("crawl_limit", url)
                continue
            self._requested.add(request.url)
            self.stats.inc_value(_DISCOVERED)
            logger.debug(
                "Sitemap %(url)s found in %(origin)s",
                {"url": request.url, "origin": origin},
                extra={"spider": self.spider},
            )
            requests.append(request)
        skips.report(self.stats, origin, self.spider)
        return requests


def _sitemap_request(
    url: str, callback: CallbackT, depth: int, limits: _Limits
) -> Request:
    return Request(
        url,
        callback=callback,
        meta={DEPTH_KEY: depth, "download_maxsize": limits.max_bytes},
    )


def _max_depth(settings: BaseSettings) -> int:
    """``ROBOTS_SITEMAP_MAX_DEPTH``: how many levels of sitemaps below
    robots.txt are requested (1: only the sitemaps robots.txt names)."""
    return positive_int(settings, "ROBOTS_SITEMAP_MAX_DEPTH", minimum=1)


def _page_callback(spider: Spider) -> CallbackT:
    """The spider method that gets the page URLs of robots.txt sitemaps."""
    name = getattr(spider, "robots_sitemap_callback", None) or "parse"
    callback = getattr(spider, str(name), None)
    if not callable(callback):
        raise ValueError(
            f"robots_sitemap_callback of {type(spider).__name__} names {name!r},"
            " which is not a method of the spider"
        )
    return callback  # type: ignore[no-any-return]


def _parse_sitemap(spider: Spider, response: Response) -> Iterator[Request]:
    """The callback of sitemap requests (bound to the spider, see
    :data:`CALLBACK_ATTRIBUTE`): a sitemap index's sitemaps go round again,
    a sitemap's page URLs go to :func:`_page_callback`."""
    try:
        sitemap = _read_sitemap(spider, response)
    except _TooLarge as exc:
        spider.crawler.stats.inc_value(_SKIPPED + "too_large")
        logger.warning(
            "Ignoring sitemap %(response)s: over %(limit)s bytes once"
            " decompressed (ROBOTS_SITEMAP_MAX_BYTES, DOWNLOAD_MAXSIZE)",
            {"response": response, "limit": exc.args[0]},
            extra={"spider": spider},
        )
        return
    if sitemap is None:
        logger.warning(
            "Ignoring invalid sitemap: %(response)s",
            {"response": response},
            extra={"spider": spider},
        )
        return
    kind, locations = sitemap
    if kind == "sitemapindex":
        depth = int(response.meta.get(DEPTH_KEY, 1)) + 1
        if depth > _max_depth(spider.crawler.settings):
            logger.info(
                "Not following sitemap index %(response)s: its sitemaps would be"
                " %(depth)s levels below robots.txt, over ROBOTS_SITEMAP_MAX_DEPTH",
                {"response": response, "depth": depth},
                extra={"spider": spider},
            )
            return
        yield from _index_requests(spider, response, locations, depth)
    else:
        callback = _page_callback(spider)
        for url in locations:
            yield Request(url, callback=callback)


def _index_requests(
    spider: Spider, response: Response, locations: list[str], depth: int
) -> Iterator[Request]:
    """The requests for the sitemaps a sitemap index names, within the
    crawl's bounds."""
    callback = getattr(spider, CALLBACK_ATTRIBUTE)
    follow = _Follow(spider, response.url)
    for url in locations:
        if follow.admit(url):
            yield _sitemap_request(url, callback, depth, follow.limits)
    follow.done()


class _TooLarge(Exception):
    """A sitemap over its size limit once decompressed (args: the limit)."""


def _read_sitemap(spider: Spider, response: Response) -> tuple[str, list[str]] | None:
    """The type and the http(s) locations of a sitemap response, or ``None``
    when it is not an XML sitemap or sitemap index; :class:`_TooLarge` when
    it decompresses past its limit."""
    body = response.body
    if gzip_magic_number(response):
        limit = response.meta.get(
            "download_maxsize",
            getattr(
                spider,
                "download_maxsize",
                spider.crawler.settings.getint("DOWNLOAD_MAXSIZE"),
            ),
        )
        try:
            body = gunzip(body, max_size=limit)
        # Scrapy's size error is a ValueError, and decoding stops right there.
        except ValueError:
            raise _TooLarge(limit) from None
        # Not gzip after all.
        except (OSError, EOFError, zlib.error):
            return None
    try:
        sitemap = Sitemap(body)
        if sitemap.type not in ("urlset", "sitemapindex"):
            return None
        locations = []
        for entry in sitemap:
            url = http_url(response.url, entry["loc"])
            if url is not None:
                locations.append(url)
    # lxml's XMLSyntaxError is a SyntaxError; StopIteration: an empty body.
    except (SyntaxError, StopIteration):
        return None
    return sitemap.type, locations
