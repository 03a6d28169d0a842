"""A scrapy-redis fleet that looks like one polite crawler.

Three worker processes (``python -m tests.support.redis_fleet``: a ``RedisSpider``
on scrapy-redis's scheduler and dupefilter, ``SCHEDULER_PERSIST = True``)
crawl loopback origins whose pages all link to each other, with the outcome
store in Redis or in one SQLite file they share.  Everything is checked at
the servers: one robots.txt fetch per origin for the fleet, no disallowed
page fetched, every page fetched once, the work spread over the workers,
and every request to an origin at least its Crawl-delay after the one
before, whichever worker sent it.

The only tolerance is for timer granularity (:data:`TOLERANCE`): the gap
between two requests is measured at the server, so it also holds the
difference between their trips through the event loop and the loopback
network.  A worker's first download, which also sets up its HTTP client,
goes to a warm-up server (see ``FleetRedisSpider``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import redis

from tests.support.fleet_crawl import Worker
from tests.support.redis_fleet import QUEUE_KEY, SPIDER, Fleet, worker_of
from tests.support.redis_server import RedisServer
from tests.support.server import Server

TOLERANCE = 0.02
WORKERS = 3
#: Pages of each origin besides its index ``/``; every page links to all of
#: them and to /private, which robots.txt disallows.
PAGES = tuple(f"/p{i}" for i in range(4))
#: The origins' Crawl-delay lines: ``None`` for an origin without one, and 60
#: clamped to ROBOTS_CRAWL_DELAY_MAX by every worker alike.
CRAWL_DELAYS = (0.3, 0.4, 60, None)
DELAY_MAX = 0.5

MakeServer = Callable[..., Server]


def page(links: tuple[str, ...]) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><body>{anchors}</body></html>".encode()


def site(make_server: MakeServer, crawl_delay: float | None) -> Server:
    server = make_server()
    robots = "User-agent: *\nDisallow: /private\n"
    if crawl_delay is not None:
        robots += f"Crawl-delay: {crawl_delay}\n"
    server.route("/robots.txt", robots)
    html = {"Content-Type": "text/html"}
    # The index is a start URL (scrapy-redis sends those unfiltered), so no
    # page links back to it.
    server.route("/", page((*PAGES, "/private")), headers=html)
    for path in PAGES:
        server.route(path, page((*PAGES, "/private")), headers=html)
    return server


def effective_delay(crawl_delay: float | None) -> float:
    return 0.0 if crawl_delay is None else min(crawl_delay, DELAY_MAX)


@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_a_fleet_keeps_each_crawl_delay_across_its_workers(
    make_server: MakeServer, redis_fleet: Fleet, store: str
) -> None:
    sites = [site(make_server, crawl_delay) for crawl_delay in CRAWL_DELAYS]
    warmup = make_server()
    settings: dict[str, Any] = {"ROBOTS_CRAWL_DELAY_MAX": DELAY_MAX}
    start_urls = [s.url("/") for s in sites]
    stats = redis_fleet.run(start_urls, store, settings, warmup.url("/"), WORKERS)

    for s in stats:
        assert s["finish_reason"] == "finished"
        assert "robots/store/errors" not in s
        assert s.get("log_count/ERROR", 0) == 0
    per_worker = [0] * WORKERS
    for server, crawl_delay in zip(sites, CRAWL_DELAYS, strict=True):
        # One robots.txt fetch for the fleet, every page once, nothing
        # disallowed.
        assert server.count("/robots.txt") == 1
        assert server.count("/private") == 0
        for path in ("/", *PAGES):
            assert server.count(path) == 1, (path, server.hits)
        for hit in server.hits:
            per_worker[worker_of(hit.headers["User-Agent"])] += 1
        delay = effective_delay(crawl_delay)
        if delay:
            assert min(server.gaps()) >= delay - TOLERANCE, (crawl_delay, server.gaps())
    # The work was shared: every worker fetched pages.
    assert all(per_worker), per_worker
    assert sum(s.get("robots/fetch_count", 0) for s in stats) == len(sites)
    assert sum(s.get("robots/forbidden/rule", 0) for s in stats) >= len(sites)
    # A turn for each request to an origin with a Crawl-delay (its pages and
    # its robots.txt; one more for each turn a stalled worker missed), none
    # for the origin without one.
    for server, crawl_delay in zip(sites, CRAWL_DELAYS, strict=True):
        key = f"fleet/store/reserve/{server.url('/robots.txt')}"
        turns = sum(s.get(key, 0) for s in stats)
        if crawl_delay is None:
            assert turns == 0
        else:
            assert turns >= len(server.hits)


def test_a_worker_killed_waiting_for_its_turn_leaves_no_lasting_turn(
    make_server: MakeServer,
    start_worker: Callable[..., Worker],
    redis_server: RedisServer,
    redis_prefix: str,
) -> None:
    delay = 1.0
    second_page = threading.Event()
    server = site(make_server, delay)
    server.route("/p1", handler=lambda handler: _page_seen(handler, second_page))
    settings = {
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": redis_server.url,
        "ROBOTS_STORE_PREFIX": redis_prefix,
    }
    urls = [server.url(path) for path in ("/", "/p1", *PAGES[1:])]
    worker = start_worker(urls, settings)
    try:
        assert second_page.wait(60), worker.log()
        # Killed with its next request waiting for its turn.
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(10)
    finally:
        worker.kill()
    client = redis.Redis.from_url(redis_server.url)
    key = f"{redis_prefix}turn:{server.url('/robots.txt')}"
    # The turns it held end at most two delays on: the one it waited for,
    # and the one after.
    ttl = client.pttl(key)
    assert 0 < ttl <= 2000 * delay
    time.sleep(ttl / 1000 + 0.05)
    assert not client.exists(key)
    client.close()


def _page_seen(handler: BaseHTTPRequestHandler, seen: threading.Event) -> None:
    seen.set()
    body = page(())
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_a_worker_closing_puts_its_waiting_requests_back_in_the_fleet_queue(
    make_server: MakeServer, redis_fleet: Fleet
) -> None:
    # A worker closed (CLOSESPIDER_TIMEOUT) while its request waits for a
    # Crawl-delay of 20 s: the request is back in the fleet's queue for the
    # others (SCHEDULER_PERSIST), not lost with the worker.
    server = site(make_server, 20)
    settings = {"CLOSESPIDER_TIMEOUT": 2, "ROBOTS_CRAWL_DELAY_MAX": 30}
    (stats,) = redis_fleet.run([server.url("/")], "redis", settings, workers=1)
    assert server.count("/") == 0
    assert stats["robots/cancelled"] == 1
    assert stats["robots/cancelled/requeued"] == 1
    client = redis.Redis.from_url(redis_fleet.redis_url)
    queued = client.zrange(redis_fleet.prefix + QUEUE_KEY % {"spider": SPIDER}, 0, -1)
    client.close()
    assert len(queued) == 1
