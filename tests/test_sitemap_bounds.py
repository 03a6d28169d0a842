"""Reading a sitemap is bounded, whatever the sitemap holds (issue 24 F5).

The reader is tested on its own with small bounds injected, then in real
crawls at the real bounds: requests are counted as they are scheduled (and
dropped there, so that tens of thousands of pages are not fetched), bytes
with ``tracemalloc``, elements by the reader.  Nothing is timed.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import logging
import tracemalloc
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.sitemap import Sitemap
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import _sitemap_read
from scrapy_rfc9309._sitemap_read import SitemapReader, gunzip_chunks
from scrapy_rfc9309.sitemaps import DEPTH_KEY
from tests.support.crawl_helpers import BASE_SETTINGS, RecordingSpider, crawl, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_sitemaps import GZIP, XML, sitemapindex, urlset

MakeServer = Callable[..., Server]
SITEMAPS = {"ROBOTS_SITEMAPS": True}
HEAD = (
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
)


def entries(urls: Iterable[str]) -> bytes:
    return "".join(f"<url><loc>{url}</loc></url>" for url in urls).encode()


def read(body: bytes, piece: int = _sitemap_read.CHUNK, **bounds: int) -> SitemapReader:
    pieces = (body[start : start + piece] for start in range(0, len(body), piece))
    return SitemapReader(**bounds).read(pieces)


# -- the reader ---------------------------------------------------------------


def test_reader_frees_each_element_it_reads() -> None:
    # 200,000 elements fed a chunk at a time: the tree the parser builds
    # never holds more than a handful of them.
    reader = SitemapReader()
    reader.feed(HEAD + entries(["http://a/0"]))
    held = []
    for _ in range(50):
        reader.feed(b"<x/>" * 1000 + entries(["http://a/1"]) + b"<y><z/></y>" * 1000)
        root = reader._root  # what the parser's tree holds now
        held.append(sum(1 for _ in root.iter()))
    reader.feed(b"</urlset>")
    reader.close()
    assert reader.cut is None
    # The first entry, 50 times 3,002 elements, the root.
    assert reader.elements == 2 + 50 * (1000 + 2 + 2000) + 1
    assert len(reader.locations) == 51
    assert max(held) <= 4


def test_reader_stops_at_max_elements() -> None:
    body = HEAD + entries(f"http://a/{i}" for i in range(600)) + b"</urlset>"
    reader = read(body, max_elements=1000)
    # Two elements per entry: the 500th entry is the 1,000th element.
    assert reader.cut == _sitemap_read.ELEMENTS
    assert reader.elements == 1001
    assert len(reader.locations) == 500
    assert read(body, max_elements=1201).cut is None


def test_reader_stops_at_max_names() -> None:
    names = b"".join(b"<n%d/>" % i for i in range(300))
    reader = read(HEAD + entries(["http://a/0"]) + names + b"</urlset>")
    assert reader.cut == _sitemap_read.NAMES
    # url, loc, then n0 ... n254 (urlset is read last): the 257th name
    # stops it.
    assert reader.elements == 2 + 255
    assert reader.locations == ["http://a/0"]
    # Attribute names count too.
    attributes = b"<x " + b" ".join(b'a%d=""' % i for i in range(300)) + b"/>"
    assert read(HEAD + attributes + b"</urlset>").cut == _sitemap_read.NAMES


#: A sitemap using the image, video, news and xhtml extensions.
EXTENSIONS = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://example.com/a</loc>
    <lastmod>2024-01-01</lastmod><changefreq>daily</changefreq><priority>0.8</priority>
    <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/>
    <image:image><image:loc>https://example.com/a.jpg</image:loc>
      <image:caption>c</image:caption><image:title>t</image:title>
      <image:geo_location>g</image:geo_location><image:license>l</image:license>
    </image:image>
    <news:news><news:publication><news:name>n</news:name>
      <news:language>en</news:language></news:publication>
      <news:publication_date>2024-01-01</news:publication_date>
      <news:title>t</news:title><news:keywords>k</news:keywords>
    </news:news>
  </url>
  <url>
    <loc>https://example.com/b</loc>
    <video:video><video:thumbnail_loc>https://example.com/t.jpg</video:thumbnail_loc>
      <video:title>t</video:title><video:description>d</video:description>
      <video:content_loc>https://example.com/v.mp4</video:content_loc>
      <video:player_loc>https://example.com/p</video:player_loc>
      <video:duration>60</video:duration><video:expiration_date>2030-01-01</video:expiration_date>
      <video:rating>4.2</video:rating><video:view_count>1</video:view_count>
      <video:publication_date>2024-01-01</video:publication_date>
      <video:family_friendly>yes</video:family_friendly>
      <video:restriction relationship="allow">IE</video:restriction>
      <video:platform relationship="allow">web</video:platform>
      <video:requires_subscription>no</video:requires_subscription>
      <video:uploader info="https://example.com/u">u</video:uploader>
      <video:live>no</video:live><video:tag>x</video:tag>
    </video:video>
  </url>
</urlset>
"""


def test_reader_takes_the_names_of_real_sitemaps() -> None:
    reader = read(EXTENSIONS)
    assert reader.cut is None
    assert reader.locations == ["https://example.com/a", "https://example.com/b"]


def test_reader_stops_on_an_element_that_never_closes() -> None:
    body = HEAD + entries(["http://a/0"]) + b"<url><loc>" + b"a" * 40_000
    # Bytes are counted a piece of input at a time.
    reader = read(body, piece=1000, max_open_bytes=10_000)
    assert reader.cut == _sitemap_read.OPEN
    assert reader.locations == ["http://a/0"]
    # At the real bound, 1 MiB of one text node.
    reader = read(HEAD + b"<url><loc>" + b"a" * (2 * _sitemap_read.MAX_OPEN_BYTES))
    assert reader.cut == _sitemap_read.OPEN


def test_reader_keeps_50000_entries() -> None:
    urls = [f"http://a/{i}" for i in range(50_010)]
    reader = read(HEAD + entries(urls) + b"</urlset>")
    assert reader.cut == _sitemap_read.URLS
    assert reader.locations == urls[:50_000]
    full = read(HEAD + entries(urls[:50_000]) + b"</urlset>")
    assert full.cut is None
    assert len(full.locations) == 50_000


def test_url_allowance_applies_to_page_urls_only() -> None:
    urls = [f"http://a/{i}.xml" for i in range(20)]
    reader = read(HEAD + entries(urls) + b"</urlset>", max_urls=5)
    assert reader.cut == _sitemap_read.URL_BUDGET
    assert reader.locations == urls[:5]
    index = sitemapindex(urls).encode()
    assert read(index, max_urls=5).locations == urls


def test_reader_resolves_no_entity() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE urlset ['
        b'<!ENTITY a "aaaaaaaaaa">'
        + b"".join(
            b'<!ENTITY %c "%s">' % (ord("a") + i + 1, b"&%c;" % (ord("a") + i) * 10)
            for i in range(9)
        )
        + b'<!ENTITY file SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>http://a/&j;</loc></url>"
        b"<url><loc>http://a/&file;</loc></url></urlset>"
    )
    reader = read(laughs)
    # libxml2 gives up on part of it; nothing is expanded, nothing read.
    assert reader.locations
    assert set(reader.locations) == {"http://a/"}


def test_reader_stops_at_a_root_that_is_no_sitemap() -> None:
    reader = read(b"<html><body>" + b"<p>x</p>" * 10_000 + b"</body></html>")
    assert reader.kind == "html"
    assert reader.elements == 1


def test_gunzip_chunks_stops_past_its_limit() -> None:
    body = gzip.compress(b" " * 1_000_000)
    assert sum(map(len, gunzip_chunks(body, 0))) == 1_000_000
    with pytest.raises(_sitemap_read.TooLarge):
        sum(map(len, gunzip_chunks(body, 999_999)))


#: A gzip member that decodes to nothing: 20 bytes.
EMPTY_MEMBER = gzip.compress(b"")


def test_gunzip_chunks_reads_a_bounded_number_of_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A member of content, then a million empty ones (20 MB of gzip that
    # decodes to 7 bytes): GzipFile.read1 walked them all in one call.
    inflaters = []
    real = _sitemap_read.zlib.decompressobj

    def counting(*args: Any) -> Any:
        inflaters.append(args)
        return real(*args)

    monkeypatch.setattr(_sitemap_read.zlib, "decompressobj", counting)
    body = gzip.compress(b"content") + EMPTY_MEMBER * 1_000_000
    pieces = []
    with pytest.raises(_sitemap_read.TooManyMembers):
        pieces.extend(gunzip_chunks(body, 0))
    assert b"".join(pieces) == b"content"
    assert len(inflaters) == _sitemap_read.MAX_MEMBERS
    # As many members as are read: all of them.
    inflaters.clear()
    body = b"".join(gzip.compress(b"%d " % i) for i in range(256))
    assert b"".join(gunzip_chunks(body, 0)).split() == [b"%d" % i for i in range(256)]
    assert len(inflaters) == 256


def test_gunzip_chunks_reads_what_gzip_reads() -> None:
    data = bytes(range(256)) * 1000
    assert b"".join(gunzip_chunks(gzip.compress(data), 0)) == data
    # Trailing junk or a cut stream ends the output; nothing readable raises.
    assert b"".join(gunzip_chunks(gzip.compress(data) + b"\0\0junk", 0)) == data
    cut = gzip.compress(data)[:-1000]
    assert data.startswith(b"".join(gunzip_chunks(cut, 0)))
    with pytest.raises((OSError, EOFError, _sitemap_read.zlib.error)):
        list(gunzip_chunks(b"\x1f\x8b\x08junk", 0))
    with pytest.raises(EOFError):
        list(gunzip_chunks(gzip.compress(data)[:12], 0))


text = st.text(
    alphabet=st.characters(codec="ascii", categories=("L", "N")), max_size=20
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(text, st.booleans()), max_size=30),
    st.sampled_from(["urlset", "sitemapindex"]),
)
def test_reader_reads_what_scrapy_reads(
    items: list[tuple[str, bool]], kind: str
) -> None:
    entry = "url" if kind == "urlset" else "sitemap"
    body = (
        f'<{kind} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        + "".join(
            f"<{entry}><loc> http://a/{path} </loc>"
            + (
                "<lastmod>2024-01-01</lastmod><image:image><image:loc>x</image:loc>"
                "</image:image>"
                if extra
                else ""
            )
            + f"</{entry}>"
            for path, extra in items
        )
        + f"</{kind}>"
    ).encode()
    reader = read(body)
    scrapy = Sitemap(body)
    assert reader.kind == scrapy.type
    assert reader.locations == [entry["loc"] for entry in scrapy]


# -- in real crawls -----------------------------------------------------------


class _CountingPages:
    """Counts the page requests scheduled, and drops them right there: tens
    of thousands of pages are not fetched for the count."""

    crawler: Any
    pages: list[str]

    def _count(self) -> None:
        self.pages = []
        self.crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)

    def _scheduled(self, request: Request) -> None:
        if "/page" in request.url and DEPTH_KEY not in request.meta:
            self.pages.append(request.url)
            raise IgnoreRequest

    async def start(self) -> Any:
        self._count()
        async for request in super().start():  # type: ignore[misc]
            yield request


class CountingSpider(_CountingPages, RecordingSpider):
    name = "counting"


class CountingSitemapSpider(_CountingPages, SitemapSpider):
    name = "counting_sitemap"

    def parse(self, response: Response, **kwargs: Any) -> None:
        pass


async def counting_crawl(
    spider: str, servers: list[Server], settings: dict[str, Any] | None = None
) -> Any:
    """A crawl of ``servers`` by a plain spider (ROBOTS_SITEMAPS) or by a
    SitemapSpider (their robots.txt in ``sitemap_urls``)."""
    settings = {**BASE_SETTINGS, **SITEMAPS, **(settings or {})}
    if spider == "plain":
        crawler = get_crawler(CountingSpider, settings)
        await crawler.crawl_async(urls=[server.url("/start") for server in servers])
    else:
        crawler = get_crawler(CountingSitemapSpider, settings)
        await crawler.crawl_async(
            sitemap_urls=[server.url("/robots.txt") for server in servers]
        )
    return crawler


def xml(server: Server, path: str, body: str | bytes) -> None:
    server.route(path, body, headers=XML)


@pytest.mark.parametrize("spider", ["plain", "sitemap_spider"])
@coroutine_test
async def test_a_sitemap_gives_at_most_50000_pages(
    server: Server, spider: str, caplog: pytest.LogCaptureFixture
) -> None:
    # 1.69 million URLs of one gzip sitemap were all scheduled.
    server.route("/robots.txt", "Sitemap: /s.xml.gz\n")
    urls = [server.url(f"/page/{i}") for i in range(50_010)]
    server.route("/s.xml.gz", gzip.compress(urlset(urls).encode()), headers=GZIP)
    with caplog.at_level(logging.WARNING):
        crawler = await counting_crawl(spider, [server])
    assert len(crawler.spider.pages) == 50_000
    assert sorted(crawler.spider.pages) == sorted(urls[:50_000])
    assert stats(crawler, "robots/sitemaps/cut/") == {"robots/sitemaps/cut/urls": 1}
    (cut,) = [r for r in caplog.records if "read only in part" in r.getMessage()]
    assert "/s.xml.gz>" in cut.getMessage()
    assert "50,000 entries" in cut.getMessage()
    assert "log_count/ERROR" not in crawler.stats.get_stats()


@coroutine_test
async def test_a_gzip_sitemap_of_empty_members_is_read_a_member_at_a_time(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    # 2 MB of empty gzip members after the urlset, inside the byte limit.
    server.route("/robots.txt", "Sitemap: /s.xml.gz\n")
    urls = [server.url(f"/page/{i}") for i in range(3)]
    body = gzip.compress(urlset(urls).encode()) + EMPTY_MEMBER * 100_000
    server.route("/s.xml.gz", body, headers=GZIP)
    with caplog.at_level(logging.WARNING):
        crawler = await counting_crawl("plain", [server])
    assert sorted(crawler.spider.pages) == urls
    assert stats(crawler, "robots/sitemaps/cut/") == {"robots/sitemaps/cut/members": 1}
    (cut,) = [r for r in caplog.records if "read only in part" in r.getMessage()]
    assert "over 256 gzip members" in cut.getMessage()


@pytest.mark.parametrize("spider", ["plain", "sitemap_spider"])
@coroutine_test
async def test_pages_per_robots_txt_are_capped(
    make_server: MakeServer, spider: str, caplog: pytest.LogCaptureFixture
) -> None:
    home, other = make_server(), make_server()
    # Four sitemaps of 50 pages, through an index: 120 pages in all.
    home.route("/robots.txt", "Sitemap: /index.xml\n")
    sitemaps = [f"/s{i}.xml" for i in range(4)]
    xml(home, "/index.xml", sitemapindex(home.url(path) for path in sitemaps))
    for number, path in enumerate(sitemaps):
        pages = (home.url(f"/page/{number}/{i}") for i in range(50))
        xml(home, path, urlset(pages))
    # Another robots.txt has an allowance of its own.
    other.route("/robots.txt", "Sitemap: /s.xml\n")
    xml(other, "/s.xml", urlset(other.url(f"/page/{i}") for i in range(50)))
    with caplog.at_level(logging.WARNING):
        crawler = await counting_crawl(
            spider, [home, other], {"ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT": 120}
        )
    scheduled = crawler.spider.pages
    assert sum(1 for url in scheduled if url.startswith(home.origin)) == 120
    assert sum(1 for url in scheduled if url.startswith(other.origin)) == 50
    assert len(set(scheduled)) == len(scheduled)
    # Each sitemap that gave fewer than its 50 pages is counted as cut: at
    # least two (read one after another: one in part, one before its first
    # page; Scrapy 2.13 reads the four side by side), logged once.
    cut = sum(
        1
        for number in range(4)
        if sum(1 for url in scheduled if f"/page/{number}/" in url) < 50
    )
    assert cut >= 2
    assert stats(crawler, "robots/sitemaps/cut/") == {
        "robots/sitemaps/cut/robots_txt_urls": cut
    }
    (cut,) = [r for r in caplog.records if "read only in part" in r.getMessage()]
    assert "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT" in cut.getMessage()
    assert home.url("/robots.txt") in cut.getMessage()


@pytest.mark.parametrize("spider", ["plain", "sitemap_spider"])
@coroutine_test
async def test_element_bomb_is_read_to_a_million_elements(
    server: Server, spider: str, caplog: pytest.LogCaptureFixture
) -> None:
    # 51 KB of gzip, 50 MiB of <x/>: the loop stalled for 40 s at 1.7 GB.
    size = 50 * 2**20
    early, late = entries([server.url("/early")]), entries([server.url("/late")])
    filler = size - len(HEAD) - len(early) - len(late) - len(b"</urlset>")
    body = gzip.compress(HEAD + early + b"<x/>" * (filler // 4) + late + b"</urlset>")
    server.route("/robots.txt", "Sitemap: /s.xml.gz\n")
    server.route("/s.xml.gz", body, headers=GZIP)
    # Loaded once per process, on first use: not what is measured here.
    _sitemap_read.site(server.url())
    gc.collect()
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING):
            crawler = await counting_crawl(spider, [server])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert server.count("/early") == 1
    assert server.count("/late") == 0
    assert stats(crawler, "robots/sitemaps/cut/") == {"robots/sitemaps/cut/elements": 1}
    (cut,) = [r for r in caplog.records if "read only in part" in r.getMessage()]
    assert "over 1,000,000 elements" in cut.getMessage()
    # Decompressed as it is read, and no further than the cut (4 MiB): the
    # 50 MiB are never held.
    assert peak < size // 4


@coroutine_test
async def test_reading_a_sitemap_lets_the_event_loop_run(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A million elements is bounded work, but not one to do in one go on the
    # loop: between two pieces of input, the loop runs (a task counts its
    # turns while the sitemap is read).
    body = HEAD + b"<x/>" * (2**21 // 4) + b"</urlset>"
    server.route("/robots.txt", "Sitemap: /s.xml\n")
    xml(server, "/s.xml", body)
    turns = 0
    at_feed: list[int] = []
    crawling = True
    counters: list[asyncio.Future[None]] = []
    feed = SitemapReader.feed

    async def count_turns(reader: SitemapReader) -> None:
        nonlocal turns
        while crawling and not reader.done:
            turns += 1
            await asyncio.sleep(0)

    def counting_feed(reader: SitemapReader, piece: bytes) -> None:
        if not at_feed:
            counters.append(asyncio.ensure_future(count_turns(reader)))
        at_feed.append(turns)
        feed(reader, piece)

    monkeypatch.setattr(SitemapReader, "feed", counting_feed)
    try:
        crawler = await crawl([server.url("/start")], SITEMAPS)
    finally:
        crawling = False
    assert len(at_feed) == -(-len(body) // _sitemap_read.CHUNK)
    assert all(later > earlier for earlier, later in pairwise(at_feed))
    assert "robots/sitemaps/cut/elements" not in stats(crawler)


def test_reader_keeps_alternates_within_the_entries_limit() -> None:
    # One <url> with a million xhtml:link alternates was kept whole (70 MiB
    # held for one sitemap), though no more than 50,000 page requests are
    # made from one sitemap.
    links = b'<xhtml:link rel="alternate" href="/x"/>' * 30
    body = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        b' xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>/a</loc>'
        + links
        + b"</url><url><loc>/b</loc>"
        + links
        + b"</url></urlset>"
    )
    reader = SitemapReader(max_entries=40, keep_entries=True).read([body])
    assert reader.cut is None
    assert [entry["loc"] for entry in reader.entries] == ["/a", "/b"]
    assert [len(entry["alternate"]) for entry in reader.entries] == [30, 10]
    assert (reader.alternates, reader.alternates_left_out) == (40, 20)


class ChoosySitemapSpider(SitemapSpider):
    """Takes alternate links, and only the entries modified in 2024."""

    name = "choosy"
    sitemap_alternate_links = True

    def sitemap_filter(
        self, entries: Iterable[dict[str, Any]]
    ) -> Iterable[dict[str, Any]]:
        for entry in entries:
            if entry.get("lastmod", "").startswith("2024"):
                yield entry

    def parse(self, response: Response, **kwargs: Any) -> None:
        pass


@coroutine_test
async def test_sitemap_spider_decides_on_the_entries_read(server: Server) -> None:
    # The package reads the sitemaps below robots.txt for a SitemapSpider
    # too, and hands its sitemap_filter the entries as Scrapy's Sitemap
    # gives them.
    server.route("/robots.txt", "Sitemap: /s.xml\n")
    xml(
        server,
        "/s.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        ' xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        "<url><loc>/new</loc><lastmod>2024-05-01</lastmod>"
        '<xhtml:link rel="alternate" hreflang="de" href="/de/new"/></url>'
        "<url><loc>/old</loc><lastmod>2019-01-01</lastmod></url>"
        "</urlset>",
    )
    crawler = get_crawler(ChoosySitemapSpider, BASE_SETTINGS)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert server.count("/new") == 1
    assert server.count("/de/new") == 1
    assert server.count("/old") == 0
    assert "robots/sitemaps/cut/alternates" not in stats(crawler)


@coroutine_test
async def test_sitemap_spider_alternates_past_the_limit_are_counted(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    kwdefaults = SitemapReader.__init__.__kwdefaults__
    assert kwdefaults is not None
    monkeypatch.setitem(kwdefaults, "max_entries", 2)
    server.route("/robots.txt", "Sitemap: /s.xml\n")
    links = "".join(f'<xhtml:link rel="alternate" href="/de/{i}"/>' for i in range(3))
    xml(
        server,
        "/s.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        ' xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        f"<url><loc>/new</loc><lastmod>2024-05-01</lastmod>{links}</url>"
        "</urlset>",
    )
    crawler = get_crawler(ChoosySitemapSpider, BASE_SETTINGS)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert server.count("/new") == 1
    assert [server.count(f"/de/{i}") for i in range(3)] == [1, 1, 0]
    assert stats(crawler)["robots/sitemaps/cut/alternates"] == 1
    assert "alternate links, the rest left out of its entries" in caplog.text
    # A spider taking no alternate links loses no page request: no word.
    caplog.clear()
    monkeypatch.setattr(ChoosySitemapSpider, "sitemap_alternate_links", False)
    crawler = get_crawler(ChoosySitemapSpider, BASE_SETTINGS)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert "robots/sitemaps/cut/alternates" not in stats(crawler)
    assert "alternate links" not in caplog.text


# -- the other-site rule through redirects (issue 24 F10) ---------------------


def redirect(server: Server, path: str, to: str) -> None:
    server.route(path, status=302, headers={"Location": to})


def other_site(elsewhere: Server) -> None:
    """An index on ``elsewhere`` naming two sitemaps of three pages each."""
    sitemaps = [elsewhere.url("/s1.xml"), elsewhere.url("/s2.xml")]
    xml(elsewhere, "/index.xml", sitemapindex(sitemaps))
    for number in (1, 2):
        pages = [elsewhere.url(f"/p{number}/{i}") for i in range(3)]
        xml(elsewhere, f"/s{number}.xml", urlset(pages))


@pytest.mark.parametrize("spider", ["plain", "sitemap_spider"])
@coroutine_test
async def test_sitemap_redirected_to_another_site_is_dropped(
    make_server: MakeServer, spider: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A same-site Sitemap: /s.xml answering 302 to another site led to its
    # index, 2 sitemaps and 6 pages fetched.
    home, elsewhere = make_server(), make_server()
    home.route("/robots.txt", "Sitemap: /s.xml\nSitemap: /index.xml\n")
    redirect(home, "/s.xml", elsewhere.url("/index.xml"))
    # Below an index on the home site too.
    xml(home, "/index.xml", sitemapindex([home.url("/moved.xml")]))
    redirect(home, "/moved.xml", elsewhere.url("/s1.xml"))
    other_site(elsewhere)
    with caplog.at_level(logging.INFO):
        crawler = await counting_crawl(spider, [home])
    assert elsewhere.hits == []
    assert home.count("/s.xml") == 1
    assert home.count("/moved.xml") == 1
    assert stats(crawler)["robots/sitemaps/skipped/redirect_other_site"] == 2
    logged = [r.getMessage() for r in caplog.records if "redirect of" in r.getMessage()]
    assert len(logged) == 2
    assert any(
        home.url("/s.xml") in line and elsewhere.url("/index.xml") in line
        for line in logged
    )
    assert "log_count/ERROR" not in crawler.stats.get_stats()


@coroutine_test
async def test_sitemap_redirects_on_its_site_and_with_other_sites_are_followed(
    make_server: MakeServer,
) -> None:
    home, elsewhere = make_server(), make_server()
    home.route("/robots.txt", "Sitemap: /old.xml\nSitemap: /away.xml\n")
    redirect(home, "/old.xml", home.url("/new.xml"))
    xml(home, "/new.xml", urlset([home.url("/page/a")]))
    redirect(home, "/away.xml", elsewhere.url("/index.xml"))
    other_site(elsewhere)
    crawler = await counting_crawl("plain", [home])
    # On its own site: followed.
    assert home.count("/new.xml") == 1
    assert crawler.spider.pages == [home.url("/page/a")]
    assert stats(crawler)["robots/sitemaps/skipped/redirect_other_site"] == 1

    home.hits.clear()
    crawler = await crawl(
        [home.url("/start")], {**SITEMAPS, "ROBOTS_SITEMAP_OTHER_SITES": True}
    )
    assert elsewhere.count("/index.xml") == 1
    assert elsewhere.count("/s2.xml") == 1
    assert sum(1 for hit in elsewhere.hits if hit.path.startswith("/p")) == 6
    assert "robots/sitemaps/skipped/redirect_other_site" not in stats(crawler)


@coroutine_test
async def test_sitemap_spider_sitemap_requests_are_serialized_in_jobdir(
    server: Server, tmp_path: Any
) -> None:
    server.route("/robots.txt", "Sitemap: /index.xml\n")
    xml(server, "/index.xml", sitemapindex([server.url("/s.xml")]))
    xml(server, "/s.xml", urlset([server.url("/a")]))
    settings = {**BASE_SETTINGS, "JOBDIR": str(tmp_path / "job")}
    crawler = get_crawler(CountingSitemapSpider, settings)
    await crawler.crawl_async(sitemap_urls=[server.url("/robots.txt")])
    assert server.count("/a") == 1
    crawl_stats = crawler.stats.get_stats()
    assert "scheduler/unserializable" not in crawl_stats
    # The two sitemaps and the page.
    assert crawl_stats["scheduler/enqueued/disk"] == 3
