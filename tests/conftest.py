from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.crawl_helpers import Departures
from tests.support.fleet_crawl import Worker, spawn
from tests.support.redis_fleet import Fleet
from tests.support.server import Route, Server
from tests.support.utils import loopback_hosts

if TYPE_CHECKING:
    from tests.support.redis_server import RedisServer

pytest_plugins = ["tests.support.redis_server"]

# The conformance vectors (Google's and RFC 9309's; sources and licences in
# the folder's README.md).
CONFORMANCE = Path(__file__).resolve().parent / "data" / "conformance"


def load_vectors(name: str) -> list[dict[str, Any]]:
    path = CONFORMANCE / name
    if not path.exists():
        pytest.fail(f"conformance file missing: {path}")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


# Each server gets its own loopback address, so hosts (and downloader slots)
# differ between servers. 127.0.0.1 is left to anything else on the machine.
_hosts = loopback_hosts(0)


@pytest.fixture
def make_server() -> Iterator[Callable[..., Server]]:
    """Start servers on distinct 127.0.x.y addresses; all closed at the end."""
    servers: list[Server] = []

    def factory(default: Route | None = None) -> Server:
        server = Server(next(_hosts), default=default)
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.close()


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """Start ``python -m tests.support.fleet_crawl`` workers, crawling
    ``urls`` with ``settings``; those left running are killed at the end."""
    workers: list[Worker] = []

    def start(
        urls: list[str],
        settings: dict[str, Any],
        *,
        reactorless: bool = False,
        clock_offset: float = 0.0,
    ) -> Worker:
        config = {
            "urls": urls,
            "settings": settings,
            "reactorless": reactorless,
            "clock_offset": clock_offset,
        }
        name = f"worker-{len(workers)}"
        workers.append(spawn("tests.support.fleet_crawl", config, tmp_path, name))
        return workers[-1]

    yield start
    for worker in workers:
        worker.kill()


@pytest.fixture
def redis_fleet(
    tmp_path: Path, redis_server: RedisServer, redis_prefix: str
) -> Iterator[Fleet]:
    """scrapy-redis workers of this test's own (see Fleet); those still
    running are killed at the end."""
    fleet = Fleet(redis_server.url, redis_prefix, tmp_path)
    yield fleet
    fleet.kill()


@pytest.fixture
def departures(monkeypatch: pytest.MonkeyPatch) -> Departures:
    """When each request left its downloader slot (see Departures)."""
    return Departures(monkeypatch)


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    return make_server()
