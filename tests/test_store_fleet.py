"""Real crawls sharing a store: separate OS processes over one Redis or one
SQLite file, a crawl resumed in its JOBDIR, a worker killed while it holds a
lease, and Redis lost in the middle of a crawl.

Each worker is ``python -m tests.support.fleet_crawl`` (a real Scrapy crawl with the
add-on); robots.txt fetches are counted at the servers.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import redis
from scrapy.utils.test import get_crawler

from tests.support.fleet_crawl import FleetSpider
from tests.support.redis_server import RedisServer
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test

ROBOTS = b"User-agent: *\nDisallow: /private\n"
ORIGINS = 20
# Every worker crawls these pages of every origin; /private is disallowed.
PAGES = ("/a", "/b", "/private")


def robots_servers(
    make_server: Callable[..., Server], count: int = ORIGINS, delay: float = 0.0
) -> list[Server]:
    servers = []
    for _ in range(count):
        server = make_server()
        server.route("/robots.txt", ROBOTS, delay=delay)
        servers.append(server)
    return servers


def urls(servers: list[Server], pages: tuple[str, ...] = PAGES) -> list[str]:
    return [server.url(page) for server in servers for page in pages]


def robots_fetches(servers: list[Server]) -> int:
    return sum(server.count("/robots.txt") for server in servers)


def redis_settings(url: str, prefix: str) -> dict[str, Any]:
    return {
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": url,
        "ROBOTS_STORE_PREFIX": prefix,
    }


def assert_pages_crawled(
    stats: dict[str, Any], servers: list[Server], times: int = 1
) -> None:
    """Every allowed page fetched ``times`` in all, every /private dropped."""
    for server in servers:
        assert server.count("/a") == times
        assert server.count("/b") == times
        assert server.count("/private") == 0
    assert stats["finish_reason"] == "finished"
    assert stats["robots/forbidden"] == stats["robots/forbidden/rule"] == len(servers)
    assert "robots/store/errors" not in stats


def test_two_workers_sharing_redis_fetch_each_robots_txt_once(
    make_server: Callable[..., Server],
    start_worker: Any,
    redis_server: RedisServer,
    redis_prefix: str,
) -> None:
    # A slow robots.txt keeps the fetches of one worker in flight while the
    # other asks for the same origins, so the second one waits on the lease.
    servers = robots_servers(make_server, delay=1.0)
    settings = redis_settings(redis_server.url, redis_prefix)
    workers = [
        start_worker(urls(servers), settings),
        start_worker(urls(servers), settings, reactorless=True),
    ]
    stats = [worker.wait() for worker in workers]
    assert robots_fetches(servers) == ORIGINS
    assert sum(s.get("robots/fetch_count", 0) for s in stats) == ORIGINS
    for server in servers:
        assert server.count("/a") == server.count("/b") == 2
        assert server.count("/private") == 0
    for s in stats:
        assert s["finish_reason"] == "finished"
        assert s["robots/forbidden/rule"] == ORIGINS
        assert s["robots/outcome/parsed"] == ORIGINS
        assert "robots/store/errors" not in s
    client = redis.Redis.from_url(redis_server.url)
    assert len(list(client.scan_iter(match=f"{redis_prefix}outcome:*"))) == ORIGINS
    assert not list(client.scan_iter(match=f"{redis_prefix}lease:*"))
    client.close()


def test_racing_workers_fetch_each_robots_txt_once(
    make_server: Callable[..., Server],
    start_worker: Any,
    redis_server: RedisServer,
    redis_prefix: str,
) -> None:
    """Fast robots.txt answers and four workers: a lease can be freed between
    a worker's lookup and its acquire, and the outcome it missed must then be
    found, not fetched again."""
    servers = robots_servers(make_server, count=2 * ORIGINS)
    settings = redis_settings(redis_server.url, redis_prefix)
    workers = [
        start_worker(urls(servers), settings, reactorless=bool(i % 2)) for i in range(4)
    ]
    stats = [worker.wait() for worker in workers]
    assert robots_fetches(servers) == 2 * ORIGINS
    assert sum(s.get("robots/fetch_count", 0) for s in stats) == 2 * ORIGINS
    for s in stats:
        assert s["robots/forbidden/rule"] == 2 * ORIGINS


def test_two_workers_sharing_a_sqlite_file_fetch_each_robots_txt_once(
    make_server: Callable[..., Server], start_worker: Any, tmp_path: Path
) -> None:
    servers = robots_servers(make_server, delay=1.0)
    settings = {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": str(tmp_path / "r.db")}
    workers = [
        start_worker(urls(servers), settings),
        start_worker(urls(servers), settings, reactorless=True),
    ]
    stats = [worker.wait() for worker in workers]
    assert robots_fetches(servers) == ORIGINS
    assert sum(s.get("robots/fetch_count", 0) for s in stats) == ORIGINS
    for s in stats:
        assert s["finish_reason"] == "finished"
        assert s["robots/forbidden/rule"] == ORIGINS
        assert "robots/store/errors" not in s


def test_resumed_crawl_in_jobdir_fetches_no_robots_txt(
    make_server: Callable[..., Server], start_worker: Any, tmp_path: Path
) -> None:
    servers = robots_servers(make_server)
    settings = {"ROBOTS_STORE": "sqlite", "JOBDIR": str(tmp_path / "job")}
    first = start_worker(urls(servers, ("/a",)), settings).wait()
    assert first["robots/fetch_count"] == robots_fetches(servers) == ORIGINS
    assert (tmp_path / "job" / "robots.sqlite3").exists()

    second = start_worker(urls(servers, ("/b", "/private")), settings).wait()
    assert robots_fetches(servers) == ORIGINS
    assert "robots/fetch_count" not in second
    assert_pages_crawled(second, servers)


def test_expired_outcomes_are_fetched_again(
    make_server: Callable[..., Server], start_worker: Any, tmp_path: Path
) -> None:
    servers = robots_servers(make_server)
    lifetime = 3600
    settings = {
        "ROBOTS_STORE": "sqlite",
        "JOBDIR": str(tmp_path / "job"),
        "ROBOTS_CACHE_LIFETIME": lifetime,
    }
    start_worker(urls(servers, ("/a",)), settings).wait()
    assert robots_fetches(servers) == ORIGINS
    # The next run comes a lifetime and a second later, by its clock: no
    # waiting, and no first run slow enough to see its own outcomes expire.
    second = start_worker(
        urls(servers, ("/b", "/private")), settings, clock_offset=lifetime + 1
    ).wait()
    assert second["robots/fetch_count"] == ORIGINS
    assert robots_fetches(servers) == 2 * ORIGINS
    assert_pages_crawled(second, servers)


def test_a_lease_outlasts_the_retries_of_a_robots_txt_that_times_out(
    make_server: Callable[..., Server],
    start_worker: Any,
    redis_server: RedisServer,
    redis_prefix: str,
) -> None:
    # Every try of robots.txt times out: three tries (RETRY_TIMES 2) of a
    # second each. A lease of twice DOWNLOAD_TIMEOUT ran out during the
    # holder's third try, and the waiting worker tried robots.txt three
    # times as well: the slow site was asked six times, not three.
    server = make_server()
    server.route("/robots.txt", ROBOTS, delay=3)
    settings = {
        **redis_settings(redis_server.url, redis_prefix),
        "DOWNLOAD_TIMEOUT": 1,
        "RETRY_ENABLED": True,
        "RETRY_TIMES": 2,
    }
    workers = [start_worker(urls([server]), settings) for _ in range(2)]
    stats = [worker.wait(timeout=60) for worker in workers]
    assert server.count("/robots.txt") == 3
    assert sum(s.get("robots/fetch_count", 0) for s in stats) == 1
    for s in stats:
        assert s["robots/outcome/unreachable"] == 1
        assert s["robots/forbidden/unreachable"] == len(PAGES)
    assert server.count("/a") == server.count("/private") == 0


def test_a_fetch_longer_than_its_lease_is_said(
    make_server: Callable[..., Server], start_worker: Any, tmp_path: Path
) -> None:
    # Five redirects (RFC 9309's limit, ROBOTS_MAX_REDIRECTS) of 0.5 s each:
    # the fetch takes 2.5 s, its lease (twice a DOWNLOAD_TIMEOUT of 1 s, no
    # retries) 2 s. Another worker may have taken the lease meanwhile and
    # fetched too: the holder says so. Each hop answers half a second within
    # its timeout: room for a busy machine's slower trips (with hops of
    # 0.8 s, a trip 0.25 s slower timed a hop out, robots.txt unreachable).
    server = make_server()
    for hop in range(5):
        server.route(
            f"/robots{hop or ''}.txt",
            status=301,
            headers={"Location": server.url(f"/robots{hop + 1}.txt")},
            delay=0.5,
        )
    server.route("/robots5.txt", ROBOTS)
    settings = {
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": str(tmp_path / "r.db"),
        "DOWNLOAD_TIMEOUT": 1,
        "RETRY_ENABLED": False,
    }
    (stats,) = [start_worker(urls([server]), settings).wait(timeout=60)]
    assert stats["robots/outcome/parsed"] == 1
    assert stats["robots/store/leases_outlived"] == 1
    assert server.count("/a") == 1


def test_killed_lease_holder_does_not_stall_the_fleet(
    make_server: Callable[..., Server],
    start_worker: Any,
    redis_server: RedisServer,
    redis_prefix: str,
) -> None:
    hung = threading.Event()
    release = threading.Event()

    def robots(handler: BaseHTTPRequestHandler) -> None:
        # The first fetch never answers (its worker is killed meanwhile); the
        # next one, by the surviving worker, answers at once.
        if not hung.is_set():
            hung.set()
            release.wait(60)
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(ROBOTS)))
        handler.end_headers()
        handler.wfile.write(ROBOTS)

    server = make_server()
    server.routes["/robots.txt"] = Route(handler=robots)
    # DOWNLOAD_TIMEOUT sets the lease: held at most twice as long, 8 s.
    settings = {**redis_settings(redis_server.url, redis_prefix), "DOWNLOAD_TIMEOUT": 4}
    try:
        doomed = start_worker(urls([server]), settings)
        assert hung.wait(60), doomed.log()
        os.kill(doomed.process.pid, signal.SIGKILL)
        doomed.process.wait(10)
        client = redis.Redis.from_url(redis_server.url)
        lease = client.pttl(f"{redis_prefix}lease:{server.origin}/robots.txt")
        client.close()
        assert 0 < lease <= 8000  # still held by the dead worker

        stats = start_worker(urls([server]), settings).wait(timeout=60)
    finally:
        release.set()
    assert server.count("/robots.txt") == 2
    assert stats["robots/fetch_count"] == 1
    assert_pages_crawled(stats, [server])


@coroutine_test
async def test_redis_lost_mid_crawl_degrades_and_finishes(
    make_server: Callable[..., Server],
    make_redis_server: Callable[[], RedisServer],
) -> None:
    store = make_redis_server()
    fetched = 0
    lock = threading.Lock()

    def robots(handler: BaseHTTPRequestHandler) -> None:
        nonlocal fetched
        with lock:
            fetched += 1
            if fetched == ORIGINS // 4:
                store.stop()
        time.sleep(0.05)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(ROBOTS)))
        handler.end_headers()
        handler.wfile.write(ROBOTS)

    servers = [make_server() for _ in range(ORIGINS)]
    for server in servers:
        server.routes["/robots.txt"] = Route(handler=robots)
    crawler = get_crawler(
        FleetSpider,
        {
            **redis_settings(store.url, "lost:"),
            "ADDONS": {"scrapy_rfc9309.Addon": 100},
            "RETRY_ENABLED": False,
            "CONCURRENT_REQUESTS": 8,
            "LOG_LEVEL": "INFO",
        },
    )
    await crawler.crawl_async(urls=urls(servers))
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert not store.running
    assert stats["robots/store/errors"] >= 1
    assert robots_fetches(servers) == stats["robots/fetch_count"] == ORIGINS
    # Every request accounted for: each allowed page fetched once, each
    # disallowed one dropped, nothing lost on the way.
    for server in servers:
        assert server.count("/a") == server.count("/b") == 1
        assert server.count("/private") == 0
    assert stats["robots/forbidden/rule"] == ORIGINS
    assert stats["finish_reason"] == "finished"
    assert stats.get("log_count/ERROR", 0) == 0
