from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
import scrapy
from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import directives as directives_module
from scrapy_rfc9309.directives import MAX_VALUE_LENGTH, DirectiveSet
from scrapy_rfc9309.spidermiddleware import DirectivesMiddleware
from tests.support.crawl_helpers import crawl_items
from tests.support.fault_server import FaultServer, raw
from tests.support.server import Server
from tests.support.utils import coroutine_test

MIDDLEWARE = "scrapy_rfc9309.spidermiddleware.DirectivesMiddleware"
SETTINGS: dict[str, Any] = {
    "SPIDER_MIDDLEWARES": {MIDDLEWARE: 550},
    "USER_AGENT": "ExampleBot/1.0 (+https://example.com/bot)",
    "RETRY_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
}
ITEMS = "robots/directives/items_dropped"
REQUESTS = "robots/directives/requests_dropped"


class PageSpider(scrapy.Spider):
    """Yields one item per page and follows every link (``class="force"``
    links with ``dont_obey_robotstxt``)."""

    name = "pages"

    def __init__(self, urls: list[str], start_items: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.urls = urls
        self.start_items = start_items
        self.directives: dict[str, Any] = {}

    async def start(self) -> AsyncIterator[Any]:
        for index in range(self.start_items):
            yield {"from": "start", "index": index}
        for url in self.urls:
            yield Request(url)

    def item(self, response: Response) -> Any:
        return {"url": response.url}

    def parse(self, response: Response) -> Iterator[Any]:
        self.directives[response.url] = response.meta.get("robots_directives", "unset")
        yield self.item(response)
        if not isinstance(response, TextResponse):
            return
        for link in response.css("a"):
            forced = "force" in (link.attrib.get("class") or "")
            yield response.follow(
                link, meta={"dont_obey_robotstxt": True} if forced else {}
            )


def page(*links: str, head: str = "", force: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<a href="{href}">x</a>' for href in links)
    anchors += "".join(f'<a class="force" href="{href}">x</a>' for href in force)
    return f"<html><head>{head}</head><body>{anchors}</body></html>"


def meta(content: str, name: str = "robots") -> str:
    return f'<meta name="{name}" content="{content}">'


HTML = {"Content-Type": "text/html"}


async def crawl(
    spidercls: type[scrapy.Spider], urls: list[str], **settings: Any
) -> tuple[Crawler, list[Any]]:
    crawler = get_crawler(spidercls, {**SETTINGS, **settings})
    return crawler, await crawl_items(crawler, urls=urls)


def urls_of(items: list[Any]) -> set[str]:
    return {item["url"] for item in items if "url" in item}


def stats(crawler: Crawler) -> tuple[Any, Any]:
    assert crawler.stats is not None
    return crawler.stats.get_value(ITEMS), crawler.stats.get_value(REQUESTS)


@pytest.mark.parametrize(
    ("headers", "head", "dropped"),
    [
        ({"X-Robots-Tag": "noindex"}, "", True),
        ({}, meta("noindex"), True),
        ({}, "<META NAME=ROBOTS CONTENT='NoIndex'>", True),
        ({"X-Robots-Tag": "examplebot: noindex"}, "", True),
        ({}, meta("noindex", name="ExampleBot"), True),
        ({"X-Robots-Tag": "googlebot: noindex, nofollow"}, "", False),
        ({}, meta("noindex", name="googlebot"), False),
        ({}, meta("googlebot: noindex"), False),
        ({"X-Robots-Tag": "noarchive, nosnippet, max-snippet:0"}, "", False),
        ({"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST"}, "", True),
        ({}, meta("unavailable_after: Monday, 27-Jun-2011 15:00:00 GMT"), True),
        ({"X-Robots-Tag": "unavailable_after: 2999-12-31"}, "", False),
        ({"X-Robots-Tag": "otherbot: unavailable_after: 2010-01-01"}, "", False),
    ],
)
@coroutine_test
async def test_noindex(
    server: Server, headers: dict[str, str], head: str, dropped: bool
) -> None:
    server.route("/a", page("/b", head=head), headers={**HTML, **headers})
    crawler, items = await crawl(PageSpider, [server.url("/a")])
    # noindex says nothing about links: the follow-up is crawled either way.
    assert server.count("/b") == 1
    expected = {server.url("/b")} if dropped else {server.url("/a"), server.url("/b")}
    assert urls_of(items) == expected
    assert stats(crawler) == ((1 if dropped else None), None)


@pytest.mark.parametrize(
    ("headers", "head", "dropped", "noindex"),
    [
        ({"X-Robots-Tag": "nofollow"}, "", True, False),
        ({}, meta("nofollow"), True, False),
        ({}, meta("none"), True, True),
        ({"X-Robots-Tag": "EXAMPLEBOT: NOFOLLOW"}, "", True, False),
        ({"X-Robots-Tag": "otherbot: nofollow"}, "", False, False),
        ({}, meta("nofollow", name="otherbot"), False, False),
        ({}, "<!-- " + meta("nofollow") + " -->", False, False),
    ],
)
@coroutine_test
async def test_nofollow(
    server: Server, headers: dict[str, str], head: str, dropped: bool, noindex: bool
) -> None:
    server.route(
        "/a",
        page("/b", "/c", head=head, force=("/forced",)),
        headers={**HTML, **headers},
    )
    crawler, items = await crawl(PageSpider, [server.url("/a")])
    follows = {"/b", "/c"}
    for path in follows:
        assert server.count(path) == (0 if dropped else 1)
    assert server.count("/forced") == 1
    crawled = {"/forced"} | (set() if dropped else follows)
    if not noindex:
        crawled.add("/a")
    assert urls_of(items) == {server.url(path) for path in crawled}
    assert stats(crawler) == ((1 if noindex else None), (2 if dropped else None))


@coroutine_test
async def test_exact_counts_over_a_site(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scrapy_rfc9309.spidermiddleware")
    server.route("/", page("/noindex", "/nofollow", "/none", "/plain"), headers=HTML)
    server.route("/noindex", page("/n1"), headers={**HTML, "X-Robots-Tag": "noindex"})
    server.route(
        "/nofollow", page("/f1", "/f2", "/f3", head=meta("nofollow")), headers=HTML
    )
    server.route("/none", page("/x1", "/x2", head=meta("none")), headers=HTML)
    server.route("/plain", page("/p1"), headers=HTML)
    crawler, items = await crawl(PageSpider, [server.url("/")])
    assert stats(crawler) == (2, 5)
    assert urls_of(items) == {
        server.url(path) for path in ("/", "/nofollow", "/plain", "/n1", "/p1")
    }
    for path in ("/f1", "/f2", "/f3", "/x1", "/x2"):
        assert server.count(path) == 0
    logged = [
        record.getMessage()
        for record in caplog.records
        if record.name == "scrapy_rfc9309.spidermiddleware"
    ]
    assert len(logged) == 7
    assert all(
        record.levelname == "DEBUG"
        for record in caplog.records
        if record.name == "scrapy_rfc9309.spidermiddleware"
    )
    assert (
        f"Dropped <GET {server.url('/f1')}> of {server.url('/nofollow')}:"
        " the page says nofollow" in logged
    )


@coroutine_test
async def test_every_response_carries_its_directives(server: Server) -> None:
    server.route("/a", page("/b", "/c"), headers={**HTML, "X-Robots-Tag": "noarchive"})
    server.route(
        "/b",
        "%PDF-1.4",
        headers={"Content-Type": "application/pdf", "X-Robots-Tag": "max-snippet: 5"},
    )
    crawler, _ = await crawl(PageSpider, [server.url("/a")])
    assert isinstance(crawler.spider, PageSpider)
    assert crawler.spider.directives == {
        server.url("/a"): DirectiveSet(noarchive=True),
        server.url("/b"): DirectiveSet(max_snippet=5),
        server.url("/c"): DirectiveSet(),
    }


class MetaCopySpider(PageSpider):
    def parse(self, response: Response) -> Iterator[Any]:
        self.directives[response.url] = response.meta.get("robots_directives")
        yield self.item(response)
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, meta=response.meta)


@coroutine_test
async def test_meta_passed_on_does_not_leak(server: Server) -> None:
    server.route("/a", page("/b"), headers={**HTML, "X-Robots-Tag": "noindex"})
    crawler, items = await crawl(MetaCopySpider, [server.url("/a")])
    assert urls_of(items) == {server.url("/b")}
    assert isinstance(crawler.spider, PageSpider)
    assert crawler.spider.directives[server.url("/b")] == DirectiveSet()
    assert stats(crawler) == (1, None)


class StartSpider(PageSpider):
    async def start(self) -> AsyncIterator[Any]:
        yield {"from": "start"}
        for url in self.urls:
            yield Request(url)
        yield Request(self.urls[0] + "?again", dont_filter=True)


@coroutine_test
async def test_start_output_untouched(server: Server) -> None:
    # Even a noindex, nofollow page cannot drop what start() yields.
    server.route("/a", page("/b"), headers={**HTML, "X-Robots-Tag": "none"})
    crawler, items = await crawl(StartSpider, [server.url("/a")])
    assert items == [{"from": "start"}]
    assert server.count("/a") == 1
    assert server.count("/a?again") == 1
    assert server.count("/b") == 0
    assert stats(crawler) == (2, 2)


class AgentSpider(PageSpider):
    robots_user_agent = "OtherBot/2.0"


@coroutine_test
async def test_spider_robots_user_agent(server: Server) -> None:
    server.route(
        "/a",
        page(),
        headers={**HTML, "X-Robots-Tag": "examplebot: nofollow, otherbot: noindex"},
    )
    crawler, items = await crawl(AgentSpider, [server.url("/a")])
    assert items == []
    assert stats(crawler) == (1, None)


@coroutine_test
async def test_robots_user_agent_setting(server: Server) -> None:
    server.route("/a", page(), headers={**HTML, "X-Robots-Tag": "examplebot: noindex"})
    _, items = await crawl(PageSpider, [server.url("/a")], ROBOTS_USER_AGENT="OtherBot")
    assert urls_of(items) == {server.url("/a")}


@coroutine_test
async def test_clock(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.route(
        "/a", page(), headers={**HTML, "X-Robots-Tag": "unavailable_after: 2030-06-01"}
    )
    server.route(
        "/b", page(), headers={**HTML, "X-Robots-Tag": "unavailable_after: 2030-06-02"}
    )
    monkeypatch.setattr(
        DirectivesMiddleware,
        "clock",
        staticmethod(lambda: datetime(2030, 6, 1, 12, tzinfo=timezone.utc)),
    )
    crawler, items = await crawl(PageSpider, [server.url("/a"), server.url("/b")])
    assert urls_of(items) == {server.url("/b")}
    assert stats(crawler) == (1, None)


# -- annotate ------------------------------------------------------------------


class Declared(scrapy.Item):
    url = scrapy.Field()
    robots_directives = scrapy.Field()


class Undeclared(scrapy.Item):
    url = scrapy.Field()


@dataclasses.dataclass
class DeclaredData:
    url: str
    robots_directives: DirectiveSet | None = None


@dataclasses.dataclass
class UndeclaredData:
    url: str


class SetBySpider(dict):  # type: ignore[type-arg]
    pass


def _spider_of(make: Callable[[str], Any]) -> type[PageSpider]:
    class ItemSpider(PageSpider):
        def item(self, response: Response) -> Any:
            return make(response.url)

    return ItemSpider


@pytest.mark.parametrize(
    ("make", "annotated"),
    [
        (lambda url: {"url": url}, True),
        (lambda url: Declared(url=url), True),
        (lambda url: DeclaredData(url=url), True),
        (lambda url: Undeclared(url=url), False),
        (lambda url: UndeclaredData(url=url), False),
    ],
)
@coroutine_test
async def test_annotate(
    server: Server, make: Callable[[str], Any], annotated: bool
) -> None:
    server.route(
        "/a",
        page("/b", head=meta("none")),
        headers={**HTML, "X-Robots-Tag": "noarchive"},
    )
    crawler, items = await crawl(
        _spider_of(make), [server.url("/a")], ROBOTS_DIRECTIVES="annotate"
    )
    assert server.count("/b") == 1
    assert len(items) == 2
    found = {
        ItemAdapter(item)["url"]: ItemAdapter(item).get("robots_directives")
        for item in items
    }
    if annotated:
        assert found == {
            server.url("/a"): DirectiveSet(noindex=True, nofollow=True, noarchive=True),
            server.url("/b"): DirectiveSet(),
        }
    else:
        assert found == {server.url("/a"): None, server.url("/b"): None}
        assert all(
            "robots_directives" not in ItemAdapter(item).field_names() for item in items
        )
    assert stats(crawler) == (None, None)


@coroutine_test
async def test_annotate_keeps_the_spiders_value(server: Server) -> None:
    server.route("/a", page(), headers={**HTML, "X-Robots-Tag": "noindex"})
    spider = _spider_of(lambda url: {"url": url, "robots_directives": "mine"})
    _, items = await crawl(spider, [server.url("/a")], ROBOTS_DIRECTIVES="ANNOTATE")
    assert items == [{"url": server.url("/a"), "robots_directives": "mine"}]


# -- switched off and misconfigured --------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"ROBOTS_DIRECTIVES": "off"},
        {"ROBOTS_ENABLED": False},
        {"ROBOTS_ENABLED": "False"},
    ],
)
@coroutine_test
async def test_off(server: Server, settings: dict[str, Any]) -> None:
    server.route("/a", page("/b"), headers={**HTML, "X-Robots-Tag": "none"})
    crawler, items = await crawl(PageSpider, [server.url("/a")], **settings)
    assert urls_of(items) == {server.url("/a"), server.url("/b")}
    assert isinstance(crawler.spider, PageSpider)
    assert set(crawler.spider.directives.values()) == {"unset"}
    assert stats(crawler) == (None, None)


@coroutine_test
async def test_invalid_mode(server: Server) -> None:
    with pytest.raises(
        ValueError,
        match="ROBOTS_DIRECTIVES must be one of 'drop', 'annotate', 'off', not 'dorp'",
    ):
        await crawl(PageSpider, [server.url("/a")], ROBOTS_DIRECTIVES="dorp")
    assert server.count("/a") == 0


@coroutine_test
async def test_a_huge_folded_x_robots_tag_is_read_within_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2 MB of a:a:a: folded over 2,000 header lines on a text/plain page
    # (issue 24, F2): 25-28 s of parsing on the event loop.  Only the first
    # MAX_VALUE_LENGTH characters are read: the noindex before them counts,
    # the nofollow after them does not, and no parse reads more.
    lines = [b"X-Robots-Tag: noindex, x: " + b"a:" * 512]
    lines += [b" " + b"a:" * 512] * 2_000
    lines[-1] += b", nofollow"
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n"
        + b"\r\n".join(lines)
        + b"\r\nConnection: close\r\n\r\npage"
    )
    assert len(response) > 2_000_000
    read: list[int] = []
    bounded = directives_module._bounded

    def counted(value: str | bytes) -> str:
        text = bounded(value)
        read.append(len(text))
        return text

    monkeypatch.setattr(directives_module, "_bounded", counted)
    server = FaultServer("127.11.0.1")
    try:
        server.routes["/page"] = raw(response)
        crawler, items = await crawl(PageSpider, [server.url("/page")])
    finally:
        server.close()
    assert isinstance(crawler.spider, PageSpider)
    assert crawler.spider.directives == {
        server.url("/page"): DirectiveSet(noindex=True)
    }
    assert items == []
    assert stats(crawler) == (1, None)
    # The folded value reached the parser whole: cut there, near the bound.
    assert len(read) == 1
    assert MAX_VALUE_LENGTH - 1030 < read[0] <= MAX_VALUE_LENGTH
