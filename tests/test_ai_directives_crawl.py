"""noai / noml / noimageai (robots meta, X-Robots-Tag) in real crawls: a
training crawl drops the items they refuse, any other crawl gets them
annotated (docs/rights.md)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.http import Response

from scrapy_rfc9309.directives import DirectiveSet
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_directives_crawl import HTML, PageSpider, crawl, meta, page

TRAINING = {"ROBOTS_PURPOSES": ["train-ai"]}
DROPPED = "robots/directives/items_dropped"


class TwoItemSpider(PageSpider):
    """Per page, a text item and an image item (ImagesPipeline's field)."""

    def parse(self, response: Response) -> Iterator[Any]:
        yield from super().parse(response)
        yield {"url": response.url, "image_urls": [response.urljoin("/i.png")]}


def kinds(items: list[Any], server: Server) -> set[tuple[str, str]]:
    return {
        (
            item["url"].removeprefix(server.url("")),
            "image" if "image_urls" in item else "text",
        )
        for item in items
    }


def dropped(crawler: Any) -> dict[str, Any]:
    return {
        key: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith(DROPPED)
    }


@pytest.mark.parametrize(
    ("headers", "head", "left", "token"),
    [
        ({"X-Robots-Tag": "noai"}, "", set(), "noai"),
        ({}, meta("noai, noimageai"), set(), "noai"),
        ({}, meta("NoML"), set(), "noml"),
        ({}, meta("noimageai"), {"text"}, "noimageai"),
        ({"X-Robots-Tag": "noimageai"}, "", {"text"}, "noimageai"),
        ({"X-Robots-Tag": "examplebot: noai"}, "", set(), "noai"),
        ({}, meta("noai", name="ExampleBot"), set(), "noai"),
        # Scoped to another bot, or a token this package does not read.
        ({"X-Robots-Tag": "otherbot: noai"}, "", {"text", "image"}, None),
        ({}, meta("noai", name="otherbot"), {"text", "image"}, None),
        ({}, meta("noaix"), {"text", "image"}, None),
    ],
)
@coroutine_test
async def test_training_crawl_drops(
    server: Server,
    headers: dict[str, str],
    head: str,
    left: set[str],
    token: str | None,
) -> None:
    server.route("/a", page("/b", head=head), headers={**HTML, **headers})
    crawler, items = await crawl(TwoItemSpider, [server.url("/a")], **TRAINING)
    # The page's links are followed: the tokens are about use, not crawling.
    assert server.count("/b") == 1
    assert kinds(items, server) == {("/a", kind) for kind in left} | {
        ("/b", "text"),
        ("/b", "image"),
    }
    count = 2 - len(left)
    expected = {DROPPED: count, f"{DROPPED}/{token}": count} if token else {}
    assert dropped(crawler) == expected


@coroutine_test
async def test_image_response_header(server: Server) -> None:
    # DeviantArt's deployment: the image download says noai in its header.
    server.route(
        "/img",
        b"\x89PNG",
        headers={"Content-Type": "image/png", "X-Robots-Tag": "noimageai"},
    )
    server.route("/page", page(), headers={**HTML, "X-Robots-Tag": "noimageai"})
    crawler, items = await crawl(
        PageSpider, [server.url("/img"), server.url("/page")], **TRAINING
    )
    assert {item["url"] for item in items} == {server.url("/page")}
    assert dropped(crawler) == {DROPPED: 1, f"{DROPPED}/noimageai": 1}


@pytest.mark.parametrize(
    ("settings", "kept"),
    [
        ({}, True),
        ({"ROBOTS_PURPOSES": ["search"]}, True),
        ({"ROBOTS_PURPOSES": ["ai-use"]}, True),
        ({"ROBOTS_PURPOSES": ["search+train-ai"]}, False),
        ({"ROBOTS_CONTENT_SIGNALS": {"ai-train": True}}, False),
        ({**TRAINING, "ROBOTS_DIRECTIVES": "annotate"}, True),
    ],
)
@coroutine_test
async def test_other_crawls_annotate(
    server: Server, settings: dict[str, Any], kept: bool
) -> None:
    server.route("/a", page(), headers={**HTML, "X-Robots-Tag": "noai, nosnippet"})
    server.route("/plain", page(), headers=HTML)
    crawler, items = await crawl(
        PageSpider, [server.url("/a"), server.url("/plain")], **settings
    )
    by_url = {item["url"]: item for item in items}
    plain = by_url[server.url("/plain")]
    if not kept:
        assert server.url("/a") not in by_url
        assert dropped(crawler) == {DROPPED: 1, f"{DROPPED}/noai": 1}
        return
    assert dropped(crawler) == {}
    field = by_url[server.url("/a")]["robots_directives"]
    assert isinstance(field, DirectiveSet)
    assert (field.other, field.nosnippet) == (("noai",), True)
    # Only pages saying an AI token are annotated in drop mode.
    annotate = settings.get("ROBOTS_DIRECTIVES") == "annotate"
    assert ("robots_directives" in plain) is annotate


@coroutine_test
async def test_drop_is_logged(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="scrapy_rfc9309.spidermiddleware")
    server.route("/a", page(head=meta("noml")), headers=HTML)
    await crawl(PageSpider, [server.url("/a")], **TRAINING)
    logged = [
        record.getMessage()
        for record in caplog.records
        if record.name == "scrapy_rfc9309.spidermiddleware"
    ]
    assert logged == [
        f"Dropped {{'url': '{server.url('/a')}'}} of {server.url('/a')}:"
        " the page says noml"
    ]
