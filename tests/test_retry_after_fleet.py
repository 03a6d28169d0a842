"""Retry-After across a scrapy-redis fleet (issue 23 item 2): one worker gets
the ``429``, and the whole fleet backs off.

Three worker processes (``python -m tests.support.redis_fleet``, one of them without
a Twisted reactor) share scrapy-redis's queue and the outcome store (Redis,
or one SQLite file).  The origin's index links :data:`PAGES` pages, so that
every worker has requests to it in hand all through the crawl; the
:data:`BUSY`-th page request to arrive is answered ``429`` with
``Retry-After: 2`` (once).  Everything is checked at the server, relative to
the moment the ``429`` was asked for, from below only:

- with a Crawl-delay (every request takes a fleet turn), no request of any
  worker arrives before the pause ends;
- without one (no turns), the workers learn of the pause from their reads of
  the store's pauses, every :data:`~scrapy_rfc9309.politeness.PAUSES_EVERY`:
  none arrives between :data:`LEARNED` after the ``429`` and the end of the
  pause; and the retry of the ``429``, which carries its pause to whichever
  worker takes it, none before the pause ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from scrapy_rfc9309.politeness import PAUSES_EVERY
from tests.support.redis_fleet import Fleet, worker_of
from tests.support.server import Route, Server

WORKERS = 3
PAUSE = 2.0
TOLERANCE = 0.02
#: How soon after the 429 the workers without turns stop sending: one read
#: of the store's pauses, and as much again for the requests already handed
#: over then to reach the server.
LEARNED = 2 * PAUSES_EVERY
#: Which page request to arrive gets the 429: one of the middle, when every
#: worker is under way.
BUSY = 6

MakeServer = Callable[..., Server]


class Site:
    """The origin: an index linking ``/p0`` ... ``/p<pages - 1>``, each
    answered after ``slow`` seconds; the :data:`BUSY`-th is answered 429."""

    def __init__(
        self, make_server: MakeServer, crawl_delay: float | None, pages: int
    ) -> None:
        self.pages = [f"/p{i}" for i in range(pages)]
        self.slow = 0.0 if crawl_delay else 0.3
        self.busy: list[str] = []
        self._count = 0
        self._lock = threading.Lock()
        self.server = server = make_server(default=Route(handler=self._page))
        robots = "User-agent: *\n"
        if crawl_delay is not None:
            robots += f"Crawl-delay: {crawl_delay}\n"
        server.route("/robots.txt", robots)
        links = "".join(f'<a href="{path}">{path}</a>' for path in self.pages)
        server.route("/", links, headers={"Content-Type": "text/html"})

    def _page(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self._count += 1
            busy = self._count == BUSY
            if busy:
                self.busy.append(handler.path)
        if not busy:
            self.server.closing.wait(self.slow)
        handler.send_response(429 if busy else 200)
        if busy:
            handler.send_header("Retry-After", f"{PAUSE:.0f}")
        handler.send_header("Content-Length", "0")
        handler.end_headers()


def _crawl(
    make_server: MakeServer,
    redis_fleet: Fleet,
    store: str,
    crawl_delay: float | None,
) -> tuple[Site, list[dict[str, Any]], list[tuple[float, str, int]]]:
    """One fleet crawl of a new :class:`Site`: its workers' stats, and the
    requests the server saw after the 429 (seconds after it, path, worker)."""
    site = Site(make_server, crawl_delay, 24 if crawl_delay else 60)
    server = site.server
    warmup = make_server()
    settings: dict[str, Any] = {
        "RETRY_ENABLED": True,
        "RETRY_TIMES": 2,
        # scrapy-redis counts a worker's idleness from its set-up: on a
        # loaded machine the two without the start URL would close before
        # the index's links reach the queue.
        "MAX_IDLE_TIME_BEFORE_CLOSE": 6,
    }
    stats = redis_fleet.run(
        [server.url("/")], store, settings, warmup.url("/"), WORKERS
    )
    hits = sorted(server.hits, key=lambda hit: hit.time)
    answer = next(hit for hit in hits if hit.path in site.busy)
    after = [
        (
            round(hit.time - answer.time, 3),
            hit.path,
            worker_of(hit.headers["User-Agent"]),
        )
        for hit in hits
        if hit.time > answer.time
    ]
    return site, stats, after


@pytest.mark.parametrize("crawl_delay", [0.2, None], ids=["crawl-delay", "none"])
@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_one_workers_429_pauses_the_whole_fleet(
    make_server: MakeServer,
    redis_fleet: Fleet,
    store: str,
    crawl_delay: float | None,
) -> None:
    # What the test is about needs requests of several workers after the
    # pause (they had some in hand); which worker takes which page is
    # scrapy-redis's queue's doing, and on a busy machine one worker can take
    # them all: then the fleet runs again, on a new site (three times at
    # most).
    for _ in range(3):
        site, stats, after = _crawl(make_server, redis_fleet, store, crawl_delay)
        if len({worker for _, _, worker in after}) > 1:
            break
    assert len({worker for _, _, worker in after}) > 1, after
    _check(site, stats, after, crawl_delay)


def _check(
    site: Site,
    stats: list[dict[str, Any]],
    after: list[tuple[float, str, int]],
    crawl_delay: float | None,
) -> None:
    for s in stats:
        assert s["finish_reason"] == "finished"
        assert "robots/store/errors" not in s
        assert s.get("log_count/ERROR", 0) == 0
    # Every page once, the busy one twice (the 429, then its retry).
    (busy,) = site.busy
    for path in site.pages:
        assert site.server.count(path) == (2 if path == busy else 1), path
    if crawl_delay:
        # No request of any worker before the pause ended.
        assert min(moment for moment, _, _ in after) >= PAUSE - TOLERANCE, after
    else:
        # None once the workers had read the pause, until it ended.
        within = [hit for hit in after if LEARNED <= hit[0] < PAUSE - TOLERANCE]
        assert within == [], after
        # The other workers learned it from the store.
        assert sum(s.get("robots/retry_after/fleet", 0) for s in stats) >= 1
    retry = [moment for moment, path, _ in after if path == busy]
    assert retry == [max(retry[0], PAUSE - TOLERANCE)], after
    # One pause, said by the worker that got it; held in the store once.
    assert sum(s.get("robots/retry_after/paused", 0) for s in stats) == 1
    assert sum(s.get("fleet/store/hold", 0) for s in stats) == 1
