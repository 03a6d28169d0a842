"""The bounds of the sitemaps a crawl requests below robots.txt, and what
is left of them (for :mod:`.sitemaps`).

:class:`Limits` holds the ``ROBOTS_SITEMAP_*`` bounds, :class:`Budget` what
the crawl has used of them (kept on the spider: :func:`crawl_budget`),
:class:`Follow` which sitemaps one sitemap index leads to, :class:`PageCap`
the page requests a ``SitemapSpider`` makes from one sitemap, and
:class:`Skips` the sitemaps skipped while reading one robots.txt or index,
counted under ``robots/sitemaps/skipped/`` and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _sitemap_read
from ._config import RobotsConfig
from ._routing import ZyteApi
from ._sitemap_read import site as _site

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

__all__ = [
    "CUT",
    "DISCOVERED",
    "FOLLOWED",
    "SKIPPED",
    "SKIP_WHY",
    "Budget",
    "Follow",
    "Limits",
    "PageCap",
    "Skips",
    "crawl_budget",
]

# The skips are logged as the rest of the sitemaps middleware logs.
logger = logging.getLogger("scrapy_rfc9309.sitemaps")

#: Stats: sitemaps named by robots.txt and requested (SPEC), and sitemaps
#: named by sitemap indexes and requested; both count towards
#: ``ROBOTS_SITEMAP_MAX_REQUESTS``.
DISCOVERED = "robots/sitemaps/discovered"
FOLLOWED = "robots/sitemaps/followed"
SKIPPED = "robots/sitemaps/skipped/"
CUT = "robots/sitemaps/cut/"


@dataclass(frozen=True)
class Limits:
    """The ``ROBOTS_SITEMAP_*`` bounds of a crawl."""

    per_robots_txt: int
    per_crawl: int
    #: The ``download_maxsize`` of sitemap requests: Scrapy's downloader,
    #: HttpCompressionMiddleware and the gzip reading of sitemaps honour it.
    max_bytes: int
    other_sites: bool
    #: Page URLs read from all the sitemaps below one robots.txt.
    urls_per_robots_txt: int
    #: More meta of every sitemap request: its raw body through Zyte API,
    #: never a browser's rendering (:meth:`~._routing.ZyteApi.raw_body`).
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> Limits:
        config = RobotsConfig.for_crawler(crawler)
        max_bytes = config.sitemap_max_bytes
        download_maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        if download_maxsize > 0:
            max_bytes = min(max_bytes, download_maxsize)
        return cls(
            per_robots_txt=config.sitemap_max_per_robotstxt,
            per_crawl=config.sitemap_max_requests,
            max_bytes=max_bytes,
            other_sites=config.sitemap_other_sites,
            urls_per_robots_txt=config.sitemap_max_urls_per_robotstxt,
            meta=ZyteApi.from_settings(crawler.settings).raw_body(),
        )


class Budget:
    """The crawl's bounds, and how many more sitemaps it may request: in
    all, and below each robots.txt.

    Kept on the spider (see :func:`crawl_budget`), where the middleware and
    the sitemap callback both find it; not in the stats, which a project
    may turn off (``DummyStatsCollector``).
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.left = limits.per_crawl
        #: robots.txt URL -> sitemaps requested below it (those it names and
        #: those of their indexes), for ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT: one
        #: sitemap index could otherwise take the whole crawl's
        #: ROBOTS_SITEMAP_MAX_REQUESTS.  One entry per robots.txt with a
        #: sitemap requested.
        self.sitemaps: dict[str, int] = {}
        #: robots.txt URL -> page URLs read from the sitemaps below it.  One
        #: entry per robots.txt with a sitemap requested: as many as
        #: ROBOTS_SITEMAP_MAX_REQUESTS at most.
        self.urls: dict[str, int] = {}
        self.exhausted: set[str] = set()
        #: The sitemap URLs requested: each once in the crawl, however many
        #: robots.txt files or indexes name it, however often.  As many as
        #: ROBOTS_SITEMAP_MAX_REQUESTS at most.
        self.requested: set[str] = set()
        #: robots.txt URL -> its ``Sitemap:`` values (as written) that were
        #: requested: when it is fetched again, these lines are passed over
        #: unread, neither requested again nor counted as skipped.  As many
        #: as ROBOTS_SITEMAP_MAX_REQUESTS in all at most.
        self.lines: dict[str, set[str]] = {}

    def full(self, robots_txt: str) -> str | None:
        """Why no more sitemaps may be requested below ``robots_txt``
        (``robots_txt_limit``, ``crawl_limit``), if none may."""
        if self.sitemaps.get(robots_txt, 0) >= self.limits.per_robots_txt:
            return "robots_txt_limit"
        if self.left <= 0:
            return "crawl_limit"
        return None

    def take(self, url: str, robots_txt: str) -> str | None:
        """Why sitemap ``url`` below ``robots_txt`` may not be requested;
        ``None`` if it may (then it is counted)."""
        full = self.full(robots_txt)
        if full is None:
            self.left -= 1
            self.sitemaps[robots_txt] = self.sitemaps.get(robots_txt, 0) + 1
            self.requested.add(url)
        return full

    def give_back(self, url: str, robots_txt: str) -> bool:
        """Undo :meth:`take` of sitemap ``url``, dropped before it was
        requested; whether it had been taken."""
        if url not in self.requested:
            return False
        self.requested.discard(url)
        self.left += 1
        self.sitemaps[robots_txt] = max(0, self.sitemaps.get(robots_txt, 0) - 1)
        return True

    def new_lines(self, robots_txt: str, values: Iterable[str]) -> list[str]:
        """The ``Sitemap:`` ``values`` of ``robots_txt`` not requested
        from it already."""
        taken = self.lines.get(robots_txt)
        if taken is None:
            return list(values)
        return [value for value in values if value not in taken]

    def take_line(self, robots_txt: str, value: str) -> None:
        """Remember that line ``value`` of ``robots_txt`` was requested."""
        self.lines.setdefault(robots_txt, set()).add(value)

    def urls_left(self, robots_txt: str) -> int:
        """How many more page URLs the sitemaps below ``robots_txt`` may
        give."""
        return max(0, self.limits.urls_per_robots_txt - self.urls.get(robots_txt, 0))

    def take_urls(self, robots_txt: str, count: int) -> None:
        """Count ``count`` page URLs below ``robots_txt``."""
        self.urls[robots_txt] = self.urls.get(robots_txt, 0) + count

    def first_exhausted(self, robots_txt: str) -> bool:
        """Whether the allowance of ``robots_txt`` runs out for the first
        time (it is logged once)."""
        if robots_txt in self.exhausted:
            return False
        self.exhausted.add(robots_txt)
        return True


_BUDGET_ATTRIBUTE = "_robots_sitemap_budget"


def crawl_budget(spider: Spider) -> Budget:
    """The crawl's :class:`Budget`, made on first use."""
    budget: Budget | None = getattr(spider, _BUDGET_ATTRIBUTE, None)
    if budget is None:
        budget = Budget(Limits.for_crawler(spider.crawler))
        setattr(spider, _BUDGET_ATTRIBUTE, budget)
    return budget


class Skips:
    """Sitemaps skipped while reading one robots.txt or sitemap index:
    counted one by one, logged once per reason."""

    def __init__(self) -> None:
        #: Reason -> (how many, the first URL skipped).
        self.reasons: dict[str, tuple[int, str]] = {}

    def add(self, reason: str, url: str, count: int = 1) -> None:
        """Count ``count`` sitemaps skipped for ``reason``, ``url`` the
        first of them."""
        counted, first = self.reasons.get(reason, (0, url))
        self.reasons[reason] = (counted + count, first)

    def report(self, stats: StatsCollector, source: str, spider: Spider) -> None:
        for reason, (count, first) in self.reasons.items():
            stats.inc_value(SKIPPED + reason, count)
            logger.info(
                "Skipped %(count)s sitemap(s) named by %(source)s, such as"
                " %(url)s: %(why)s",
                {
                    "count": count,
                    "source": source,
                    "url": first,
                    "why": SKIP_WHY[reason],
                },
                extra={"spider": spider},
            )


SKIP_WHY = {
    "other_site": "on another site (ROBOTS_SITEMAP_OTHER_SITES is off)",
    "robots_txt_limit": "over ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT",
    "crawl_limit": "over ROBOTS_SITEMAP_MAX_REQUESTS for the crawl",
}


class Follow:
    """Which sitemaps named by one sitemap index are requested: those on
    the site of the robots.txt below which the index is (unless
    ROBOTS_SITEMAP_OTHER_SITES), while that robots.txt's
    ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT and the crawl's
    ROBOTS_SITEMAP_MAX_REQUESTS last."""

    def __init__(self, spider: Spider, index_url: str, robots_txt: str) -> None:
        crawler = spider.crawler
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.budget = crawl_budget(spider)
        self.limits = self.budget.limits
        self.spider = spider
        self.index_url = index_url
        self.robots_txt = robots_txt
        self.site = _site(robots_txt)
        self.skips = Skips()

    def admit(self, url: str) -> bool:
        """Whether to request ``url`` (counted if so, kept for the report
        if not; a sitemap requested already is neither)."""
        if url in self.budget.requested:
            return False
        if not self.limits.other_sites and _site(url) != self.site:
            self.skips.add("other_site", url)
        elif full := self.budget.take(url, self.robots_txt):
            self.skips.add(full, url)
        else:
            self.stats.inc_value(FOLLOWED)
            return True
        return False

    def skip_rest(self, locations: list[str], start: int) -> bool:
        """Whether no more sitemaps may be requested below the robots.txt:
        then the index's entries from ``locations[start]`` on are counted
        unread."""
        full = self.budget.full(self.robots_txt)
        if full is not None:
            self.skips.add(full, locations[start], len(locations) - start)
        return full is not None

    def done(self) -> None:
        self.skips.report(self.stats, self.index_url, self.spider)


class PageCap:
    """The page requests a ``SitemapSpider`` makes from one sitemap below a
    robots.txt: the sitemaps.org protocol's 50,000, within what is left of
    ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT."""

    def __init__(self, budget: Budget, robots_txt: str) -> None:
        self.budget = budget
        self.robots_txt = robots_txt
        self.taken = 0
        self.cut: str | None = None

    def admit(self) -> bool:
        if self.cut is not None:
            return False
        if self.taken >= _sitemap_read.MAX_ENTRIES:
            self.cut = _sitemap_read.URLS
        elif not self.budget.urls_left(self.robots_txt):
            self.cut = _sitemap_read.URL_BUDGET
        else:
            self.taken += 1
            self.budget.take_urls(self.robots_txt, 1)
            return True
        return False
