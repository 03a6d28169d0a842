"""Sitemaps the package requests that cannot be downloaded, in real crawls
against a misbehaving loopback server.

Each is counted in ``robots/sitemaps/skipped/<cause>`` and logged in one
WARNING line naming it, with no traceback (Scrapy logged ``Error
downloading`` with one, or, for a ``Content-Encoding`` decoded past the
limit, only its own WARNING); what others drop and count (robots.txt,
``HttpErrorMiddleware``) is left to them, and so are the sitemaps a
``SitemapSpider`` requests for its own ``sitemap_urls``.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scrapy.http import Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.test import get_crawler

from tests.support.crawl_helpers import BASE_SETTINGS, crawl, stats
from tests.support.fault_server import (
    FaultServer,
    close_mid_body,
    raw,
    respond,
    stall_before_headers,
)
from tests.support.utils import coroutine_test, loopback_hosts

MiB = 2**20
XML = {"Content-Type": "application/xml"}
HEAD = (
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
)
#: A sitemap of 2 MiB, twice the limit of these crawls.
BIG = HEAD + b" " * (2 * MiB) + b"</urlset>"
SETTINGS: dict[str, Any] = {
    "ROBOTS_SITEMAPS": True,
    "ROBOTS_SITEMAP_MAX_BYTES": MiB,
    "DOWNLOAD_TIMEOUT": 1,
    "RETRY_ENABLED": False,
}

# Addresses of their own (conftest uses 127.0.x.y, test_faults 127.9.x.y).
_hosts = loopback_hosts(7)


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer(next(_hosts))
    yield server
    server.close()


def urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return HEAD + entries.encode() + b"</urlset>"


#: Path -> (behaviour, the skipped stat it gives), for a server at ``url``.
def failing(url: Callable[[str], str]) -> dict[str, tuple[Any, str]]:
    close_delimited = b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
    return {
        # Content-Length over the limit: the download is not started.
        "/announced.xml": (respond(200, BIG, XML), "too_large"),
        # No Content-Length: cut once the limit is received.
        "/received.xml": (raw(close_delimited + b"\r\n" + BIG), "too_large"),
        # 2 KB of gzip, over the limit once HttpCompressionMiddleware decodes it.
        "/encoded.xml": (
            respond(200, gzip.compress(BIG), {**XML, "Content-Encoding": "gzip"}),
            "too_large",
        ),
        "/stalled.xml": (stall_before_headers(30), "timeout"),
        "/cut.xml": (close_mid_body(urlset(url("/a")), after=100), "download_error"),
    }


def problems(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The ERROR lines and the lines with a traceback."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.ERROR or record.exc_info
    ]


def warnings_about(caplog: pytest.LogCaptureFixture, url: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "scrapy_rfc9309.sitemaps"
        and record.levelno == logging.WARNING
        and url in record.getMessage()
    ]


@coroutine_test
async def test_a_sitemap_not_downloaded_is_counted_and_logged_once(
    fault_server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = fault_server
    cases = failing(server.url)
    for path, (behaviour, _) in cases.items():
        server.routes[path] = behaviour
    server.routes["/ok.xml"] = respond(200, urlset(server.url("/page")), XML)
    server.routes["/missing.xml"] = respond(404, b"", XML)
    named = [*cases, "/ok.xml", "/missing.xml", "/private.xml"]
    server.routes["/robots.txt"] = respond(
        200,
        "User-agent: *\nDisallow: /private.xml\n"
        + "".join(f"Sitemap: {path}\n" for path in named),
    )
    with caplog.at_level(logging.INFO):
        crawler = await crawl([server.url("/start")], SETTINGS)
    assert problems(caplog) == []
    counts = stats(crawler, "robots/sitemaps/skipped/")
    assert counts == {
        "robots/sitemaps/skipped/too_large": 3,
        "robots/sitemaps/skipped/timeout": 1,
        "robots/sitemaps/skipped/download_error": 1,
    }
    for path, (_, cause) in cases.items():
        assert server.hits(path) == 1
        (line,) = warnings_about(caplog, server.url(path))
        assert {
            "too_large": "over 1048576 bytes (ROBOTS_SITEMAP_MAX_BYTES",
            "timeout": "not downloaded within DOWNLOAD_TIMEOUT",
            "download_error": "its download failed",
        }[cause] in line
    # The sitemap read, and the drops counted by others, as before.
    assert server.hits("/page") == 1
    assert stats(crawler, "httperror/response_ignored_count") == {
        "httperror/response_ignored_count": 1
    }
    assert stats(crawler)["robots/forbidden/rule"] == 1
    assert server.hits("/private.xml") == 0
    assert warnings_about(caplog, "/missing.xml") == []
    assert warnings_about(caplog, "/private.xml") == []


class OwnSitemapsSpider(SitemapSpider):
    name = "own_sitemaps"

    def parse(self, response: Response, **kwargs: Any) -> None:
        pass


@coroutine_test
async def test_a_sitemap_spider_s_own_sitemaps_are_left_to_scrapy(
    fault_server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Its robots.txt's sitemaps, and those their index names, are the
    # package's requests; /own.xml, in its sitemap_urls, is the spider's,
    # failing as in plain Scrapy.
    server = fault_server
    server.routes["/robots.txt"] = respond(
        200, "Sitemap: /announced.xml\nSitemap: /index.xml\n"
    )
    server.routes["/announced.xml"] = respond(200, BIG, XML)
    index = (
        '<?xml version="1.0"?>'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{server.url('/child.xml')}</loc></sitemap></sitemapindex>"
    )
    server.routes["/index.xml"] = respond(200, index, XML)
    server.routes["/child.xml"] = respond(200, BIG, XML)
    server.routes["/own.xml"] = close_mid_body(urlset(server.url("/a")), after=100)
    crawler = get_crawler(OwnSitemapsSpider, {**BASE_SETTINGS, **SETTINGS})
    with caplog.at_level(logging.INFO):
        await crawler.crawl_async(
            sitemap_urls=[server.url("/robots.txt"), server.url("/own.xml")]
        )
    assert server.hits("/announced.xml") == 1
    assert server.hits("/child.xml") == 1
    assert server.hits("/own.xml") == 1
    assert stats(crawler, "robots/sitemaps/skipped/") == {
        "robots/sitemaps/skipped/too_large": 2
    }
    assert len(warnings_about(caplog, "/announced.xml")) == 1
    assert len(warnings_about(caplog, "/child.xml")) == 1
    assert warnings_about(caplog, "/own.xml") == []
    (error,) = problems(caplog)
    assert error == f"Error downloading <GET {server.url('/own.xml')}>"
