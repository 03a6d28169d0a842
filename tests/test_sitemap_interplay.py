"""Sitemaps of robots.txt meeting the rest of a project: a ``CrawlSpider``,
a spider middleware written before Scrapy 2.13, a sitemap index that says
``nofollow``, a ``SitemapSpider`` with ``ROBOTS_SITEMAPS`` on."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import pytest
from scrapy import Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule, SitemapSpider
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.sitemaps import _failure_cause
from tests.support.crawl_helpers import BASE_SETTINGS, crawl, stats
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test
from tests.test_sitemaps import hits, pages, sitemapindex, urlset, xml

SITEMAPS = {"ROBOTS_SITEMAPS": True}


class Shop(CrawlSpider):
    """Its rules follow every link of the pages it gets."""

    name = "crawl_shop"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=False),)

    def __init__(self, urls: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = urls or []
        self.items: list[str] = []

    def parse_item(self, response: Response) -> None:
        self.items.append(response.url)


@coroutine_test
async def test_a_crawlspider_gets_the_sitemap_pages_through_its_rules(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``CrawlSpider`` has no ``parse`` of its own (Scrapy's raises
    NotImplementedError): the pages go where Scrapy sends a request without
    a callback, to its rules."""
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/p1")))
    link = f'<a href="{server.url("/item")}">item</a>'
    server.route("/p1", link, headers={"Content-Type": "text/html"})
    crawler = get_crawler(Shop, {**BASE_SETTINGS, **SITEMAPS})
    with caplog.at_level(logging.ERROR):
        await crawler.crawl_async(urls=[server.url("/start")])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert hits(server)["/p1"] == 1
    # The page's link, followed by the rules.
    assert crawler.spider.items == [server.url("/item")]  # type: ignore[union-attr]


class OldMiddleware:
    """A spider middleware written before Scrapy 2.13: only the older hook."""

    def process_start_requests(
        self, start_requests: Iterable[Any], spider: Spider
    ) -> Iterator[Any]:
        yield from start_requests


class News(SitemapSpider):
    name = "news"
    parsed: ClassVar[list[str]] = []

    def parse(self, response: Response, **kwargs: Any) -> None:
        self.parsed.append(response.url)


# Scrapy 2.13 to 2.15 warn of the older hook.
@pytest.mark.filterwarnings("ignore::scrapy.exceptions.ScrapyDeprecationWarning")
@coroutine_test
async def test_a_project_middleware_with_only_process_start_requests(
    server: Server,
) -> None:
    """Scrapy 2.13 to 2.15 refuse to start a crawl mixing a middleware that
    has only ``process_start_requests`` with one that has only
    ``process_start``: SitemapsMiddleware has both, and answers the robots.txt
    of ``sitemap_urls`` from either."""
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a")))
    settings = {
        **BASE_SETTINGS,
        "SPIDER_MIDDLEWARES": {f"{__name__}.OldMiddleware": 100},
    }
    News.parsed = []
    crawler = get_crawler(News, settings)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert News.parsed == [server.url("/a")]
    assert hits(server)["/robots.txt"] == 1


@coroutine_test
async def test_a_sitemap_a_nofollow_index_names_is_still_followed_from_another(
    server: Server,
) -> None:
    """The sitemap requests of an index that says ``nofollow`` are dropped
    by DirectivesMiddleware after they took their allowance: it is given
    back, so another index naming the same sitemap requests it."""
    server.route("/robots.txt", "Sitemap: /index-a.xml\nSitemap: /index-b.xml\n")
    nofollow = {"Content-Type": "application/xml", "X-Robots-Tag": "nofollow"}
    named = sitemapindex(pages(server, "/s.xml"))
    server.route("/index-a.xml", named, headers=nofollow)
    # Answered later, once index-a's request was dropped.
    server.routes["/index-b.xml"] = Route(
        body=named.encode(), headers={"Content-Type": "application/xml"}, delay=0.5
    )
    xml(server, "/s.xml", urlset(pages(server, "/page")))
    crawler = await crawl([server.url("/start")], SITEMAPS)
    assert hits(server).get("/s.xml") == 1
    assert hits(server).get("/page") == 1
    counted = stats(crawler)
    assert counted["robots/directives/requests_dropped"] == 1
    # index-a, index-b, s.xml: each once, none that was not requested.
    assert counted["robots/sitemaps/discovered"] == 2
    assert counted["robots/sitemaps/followed"] == 1


@coroutine_test
async def test_a_sitemap_spider_with_robots_sitemaps_counts_each_skip_once(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """The robots.txt in ``sitemap_urls`` is read for its sitemaps once,
    not once by its start request and again by ROBOTS_SITEMAPS."""
    server.route(
        "/robots.txt", "Sitemap: https://elsewhere.example/s.xml\nSitemap: /s.xml\n"
    )
    xml(server, "/s.xml", urlset(pages(server, "/a")))
    News.parsed = []
    crawler = get_crawler(News, {**BASE_SETTINGS, **SITEMAPS})
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert stats(crawler)["robots/sitemaps/skipped/other_site"] == 1
    skipped = [r for r in caplog.records if r.getMessage().startswith("Skipped")]
    assert len(skipped) == 1
    assert News.parsed == [server.url("/a")]
    assert hits(server) == {"/robots.txt": 1, "/s.xml": 1, "/a": 1}


class _DecompressionMaxSizeExceeded(ValueError):
    """Named as HttpCompressionMiddleware's."""


def test_a_sitemap_decoded_past_its_limit_is_told_on_every_scrapy_2_13() -> None:
    # Scrapy 2.13.0 to 2.13.3 raise the IgnoreRequest while handling the
    # decompression error, not "from" it (2.13.4 on).
    dropped = IgnoreRequest("Ignored response: over the limit")
    dropped.__context__ = _DecompressionMaxSizeExceeded()
    assert _failure_cause(dropped) == "too_large"
    assert _failure_cause(IgnoreRequest("Forbidden by robots.txt")) is None
