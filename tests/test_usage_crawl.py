"""Content-Usage in real crawls: the robots.txt rule skips URLs, the
response header drops (or annotates) items, both combined (any ``n`` wins),
for the purposes the crawl declares once for both signals."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import scrapy
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from scrapy_rfc9309.middleware import RobotsDisallowed
from tests.support.crawl_helpers import crawl_items, make_crawler, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test

ROBOTS = """\
User-agent: *
Allow: /
Disallow: /private/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
Content-Usage: /open/ search=y
"""
TRAIN_AI = {"ROBOTS_PURPOSES": ["train-ai"]}
HTML = {"Content-Type": "text/html"}
HEADER_NO = {**HTML, "Content-Usage": "train-ai=n"}
# What the crawl asks for in most tests: every kind of page.
PATHS = [
    "/page",
    "/private/x",
    "/ai-ok/plain",
    "/ai-ok/header-no",
    "/open/header-no",
    "/open/search",
]


class UsageSpider(scrapy.Spider):
    """Yields one item per page, follows its links passing its meta on (as
    many spiders do), and records each page's ``robots_usage``."""

    name = "usage_pages"

    def __init__(self, urls: list[str], **kwargs: Any):
        super().__init__(**kwargs)
        self.urls = urls
        self.usage: dict[str, Any] = {}
        self.dropped: dict[str, RobotsDisallowed] = {}
        #: Path -> the robots_usage field of its item (annotate mode).
        self.annotated: dict[str, Any] = {}

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, errback=self.failed)

    def parse(self, response: Response) -> Iterator[Any]:
        path = response.url.split("/", 3)[3]
        self.usage["/" + path] = response.meta.get("robots_usage", "unset")
        yield {"path": "/" + path}
        if isinstance(response, TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, meta=response.meta, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        if isinstance(failure.value, RobotsDisallowed):
            path = failure.request.url.split("/", 3)[3]  # type: ignore[attr-defined]
            self.dropped["/" + path] = failure.value


def _site(server: Server) -> None:
    server.route("/robots.txt", ROBOTS)
    server.route("/page", "<p>plain</p>", headers=HTML)
    server.route("/private/x", "private", headers=HTML)
    server.route("/ai-ok/plain", "ok", headers=HTML)
    server.route("/ai-ok/header-no", "ok", headers=HEADER_NO)
    # Its link is followed with its meta: the next page's preferences are
    # its own.
    server.route(
        "/open/header-no", '<a href="/ai-ok/plain?2">next</a>', headers=HEADER_NO
    )
    server.route("/ai-ok/plain?2", "ok", headers=HTML)
    # search=n and the String "n" (no Token): train-ai unknown here.
    server.route(
        "/open/search",
        "ok",
        headers={**HTML, "Content-Usage": 'search=n, train-ai="n"'},
    )


async def _crawl(
    server: Server, settings: dict[str, Any], paths: list[str] = PATHS
) -> tuple[Crawler, list[str]]:
    _site(server)
    crawler = make_crawler(settings, UsageSpider)
    items = await crawl_items(crawler, urls=[server.url(path) for path in paths])
    for item in items:
        if "robots_usage" in item:
            crawler.spider.annotated[item["path"]] = item["robots_usage"]
    return crawler, sorted(item["path"] for item in items)


def _usage(train_ai: bool | None, search: bool | None = None) -> dict[str, Any]:
    return {"train-ai": train_ai, "ai-use": None, "search": search}


@coroutine_test
async def test_a_train_ai_crawl_obeys_the_rule_and_the_header(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scrapy_rfc9309")
    crawler, items = await _crawl(server, TRAIN_AI)
    spider = crawler.spider
    # robots.txt says train-ai=n for /page (line 4): never requested.
    assert server.count("/page") == 0
    assert spider.dropped["/page"].cause == "content_usage"
    assert spider.dropped["/private/x"].cause == "rule"
    assert "line 4: Content-Usage: train-ai=n" in caplog.text
    # The header says n where robots.txt says y: n wins, the item goes.
    assert spider.usage["/ai-ok/header-no"] == _usage(False)
    assert spider.usage["/open/header-no"] == _usage(False, True)
    assert spider.usage["/ai-ok/plain"] == _usage(True)
    assert spider.usage["/ai-ok/plain?2"] == _usage(True)
    assert spider.usage["/open/search"] == _usage(None, False)
    assert items == ["/ai-ok/plain", "/ai-ok/plain?2", "/open/search"]
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/forbidden": 2,
        "robots/forbidden/rule": 1,
        "robots/forbidden/content_usage": 1,
        "robots/usage/items_dropped": 2,
        # A training crawl reads TDMRep too: the server's catch-all HTML page
        # is no tdmrep.json.
        "robots/tdm/fetch_count": 1,
        "robots/tdm/file/invalid": 1,
    }
    assert "Content-Usage refuses train-ai" in caplog.text


@coroutine_test
async def test_content_signal_declaration_covers_content_usage(server: Server) -> None:
    """ROBOTS_CONTENT_SIGNALS = {"ai-train": True} declares train-ai too."""
    crawler, items = await _crawl(
        server, {"ROBOTS_CONTENT_SIGNALS": {"ai-train": True}}
    )
    assert crawler.spider.dropped["/page"].cause == "content_usage"
    assert items == ["/ai-ok/plain", "/ai-ok/plain?2", "/open/search"]
    assert stats(crawler)["robots/usage/items_dropped"] == 2


@coroutine_test
async def test_a_search_crawl_is_refused_only_by_search(server: Server) -> None:
    crawler, items = await _crawl(server, {"ROBOTS_PURPOSES": ["search"]})
    assert "/page" not in crawler.spider.dropped
    assert crawler.spider.usage["/page"] == _usage(False)
    assert items == [
        "/ai-ok/header-no",
        "/ai-ok/plain",
        "/ai-ok/plain?2",
        "/open/header-no",
        "/page",
    ]
    assert stats(crawler)["robots/usage/items_dropped"] == 1


@coroutine_test
async def test_search_overrides_train_ai_for_a_use_in_both(server: Server) -> None:
    """vocab-08 4.3: a search engine training its ranking model declares
    search+train-ai, and search's preference alone decides."""
    crawler, items = await _crawl(server, {"ROBOTS_PURPOSES": ["search+train-ai"]})
    assert crawler.spider.dropped.keys() == {"/private/x"}
    assert "/open/search" not in items
    assert "/page" in items


@coroutine_test
async def test_no_purpose_means_no_usage_check(server: Server) -> None:
    crawler, items = await _crawl(server, {})
    assert crawler.spider.dropped.keys() == {"/private/x"}
    assert len(items) == 6
    assert set(crawler.spider.usage.values()) == {"unset"}
    assert "robots/usage/items_dropped" not in stats(crawler)


@coroutine_test
async def test_annotate_keeps_items_with_their_preferences(server: Server) -> None:
    crawler, items = await _crawl(server, {**TRAIN_AI, "ROBOTS_USAGE": "annotate"})
    assert items == [
        "/ai-ok/header-no",
        "/ai-ok/plain",
        "/ai-ok/plain?2",
        "/open/header-no",
        "/open/search",
    ]
    annotated = crawler.spider.annotated
    assert annotated["/ai-ok/header-no"] == _usage(False)
    assert annotated["/ai-ok/plain"] == _usage(True)
    # The robots.txt rule still skips: it governs what is fetched at all.
    assert crawler.spider.dropped["/page"].cause == "content_usage"
    assert "robots/usage/items_dropped" not in stats(crawler)


@coroutine_test
async def test_ai_use_is_declared_for_content_signal_too(server: Server) -> None:
    """One declaration, both signals: ai-use maps to Content-Signal ai-input."""
    server.route("/robots.txt", "User-agent: *\nContent-Signal: ai-input=no\n")
    crawler = make_crawler({"ROBOTS_PURPOSES": ["ai-use"]}, UsageSpider)
    await crawler.crawl_async(urls=[server.url("/a")])
    assert crawler.spider.dropped["/a"].cause == "content_signal"
    assert server.count("/a") == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["train"], "not \\['train'\\]"),
        (["search+ai"], "not \\['search\\+ai'\\]"),
        ({"train-ai": True}, "not \\{'train-ai': True\\}"),
        (["train-ai", 3], "not \\['train-ai', 3\\]"),
    ],
)
@coroutine_test
async def test_bad_purposes_are_a_clear_error(
    server: Server, value: Any, message: str
) -> None:
    with pytest.raises(
        ValueError, match="^ROBOTS_PURPOSES must be a list of .*" + message
    ):
        await make_crawler({"ROBOTS_PURPOSES": value}, UsageSpider).crawl_async(
            urls=[server.url("/a")]
        )
    assert server.hits == []


@coroutine_test
async def test_purposes_from_the_command_line(server: Server) -> None:
    # As ``scrapy crawl -s ROBOTS_PURPOSES=train-ai,search`` gives it.
    crawler, items = await _crawl(server, {"ROBOTS_PURPOSES": "train-ai,search"})
    assert crawler.spider.dropped["/page"].cause == "content_usage"
    assert items == ["/ai-ok/plain", "/ai-ok/plain?2"]


# attach-05 section 1.2, served as the draft writes it: the response, then
# "alternatively, or additionally" the same preference in robots.txt.
EXAMPLE_HEADERS = {
    "Date": "Wed, 23 Apr 2025 04:48:02 GMT",
    "Content-Type": "text/plain",
    "Content-Usage": "train-ai=n",
}
EXAMPLE_ROBOTS = "User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n"


@pytest.mark.parametrize("robots_txt", ["User-Agent: *\nAllow: /\n", EXAMPLE_ROBOTS])
@coroutine_test
async def test_the_drafts_example_in_a_crawl(server: Server, robots_txt: str) -> None:
    server.route("/robots.txt", robots_txt)
    server.route("/content", "This is some content.", headers=EXAMPLE_HEADERS)
    urls = [server.url("/content")]
    # A search crawl takes the content, with the preference that applied.
    search = make_crawler({"ROBOTS_PURPOSES": ["search"]}, UsageSpider)
    await search.crawl_async(urls=urls)
    assert search.spider.usage["/content"] == _usage(False)
    assert stats(search, "item_scraped_count") == {"item_scraped_count": 1}
    # A train-ai crawl: the header alone drops the item; robots.txt as
    # well skips the URL before it is fetched.
    train = make_crawler(TRAIN_AI, UsageSpider)
    await train.crawl_async(urls=urls)
    assert stats(train, "item_scraped_count") == {}
    if robots_txt == EXAMPLE_ROBOTS:
        assert train.spider.dropped["/content"].cause == "content_usage"
        assert server.count("/content") == 1
    else:
        assert stats(train)["robots/usage/items_dropped"] == 1
        assert server.count("/content") == 2
