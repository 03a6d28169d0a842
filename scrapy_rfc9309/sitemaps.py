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
``ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT`` sitemaps below one robots.txt (those
it names and those of their indexes) and ``ROBOTS_SITEMAP_MAX_REQUESTS`` in
the whole crawl are requested; and a
sitemap is downloaded and decompressed up to ``ROBOTS_SITEMAP_MAX_BYTES``.
Reading a sitemap is bounded too (see :mod:`._sitemap_read`): at most
50,000 entries, a million elements, 256 names, and the page URLs of all the
sitemaps below one robots.txt up to ``ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT``;
each sitemap cut short is counted under ``robots/sitemaps/cut/`` and logged.

Whatever ``ROBOTS_SITEMAPS`` says, a ``SitemapSpider`` whose
``sitemap_urls`` name a robots.txt gets its sitemaps from the outcome
``RobotsMiddleware`` holds, instead of downloading robots.txt a second time.
"""

from __future__ import annotations

import logging
from types import MethodType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.spiders import SitemapSpider
from scrapy.spiders.sitemap import iterloc
from scrapy.utils.defer import deferred_from_coro

from . import _sitemap_read
from . import signals as robots_signals
from ._compat import (
    DownloadCancelledError,
    DownloadTimeoutError,
    sleep,
    spider_argument,
)
from ._config import RobotsConfig
from ._crawljob import describe
from ._settings import ensure_enabled, refusals_logged
from ._sitemap_budget import (
    CUT,
    DISCOVERED,
    FOLLOWED,
    SKIPPED,
    Follow,
    PageCap,
    Skips,
    crawl_budget,
)
from ._sitemap_read import site as _site
from .middleware import SITEMAP_DEPTH_KEY, RobotsMiddleware
from .outcome import PARSED
from .urls import http_url, robots_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.http.request import CallbackT
    from twisted.python.failure import Failure
    from typing_extensions import Self

    from .outcome import Outcome

__all__ = [
    "CALLBACK_ATTRIBUTE",
    "DEPTH_KEY",
    "ERRBACK_ATTRIBUTE",
    "ROBOTS_TXT_KEY",
    "SPIDER_CALLBACK_ATTRIBUTE",
    "SitemapsMiddleware",
]

logger = logging.getLogger(__name__)

#: The spider attribute holding the callback of sitemap requests for spiders
#: other than ``SitemapSpider``.  A bound method kept on the spider itself is
#: what ``Request.to_dict`` can name and ``request_from_dict`` find again, so
#: these requests survive ``JOBDIR``.
CALLBACK_ATTRIBUTE = "_robots_parse_sitemap"
#: The same for a ``SitemapSpider``.
SPIDER_CALLBACK_ATTRIBUTE = "_robots_parse_spider_sitemap"
#: The spider attribute holding the errback of the sitemap requests the
#: package makes, for any spider (kept there for ``JOBDIR`` too).  Not given
#: to the requests a ``SitemapSpider`` makes for its own ``sitemap_urls``.
ERRBACK_ATTRIBUTE = "_robots_sitemap_failed"
#: Request meta key: how far below robots.txt a sitemap is (1 for the
#: sitemaps robots.txt names, 2 for those of a sitemap index they are, ...).
DEPTH_KEY = SITEMAP_DEPTH_KEY
#: Request meta key: the robots.txt URL below which a sitemap is (directly,
#: or through sitemap indexes).
ROBOTS_TXT_KEY = "robots_sitemap_robots_txt"


@spider_argument
class SitemapsMiddleware:
    """Spider middleware feeding robots.txt sitemaps to the spider.

    Active when ``ROBOTS_ENABLED`` is on and either ``ROBOTS_SITEMAPS`` is on
    or the spider is a ``SitemapSpider`` (see the module docstring).
    """

    def __init__(self, crawler: Crawler) -> None:
        spider = crawler.spider
        if spider is None:
            raise NotConfigured
        self.sitemap_spider = isinstance(spider, SitemapSpider)
        # Attached whatever the settings: sitemap requests queued in a JOBDIR
        # by an earlier run still need their callback when the crawl is
        # resumed with ROBOTS_SITEMAPS (or robots.txt) off.
        if self.sitemap_spider:
            parse = MethodType(_parse_spider_sitemap, spider)
            setattr(spider, SPIDER_CALLBACK_ATTRIBUTE, parse)
        else:
            setattr(spider, CALLBACK_ATTRIBUTE, MethodType(_parse_sitemap, spider))
        setattr(spider, ERRBACK_ATTRIBUTE, MethodType(_sitemap_failed, spider))
        # Without a reason, so that Scrapy logs no warning: being off is
        # the default, and RobotsMiddleware already warns when it is off.
        ensure_enabled(crawler, quiet=True)
        self.feed = RobotsConfig.for_crawler(crawler).sitemaps
        if not self.feed and not self.sitemap_spider:
            raise NotConfigured
        self.crawler = crawler
        self.spider = spider
        self.stats = crawler.stats
        self.callback: CallbackT
        if isinstance(spider, SitemapSpider):
            self.callback = getattr(spider, SPIDER_CALLBACK_ATTRIBUTE)
        else:
            # Checked now, so that a misnamed callback stops the crawl at
            # once rather than failing on every sitemap.
            _page_callback(spider)
            self.callback = getattr(spider, CALLBACK_ATTRIBUTE)
        self._robots: RobotsMiddleware | None = None
        self.budget = crawl_budget(spider)
        # SitemapSpider robots.txt start requests being answered.
        self._robots_steps = 0
        if self.feed:
            crawler.signals.connect(
                self._outcome_obtained, signal=robots_signals.robots_outcome
            )
        if self.sitemap_spider:
            crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(
            self._request_scheduled, signal=signals.request_scheduled
        )

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
        robots_txt = _robots_txt_of(response)
        follow = Follow(self.spider, response.url, robots_txt)
        pages = PageCap(self.budget, robots_txt)
        depth = int(response.meta[DEPTH_KEY]) + 1
        async for output in result:
            if isinstance(output, Request):
                if output.callback == self.callback:
                    if not follow.admit(output.url):
                        continue
                    output.meta[DEPTH_KEY] = depth
                    output.meta[ROBOTS_TXT_KEY] = robots_txt
                    output.meta["download_maxsize"] = follow.limits.max_bytes
                elif not pages.admit():
                    continue
            yield output
        follow.done()
        if pages.cut is not None:
            _report_cut(self.spider, response, pages.cut, robots_txt)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Answer a ``SitemapSpider``'s robots.txt start requests from the
        outcome ``RobotsMiddleware`` fetches anyway."""
        async for request in start:
            if not self._answered(request):
                yield request

    def process_start_requests(
        self, start_requests: Iterable[Any], spider: Spider
    ) -> Iterator[Any]:
        """:meth:`process_start`, as Scrapy 2.13 to 2.15 call it when a
        middleware of the project has only this older method (they refuse to
        start a crawl mixing such a middleware with one that has only
        ``process_start``)."""
        for request in start_requests:
            if not self._answered(request):
                yield request

    def _answered(self, request: Any) -> bool:
        """Whether ``request`` is a robots.txt start request answered here."""
        robots = self._robots_middleware()
        if robots is None or not self._is_robots_step(request):
            return False
        # Each in its own task: the start requests go on meanwhile, and many
        # robots.txt files are fetched at once, as the spider's own requests
        # for them would have been.
        self._robots_steps += 1
        deferred_from_coro(self._robots_step(robots, request))
        return True

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
        if (
            not isinstance(request, Request)
            or request.callback != self.spider._parse_sitemap  # type: ignore[attr-defined]
        ):
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
            # With ROBOTS_SITEMAPS on, the robots_outcome signal of every
            # outcome obtained has had its sitemaps requested already.
            if outcome is not None and origin is not None and not self.feed:
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

    def _request_scheduled(self, request: Request) -> None:
        """Drop a sitemap redirected to another site than the robots.txt
        below which it is, unless ROBOTS_SITEMAP_OTHER_SITES: the redirect
        is scheduled like any request, before anything is fetched there
        (not even its robots.txt)."""
        redirects = request.meta.get("redirect_urls")
        if (
            not redirects
            or DEPTH_KEY not in request.meta
            or self.budget.limits.other_sites
        ):
            return
        robots_txt = _robots_txt_of(request)
        if _site(request.url) == _site(robots_txt):
            return
        self.stats.inc_value(SKIPPED + "redirect_other_site")
        logger.info(
            "Not following the redirect of sitemap %(sitemap)s to %(url)s: on"
            " another site than %(robots_txt)s (ROBOTS_SITEMAP_OTHER_SITES is off)",
            {"sitemap": redirects[0], "url": request.url, "robots_txt": robots_txt},
            extra={"spider": self.spider},
        )
        raise IgnoreRequest

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
        skips = Skips()
        # The distinct sitemaps named, not requested yet, while the
        # allowance of this robots.txt and the crawl's last.
        values = self.budget.new_lines(origin, document.sitemaps)
        for index, value in enumerate(values):
            full = self.budget.full(origin)
            if full is not None:
                # The lines left are counted, not read: a robots.txt of
                # 25,000 Sitemap: lines made 25,000 URLs and requests to
                # request the first few.
                first = http_url(origin, value) or value
                skips.add(full, first, len(values) - index)
                break
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
            request = _sitemap_request(url, self.spider, self.callback, 1, origin)
            if request.url in self.budget.requested:
                continue
            self.budget.take(request.url, origin)
            self.budget.take_line(origin, value)
            self.stats.inc_value(DISCOVERED)
            logger.debug(
                "Sitemap %(url)s found in %(origin)s",
                {"url": request.url, "origin": origin},
                extra={"spider": self.spider},
            )
            requests.append(request)
        skips.report(self.stats, origin, self.spider)
        return requests


def _sitemap_request(
    url: str, spider: Spider, callback: CallbackT, depth: int, robots_txt: str
) -> Request:
    """The request for a sitemap ``depth`` levels below ``robots_txt``."""
    limits = crawl_budget(spider).limits
    return Request(
        url,
        callback=callback,
        errback=getattr(spider, ERRBACK_ATTRIBUTE),
        meta={
            DEPTH_KEY: depth,
            ROBOTS_TXT_KEY: robots_txt,
            "download_maxsize": limits.max_bytes,
            **limits.meta,
        },
    )


def _sitemap_failed(spider: Spider, failure: Failure) -> Failure | None:
    """The errback of the sitemap requests the package makes (bound to the
    spider, see :data:`ERRBACK_ATTRIBUTE`): a sitemap that could not be
    downloaded is counted in ``robots/sitemaps/skipped/<cause>`` and logged
    in one WARNING line (Scrapy logged an ERROR and its traceback; for a
    ``Content-Encoding`` decoded past the limit, only a WARNING of its own).
    What others drop, count and log (robots.txt, ``allowed_domains``,
    ``HttpErrorMiddleware``, ...) goes on as it would without an errback."""
    exc = failure.value
    assert exc is not None
    cause = _failure_cause(exc)
    if cause is None:
        return failure
    request: Request = failure.request  # type: ignore[attr-defined]
    if cause == "too_large":
        limit = request.meta.get("download_maxsize")
        why = f"over {limit} bytes (ROBOTS_SITEMAP_MAX_BYTES, DOWNLOAD_MAXSIZE)"
    elif cause == "timeout":
        why = f"not downloaded within DOWNLOAD_TIMEOUT ({describe(exc)})"
    else:
        why = f"its download failed ({describe(exc)})"
    spider.crawler.stats.inc_value(SKIPPED + cause)
    logger.warning(
        "Ignoring sitemap %(request)s: %(why)s",
        {"request": request, "why": why},
        extra={"spider": spider},
    )
    return None


def _failure_cause(exc: BaseException) -> str | None:
    """Why a sitemap was not downloaded (the ``robots/sitemaps/skipped/``
    stat), or ``None`` for a drop or an error someone else reports."""
    if isinstance(exc, IgnoreRequest):
        # HttpCompressionMiddleware, past download_maxsize once decoded; the
        # other drops are counted by whoever made them.
        # (Raised "from" it from Scrapy 2.13.4 on, within handling it before.)
        origin = exc.__cause__ or exc.__context__
        decoded = type(origin).__name__ == "_DecompressionMaxSizeExceeded"
        return "too_large" if decoded else None
    if isinstance(exc, HttpError):
        return None
    if isinstance(exc, DownloadTimeoutError):
        return "timeout"
    if isinstance(exc, DownloadCancelledError):
        # Scrapy cancels a download past its download_maxsize, announced
        # (Content-Length) or received.
        return "too_large"
    return "download_error"


def give_back(spider: Spider, request: Request) -> None:
    """Give back the allowance a sitemap request of the package's (an
    index's) took, when a component drops it before it is scheduled
    (DirectivesMiddleware, below an index that says ``nofollow``): another
    index naming that sitemap may request it, and it is not counted in
    ``robots/sitemaps/followed``."""
    if DEPTH_KEY not in request.meta:
        return
    if crawl_budget(spider).give_back(request.url, _robots_txt_of(request)):
        spider.crawler.stats.inc_value(FOLLOWED, -1)


def _robots_txt_of(message: Request | Response) -> str:
    """The robots.txt URL a sitemap request or response is below (for one
    queued without it in a JOBDIR by an earlier version, the robots.txt of
    the URL first requested)."""
    meta = message.meta
    named = meta.get(ROBOTS_TXT_KEY)
    if isinstance(named, str):
        return named
    first = (meta.get("redirect_urls") or [message.url])[0]
    return robots_url(first) or first


def _page_callback(spider: Spider) -> CallbackT | None:
    """The spider method that gets the page URLs of robots.txt sitemaps: the
    one ``robots_sitemap_callback`` names, else ``None``, Scrapy's default
    (the spider's ``parse``; a ``CrawlSpider``'s rules, then
    ``parse_start_url``)."""
    name = getattr(spider, "robots_sitemap_callback", None)
    if not name:
        return None
    callback = getattr(spider, str(name), None)
    if not callable(callback):
        raise ValueError(
            f"robots_sitemap_callback of {type(spider).__name__} names {name!r},"
            " which is not a method of the spider"
        )
    return callback  # type: ignore[no-any-return]


async def _parse_sitemap(spider: Spider, response: Response) -> AsyncIterator[Request]:
    """The callback of sitemap requests (bound to the spider, see
    :data:`CALLBACK_ATTRIBUTE`): a sitemap index's sitemaps go round again,
    a sitemap's page URLs go to :func:`_page_callback`."""
    budget = crawl_budget(spider)
    robots_txt = _robots_txt_of(response)
    reader = await _read_sitemap(spider, response, budget.urls_left(robots_txt))
    if reader is None:
        return
    cuts = [] if reader.cut is None else [reader.cut]
    values = reader.locations
    if reader.kind == "urlset":
        # Other sitemaps below the same robots.txt may have been read
        # meanwhile: what is left is taken now, in one step.
        left = budget.urls_left(robots_txt)
        if len(values) > left:
            values = values[:left]
            if _sitemap_read.URL_BUDGET not in cuts:
                cuts.append(_sitemap_read.URL_BUDGET)
        budget.take_urls(robots_txt, len(values))
    for why in cuts:
        _report_cut(spider, response, why, robots_txt)
    urls = (http_url(response.url, value) for value in values)
    locations = [url for url in urls if url is not None]
    if reader.kind == "sitemapindex":
        depth = int(response.meta.get(DEPTH_KEY, 1)) + 1
        # ROBOTS_SITEMAP_MAX_DEPTH: how many levels of sitemaps below
        # robots.txt are requested (1: only the sitemaps robots.txt names).
        if depth > RobotsConfig.for_crawler(spider.crawler).sitemap_max_depth:
            logger.info(
                "Not following sitemap index %(response)s: its sitemaps would be"
                " %(depth)s levels below robots.txt, over ROBOTS_SITEMAP_MAX_DEPTH",
                {"response": response, "depth": depth},
                extra={"spider": spider},
            )
            return
        for request in _index_requests(spider, response, locations, depth, robots_txt):
            yield request
    else:
        callback = _page_callback(spider)
        for url in locations:
            yield Request(url, callback=callback)


def _report_cut(spider: Spider, response: Response, why: str, robots_txt: str) -> None:
    """Count a sitemap cut short, and log it (once per robots.txt when its
    page URL allowance ran out)."""
    spider.crawler.stats.inc_value(CUT + why)
    if why == _sitemap_read.URL_BUDGET and not crawl_budget(spider).first_exhausted(
        robots_txt
    ):
        return
    logger.warning(
        "Sitemap %(response)s read only in part: " + _sitemap_read.WHY[why],
        {"response": response, "robots_txt": robots_txt},
        extra={"spider": spider},
    )


def _index_requests(
    spider: Spider,
    response: Response,
    locations: list[str],
    depth: int,
    robots_txt: str,
) -> Iterator[Request]:
    """The requests for the sitemaps a sitemap index names, within the
    crawl's bounds."""
    callback = getattr(spider, CALLBACK_ATTRIBUTE)
    follow = Follow(spider, response.url, robots_txt)
    for index, url in enumerate(locations):
        if follow.skip_rest(locations, index):
            # Counted, not made requests: an index may name 50,000.
            break
        request = _sitemap_request(url, spider, callback, depth, robots_txt)
        if follow.admit(request.url):
            yield request
    follow.done()


async def _read_sitemap(
    spider: Spider, response: Response, max_urls: int, *, keep_entries: bool = False
) -> _sitemap_read.SitemapReader | None:
    """A sitemap response read (see :func:`~._sitemap_read.read`), the
    event loop running between two pieces of it; ``None``, logged (and
    counted when too large), for a response that is no sitemap."""
    limit = response.meta.get(
        "download_maxsize",
        getattr(
            spider,
            "download_maxsize",
            spider.crawler.settings.getint("DOWNLOAD_MAXSIZE"),
        ),
    )
    try:
        reader = await _sitemap_read.read(
            response.body, limit, max_urls, lambda: sleep(0), keep_entries=keep_entries
        )
    except _sitemap_read.TooLarge:
        spider.crawler.stats.inc_value(SKIPPED + "too_large")
        logger.warning(
            "Ignoring sitemap %(response)s: over %(limit)s bytes once"
            " decompressed (ROBOTS_SITEMAP_MAX_BYTES, DOWNLOAD_MAXSIZE)",
            {"response": response, "limit": limit},
            extra={"spider": spider},
        )
        return None
    if reader is None or reader.kind not in ("urlset", "sitemapindex"):
        logger.warning(
            "Ignoring invalid sitemap: %(response)s",
            {"response": response},
            extra={"spider": spider},
        )
        return None
    return reader


async def _parse_spider_sitemap(
    spider: SitemapSpider, response: Response
) -> AsyncIterator[Request]:
    """For a ``SitemapSpider``, the callback of the sitemaps below robots.txt
    (bound to the spider, see :data:`SPIDER_CALLBACK_ATTRIBUTE`): read
    within the same bounds as for any spider, then its ``sitemap_filter()``,
    ``sitemap_follow``, ``sitemap_rules`` and ``sitemap_alternate_links``
    decide, as in ``SitemapSpider._parse_sitemap`` (whose own parsing is
    bounded only in bytes).  The page requests are capped by
    :class:`PageCap`."""
    reader = await _read_sitemap(
        spider, response, _sitemap_read.MAX_ENTRIES, keep_entries=True
    )
    if reader is None:
        return
    if reader.cut is not None:
        _report_cut(spider, response, reader.cut, _robots_txt_of(response))
    if reader.alternates_left_out and spider.sitemap_alternate_links:
        # Left out of sitemap_filter()'s entries alike, but only then are
        # any page requests lost.
        _report_cut(spider, response, _sitemap_read.ALTERNATES, "")
    entries = spider.sitemap_filter(reader.entries)
    for value in iterloc(entries, spider.sitemap_alternate_links):
        url = http_url(response.url, value)
        if url is None:
            continue
        if reader.kind == "sitemapindex":
            if any(follow.search(url) for follow in spider._follow):
                yield Request(
                    url,
                    callback=getattr(spider, SPIDER_CALLBACK_ATTRIBUTE),
                    errback=getattr(spider, ERRBACK_ATTRIBUTE),
                    meta=dict(crawl_budget(spider).limits.meta),
                )
            continue
        for rule, callback in spider._cbs:
            if rule.search(url):
                yield Request(url, callback=callback)
                break
