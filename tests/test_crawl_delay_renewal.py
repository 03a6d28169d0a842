"""The package's own requests under a Crawl-delay: a robots.txt fetched
again when its outcome expires (``ROBOTS_CACHE_LIFETIME``) and the TDMRep
file take their turns like pages, and a renewed Crawl-delay applies from
the next request on. Measured at the server: every gap, robots.txt and
``tdmrep.json`` included, is at least the delay."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.politeness import Politeness
from tests.support.crawl_helpers import RecordingSpider, crawl, crawl_delay_robots
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test

DELAY = 0.3
#: How much shorter a gap measured at the server may be (the trip from the
#: slot to the server varies a little).
TOLERANCE = 0.02
PACING = "scrapy_rfc9309.politeness.PacingMiddleware"
TDM = "/.well-known/tdmrep.json"


class Chain(RecordingSpider):
    """One page at a time, each asked for once the one before came back:
    the outcome expires between two of them."""

    async def start(self) -> AsyncIterator[Any]:
        yield Request(self.urls[0], callback=self.step, cb_kwargs={"i": 0})

    def step(self, response: Response, i: int) -> Iterator[Request]:
        self.parse(response)
        if i + 1 < len(self.urls):
            yield Request(self.urls[i + 1], callback=self.step, cb_kwargs={"i": i + 1})


def _gaps(server: Server) -> list[tuple[str, str, float]]:
    hits = sorted(server.hits, key=lambda hit: hit.time)
    return [(a.path, b.path, b.time - a.time) for a, b in pairwise(hits)]


def _settings(scope: str, tmp_path: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {"ROBOTS_CACHE_LIFETIME": 0.8}
    if scope == "fleet":
        settings["ROBOTS_STORE"] = "sqlite"
        settings["ROBOTS_STORE_URL"] = str(tmp_path / "robots.sqlite3")
    if scope == "robots-middleware":
        settings["DOWNLOADER_MIDDLEWARES"] = {PACING: None}
    return settings


@pytest.mark.parametrize("scope", ["process", "fleet", "robots-middleware"])
@coroutine_test
async def test_a_renewed_robots_txt_takes_its_turn(
    server: Server, tmp_path: Path, scope: str
) -> None:
    """robots.txt, fetched again while the crawl goes on, comes at least
    the delay after the page before and before the page after: it left a
    few ms after the page before."""
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    urls = [server.url(f"/p{i}") for i in range(6)]
    crawler = await crawl(urls, _settings(scope, tmp_path), spidercls=Chain)
    assert len(crawler.spider.crawled) == 6  # type: ignore[union-attr]
    assert server.count("/robots.txt") >= 2
    gaps = _gaps(server)
    assert min(gap for *_, gap in gaps) >= DELAY - TOLERANCE, gaps


@pytest.mark.parametrize("scope", ["process", "fleet"])
@coroutine_test
async def test_a_renewed_longer_crawl_delay_applies_to_the_next_request(
    server: Server, tmp_path: Path, scope: str
) -> None:
    """The first robots.txt says 0.2 s, the next ones 0.6 s: from the
    second robots.txt on, every gap is at least 0.6 s. The pages kept the
    old delay."""
    answered: list[bool] = []

    def robots(handler: BaseHTTPRequestHandler) -> None:
        body = crawl_delay_robots(0.6 if answered else 0.2).encode()
        answered.append(True)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server.routes["/robots.txt"] = Route(handler=robots)
    urls = [server.url(f"/p{i}") for i in range(7)]
    crawler = await crawl(urls, _settings(scope, tmp_path), spidercls=Chain)
    assert len(crawler.spider.crawled) == 7  # type: ignore[union-attr]
    gaps = _gaps(server)
    second = [i for i, (before, *_) in enumerate(gaps) if before == "/robots.txt"][1]
    assert min(gap for *_, gap in gaps[second:]) >= 0.6 - TOLERANCE, gaps


@pytest.mark.parametrize("renew", [False, True])
@coroutine_test
async def test_the_tdmrep_file_takes_its_turn(server: Server, renew: bool) -> None:
    """With ROBOTS_PURPOSES, tdmrep.json comes at least the delay after
    robots.txt (it left 3-4 ms after), and so do both when renewed."""
    server.route("/robots.txt", crawl_delay_robots(DELAY))
    server.route(TDM, '[{"location": "/private/*", "tdm-reservation": 1}]')
    settings: dict[str, Any] = {"ROBOTS_PURPOSES": ["train-ai"]}
    if renew:
        settings["ROBOTS_CACHE_LIFETIME"] = 0.8
    urls = [server.url(f"/p{i}") for i in range(5)]
    crawler = await crawl(urls, settings, spidercls=Chain)
    assert len(crawler.spider.crawled) == 5  # type: ignore[union-attr]
    assert server.count(TDM) >= (2 if renew else 1)
    gaps = _gaps(server)
    assert min(gap for *_, gap in gaps) >= DELAY - TOLERANCE, gaps


class _Turns:
    """A fleet's turns: another worker holds the origin's next 0.2 s."""

    keeps_extends = keeps_pauses = False

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def reserve(self, origin: str, interval: float, limit: float) -> float:
        self.asked.append(interval)
        return 0.2 if len(self.asked) == 1 else 0.0


@coroutine_test
async def test_a_first_robots_txt_waits_for_the_fleet_turn() -> None:
    """In the fleet scope, the robots.txt fetched before its Crawl-delay was
    known counts as a turn: when another worker holds the next one, it
    waits for it and takes it. The wait was dropped: no turn was taken."""
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_rfc9309.Addon": 100}})
    crawler.spider = Spider("x")
    crawler.engine = SimpleNamespace(running=True, _slot=None)  # type: ignore[assignment]
    turns = _Turns()
    politeness = Politeness(crawler, turns)  # type: ignore[arg-type]
    await politeness.turn_taken("http://a.example/robots.txt", DELAY)
    assert turns.asked == [DELAY, DELAY]
