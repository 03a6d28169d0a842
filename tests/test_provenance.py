"""Evidence of what allowed each item: ``robots_provenance`` and ``ROBOTS_REPORT``.

Real crawls on loopback origins: the hash of the robots.txt body is taken
once, when it is fetched, and kept with the outcome in every store; items
carry the record of the robots.txt, line and preferences that allowed them
(``ROBOTS_PROVENANCE``, off by default); the report has one line per origin
whose counts are the crawl's stats.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from errno import EISDIR, ENOENT
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_rfc9309 import ProvenanceMiddleware
from scrapy_rfc9309.provenance import iso_time
from tests.crawl_helpers import RecordingSpider, crawl, make_crawler, middleware
from tests.server import Server
from tests.utils import coroutine_test

ROBOTS = "User-agent: *\nDisallow: /private\nAllow: /public\n"
#: A robots.txt saying something of every kind a record names.
RICH = (
    "User-agent: *\n"  # 1
    "Content-Signal: search=yes, ai-train=no\n"  # 2
    "Disallow: /private\n"  # 3
    "Allow: /public\n"  # 4
    "Content-Usage: /public/ai train-ai=y\n"  # 5
    "Content-Usage: train-ai=n\n"  # 6
)
UNKNOWN = {"train-ai": None, "ai-use": None, "search": None}


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


@coroutine_test
async def test_the_body_hash_is_taken_once_when_fetched(
    make_server: Callable[..., Server],
) -> None:
    plain, zipped, cut = make_server(), make_server(), make_server()
    plain.route("/robots.txt", ROBOTS)
    # Of the body read, decoded: the file as the site wrote it.
    zipped.route(
        "/robots.txt",
        gzip.compress(ROBOTS.encode()),
        headers={"Content-Encoding": "gzip"},
    )
    long = ROBOTS + "".join(f"Disallow: /p{i}\n" for i in range(100))
    cut.route("/robots.txt", long)
    crawler = await crawl(
        [server.url("/public") for server in (plain, zipped, cut)],
        {"ROBOTS_MAX_BYTES": 600},
    )
    memory = middleware(crawler).memory
    hashes = []
    for server in (plain, zipped, cut):
        entry = memory.entry(server.url("/robots.txt"))
        assert entry is not None
        hashes.append(entry.outcome.body_sha256)
    # Cut at ROBOTS_MAX_BYTES: of the bytes read up to it.
    assert hashes == [sha256(ROBOTS), sha256(ROBOTS), sha256(long.encode()[:600])]


class ItemSpider(RecordingSpider):
    """Yields one item per page, and requests the page's ``links`` (URL ->
    ``(url, dont_obey)`` pairs) with the page's meta passed on, as spiders
    often do; ``dont_obey`` adds ``dont_obey_robotstxt``."""

    def __init__(
        self, links: dict[str, list[tuple[str, bool]]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.links = links or {}

    def parse(self, response: Response) -> Iterator[Any]:  # type: ignore[override]
        super().parse(response)
        yield {"url": response.url}
        for url, dont_obey in self.links.get(response.url, []):
            meta = {
                key: value
                for key, value in response.meta.items()
                if not key.startswith("download_")
            }
            if dont_obey:
                meta["dont_obey_robotstxt"] = True
            yield Request(url, meta=meta, callback=self.parse, dont_filter=True)


async def collect(
    urls: list[str], settings: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[Crawler, dict[str, dict[str, Any]]]:
    """Crawl ``urls``: the crawler and the items the engine got, by URL."""
    crawler = make_crawler(settings, ItemSpider)
    items: dict[str, dict[str, Any]] = {}

    def scraped(item: dict[str, Any]) -> None:
        items[item["url"]] = item

    crawler.signals.connect(scraped, signal=signals.item_scraped)
    await crawler.crawl_async(urls=urls, **kwargs)
    return crawler, items


@coroutine_test
async def test_items_carry_the_record_of_what_allowed_them(server: Server) -> None:
    server.route("/robots.txt", RICH)
    server.route(
        "/public/ai",
        "<html><head><meta name=robots content=noai></head></html>",
        headers={"Content-Type": "text/html", "Content-Usage": "ai-use=n"},
    )
    urls = [server.url(path) for path in ("/public", "/public/ai", "/other")]
    crawler, items = await collect(
        [*urls, server.url("/private")], {"ROBOTS_PROVENANCE": True}
    )
    assert sorted(items) == sorted(urls)
    record = items[server.url("/public")]["robots_provenance"]
    fetched_at = record.pop("fetched_at")
    entry = middleware(crawler).memory.entry(server.url("/robots.txt"))
    assert entry is not None
    # ISO 8601 UTC, to the microsecond of the outcome's time.
    assert fetched_at == iso_time(entry.outcome.fetched_at)
    assert datetime.fromisoformat(fetched_at).tzinfo == timezone.utc
    assert record == {
        "url": server.url("/public"),
        "robots_txt": server.url("/robots.txt"),
        "outcome": "parsed",
        "http_status": 200,
        "detail": "HTTP 200",
        "sha256": sha256(RICH),
        "fallback_sha256": None,
        "reason": "rule_allow",
        "line": 4,
        "rule": "Allow: /public",
        "content_signal": {"search": "yes", "ai-train": "no"},
        "content_usage_robots_txt": {**UNKNOWN, "train-ai": False},
        "content_usage_lines": [{"line": 6, "text": "Content-Usage: train-ai=n"}],
        "user_agent": "TestBot/1.0 (+http://127.0.0.1/bot)",
        "profile": "rfc9309",
        "purposes": [],
        "content_usage_header": None,
        "content_usage": {**UNKNOWN, "train-ai": False},
        "directives": "all",
        "tdm": None,
        "licenses": [],  # robots.txt names none (meta robots_licenses)
    }
    # The page's own preferences with robots.txt's (the longest path).
    ai = items[server.url("/public/ai")]["robots_provenance"]
    assert ai["content_usage_lines"] == [
        {"line": 5, "text": "Content-Usage: /public/ai train-ai=y"}
    ]
    assert ai["content_usage_header"] == "ai-use=n"
    assert ai["content_usage"] == {**UNKNOWN, "train-ai": True, "ai-use": False}
    assert ai["directives"] == "noai"
    other = items[server.url("/other")]["robots_provenance"]
    assert (other["reason"], other["line"], other["rule"]) == (
        "default_allow",
        None,
        None,
    )
    # Plain JSON data: a feed export writes it as it is.
    assert json.loads(json.dumps(record)) == record


@coroutine_test
async def test_off_by_default(server: Server) -> None:
    server.route("/robots.txt", RICH)
    crawler, items = await collect([server.url("/public")])
    assert list(items.values()) == [{"url": server.url("/public")}]
    assert crawler.get_spider_middleware(ProvenanceMiddleware) is None


@coroutine_test
async def test_each_page_has_its_own_record_whatever_meta_it_inherits(
    make_server: Callable[..., Server],
) -> None:
    robots, missing = make_server(), make_server()
    robots.route("/robots.txt", ROBOTS)
    missing.route("/robots.txt", "", status=404)
    free, ignored = missing.url("/free"), missing.url("/ignored")
    start = robots.url("/public")
    _, items = await collect(
        [start],
        {"ROBOTS_PROVENANCE": True},
        links={start: [(free, False), (ignored, True)]},
    )
    assert sorted(items) == sorted([start, free, ignored])
    assert items[start]["robots_provenance"]["rule"] == "Allow: /public"
    # The page's meta was passed on: its evidence was not.
    record = items[free]["robots_provenance"]
    assert record["robots_txt"] == missing.url("/robots.txt")
    assert (record["outcome"], record["http_status"], record["sha256"]) == (
        "unavailable",
        404,
        None,
    )
    assert (record["reason"], record["line"], record["rule"]) == (
        "unavailable",
        None,
        None,
    )
    # Not judged by any robots.txt, and said so.
    record = items[ignored]["robots_provenance"]
    assert record["reason"] == "dont_obey_robotstxt"
    assert record["robots_txt"] == missing.url("/robots.txt")
    assert record["outcome"] is None
    assert record["rule"] is None


@pytest.mark.parametrize("store", ["sqlite", "redis"])
@coroutine_test
async def test_the_hash_comes_back_from_the_store(
    server: Server, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server.route("/robots.txt", RICH)
    settings: dict[str, Any] = {"ROBOTS_STORE": store, "ROBOTS_PROVENANCE": True}
    if store == "sqlite":
        settings["ROBOTS_STORE_URL"] = str(tmp_path / "robots.sqlite3")
    else:
        redis = request.getfixturevalue("redis_server")
        settings["ROBOTS_STORE_URL"] = redis.url
        settings["ROBOTS_STORE_PREFIX"] = request.getfixturevalue("redis_prefix")
    records = []
    for _ in range(2):
        crawler, items = await collect([server.url("/public")], settings)
        records.append(items[server.url("/public")]["robots_provenance"])
    # Fetched once: the second crawl read the outcome, hash and all, from
    # the store, and its items name the same file.
    assert server.count("/robots.txt") == 1
    assert crawler.stats is not None
    assert crawler.stats.get_value("robots/fetch_count") is None
    assert records[0] == records[1]
    assert records[1]["sha256"] == sha256(RICH)


@coroutine_test
async def test_the_report_has_one_line_per_origin_matching_the_stats(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    rules, down = make_server(), make_server()
    rules.route("/robots.txt", RICH)
    down.route("/robots.txt", "", status=503)
    urls = [rules.url(p) for p in ("/public", "/private", "/private/2", "/other")]
    crawler, items = await collect(
        [*urls, down.url("/x")], {"ROBOTS_REPORT": str(tmp_path / "r-%(name)s.jsonl")}
    )
    assert all("robots_provenance" not in item for item in items.values())
    lines = [
        json.loads(line)
        for line in (tmp_path / "r-recording.jsonl").read_text().splitlines()
    ]
    assert [line["robots_txt"] for line in lines] == sorted(
        [rules.url("/robots.txt"), down.url("/robots.txt")]
    )
    assert crawler.stats is not None
    for cause in ("rule", "unreachable"):
        assert sum(
            line["requests_dropped"].get(cause, 0) for line in lines
        ) == crawler.stats.get_value(f"robots/forbidden/{cause}")
    by_origin = {line["robots_txt"]: line for line in lines}
    first = by_origin[rules.url("/robots.txt")]
    assert first["requests_dropped"] == {"rule": 2}
    assert first["dropped_because"] == [
        {"cause": "rule", "why": "line 3: Disallow: /private", "requests": 2}
    ]
    assert first["items_kept"] == 2
    assert first["outcomes"][0]["sha256"] == sha256(RICH)
    assert by_origin[down.url("/robots.txt")]["outcomes"][0]["outcome"] == "unreachable"


@coroutine_test
async def test_the_report_counts_the_items_each_component_dropped(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    site, signals_no = make_server(), make_server()
    site.route("/robots.txt", ROBOTS)
    site.route(
        "/.well-known/tdmrep.json",
        json.dumps([{"location": "/public/reserved", "tdm-reservation": 1}]),
    )
    html = {"Content-Type": "text/html"}
    noindex = "<html><head><meta name=robots content=noindex></head></html>"
    site.route("/public/noindex", noindex, headers=html)
    site.route("/public/noindex2", noindex, headers=html)
    site.route("/public/noai", "<p>x</p>", headers={**html, "X-Robots-Tag": "noai"})
    site.route("/public/usage", "x", headers={"Content-Usage": "train-ai=n"})
    site.route("/public/tdm", "x", headers={"tdm-reservation": "1"})
    site.route("/public/free", "x")
    signals_no.route("/robots.txt", "User-agent: *\nContent-Signal: ai-train=no\n")
    paths = ("noindex", "noindex2", "noai", "usage", "tdm", "free", "reserved/1")
    urls = [site.url(f"/public/{path}") for path in paths]
    crawler, items = await collect(
        [*urls, site.url("/private"), signals_no.url("/x")],
        {
            "ROBOTS_REPORT": str(tmp_path / "report.jsonl"),
            "ROBOTS_PURPOSES": ["train-ai"],
        },
    )
    assert list(items) == [site.url("/public/free")]
    lines = {
        line["robots_txt"]: line
        for line in map(
            json.loads, (tmp_path / "report.jsonl").read_text().splitlines()
        )
    }
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    # Every item dropped is in the report, under the component's stat.
    for cause in ("directives", "usage", "tdm"):
        assert stats[f"robots/{cause}/items_dropped"] == sum(
            line["items_dropped"].get(cause, 0) for line in lines.values()
        )
    # And every request.
    for cause in ("rule", "tdm_reservation", "content_signal"):
        assert stats[f"robots/forbidden/{cause}"] == sum(
            line["requests_dropped"].get(cause, 0) for line in lines.values()
        )
    line = lines[site.url("/robots.txt")]
    assert line["items_kept"] == 1
    assert line["items_dropped"] == {"directives": 3, "tdm": 1, "usage": 1}
    assert line["items_dropped_because"] == [
        {"cause": "directives", "why": "noai", "items": 1},
        {"cause": "directives", "why": "noindex", "items": 2},
        {"cause": "tdm", "why": "tdm-reservation 1 (header)", "items": 1},
        {"cause": "usage", "why": "Content-Usage refuses train-ai", "items": 1},
    ]
    assert line["requests_dropped"] == {"rule": 1, "tdm_reservation": 1}
    assert line["dropped_because"][1] == {
        "cause": "tdm_reservation",
        "why": f"{site.url('/.well-known/tdmrep.json')} rule 1:"
        ' "location": "/public/reserved", "tdm-reservation": 1',
        "requests": 1,
    }
    other = lines[signals_no.url("/robots.txt")]
    assert other["requests_dropped"] == {"content_signal": 1}
    assert (other["items_dropped"], other["items_dropped_because"]) == ({}, [])


@pytest.mark.parametrize("damage", ["folder_removed", "path_made_a_folder"])
@coroutine_test
async def test_a_report_that_cannot_be_written_is_one_error_line(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    server.route("/robots.txt", ROBOTS)
    folder = tmp_path / "reports"
    folder.mkdir()
    path = folder / "report.jsonl"
    crawler = make_crawler({"ROBOTS_REPORT": str(path)}, ItemSpider)

    def spoil() -> None:
        # Mid-crawl, after the path was checked at start-up.
        if damage == "folder_removed":
            shutil.rmtree(folder, ignore_errors=True)
        elif not path.exists():
            (path / "kept").mkdir(parents=True)

    crawler.signals.connect(spoil, signal=signals.response_received)
    with caplog.at_level(logging.INFO):
        await crawler.crawl_async(urls=[server.url("/public")])
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["robots/report/errors"] == 1
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1, caplog.text
    message = errors[0].getMessage()
    # The path, and the OS error as the system says it.
    assert message.startswith(f"ROBOTS_REPORT {path} could not be written: ")
    errno = ENOENT if damage == "folder_removed" else EISDIR
    assert f"[Errno {errno}] {os.strerror(errno)}" in message
    assert errors[0].exc_info is None
    assert "Traceback" not in caplog.text
    # Nothing half-written left behind.
    if damage == "path_made_a_folder":
        assert sorted(p.name for p in folder.iterdir()) == ["report.jsonl"]
        assert [p.name for p in path.iterdir()] == ["kept"]
    else:
        assert not folder.exists()
