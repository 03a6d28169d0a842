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
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from errno import EISDIR, ENOENT
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_rfc9309 import ProvenanceMiddleware
from scrapy_rfc9309.provenance import Ledger, iso_time
from tests.support.crawl_helpers import (
    ItemSpider,
    RecordingSpider,
    crawl,
    crawl_items,
    make_crawler,
    middleware,
)
from tests.support.redis_fleet import Fleet, worker_of
from tests.support.server import Server
from tests.support.utils import coroutine_test, store_settings
from tests.test_docs import ROOT, blocks

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


class LinkingSpider(RecordingSpider):
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
    urls: list[str],
    settings: dict[str, Any] | None = None,
    spidercls: type[LinkingSpider] = LinkingSpider,
    **kwargs: Any,
) -> tuple[Crawler, dict[str, dict[str, Any]]]:
    """Crawl ``urls``: the crawler and the items the engine got, by URL."""
    crawler = make_crawler(settings, spidercls)
    items = await crawl_items(crawler, urls=urls, **kwargs)
    return crawler, {item["url"]: item for item in items}


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
    settings = {**store_settings(store, request, tmp_path), "ROBOTS_PROVENANCE": True}
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
        "why": f"TDMRep {site.url('/.well-known/tdmrep.json')} rule 1:"
        ' "location": "/public/reserved", "tdm-reservation": 1',
        "requests": 1,
    }
    other = lines[signals_no.url("/robots.txt")]
    assert other["requests_dropped"] == {"content_signal": 1}
    assert (other["items_dropped"], other["items_dropped_because"]) == ({}, [])


#: Invalid UTF-8 (docs/reliability.md) in a Content-Signal value, a rule
#: and a License URL: the reader keeps each octet as a surrogate escape.
UNDECODABLE = (
    b"User-agent: *\n"  # 1
    b"Content-Signal: ai-train=\xe9\n"  # 2
    b"Disallow: /\xe9t\xe9\n"  # 3
    b"Allow: /ok\xff\n"  # 4
    b"License: https://example.com/licen\xe7e\n"  # 5
)


@coroutine_test
async def test_undecodable_octets_reach_a_utf8_feed_and_the_report_escaped(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.route("/robots.txt", UNDECODABLE)
    feed, report = tmp_path / "items.jsonl", tmp_path / "report.jsonl"
    settings = {
        "ROBOTS_PROVENANCE": True,
        "ROBOTS_REPORT": str(report),
        # What `scrapy startproject` writes: strict UTF-8.
        "FEEDS": {str(feed): {"format": "jsonlines"}},
        "FEED_EXPORT_ENCODING": "utf-8",
    }
    with caplog.at_level(logging.INFO):
        crawler, _ = await collect(
            [server.url("/ok%FF"), server.url("/%E9t%E9")], settings
        )
    # No error from the feed exporter or the report, and none of ours
    # (without a reactor, Scrapy warns that its aiohttp handler is new).
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r for r in warned if "experimental" not in r.getMessage()] == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("item_scraped_count") == 1
    # The item, stored: each octet as the escape a URL matches it with.
    (item,) = map(json.loads, feed.read_text(encoding="utf-8").splitlines())
    record = item["robots_provenance"]
    assert (record["line"], record["rule"]) == (4, "Allow: /ok%FF")
    assert record["content_signal"] == {"ai-train": "%E9"}
    licenses = [{"url": "https://example.com/licen%E7e", "source": "robots.txt"}]
    assert record["licenses"] == item["robots_licenses"] == licenses
    # The report, written whole, says the same.
    (line,) = map(json.loads, report.read_text(encoding="utf-8").splitlines())
    assert line["outcomes"][0]["content_signal"] == {"ai-train": "%E9"}
    assert line["dropped_because"] == [
        {"cause": "rule", "why": "line 3: Disallow: /%E9t%E9", "requests": 1}
    ]
    assert line["items_allowed_by"] == [
        {"reason": "rule_allow", "line": 4, "rule": "Allow: /ok%FF", "items": 1}
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "items.jsonl",
        "report.jsonl",
    ]


def _the_report_error(crawler: Crawler, caplog: pytest.LogCaptureFixture) -> str:
    """The one ERROR line of a crawl whose report could not be written (no
    traceback), which finished all the same and counted it."""
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["robots/report/errors"] == 1
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1, caplog.text
    assert errors[0].exc_info is None
    assert "Traceback" not in caplog.text
    return errors[0].getMessage()


@pytest.mark.parametrize("damage", ["folder_removed", "path_made_a_folder"])
@coroutine_test
async def test_a_report_that_cannot_be_written_is_one_error_line(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    server.route("/robots.txt", ROBOTS)
    folder = tmp_path / "reports"
    folder.mkdir()
    path = folder / "report.jsonl"
    crawler = make_crawler({"ROBOTS_REPORT": str(path)}, LinkingSpider)

    def spoil() -> None:
        # Mid-crawl, after the path was checked at start-up.
        if damage == "folder_removed":
            shutil.rmtree(folder, ignore_errors=True)
        elif not path.exists():
            (path / "kept").mkdir(parents=True)

    crawler.signals.connect(spoil, signal=signals.response_received)
    with caplog.at_level(logging.INFO):
        await crawler.crawl_async(urls=[server.url("/public")])
    message = _the_report_error(crawler, caplog)
    # The path, and the OS error as the system says it.
    assert message.startswith(f"ROBOTS_REPORT {path} could not be written: ")
    errno = ENOENT if damage == "folder_removed" else EISDIR
    assert f"[Errno {errno}] {os.strerror(errno)}" in message
    # Nothing half-written left behind.
    if damage == "path_made_a_folder":
        assert sorted(p.name for p in folder.iterdir()) == ["report.jsonl"]
        assert [p.name for p in path.iterdir()] == ["kept"]
    else:
        assert not folder.exists()


@pytest.mark.parametrize(
    ("value", "error"),
    [("\udce9", "UnicodeEncodeError"), (object(), "TypeError")],
    ids=["not_utf8", "not_json"],
)
@coroutine_test
async def test_a_report_value_that_cannot_be_written_is_one_error_line(
    server: Server,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    value: object,
    error: str,
) -> None:
    # Whatever the lines come to hold that UTF-8 or JSON cannot write.
    monkeypatch.setattr(Ledger, "lines", lambda self: [{"robots_txt": value}])
    server.route("/robots.txt", ROBOTS)
    path = tmp_path / "report.jsonl"
    crawler = make_crawler({"ROBOTS_REPORT": str(path)}, LinkingSpider)
    with caplog.at_level(logging.INFO):
        await crawler.crawl_async(urls=[server.url("/public")])
    message = _the_report_error(crawler, caplog)
    assert message.startswith(f"ROBOTS_REPORT {path} could not be written: {error}: ")
    # Nothing half-written left behind.
    assert list(tmp_path.iterdir()) == []


#: A fleet site's pages: each links to the others, to a page robots.txt
#: disallows and to one its TDMRep file reserves.
FLEET_PAGES = ("/", "/a", "/b")
FLEET_LINKS = "".join(
    f'<a href="{path}">{path}</a>' for path in ("/a", "/b", "/private", "/reserved")
)


WORKERS = 3


class Gate:
    """Holds the sites' pages until ``workers`` workers have asked for one,
    so that the fleet's work is shared rather than done by the worker that
    started first; opens for good after ``timeout`` seconds whatever came."""

    def __init__(self, workers: int, timeout: float = 10) -> None:
        self.workers = workers
        self.timeout = timeout
        self.seen: set[int] = set()
        self.lock = threading.Lock()
        self.open = threading.Event()

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.seen.add(worker_of(handler.headers["User-Agent"]))
            if len(self.seen) >= self.workers:
                self.open.set()
        if not self.open.wait(self.timeout):
            self.open.set()
        body = FLEET_LINKS.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def test_each_worker_of_a_fleet_reports_and_together_they_account_for_every_drop(
    make_server: Callable[..., Server], redis_fleet: Fleet, tmp_path: Path
) -> None:
    # Two workers at least: the one that takes the refusing site's start
    # URL may find nothing left and close.
    gate = Gate(2)
    sites = [make_server() for _ in range(3)]
    for site in sites:
        site.route("/robots.txt", ROBOTS)
        site.route(
            "/.well-known/tdmrep.json",
            json.dumps([{"location": "/reserved", "tdm-reservation": 1}]),
        )
        for path in FLEET_PAGES:
            site.route(path, handler=gate)
    # Refuses the crawl's purpose: its every request is dropped.
    refusing = make_server()
    refusing.route("/robots.txt", "User-agent: *\nContent-Signal: ai-train=no\n")
    start_urls = [server.url("/") for server in (*sites, refusing)]
    reports = tmp_path / "reports"
    reports.mkdir()
    settings = {
        "ROBOTS_PURPOSES": ["train-ai"],
        "ROBOTS_REPORT": str(reports / "report-%(pid)s.jsonl"),
    }
    # One worker without a Twisted reactor.
    workers = redis_fleet.start(start_urls, "redis", settings, workers=WORKERS)
    stats = [worker.wait(timeout=90) for worker in workers]
    for worker_stats in stats:
        assert worker_stats["finish_reason"] == "finished"
        assert worker_stats.get("log_count/ERROR", 0) == 0
    # Each worker its own file.
    assert sorted(path.name for path in reports.iterdir()) == sorted(
        f"report-{worker.process.pid}.jsonl" for worker in workers
    )
    lines = [
        json.loads(line)
        for path in reports.iterdir()
        for line in path.read_text().splitlines()
    ]
    # Together they account for every request the fleet dropped: each link
    # was queued once (the shared dupefilter), so each site's /private and
    # /reserved, and the refusing site's start URL.
    expected = {"rule": 3, "tdm_reservation": 3, "content_signal": 1}
    for cause, count in expected.items():
        assert sum(s.get(f"robots/forbidden/{cause}", 0) for s in stats) == count
        assert sum(line["requests_dropped"].get(cause, 0) for line in lines) == count
    assert sum(s["robots/forbidden"] for s in stats if "robots/forbidden" in s) == 7
    # Fetched once for the fleet, read from the store by the other workers:
    # one hash for each origin, whichever file names it.
    assert {line["robots_txt"] for line in lines} == {
        server.url("/robots.txt") for server in (*sites, refusing)
    }
    bodies = {server.url("/robots.txt"): ROBOTS for server in sites}
    bodies[refusing.url("/robots.txt")] = "User-agent: *\nContent-Signal: ai-train=no\n"
    # Each file names the hash of the body the site served, whichever worker
    # fetched it. (Whether some origin lands in two files depends on how the
    # shared queue hands out the pages, so it is not asserted: that the
    # store gives the hash back as it was put is the store contract's
    # round_trips check, scrapy_rfc9309.stores.contract.)
    for line in lines:
        assert {outcome["sha256"] for outcome in line["outcomes"]} == {
            sha256(bodies[line["robots_txt"]])
        }
    for server in (*sites, refusing):
        assert server.count("/robots.txt") == 1


class ExampleSpider(LinkingSpider):
    name = "example"


@coroutine_test
async def test_the_documented_examples_are_what_a_crawl_gives(
    server: Server, tmp_path: Path
) -> None:
    """docs/evidence.md's robots.txt and TDMRep file, served and crawled as
    the page says, give its record and its report line (fetch time masked)."""
    page = blocks(ROOT / "docs" / "evidence.md")
    (robots,) = [block.code for block in page if block.language == "text"]
    tdm_file, record, line = [
        json.loads(block.code) for block in page if block.language == "json"
    ]
    server.route("/robots.txt", robots)
    server.route("/.well-known/tdmrep.json", json.dumps(tdm_file))
    html = {"Content-Type": "text/html"}
    server.route(
        "/articles/1",
        "<p>1</p>",
        headers={
            **html,
            "Content-Usage": "search=y",
            "X-Robots-Tag": "noarchive",
            "Link": '<https://example.com/license.xml>; rel="license";'
            ' type="application/rsl+xml"',
        },
    )
    server.route("/articles/2", "<p>2</p>", headers={**html, "X-Robots-Tag": "noai"})
    paths = ("/articles/1", "/articles/2", "/private/x", "/articles/reserved/x")
    _, items = await collect(
        [server.url(path) for path in paths],
        {
            "ROBOTS_PURPOSES": ["train-ai"],
            "ROBOTS_PROVENANCE": True,
            "ROBOTS_REPORT": str(tmp_path / "report.jsonl"),
            "USER_AGENT": "ExampleBot/1.0 (+https://example.com/bot)",
        },
        ExampleSpider,
    )

    def as_documented(text: str) -> Any:
        found = json.loads(text.replace(server.origin, "https://example.com"))
        assert isinstance(found, dict)
        return found

    assert list(items) == [server.url("/articles/1")]
    got = as_documented(json.dumps(items[server.url("/articles/1")]))
    got = got["robots_provenance"]
    fetched_at = got.pop("fetched_at")
    assert got == {key: value for key, value in record.items() if key != "fetched_at"}
    (report,) = (tmp_path / "report.jsonl").read_text().splitlines()
    got = as_documented(report)
    # The outcome the item's record names, fetched once.
    assert got["outcomes"][0].pop("fetched_at") == fetched_at
    del line["outcomes"][0]["fetched_at"]
    assert got == line
    # What the page says of the hash.
    assert record["sha256"] == sha256(robots)


@coroutine_test
async def test_a_report_without_provenance_middleware_is_warned_of(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The report is written by RobotsMiddleware's ledger, the items kept
    counted by ProvenanceMiddleware: without it the report says none were
    kept, which is said at start-up."""
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    report = tmp_path / "report.jsonl"
    settings = {
        "ROBOTS_REPORT": str(report),
        "SPIDER_MIDDLEWARES": {"scrapy_rfc9309.ProvenanceMiddleware": None},
    }
    with caplog.at_level(logging.WARNING, logger="scrapy_rfc9309"):
        crawler = make_crawler(settings, ItemSpider)
        items = await crawl_items(crawler, urls=[server.url("/a"), server.url("/b")])
    assert len(items) == 2
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("scrapy_rfc9309")
    ]
    assert len(warnings) == 1
    assert "ProvenanceMiddleware is not enabled in SPIDER_MIDDLEWARES" in warnings[0]


@coroutine_test
async def test_a_record_without_robots_middleware_says_not_judged(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """RobotsMiddleware taken out of the chain by hand: no request is judged,
    and the records say so, rather than claim a dont_obey_robotstxt meta the
    request did not carry."""
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    settings = {
        "ROBOTS_PROVENANCE": True,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_rfc9309.RobotsMiddleware": None},
    }
    with caplog.at_level(logging.WARNING, logger="scrapy_rfc9309"):
        crawler = make_crawler(settings, ItemSpider)
        items = await crawl_items(crawler, urls=[server.url("/private/x")])
    (item,) = items
    assert item["robots_provenance"]["reason"] == "not_judged"
    said = "RobotsMiddleware is not enabled in DOWNLOADER_MIDDLEWARES"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([warning for warning in warnings if said in warning]) == 1
