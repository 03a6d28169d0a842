"""One scrapy-redis worker of a crawl fleet, run as its own OS process.

    python -m tests.support.redis_fleet CONFIG_JSON

The worker is a ``RedisSpider`` on scrapy-redis's scheduler and dupefilter
(``SCHEDULER_PERSIST = True``), all its keys under ``prefix`` on the Redis at
``redis_url``: the fleet shares one start-URL list, one request queue and one
dupefilter, as a scrapy-redis deployment does.  It follows every link of
every page it gets.  ``CONFIG_JSON`` holds:

``redis_url``, ``prefix``
    where scrapy-redis keeps its keys;
``worker``
    the worker's number, sent in its User-Agent (``FleetBot/1.0 (worker
    N)``) so that the servers tell the workers apart;
``store``
    ``redis`` or ``sqlite``: ``ROBOTS_STORE``, through a subclass that counts
    the store's calls into the stats (``fleet/store/<method>``, and the turns
    of each origin as ``fleet/store/reserve/<robots.txt URL>``);
``settings``
    added to the worker's settings (``ROBOTS_STORE_URL`` among them);
``stats``
    the file the final stats are written to, as JSON;
``warmup``
    optionally, a URL downloaded before the crawl starts (see
    :class:`FleetRedisSpider`);
``batch``
    optionally, how many start URLs a worker takes at a time (default 1,
    so that the workers share them);
``reactorless``
    optionally, run without a Twisted reactor.

The fleet tests (through :class:`Fleet`, the ``redis_fleet`` fixture) and
``benchmarks/fleet.py`` both run it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import redis
from scrapy import Request
from scrapy.core.engine import ExecutionEngine
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider

from scrapy_rfc9309._compat import download, spider_argument
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.fleet_crawl import Worker, run_worker, settings_for, spawn

MODULE = "tests.support.redis_fleet"
SPIDER = "redisfleet"
#: The scrapy-redis keys of a fleet, under its prefix.
START_URLS_KEY = "%(name)s:start_urls"
QUEUE_KEY = "%(spider)s:requests"
DUPEFILTER_KEY = "%(spider)s:dupefilter"

STORE_METHODS = (
    "get",
    "put",
    "acquire",
    "release",
    "reserve",
    "hold",
    "held",
    "extend",
)


def agent(worker: int) -> str:
    return f"FleetBot/1.0 (worker {worker})"


def worker_of(user_agent: str) -> int:
    """The worker number in a User-Agent made by :func:`agent`."""
    return int(user_agent.rpartition(" ")[2].rstrip(")"))


class _CountingCalls:
    """Counts every store call into the crawl's stats."""

    _crawler: Any

    def _count(self, method: str) -> None:
        if self._crawler is not None and self._crawler.stats is not None:
            self._crawler.stats.inc_value(f"fleet/store/{method}")

    async def get(self, origin: str) -> Any:
        self._count("get")
        return await super().get(origin)  # type: ignore[misc]

    async def put(self, origin: str, outcome: Any) -> None:
        self._count("put")
        await super().put(origin, outcome)  # type: ignore[misc]

    async def acquire(self, origin: str, ttl: float) -> bool:
        self._count("acquire")
        return await super().acquire(origin, ttl)  # type: ignore[misc,no-any-return]

    async def release(self, origin: str) -> None:
        self._count("release")
        await super().release(origin)  # type: ignore[misc]

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        self._count("reserve")
        self._count(f"reserve/{origin}")
        return await super().reserve(origin, interval, limit)  # type: ignore[misc,no-any-return]

    async def hold(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        self._count("hold")
        await super().hold(origin, seconds, limit)  # type: ignore[misc]

    async def extend(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        self._count("extend")
        await super().extend(origin, seconds, limit)  # type: ignore[misc]

    async def held(self, limit: float | None = None) -> dict[str, float]:
        self._count("held")
        return await super().held(limit)  # type: ignore[misc,no-any-return]


class CountingRedisStore(_CountingCalls, RedisStore):
    pass


class CountingSQLiteStore(_CountingCalls, SQLiteStore):
    pass


STORES = {
    "redis": f"{__name__}.CountingRedisStore",
    "sqlite": f"{__name__}.CountingSQLiteStore",
}


#: The header :class:`SentAt` writes.
SENT_AT = "X-Sent-At"


@spider_argument
class SentAt:
    """Stamps each request with the moment it leaves the downloader
    middlewares, just before its downloader slot sends it: ``time.monotonic()``,
    one clock for every process of a host, so that the servers can tell
    when requests left the workers from when they arrived."""

    def process_request(self, request: Request) -> None:
        request.headers[SENT_AT] = repr(time.monotonic())


class FleetRedisSpider(RedisSpider):
    """Follows every link; takes its start URLs from Redis one at a time, so
    that the workers share them.

    ``warmup`` is downloaded first, outside robots.txt: the first download
    of a process also sets up its HTTP client (a reactor-less crawl starts
    its aiohttp session then), which delays that request between its turn
    and the server by tens of milliseconds on a loaded machine.  That is
    latency, not spacing, and it is kept out of the measured origins.
    """

    name = SPIDER

    def __init__(
        self, warmup: str | None = None, batch: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.warmup = warmup
        self.redis_batch_size = batch

    async def start(self) -> AsyncIterator[Any]:
        if self.warmup:
            await download(
                self.crawler, Request(self.warmup, meta={"dont_obey_robotstxt": True})
            )
        for request in self.next_requests():
            yield request

    def parse(self, response: Response) -> Any:
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)


def worker_settings(config: dict[str, Any]) -> dict[str, Any]:
    prefix = config["prefix"]
    return settings_for(
        {
            "reactorless": config.get("reactorless", False),
            "settings": {
                "USER_AGENT": agent(config["worker"]),
                "ROBOTS_STORE": STORES[config["store"]],
                "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
                "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
                # With False, the first worker to close flushes the shared
                # queue and dupefilter: the others then fetch pages again.
                "SCHEDULER_PERSIST": True,
                "REDIS_URL": config["redis_url"],
                "REDIS_START_URLS_KEY": prefix + START_URLS_KEY,
                "SCHEDULER_QUEUE_KEY": prefix + QUEUE_KEY,
                "SCHEDULER_DUPEFILTER_KEY": prefix + DUPEFILTER_KEY,
                # A worker with nothing to do closes after this long.
                "MAX_IDLE_TIME_BEFORE_CLOSE": 2,
                # Few requests at once per worker, so that the shared queue
                # keeps work for the others.
                "CONCURRENT_REQUESTS": 2,
                # After every other downloader middleware.
                # After PacingMiddleware (1,000,000), which holds requests
                # until their Crawl-delay turn.
                "DOWNLOADER_MIDDLEWARES": {f"{__name__}.SentAt": 2_000_000},
                "LOG_LEVEL": "INFO",
                **config.get("settings", {}),
            },
        }
    )


class Fleet:
    """Workers of this module, started by a test on the Redis at
    ``redis_url``, their scrapy-redis keys under ``prefix`` and their files
    in ``folder``; :meth:`kill` ends those still running."""

    def __init__(self, redis_url: str, prefix: str, folder: Path) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.folder = folder
        self.workers: list[Worker] = []

    def store_settings(self, store: str) -> dict[str, Any]:
        """Where the workers keep their outcomes: keys of the fleet's own
        prefix in the same Redis, or one SQLite file they share."""
        if store == "redis":
            return {
                "ROBOTS_STORE_URL": self.redis_url,
                "ROBOTS_STORE_PREFIX": self.prefix + "robots:",
            }
        return {"ROBOTS_STORE_URL": str(self.folder / "robots.sqlite3")}

    def start(
        self,
        start_urls: list[str],
        store: str,
        settings: dict[str, Any],
        warmup: str | None = None,
        workers: int = 3,
    ) -> list[Worker]:
        """Queue ``start_urls`` on the fleet's start-URL list and start
        ``workers`` workers with ``store`` (and :meth:`store_settings`) and
        ``settings``; worker 1 runs without a Twisted reactor, the others
        with the asyncio one: both kinds in one fleet."""
        client = redis.Redis.from_url(self.redis_url)
        key = self.prefix + START_URLS_KEY % {"name": SPIDER}
        client.rpush(key, *(json.dumps({"url": url}) for url in start_urls))
        client.close()
        started = []
        for number in range(workers):
            config = {
                "redis_url": self.redis_url,
                "prefix": self.prefix,
                "worker": number,
                "store": store,
                "settings": {**self.store_settings(store), **settings},
                "warmup": warmup,
                "reactorless": number == 1,
            }
            name = f"w{len(self.workers)}"
            started.append(spawn(MODULE, config, self.folder, name))
            self.workers.append(started[-1])
        return started

    def run(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`start` the workers and wait for them: their final stats."""
        return [worker.wait(timeout=90) for worker in self.start(*args, **kwargs)]

    def kill(self) -> None:
        for worker in self.workers:
            worker.kill()


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    # An idle worker looks at the shared queue on the engine's heartbeat
    # (5 s): a shorter one keeps fleet tests and benchmarks short.
    ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = 0.5
    run_worker(
        config,
        worker_settings(config),
        FleetRedisSpider,
        warmup=config.get("warmup"),
        batch=config.get("batch", 1),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
