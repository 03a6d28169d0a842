"""One worker of a crawl fleet, run as its own OS process by the store tests.

    python -m tests.support.fleet_crawl CONFIG_JSON

:func:`spawn` starts a worker of this module or of another
(``tests.support.redis_fleet``).

``CONFIG_JSON`` holds ``urls`` (the pages to crawl), ``settings`` (added to
the add-on's), ``stats`` (a file to write the final stats to, as JSON) and
optionally ``reactorless`` (run without a Twisted reactor) and
``clock_offset`` (seconds this worker's robots.txt clock runs ahead, as if
that much time had passed since the workers before it).  The crawl uses
the package's add-on, so the worker reads and writes robots.txt outcomes
through whatever ``ROBOTS_STORE`` the settings name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider

try:
    from scrapy.crawler import AsyncCrawlerProcess
except ImportError:  # Scrapy 2.13
    from scrapy.crawler import CrawlerProcess as AsyncCrawlerProcess
from scrapy.http import Response

from scrapy_rfc9309._compat import spider_argument
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.stores.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT = 120


@dataclass
class Worker:
    """A worker process; its final stats are written to ``stats_path``."""

    process: subprocess.Popen[bytes]
    stats_path: Path
    log_path: Path

    def wait(self, timeout: float = WORKER_TIMEOUT) -> dict[str, Any]:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"worker still running after {timeout} s:\n{self.log()}")
        assert code == 0, f"worker exited with {code}:\n{self.log()}"
        stats: dict[str, Any] = json.loads(self.stats_path.read_text())
        return stats

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


def spawn(module: str, config: dict[str, Any], folder: Path, name: str) -> Worker:
    """Start ``python -m module CONFIG_JSON`` with ``config`` and a ``stats``
    file in ``folder``; its output goes to ``folder/name.log``."""
    stats_path = folder / f"{name}.stats.json"
    log_path = folder / f"{name}.log"
    config = {**config, "stats": str(stats_path)}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, json.dumps(config)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return Worker(process, stats_path, log_path)


class FleetSpider(Spider):
    name = "fleet"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url)

    def parse(self, response: Response) -> None:
        # A busy worker: its callbacks hold the event loop (parsing, as
        # real crawls do), so its requests leave late.
        until = time.process_time() + self.settings.getfloat("FLEET_BURN", 0.0)
        while time.process_time() < until:
            pass


@spider_argument
class LateMiddleware:
    """Placed after PacingMiddleware (``FLEET_LATE`` seconds): every other
    request of this worker reaches the wire that much after its departure
    was stamped, as when the OS deschedules the worker in between; an
    asynchronous sleep, so the worker's event-loop lag does not show it."""

    def __init__(self, late: float) -> None:
        self.late = late
        self.requests = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> LateMiddleware:
        return cls(crawler.settings.getfloat("FLEET_LATE", 0.0))

    async def process_request(self, request: Request) -> None:
        if request.url.endswith("/robots.txt"):
            return
        self.requests += 1
        if self.late and self.requests % 2:
            from scrapy_rfc9309._compat import sleep

            await sleep(self.late)


def settings_for(config: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "ADDONS": {"scrapy_rfc9309.Addon": 100},
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }
    if config.get("reactorless"):
        # Scrapy picks its reactor-less download handler itself, as for a
        # user: aiohttp on Scrapy 2.19, httpx on 2.15 to 2.18 (which have no
        # aiohttp handler).
        settings["TWISTED_REACTOR_ENABLED"] = False
    settings.update(config.get("settings", {}))
    return settings


def run_ahead(offset: float) -> None:
    """Lifetimes and stored outcomes judged ``offset`` seconds in the future:
    the middleware's clock (the memory store's too) and the SQLite store's."""

    def clock() -> float:
        return time.time() + offset

    RobotsMiddleware.clock = staticmethod(clock)
    SQLiteStore.clock = staticmethod(clock)


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    if config.get("clock_offset"):
        run_ahead(float(config["clock_offset"]))
    run_worker(config, settings_for(config), FleetSpider, urls=config["urls"])
    return 0


def run_worker(
    config: dict[str, Any],
    settings: dict[str, Any],
    spidercls: type[Spider],
    **kwargs: Any,
) -> None:
    """Crawl with ``spidercls`` to the end, then write the final stats to
    the file ``config["stats"]`` names."""
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(spidercls)
    process.crawl(crawler, **kwargs)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    Path(config["stats"]).write_text(json.dumps(stats, default=str), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
