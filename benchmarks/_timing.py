"""Running one crawl and timing it, for the crawl benchmarks."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class CrawlTimes:
    """Wall and CPU time (user and system) from the engine's start to the
    spider's close, in seconds."""

    wall: float = 0.0
    user: float = 0.0
    system: float = 0.0

    @property
    def cpu(self) -> float:
        return self.user + self.system


def _now() -> tuple[float, float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime, usage.ru_stime


def timed_crawl(settings: dict[str, Any], spider: type[Any]) -> tuple[Any, CrawlTimes]:
    """Crawl with ``spider`` in this process; its crawler and how long the
    crawl took (start-up and shut-down of the process left out)."""
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(spider)
    marks: list[tuple[float, float, float]] = []

    def mark() -> None:
        marks.append(_now())

    crawler.signals.connect(mark, signal=signals.engine_started)
    crawler.signals.connect(mark, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    (wall0, user0, sys0), (wall1, user1, sys1) = marks
    return crawler, CrawlTimes(wall1 - wall0, user1 - user0, sys1 - sys0)


def crawl_settings(mode: str, *, per_domain: int, user_agent: str) -> dict[str, Any]:
    """The settings of a benchmark crawl in ``mode``: ``none`` (robots.txt
    not read), ``builtin`` (Scrapy's RobotsTxtMiddleware), ``ours``
    (RobotsMiddleware) or ``addon`` (the add-on); quiet, no retries or
    cookies, 64 requests at once and ``per_domain`` per domain."""
    settings: dict[str, Any] = {
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "COOKIES_ENABLED": False,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": per_domain,
        "USER_AGENT": user_agent,
        "ROBOTSTXT_OBEY": mode == "builtin",
    }
    if mode == "ours":
        settings["DOWNLOADER_MIDDLEWARES"] = {"scrapy_rfc9309.RobotsMiddleware": 100}
    elif mode == "addon":
        settings["ADDONS"] = {"scrapy_rfc9309.Addon": 100}
    return settings
