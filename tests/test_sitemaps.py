"""Sitemaps named by robots.txt (``ROBOTS_SITEMAPS``), in real crawls.

Every count is taken at the server: what was requested, how many times.
"""

from __future__ import annotations

import gc
import gzip
import json
import logging
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scrapy import Request, signals
from scrapy.http import Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import sitemaps
from scrapy_rfc9309._compat import call_later
from scrapy_rfc9309.sitemaps import DEPTH_KEY, _site
from tests.support.crawl_helpers import BASE_SETTINGS, RecordingSpider, crawl, stats
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
SITEMAPS = {"ROBOTS_SITEMAPS": True}
XML = {"Content-Type": "application/xml"}
GZIP = {"Content-Type": "application/x-gzip"}


def urlset(urls: Iterable[str]) -> str:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )


def sitemapindex(urls: Iterable[str]) -> str:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{entries}</sitemapindex>"
    )


def xml(server: Server, path: str, body: str) -> None:
    server.route(path, body, headers=XML)


def gz(server: Server, path: str, body: str) -> None:
    server.route(path, gzip.compress(body.encode()), headers=GZIP)


def pages(server: Server, *paths: str) -> list[str]:
    return [server.url(path) for path in paths]


def hits(server: Server) -> dict[str, int]:
    """Path -> how many times it was requested."""
    counts: dict[str, int] = {}
    for hit in server.hits:
        counts[hit.path] = counts.get(hit.path, 0) + 1
    return counts


def crawled_paths(crawler: Any) -> list[str]:
    prefix_free = [url.split("/", 3)[3] for url in crawler.spider.crawled]
    return sorted("/" + path for path in prefix_free)


@coroutine_test
async def test_sitemap_index_of_gzip_sitemaps_is_followed(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow:\nSitemap: /index.xml\n")
    xml(server, "/index.xml", sitemapindex(pages(server, "/s1.xml.gz", "/s2.xml.gz")))
    gz(server, "/s1.xml.gz", urlset(pages(server, "/a", "/b")))
    # /b is in both sitemaps.
    gz(server, "/s2.xml.gz", urlset(pages(server, "/b", "/c")))
    crawler = await crawl([server.url("/start")], SITEMAPS)
    assert hits(server) == {
        "/robots.txt": 1,
        "/start": 1,
        "/index.xml": 1,
        "/s1.xml.gz": 1,
        "/s2.xml.gz": 1,
        "/a": 1,
        "/b": 1,
        "/c": 1,
    }
    assert crawled_paths(crawler) == ["/a", "/b", "/c", "/start"]
    # Sitemaps reached through the index are counted apart.
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/sitemaps/discovered": 1,
        "robots/sitemaps/followed": 2,
    }
    assert "log_count/ERROR" not in crawler.stats.get_stats()


@coroutine_test
async def test_sitemaps_off_by_default(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow:\nSitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a")))
    crawler = await crawl([server.url("/start")])
    assert hits(server) == {"/robots.txt": 1, "/start": 1}
    assert "robots/sitemaps/discovered" not in stats(crawler)


@coroutine_test
async def test_sitemaps_need_robots_enabled(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a")))
    crawler = await crawl([server.url("/start")], {**SITEMAPS, "ROBOTS_ENABLED": False})
    assert hits(server) == {"/start": 1}
    assert stats(crawler) == {}


@coroutine_test
async def test_enabled_by_hand_without_the_addon(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a")))
    crawler = await crawl(
        [server.url("/start")],
        {
            **SITEMAPS,
            "ADDONS": {},
            "DOWNLOADER_MIDDLEWARES": {"scrapy_rfc9309.RobotsMiddleware": 100},
            "SPIDER_MIDDLEWARES": {"scrapy_rfc9309.sitemaps.SitemapsMiddleware": 950},
        },
    )
    assert crawled_paths(crawler) == ["/a", "/start"]
    assert stats(crawler)["robots/sitemaps/discovered"] == 1


@coroutine_test
async def test_sitemap_named_by_two_origins_is_requested_once(
    make_server: MakeServer,
) -> None:
    first, second = make_server(), make_server()
    shared = first.url("/sitemap.xml")
    first.route("/robots.txt", f"User-agent: *\nSitemap: {shared}\nSitemap: /own.xml\n")
    # Named twice in one file, and by the other origin.
    second.route("/robots.txt", f"Sitemap: {shared}\nSitemap: {shared}\n")
    xml(first, "/sitemap.xml", urlset(pages(first, "/a") + pages(second, "/b")))
    xml(first, "/own.xml", urlset(pages(first, "/a")))
    crawler = await crawl([first.url("/start"), second.url("/start")], SITEMAPS)
    assert hits(first) == {
        "/robots.txt": 1,
        "/start": 1,
        "/sitemap.xml": 1,
        "/own.xml": 1,
        "/a": 1,
    }
    assert hits(second) == {"/robots.txt": 1, "/start": 1, "/b": 1}
    assert stats(crawler)["robots/sitemaps/discovered"] == 2


@coroutine_test
async def test_sitemap_requested_once_across_robots_refreshes(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a", "/b", "/c")))
    # A zero lifetime: robots.txt is fetched again for every request.
    crawler = await crawl(
        [server.url("/start")],
        {**SITEMAPS, "ROBOTS_CACHE_LIFETIME": 0, "CONCURRENT_REQUESTS": 1},
    )
    counts = hits(server)
    assert counts["/robots.txt"] > 2
    assert counts["/sitemap.xml"] == 1
    assert crawled_paths(crawler) == ["/a", "/b", "/c", "/start"]
    assert stats(crawler)["robots/sitemaps/discovered"] == 1
    assert stats(crawler)["robots/outcome/parsed"] == counts["/robots.txt"]


@coroutine_test
async def test_disallowed_sitemap_is_dropped_by_robots_rules(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-agent: *\nDisallow: /private/\n"
        "Sitemap: /private/sitemap.xml\nSitemap: /sitemap.xml\n",
    )
    xml(server, "/private/sitemap.xml", urlset(pages(server, "/hidden")))
    xml(server, "/sitemap.xml", urlset(pages(server, "/a", "/private/b")))
    crawler = await crawl([server.url("/start")], SITEMAPS)
    assert hits(server) == {
        "/robots.txt": 1,
        "/start": 1,
        "/sitemap.xml": 1,
        "/a": 1,
    }
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/sitemaps/discovered": 2,
        "robots/forbidden": 2,
        "robots/forbidden/rule": 2,
    }


@coroutine_test
async def test_offsite_sitemap_follows_allowed_domains(
    make_server: MakeServer,
) -> None:
    home, elsewhere = make_server(), make_server()
    home.route(
        "/robots.txt",
        f"Sitemap: /sitemap.xml\nSitemap: {elsewhere.url('/sitemap.xml')}\n",
    )
    xml(home, "/sitemap.xml", urlset(pages(home, "/a") + pages(elsewhere, "/x")))
    xml(elsewhere, "/sitemap.xml", urlset(pages(elsewhere, "/y")))
    crawler = await crawl(
        [home.url("/start")],
        {**SITEMAPS, "ROBOTS_SITEMAP_OTHER_SITES": True},
        allowed_domains=[home.host],
    )
    assert hits(home) == {"/robots.txt": 1, "/start": 1, "/sitemap.xml": 1, "/a": 1}
    # Neither the off-site sitemap nor the off-site page, nor robots.txt.
    assert elsewhere.hits == []
    assert crawler.stats.get_value("offsite/filtered") == 2
    assert stats(crawler)["robots/sitemaps/discovered"] == 2


@pytest.mark.parametrize(
    ("max_depth", "fetched"),
    [
        (1, ["/d1.xml"]),
        (2, ["/d1.xml", "/d2.xml"]),
        (3, ["/d1.xml", "/d2.xml", "/d3.xml"]),
        (4, ["/d1.xml", "/d2.xml", "/d3.xml", "/d4.xml", "/page"]),
    ],
)
@coroutine_test
async def test_sitemap_indexes_followed_down_to_max_depth(
    server: Server, max_depth: int, fetched: list[str]
) -> None:
    server.route("/robots.txt", "Sitemap: /d1.xml\n")
    # Three nested indexes, then a sitemap: four levels below robots.txt.
    for level in (1, 2, 3):
        xml(server, f"/d{level}.xml", sitemapindex(pages(server, f"/d{level + 1}.xml")))
    xml(server, "/d4.xml", urlset(pages(server, "/page")))
    crawler = await crawl(
        [server.url("/start")], {**SITEMAPS, "ROBOTS_SITEMAP_MAX_DEPTH": max_depth}
    )
    assert sorted(hits(server)) == sorted(["/robots.txt", "/start", *fetched])
    assert stats(crawler)["robots/sitemaps/discovered"] == 1


@coroutine_test
async def test_default_max_depth_is_three(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /d1.xml\n")
    for level in (1, 2, 3):
        xml(server, f"/d{level}.xml", sitemapindex(pages(server, f"/d{level + 1}.xml")))
    await crawl([server.url("/start")], SITEMAPS)
    assert server.count("/d3.xml") == 1
    assert server.count("/d4.xml") == 0


@coroutine_test
async def test_sitemap_index_pointing_at_itself_ends(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /loop.xml\n")
    xml(server, "/loop.xml", sitemapindex(pages(server, "/loop.xml")))
    crawler = await crawl([server.url("/start")], SITEMAPS)
    assert server.count("/loop.xml") == 1
    # Requested already: not asked for again (nor left to the dupefilter),
    # and no allowance taken.
    assert crawler.stats.get_value("dupefilter/filtered") is None
    assert crawler.stats.get_value("robots/sitemaps/followed") is None


@coroutine_test
async def test_invalid_sitemaps_are_ignored_with_a_warning(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    server.route(
        "/robots.txt",
        "Sitemap: /html\nSitemap: /empty.xml\nSitemap: /bad.xml.gz\n"
        "Sitemap: /bomb.xml.gz\nSitemap: /missing.xml\nSitemap: ftp://x/s.xml\n"
        "Sitemap: http://[bad/s.xml\nSitemap: http://:80/s.xml\nSitemap: /ok.xml\n",
    )
    server.route("/html", "<html><body>not a sitemap</body></html>")
    xml(server, "/empty.xml", "")
    server.route("/bad.xml.gz", b"\x1f\x8b\x08 not really gzip", headers=GZIP)
    # Past DOWNLOAD_MAXSIZE once decompressed.
    bomb = urlset(pages(server, *(f"/bomb{i}" for i in range(2000))))
    gz(server, "/bomb.xml.gz", bomb)
    server.route("/missing.xml", "gone", status=404)
    not_urls = ["http://[bad", "", "mailto:someone@example.com", "https://:1/x"]
    xml(server, "/ok.xml", urlset([*not_urls, *pages(server, "/a")]))
    with caplog.at_level(logging.WARNING):
        crawler = await crawl(
            [server.url("/start")],
            {**SITEMAPS, "DOWNLOAD_MAXSIZE": len(bomb) // 2},
        )
    assert crawled_paths(crawler) == ["/a", "/start"]
    invalid = [
        r for r in caplog.records if "Ignoring invalid sitemap" in r.getMessage()
    ]
    assert sorted(r.getMessage().rsplit("/", 1)[1][:-1] for r in invalid) == [
        "bad.xml.gz",
        "empty.xml",
        "html",
    ]
    (too_large,) = [r for r in caplog.records if "once decompressed" in r.getMessage()]
    assert "/bomb.xml.gz>: over " in too_large.getMessage()
    assert stats(crawler)["robots/sitemaps/skipped/too_large"] == 1
    # Neither the ftp: sitemap nor those that are no URLs are counted:
    # they are never requested.
    assert stats(crawler)["robots/sitemaps/discovered"] == 6
    assert "log_count/ERROR" not in crawler.stats.get_stats()


@coroutine_test
async def test_sitemaps_of_unavailable_and_unreachable_robots_txt(
    make_server: MakeServer,
) -> None:
    missing, failing = make_server(), make_server()
    missing.route("/robots.txt", "Sitemap: /sitemap.xml\n", status=404)
    failing.route("/robots.txt", "Sitemap: /sitemap.xml\n", status=503)
    crawler = await crawl([missing.url("/start"), failing.url("/start")], SITEMAPS)
    assert missing.count("/sitemap.xml") == 0
    assert failing.count("/sitemap.xml") == 0
    assert "robots/sitemaps/discovered" not in stats(crawler)


# -- which callback gets the pages -----------------------------------------


class NamedCallbackSpider(RecordingSpider):
    name = "named_callback"
    robots_sitemap_callback = "parse_listed"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listed: list[str] = []

    def parse_listed(self, response: Response) -> None:
        self.listed.append(response.url)


@coroutine_test
async def test_robots_sitemap_callback_names_the_page_callback(
    server: Server,
) -> None:
    server.route("/robots.txt", "Sitemap: /index.xml\n")
    xml(server, "/index.xml", sitemapindex(pages(server, "/sitemap.xml")))
    xml(server, "/sitemap.xml", urlset(pages(server, "/a", "/b")))
    crawler = await crawl([server.url("/start")], SITEMAPS, NamedCallbackSpider)
    assert sorted(crawler.spider.listed) == pages(server, "/a", "/b")
    assert crawler.spider.crawled == [server.url("/start")]


class MisnamedCallbackSpider(RecordingSpider):
    name = "misnamed_callback"
    robots_sitemap_callback = "parse_missing"


@coroutine_test
async def test_misnamed_robots_sitemap_callback_is_a_clear_error(
    server: Server,
) -> None:
    with pytest.raises(ValueError, match="parse_missing"):
        await crawl([server.url("/start")], SITEMAPS, MisnamedCallbackSpider)
    assert server.hits == []


@pytest.mark.parametrize("value", [0, -1, "deep"])
@coroutine_test
async def test_invalid_max_depth_is_a_clear_error(server: Server, value: Any) -> None:
    with pytest.raises(ValueError, match="ROBOTS_SITEMAP_MAX_DEPTH"):
        await crawl(
            [server.url("/start")], {**SITEMAPS, "ROBOTS_SITEMAP_MAX_DEPTH": value}
        )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ROBOTS_SITEMAP_MAX_BYTES", 0),
        ("ROBOTS_SITEMAP_MAX_BYTES", "big"),
        ("ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT", -1),
        ("ROBOTS_SITEMAP_MAX_REQUESTS", "many"),
    ],
)
@coroutine_test
async def test_invalid_bounds_are_a_clear_error(
    server: Server, name: str, value: Any
) -> None:
    with pytest.raises(ValueError, match=name):
        await crawl([server.url("/start")], {**SITEMAPS, name: value})
    assert server.hits == []


# -- SitemapSpider ----------------------------------------------------------


class ShopSpider(SitemapSpider):
    name = "shop"
    sitemap_follow: ClassVar[list[str]] = ["/products"]
    sitemap_rules: ClassVar[list[tuple[str, str]]] = [
        ("/product/", "parse_product"),
        ("", "parse"),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.products: list[str] = []
        self.others: list[str] = []

    def parse_product(self, response: Response) -> None:
        self.products.append(response.url)

    def parse(self, response: Response, **kwargs: Any) -> None:
        self.others.append(response.url)


def _shop(server: Server, robots: str = "") -> None:
    server.route(
        "/robots.txt",
        f"User-agent: *\nDisallow: /private\n{robots}"
        "Sitemap: /index.xml\nSitemap: /private/sitemap.xml\n",
    )
    xml(
        server,
        "/index.xml",
        sitemapindex(pages(server, "/products.xml", "/blog.xml")),
    )
    xml(
        server,
        "/products.xml",
        urlset(pages(server, "/product/1", "/product/2", "/about")),
    )
    xml(server, "/blog.xml", urlset(pages(server, "/blog/1")))
    xml(server, "/private/sitemap.xml", urlset(pages(server, "/product/3")))


@pytest.mark.parametrize("robots_sitemaps", [False, True])
@pytest.mark.parametrize("robotstxt_obey", [False, True])
@coroutine_test
async def test_sitemap_spider_reads_robots_txt_once_per_origin(
    make_server: MakeServer, robots_sitemaps: bool, robotstxt_obey: bool
) -> None:
    first, second = make_server(), make_server()
    _shop(first)
    _shop(second)
    crawler = get_crawler(
        ShopSpider,
        {
            **BASE_SETTINGS,
            "ROBOTS_SITEMAPS": robots_sitemaps,
            # As Scrapy's project template sets it.
            "ROBOTSTXT_OBEY": robotstxt_obey,
        },
    )
    await crawler.crawl_async(
        sitemap_urls=[
            first.url("/robots.txt"),
            second.url("/robots.txt"),
            # Named twice: still one fetch.
            first.url("/robots.txt"),
        ]
    )
    for server in (first, second):
        # sitemap_follow keeps /blog.xml out; robots.txt keeps /private out.
        assert hits(server) == {
            "/robots.txt": 1,
            "/index.xml": 1,
            "/products.xml": 1,
            "/product/1": 1,
            "/product/2": 1,
            "/about": 1,
        }
    spider = crawler.spider
    assert sorted(spider.products) == sorted(
        pages(first, "/product/1", "/product/2")
        + pages(second, "/product/1", "/product/2")
    )
    assert sorted(spider.others) == sorted(
        pages(first, "/about") + pages(second, "/about")
    )
    assert stats(crawler) == {
        "robots/fetch_count": 2,
        "robots/outcome/parsed": 2,
        "robots/sitemaps/discovered": 4,
        # /products.xml of each index (sitemap_follow keeps /blog.xml out).
        "robots/sitemaps/followed": 2,
        "robots/forbidden": 2,
        "robots/forbidden/rule": 2,
    }


@coroutine_test
async def test_sitemap_spider_with_robots_disabled_reads_robots_txt_itself(
    server: Server,
) -> None:
    _shop(server)
    crawler = get_crawler(ShopSpider, {**BASE_SETTINGS, "ROBOTS_ENABLED": False})
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    # Scrapy's own way: robots.txt as a page, nothing obeyed.
    assert server.count("/robots.txt") == 1
    assert server.count("/private/sitemap.xml") == 1
    assert server.count("/product/3") == 1


@coroutine_test
async def test_sitemap_spider_other_start_urls_untouched(server: Server) -> None:
    server.route("/robots.txt", "Sitemap: /index.xml\n")
    xml(server, "/direct.xml", urlset(pages(server, "/product/9")))
    # Not the origin's robots.txt: a page SitemapSpider reads as robots.txt.
    server.route("/sub/robots.txt", f"Sitemap: {server.url('/products.xml')}\n")
    xml(server, "/products.xml", urlset(pages(server, "/product/8")))
    crawler = get_crawler(ShopSpider, BASE_SETTINGS)
    await crawler.crawl_async(
        sitemap_urls=[server.url("/direct.xml"), server.url("/sub/robots.txt")]
    )
    assert sorted(crawler.spider.products) == pages(server, "/product/8", "/product/9")
    assert server.count("/robots.txt") == 1
    assert "robots/sitemaps/discovered" not in stats(crawler)


# -- JOBDIR -----------------------------------------------------------------


@coroutine_test
async def test_sitemap_requests_are_serialized_in_jobdir(
    server: Server, tmp_path: Path
) -> None:
    server.route("/robots.txt", "Sitemap: /index.xml\n")
    xml(server, "/index.xml", sitemapindex(pages(server, "/sitemap.xml")))
    xml(server, "/sitemap.xml", urlset(pages(server, "/a", "/b")))
    crawler = await crawl(
        [server.url("/start")], {**SITEMAPS, "JOBDIR": str(tmp_path / "job")}
    )
    assert crawled_paths(crawler) == ["/a", "/b", "/start"]
    crawl_stats = crawler.stats.get_stats()
    assert "scheduler/unserializable" not in crawl_stats
    # The start URL, the two sitemaps and the two pages.
    assert crawl_stats["scheduler/enqueued/disk"] == 5
    assert "scheduler/enqueued/memory" not in crawl_stats


class StoppingSpider(RecordingSpider):
    """Stops the crawl as soon as a sitemap request is scheduled."""

    name = "stopping"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopped = False

    async def start(self) -> Any:
        self.crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)
        async for request in super().start():
            yield request

    def _scheduled(self, request: Request) -> None:
        if DEPTH_KEY in request.meta and not self.stopped:
            self.stopped = True
            # Once the request is in the queue (this signal comes first).
            call_later(0, self._stop)

    def _stop(self) -> None:
        from scrapy.utils.defer import deferred_from_coro

        if not hasattr(self.crawler, "stop_async"):  # Scrapy 2.13
            self.crawler.stop()
            return
        deferred_from_coro(self.crawler.stop_async())


@pytest.mark.parametrize("sitemaps_on_resume", [True, False])
@coroutine_test
async def test_jobdir_resume_reads_queued_sitemap_requests(
    server: Server, tmp_path: Path, sitemaps_on_resume: bool
) -> None:
    server.route("/robots.txt", "Sitemap: /sitemap.xml\n")
    xml(server, "/sitemap.xml", urlset(pages(server, "/a", "/b")))
    # Slow, so that it is still on its way when the crawl stops, and one
    # request at a time, so that the sitemap stays queued meanwhile.
    server.route("/start", "<html></html>", delay=0.5)
    settings = {
        **SITEMAPS,
        "JOBDIR": str(tmp_path / "job"),
        "CONCURRENT_REQUESTS": 1,
    }
    first = get_crawler(StoppingSpider, {**BASE_SETTINGS, **settings})
    await first.crawl_async(urls=[server.url("/start")])
    assert first.spider.stopped
    assert server.count("/sitemap.xml") == 0
    assert first.stats.get_value("scheduler/enqueued/disk") == 2

    resumed = await crawl([], {**settings, "ROBOTS_SITEMAPS": sitemaps_on_resume})
    assert server.count("/sitemap.xml") == 1
    assert crawled_paths(resumed) == ["/a", "/b"]
    resumed_stats = resumed.stats.get_stats()
    assert resumed_stats["scheduler/dequeued/disk"] == 3
    assert "log_count/ERROR" not in resumed_stats


@coroutine_test
async def test_sitemap_spider_waits_for_robots_txt_read_from_a_store(
    server: Server, tmp_path: Path
) -> None:
    # The SQLite store is read in a thread before robots.txt is fetched:
    # for that while, nothing of the crawl is on its way but this.
    _shop(server)
    settings = {
        **BASE_SETTINGS,
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
    }
    crawler = get_crawler(ShopSpider, settings)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert sorted(crawler.spider.products) == pages(server, "/product/1", "/product/2")
    assert server.count("/robots.txt") == 1


# -- bounds against hostile robots.txt and sitemaps --------------------------

EMPTY_SITEMAP = Route(body=urlset([]).encode(), headers=XML)


def sitemap_hits(server: Server) -> int:
    return sum(1 for hit in server.hits if hit.path.endswith(".xml"))


@coroutine_test
async def test_sitemaps_per_robots_txt_are_capped(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # One robots.txt naming 2,000 sitemaps had each of them requested.
    server = make_server(EMPTY_SITEMAP)
    server.route("/robots.txt", "".join(f"Sitemap: /s{i}.xml\n" for i in range(2000)))
    with caplog.at_level(logging.INFO):
        crawler = await crawl([server.url("/start")], SITEMAPS)
    assert sitemap_hits(server) == 100
    assert server.count("/s0.xml") == 1
    assert server.count("/s99.xml") == 1
    assert stats(crawler)["robots/sitemaps/discovered"] == 100
    assert stats(crawler)["robots/sitemaps/skipped/robots_txt_limit"] == 1900
    (skipped,) = [r for r in caplog.records if "Skipped" in r.getMessage()]
    assert "1900 sitemap(s)" in skipped.getMessage()
    assert "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT" in skipped.getMessage()


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ("ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT", "robots_txt_limit"),
        ("ROBOTS_SITEMAP_MAX_REQUESTS", "crawl_limit"),
    ],
)
@coroutine_test
async def test_sitemap_lines_past_the_limits_are_counted_unread(
    make_server: MakeServer,
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    cause: str,
) -> None:
    # 5,000 Sitemap: lines for 3 sitemaps to request: each line was made a
    # URL, its site looked up and a Request built, on the event loop, on
    # every fetch of that robots.txt (25,000 lines held it up 1.5 s).
    calls = {"http_url": 0, "site": 0, "request": 0}

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def count(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return function(*args, **kwargs)

        return count

    for name, attribute in [
        ("http_url", "http_url"),
        ("site", "_site"),
        ("request", "_sitemap_request"),
    ]:
        original = getattr(sitemaps, attribute)
        monkeypatch.setattr(sitemaps, attribute, counted(name, original))
    server = make_server(EMPTY_SITEMAP)
    server.route("/robots.txt", "".join(f"Sitemap: /s{i}.xml\n" for i in range(5000)))
    crawler = await crawl([server.url("/start")], {**SITEMAPS, setting: 3})
    assert sitemap_hits(server) == 3
    counts = stats(crawler)
    assert counts["robots/sitemaps/discovered"] == 3
    assert counts[f"robots/sitemaps/skipped/{cause}"] == 4997
    # The 3 requested, and the first line skipped, named in the log.
    assert calls == {"http_url": 4, "site": 4, "request": 3}


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ("ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT", "robots_txt_limit"),
        ("ROBOTS_SITEMAP_MAX_REQUESTS", "crawl_limit"),
    ],
)
@coroutine_test
async def test_sitemap_lines_requested_are_not_skipped_when_fetched_again(
    server: Server, setting: str, cause: str
) -> None:
    # Each fetch of robots.txt after the limit counts the lines it could
    # not request, not the three requested at its first fetch; and a fetch
    # again is no new allowance (each fetch requested 3 more sitemaps).
    server.route("/robots.txt", "".join(f"Sitemap: /s{i}.xml\n" for i in range(5)))
    server.default = EMPTY_SITEMAP
    crawler = await crawl(
        [server.url("/start")],
        {
            **SITEMAPS,
            setting: 3,
            "ROBOTS_CACHE_LIFETIME": 0,
            "CONCURRENT_REQUESTS": 1,
        },
    )
    assert sitemap_hits(server) == 3
    counts = stats(crawler)
    fetches = server.count("/robots.txt")
    assert fetches > 2
    assert counts["robots/outcome/parsed"] == fetches
    assert counts[f"robots/sitemaps/skipped/{cause}"] == 2 * fetches


@coroutine_test
async def test_sitemaps_per_crawl_are_capped(make_server: MakeServer) -> None:
    # Sitemaps named by robots.txt files and by sitemap indexes all count.
    first, second = make_server(EMPTY_SITEMAP), make_server(EMPTY_SITEMAP)
    first.route("/robots.txt", "".join(f"Sitemap: /s{i}.xml\n" for i in range(5)))
    second.route("/robots.txt", "Sitemap: /sindex.xml\n")
    xml(
        second,
        "/sindex.xml",
        sitemapindex(pages(second, *(f"/s{i}.xml" for i in range(500)))),
    )
    crawler = await crawl(
        [first.url("/start"), second.url("/start")],
        {**SITEMAPS, "ROBOTS_SITEMAP_MAX_REQUESTS": 20, "CONCURRENT_REQUESTS": 1},
    )
    assert sitemap_hits(first) + sitemap_hits(second) == 20
    counts = stats(crawler)
    assert counts["robots/sitemaps/discovered"] == 6
    assert counts["robots/sitemaps/followed"] == 14
    assert counts["robots/sitemaps/skipped/crawl_limit"] == 500 - 14


class FoundLaterSpider(RecordingSpider):
    """Requests its second URL once a page of the first site's sitemaps is
    crawled: after that site's sitemap index was read."""

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.parse)

    def parse(self, response: Response) -> Iterable[Request]:
        super().parse(response)
        if response.url.endswith("/page"):
            yield Request(self.urls[1], callback=self.parse)


@coroutine_test
async def test_one_sitemap_index_leaves_other_sites_their_share(
    make_server: MakeServer,
) -> None:
    # Site A's index named 200 sitemaps: it took the crawl's whole
    # ROBOTS_SITEMAP_MAX_REQUESTS (its index and 49 of them), and the one
    # sitemap of site B, found later, was skipped (crawl_limit).
    first, second = make_server(EMPTY_SITEMAP), make_server()
    first.route("/robots.txt", "Sitemap: /index.xml\n")
    xml(
        first,
        "/index.xml",
        sitemapindex(pages(first, *(f"/s{i}.xml" for i in range(200)))),
    )
    xml(first, "/s0.xml", urlset(pages(first, "/page")))
    second.route("/robots.txt", "Sitemap: /b.xml\n")
    xml(second, "/b.xml", urlset(pages(second, "/b-page")))
    crawler = await crawl(
        [first.url("/start"), second.url("/start")],
        {
            **SITEMAPS,
            "ROBOTS_SITEMAP_MAX_REQUESTS": 50,
            "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT": 10,
        },
        FoundLaterSpider,
    )
    # Below A's robots.txt: its index and 9 of the sitemaps it names.
    assert sitemap_hits(first) == 10
    assert second.count("/b.xml") == 1
    assert second.count("/b-page") == 1
    counts = stats(crawler)
    assert counts["robots/sitemaps/discovered"] == 2
    assert counts["robots/sitemaps/followed"] == 9
    assert counts["robots/sitemaps/skipped/robots_txt_limit"] == 200 - 9
    assert "robots/sitemaps/skipped/crawl_limit" not in counts


@coroutine_test
async def test_a_sitemap_named_twice_is_counted_once(make_server: MakeServer) -> None:
    # Named twice by robots.txt (relative and absolute), then ten times by an
    # index: each name of the same sitemap took its limits' allowance, so
    # the sitemaps named after it were skipped.  Both limits count the
    # sitemaps of the index too: 4 in all.
    server = make_server(EMPTY_SITEMAP)
    server.route(
        "/robots.txt",
        f"Sitemap: /a.xml\nSitemap: {server.url('/a.xml')}\nSitemap: /index.xml\n",
    )
    repeated = pages(server, *["/same.xml"] * 10, "/other.xml")
    xml(server, "/index.xml", sitemapindex(repeated))
    crawler = await crawl(
        [server.url("/start")],
        {
            **SITEMAPS,
            "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT": 4,
            "ROBOTS_SITEMAP_MAX_REQUESTS": 4,
        },
    )
    assert hits(server) == {
        "/robots.txt": 1,
        "/start": 1,
        "/a.xml": 1,
        "/index.xml": 1,
        "/same.xml": 1,
        "/other.xml": 1,
    }
    counts = stats(crawler)
    assert counts["robots/sitemaps/discovered"] == 2
    assert counts["robots/sitemaps/followed"] == 2
    assert not [key for key in counts if key.startswith("robots/sitemaps/skipped")]


@pytest.mark.parametrize("refusal", ["content_usage", "tdm_reservation"])
@coroutine_test
async def test_an_ai_crawl_reads_a_sitemap_its_preferences_refuse(
    server: Server, refusal: str
) -> None:
    # The site refuses AI training but under /articles/: the sitemap at its
    # root was dropped, so the articles it lists were never found.
    robots = "User-agent: *\nSitemap: /sitemap.xml\n"
    if refusal == "content_usage":
        robots += "Content-Usage: train-ai=n\nContent-Usage: /articles/ train-ai=y\n"
    else:
        rules = [
            {"location": "/articles/", "tdm-reservation": 0},
            {"location": "/", "tdm-reservation": 1},
        ]
        server.route("/.well-known/tdmrep.json", json.dumps(rules))
    server.route("/robots.txt", robots)
    xml(server, "/sitemap.xml", urlset(pages(server, "/articles/1", "/other")))
    crawler = await crawl(
        [server.url("/start")], {**SITEMAPS, "ROBOTS_PURPOSES": ["train-ai"]}
    )
    assert server.count("/sitemap.xml") == 1
    assert server.count("/articles/1") == 1
    assert server.count("/other") == 0
    assert stats(crawler)[f"robots/forbidden/{refusal}"] == 2  # /start, /other


@pytest.mark.parametrize("other_sites", [False, True])
@coroutine_test
async def test_sitemaps_on_other_sites_need_a_setting(
    make_server: MakeServer, other_sites: bool
) -> None:
    home, elsewhere = make_server(), make_server()
    home.route(
        "/robots.txt",
        f"Sitemap: /sitemap.xml\nSitemap: {elsewhere.url('/sitemap.xml')}\n",
    )
    # An index on the home site naming a sitemap elsewhere, too.
    xml(home, "/sitemap.xml", sitemapindex([elsewhere.url("/other.xml")]))
    xml(elsewhere, "/sitemap.xml", urlset(pages(elsewhere, "/a")))
    xml(elsewhere, "/other.xml", urlset(pages(elsewhere, "/b")))
    crawler = await crawl(
        [home.url("/start")], {**SITEMAPS, "ROBOTS_SITEMAP_OTHER_SITES": other_sites}
    )
    if other_sites:
        assert hits(elsewhere)["/sitemap.xml"] == 1
        assert hits(elsewhere)["/other.xml"] == 1
        assert "robots/sitemaps/skipped/other_site" not in stats(crawler)
    else:
        assert elsewhere.hits == []
        assert stats(crawler)["robots/sitemaps/skipped/other_site"] == 2
    assert home.count("/sitemap.xml") == 1


def test_a_site_is_a_registrable_domain() -> None:
    assert _site("https://www.example.co.uk/s.xml") == "example.co.uk"
    assert _site("http://cdn.example.co.uk:8080/s.xml") == "example.co.uk"
    # Private suffixes count: two blogs on one host are two sites.
    assert _site("https://a.github.io/") != _site("https://b.github.io/")
    assert _site("http://127.0.0.2:80/") == "127.0.0.2"


def bomb(size: int) -> bytes:
    """A sitemap of ``size`` bytes once decompressed: its first URL, then
    whitespace (a ~1000:1 ratio)."""
    head = urlset(["http://127.0.0.1/a"]).encode()
    return gzip.compress(head[:-9] + b" " * (size - len(head)) + head[-9:], 9)


MiB = 2**20


@pytest.mark.parametrize(
    ("encoding", "limit"),
    [
        ("file", MiB),
        ("file", 32 * MiB),
        ("content-encoding", MiB),
        # The default ROBOTS_SITEMAP_MAX_BYTES.
        ("content-encoding", 50 * MiB),
    ],
)
@coroutine_test
async def test_gzip_sitemap_bomb_decodes_within_the_limit(
    server: Server, encoding: str, limit: int
) -> None:
    # 64 MiB decoded from 64 KB sent: decoding stops at the limit.  A
    # .xml.gz file is decompressed a piece at a time as it is read, so the
    # crawl's peak does not grow with the limit; a Content-Encoding is
    # decoded whole by HttpCompressionMiddleware, up to the limit.
    decoded = 64 * MiB
    body = bomb(decoded)
    if encoding == "file":
        server.route("/s.xml.gz", body, headers=GZIP)
    else:
        server.route("/s.xml.gz", body, headers={**XML, "Content-Encoding": "gzip"})
    server.route("/robots.txt", "Sitemap: /s.xml.gz\n")
    gc.collect()
    tracemalloc.start()
    try:
        crawler = await crawl(
            [server.url("/start")], {**SITEMAPS, "ROBOTS_SITEMAP_MAX_BYTES": limit}
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert server.count("/s.xml.gz") == 1
    held = 0 if encoding == "file" else limit
    assert peak < 16 * MiB + held
    assert crawled_paths(crawler) == ["/start"]
    if encoding == "content-encoding" or limit == MiB:
        assert stats(crawler)["robots/sitemaps/skipped/too_large"] == 1


class FollowAllSpider(SitemapSpider):
    name = "follow_all"

    def parse(self, response: Response, **kwargs: Any) -> None:
        pass


@coroutine_test
async def test_sitemap_spider_indexes_below_robots_txt_are_bounded(
    make_server: MakeServer,
) -> None:
    # SitemapSpider follows indexes with its own code: the sitemaps robots.txt
    # leads to are bounded all the same, however deep.
    server, elsewhere = make_server(EMPTY_SITEMAP), make_server(EMPTY_SITEMAP)
    server.route("/robots.txt", "Sitemap: /sindex.xml\n")
    xml(
        server,
        "/sindex.xml",
        sitemapindex(
            [
                elsewhere.url("/s-other.xml"),
                *pages(server, "/sindex2.xml", *(f"/s{i}.xml" for i in range(500))),
            ]
        ),
    )
    xml(server, "/sindex2.xml", sitemapindex(pages(server, "/s-deep.xml")))
    crawler = get_crawler(
        FollowAllSpider,
        {**BASE_SETTINGS, "ROBOTS_SITEMAP_MAX_REQUESTS": 10, "CONCURRENT_REQUESTS": 1},
    )
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert elsewhere.hits == []
    # The index robots.txt names, then 9 of the 501 on its site it names
    # (/sindex2.xml among them).
    assert sitemap_hits(server) == 10
    assert server.count("/sindex2.xml") == 1
    counts = stats(crawler)
    assert counts["robots/sitemaps/discovered"] == 1
    assert counts["robots/sitemaps/followed"] == 9
    assert counts["robots/sitemaps/skipped/other_site"] == 1
    # The 492 others, and /s-deep.xml that /sindex2.xml names.
    assert counts["robots/sitemaps/skipped/crawl_limit"] == 492 + 1


@coroutine_test
async def test_crawl_cap_holds_without_stats(server: Server) -> None:
    # The budget is the middleware's own, not read back from the stats.
    server.route("/robots.txt", "".join(f"Sitemap: /s{i}.xml\n" for i in range(5)))
    server.default = EMPTY_SITEMAP
    await crawl(
        [server.url("/start")],
        {
            **SITEMAPS,
            "ROBOTS_SITEMAP_MAX_REQUESTS": 3,
            "STATS_CLASS": "scrapy.statscollectors.DummyStatsCollector",
        },
    )
    assert sitemap_hits(server) == 3
