"""RSL discovery: robots.txt ``License:`` lines (scoped as RSL's errata say)
and ``Link rel="license"`` headers, recorded in meta and items, in real
crawls; never enforced (docs/rights.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scrapy_rfc9309 import Document, is_allowed, parse
from scrapy_rfc9309.licenses import link_licenses, robots_licenses
from scrapy_rfc9309.outcome import Lifetimes, parsed
from scrapy_rfc9309.stores.memory import new_entry
from tests.support.crawl_helpers import (
    ItemSpider,
    crawl,
    crawl_items,
    make_crawler,
    stats,
)
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_commands import scrapy

G = "https://licensing.example/global.xml"
STAR = "https://licensing.example/star.xml"
BOT = "https://licensing.example/testbot.xml"

ROBOTS = f"""\
License: {G}
User-agent: *
Disallow: /private
License: {STAR}

User-agent: otherbot
Allow: /
License: not-absolute.xml
"""


@pytest.mark.parametrize(
    ("text", "agent", "expected"),
    [
        # The chosen group's lines replace the global ones.
        (ROBOTS, "anybot", (STAR,)),
        # A group whose only line is no absolute URL: the global ones.
        (ROBOTS, "otherbot", (G,)),
        # No group at all: global lines only.
        (f"License: {G}\nlicense:  {G}\nLICENSE: {BOT}\n", "x", (G, BOT)),
        (f"User-agent: testbot\nLicense: {BOT}\nDisallow:\n", "other", ()),
        (f"User-agent: testbot\nLicense: {BOT}\nDisallow:\n", "TestBot/1.0", (BOT,)),
        # License never ends a group: both agents share it.
        (f"User-agent: a\nLicense: {BOT}\nUser-agent: b\nDisallow: /\n", "b", (BOT,)),
        ("User-agent: *\nLicense: https://\nLicense: /rel.xml\nDisallow:\n", "x", ()),
    ],
)
def test_robots_licenses(text: str, agent: str, expected: tuple[str, ...]) -> None:
    document = parse(text)
    assert robots_licenses(document, agent) == expected
    # What the stores keep of it (one agent) answers the same.
    slim = Document.from_dict(document.for_agent(agent).to_dict())
    assert robots_licenses(slim, agent) == expected
    outcome = parsed(document, now=0, lifetimes=Lifetimes())
    entry = new_entry(outcome, agent)
    assert entry.licenses == expected
    restored = entry.restored().rules
    assert restored is not None
    assert robots_licenses(restored, agent) == expected


def test_license_never_changes_matching() -> None:
    without = parse(ROBOTS.replace("License", "# License"))
    with_lines = parse(ROBOTS)
    for agent in ("a", "otherbot"):
        assert with_lines.for_agent(agent).groups == without.for_agent(agent).groups
        for url in ("/", "/private", "/x"):
            assert is_allowed(with_lines, agent, url) == is_allowed(without, agent, url)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            ['<https://e.example/l.xml>; rel="license"; type="application/rsl+xml"'],
            [{"url": "https://e.example/l.xml", "source": "link", "rsl": True}],
        ),
        # Several links in one value, a relative target, rel lists and case.
        (
            [
                "<https://e.example/next>; rel=next,"
                ' </cc.html>; REL="alternate License"',
                "<https://cc.example/by/4.0/>;rel=license",
            ],
            [
                {"url": "https://h.example/cc.html", "source": "link", "rsl": False},
                {"url": "https://cc.example/by/4.0/", "source": "link", "rsl": False},
            ],
        ),
        # A stray "<" before a link is not part of its target (each "<"
        # scanned only up to the next one keeps the reading linear).
        (
            ["<<https://x.example/l>; rel=license"],
            [{"url": "https://x.example/l", "source": "link", "rsl": False}],
        ),
        # Junk: nothing, never an error.
        ([b"\xff\xfe<", "rel=license", "<>; rel=license", '<x>; rel="lic'], []),
    ],
)
def test_link_licenses(values: list[Any], expected: list[dict[str, Any]]) -> None:
    assert link_licenses(values, "https://h.example/page") == expected


class LicensesSpider(ItemSpider):
    """Keeps each response's ``robots_licenses`` in ``kept``."""

    meta_key = "robots_licenses"


@coroutine_test
async def test_crawl_records_licenses(server: Server) -> None:
    server.route("/robots.txt", ROBOTS)
    link = f'<{BOT}>; rel="license"; type="application/rsl+xml"'
    server.route("/linked", "<html></html>", headers={"Link": link})
    server.route("/plain", "<html></html>")
    server.route("/private", "<html></html>")
    urls = [server.url(path) for path in ("/linked", "/plain", "/private")]
    crawler = await crawl(urls, spidercls=LicensesSpider)
    spider = crawler.spider
    assert isinstance(spider, LicensesSpider)
    from_robots = {"url": STAR, "source": "robots.txt"}
    assert spider.kept[server.url("/plain")] == (from_robots,)
    assert spider.kept[server.url("/linked")] == (
        from_robots,
        {"url": BOT, "source": "link", "rsl": True},
    )
    # Recorded, not obeyed: robots.txt alone dropped /private.
    assert server.count("/private") == 0
    assert set(spider.dropped) == {server.url("/private")}
    assert stats(crawler, "robots/forbidden/") == {"robots/forbidden/rule": 1}


@coroutine_test
async def test_items_get_the_field(server: Server) -> None:
    server.route("/robots.txt", ROBOTS)
    server.route("/page", "<html></html>", headers={"Link": f"<{BOT}>; rel=license"})
    server.route("/none", "<html></html>")
    crawler = make_crawler({}, LicensesSpider)
    items = await crawl_items(crawler, urls=[server.url("/page")])
    (item,) = items
    assert item["robots_licenses"] == [
        {"url": STAR, "source": "robots.txt"},
        {"url": BOT, "source": "link", "rsl": False},
    ]


def test_check_shows_licenses(server: Server, tmp_path: Path) -> None:
    server.route("/robots.txt", ROBOTS)
    done = scrapy(tmp_path, "check", server.url("/page"), server.url("/private"))
    assert done.returncode == 1, done.stderr
    page, private = done.stdout.splitlines()[1:]
    assert page.endswith(f"license {STAR}")
    assert private.endswith(f"license {STAR}")
    done = scrapy(tmp_path, "check", "--json", server.url("/page"))
    (result,) = json.loads(done.stdout)["results"]
    assert result["licenses"] == [STAR]
