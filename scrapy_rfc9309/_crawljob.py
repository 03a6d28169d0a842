"""Running a coroutine inside a crawl, for ``scrapy robots``: the command
asks the middleware of a real crawl with the project's settings, from the
start of a spider that schedules nothing, and says in one line why it
could not."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from twisted.internet.defer import Deferred

from ._settings import SettingError, refusals_reported

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from scrapy.crawler import Crawler, CrawlerProcessBase
    from twisted.python.failure import Failure

__all__ = [
    "CommandFailure",
    "JobSpider",
    "NoQueue",
    "describe",
    "job_spider",
    "run_in_crawl",
]

# The command's logger: its -L DEBUG lines read the same as before the split.
logger = logging.getLogger("scrapy_rfc9309.commands")

_T = TypeVar("_T")


class CommandFailure(Exception):
    """Something the command cannot do, said in one line (exit status 2)."""


def describe(exc: BaseException) -> str:
    """``exc`` in one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    name = type(exc).__name__
    return f"{name}: {text[0]}" if text else name


class _Job(Generic[_T]):
    """A coroutine run inside a crawl: what it gave, or why it did not."""

    def __init__(self, work: Callable[[Crawler], Awaitable[_T]]) -> None:
        self.work = work
        #: ``(result,)`` once the work is done.
        self.result: tuple[_T] | None = None
        self.error: str | None = None

    async def run(self, crawler: Crawler) -> None:
        try:
            self.result = (await self.work(crawler),)
        except Exception as exc:
            self.fail(exc)

    def crawl_done(self, task: asyncio.Future[None]) -> None:
        """The done callback of an asyncio crawl."""
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self.fail(error)

    def crawl_failed(self, failure: Failure) -> None:
        """The errback of a Twisted crawl."""
        self.fail(failure.value or Exception(failure.getErrorMessage()))

    def fail(self, exc: BaseException) -> None:
        # The traceback is only for whoever asks for it (-L DEBUG): the user
        # gets one line.  A setting refused says all in its message.
        logger.debug("scrapy robots failed", exc_info=exc)
        if self.error is None:
            plain = isinstance(exc, (CommandFailure, SettingError))
            self.error = str(exc) if plain else describe(exc)


_NO_REQUESTS: tuple[Request, ...] = ()


class NoQueue(BaseScheduler):
    """The scheduler of the command's crawl: it takes no request and gives
    none.  The job downloads through the engine itself; the project's
    scheduler would open the project's queue (a paused ``JOBDIR``'s, a
    scrapy-redis one shared by a fleet) and hand its requests to the
    command's crawl."""

    def has_pending_requests(self) -> bool:
        return False

    def enqueue_request(self, request: Request) -> bool:
        return False

    def next_request(self) -> Request | None:
        return None


class _JobMixin:
    """Runs the command's job from ``start()``; it schedules nothing, so the
    crawl closes as soon as the job is over."""

    job: _Job[Any]
    crawler: Crawler

    async def start(self) -> AsyncIterator[Request]:
        await self.job.run(self.crawler)
        # Nothing to schedule (the job downloads through the engine itself),
        # but start() must be an async generator.
        for request in _NO_REQUESTS:
            yield request


class JobSpider(_JobMixin, Spider):
    name = "scrapy_robots"


def job_spider(spidercls: type[Spider]) -> type[Spider]:
    """``spidercls`` running the job instead of its own start requests: its
    name, attributes (``robots_user_agent``) and ``custom_settings`` are
    those of the crawl."""
    return type(f"RobotsCheck{spidercls.__name__}", (_JobMixin, spidercls), {})


def run_in_crawl(
    process: CrawlerProcessBase,
    work: Callable[[Crawler], Awaitable[_T]],
    spidercls: type[Spider] = JobSpider,
) -> _T:
    """Run ``work`` inside a crawl of ``spidercls`` by ``process`` (the
    command's, with the project's settings); :class:`CommandFailure` saying
    in one line why it gave nothing."""
    job = _Job(work)
    # The job says why the crawl could not start, in its one line.
    refusals_reported.set(True)
    crawling = process.crawl(spidercls, job=job)
    # A crawl that cannot start (a setting a component refuses, say)
    # fails the job, in one line: retrieving its error here keeps
    # asyncio or Twisted from printing it as unhandled.
    if isinstance(crawling, Deferred):
        crawling.addErrback(job.crawl_failed)
    elif isinstance(crawling, asyncio.Future):
        crawling.add_done_callback(job.crawl_done)
    process.start()
    if job.error is not None:
        raise CommandFailure(job.error)
    if job.result is None:
        raise CommandFailure("interrupted before the answer was complete")
    return job.result[0]
