"""Spacing that survives a busy worker (issue 23 item 3).

Two worker processes (``python -m tests.support.fleet_crawl``) share a store and
crawl one origin with a Crawl-delay; one burns CPU in every callback, so its
event loop is busy when its requests should leave.  Everything is checked
at the server: every gap between two requests is at least the delay,
whichever worker sent them, and the workers counted their late departures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.fleet_crawl import Worker
from tests.support.server import Server
from tests.support.utils import store_settings

DELAY = 0.3
TOLERANCE = 0.02
PAGES = 6
#: CPU seconds each callback of the busy worker burns: most of a delay.
BURN = 0.2

MakeServer = Callable[..., Server]


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_a_busy_worker_never_brings_requests_closer_than_the_delay(
    make_server: MakeServer,
    start_worker: Callable[..., Worker],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    store: str,
) -> None:
    server = make_server()
    server.route("/robots.txt", f"User-agent: *\nCrawl-delay: {DELAY}\n")
    settings = store_settings(store, request, tmp_path)
    workers = [
        start_worker(
            [server.url(f"/w{number}/{i}") for i in range(PAGES)],
            {
                **settings,
                "FLEET_BURN": burn,
                "USER_AGENT": f"TestBot/1.0 (worker {number})",
            },
        )
        for number, burn in enumerate((BURN, 0.0))
    ]
    stats = [worker.wait() for worker in workers]
    for each in stats:
        assert each["finish_reason"] == "finished"
        assert "robots/store/errors" not in each
    assert server.count("/robots.txt") == 1
    assert len(server.hits) == 1 + 2 * PAGES
    gaps = server.gaps()
    assert min(gaps) >= DELAY - TOLERANCE, gaps


#: Seconds between a late request's departure stamp and the wire: under
#: the delay, so that its answer comes back before the next turn.
LATE = 0.2
LATE_DELAY = 0.5
PACING = "scrapy_rfc9309.politeness.PacingMiddleware"


def _drop(handler: Any) -> None:
    """Answer nothing: the connection closes, the download fails."""
    handler.close_connection = True


@pytest.mark.parametrize(
    ("store", "answer", "pacing"),
    [
        ("memory", "page", True),
        ("sqlite", "page", True),
        ("redis", "page", True),
        ("memory", "failure", True),
        ("redis", "failure", True),
        # A project that takes PacingMiddleware out: RobotsMiddleware takes
        # the turns, and counts them from the end of each fetch too.
        ("memory", "page", False),
        ("redis", "failure", False),
    ],
)
def test_a_request_sent_late_after_its_turn_keeps_the_next_one_a_delay_away(
    make_server: MakeServer,
    start_worker: Callable[..., Worker],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    store: str,
    answer: str,
    pacing: bool,
) -> None:
    """Every other request of worker 0 reaches the wire LATE after its
    departure was stamped (a middleware after PacingMiddleware): the next
    turn, of either worker, counts from the end of that fetch as well (its
    page, or its failure: the server drops worker 0's connections), so no
    request follows it at the server closer than the delay.  With the
    memory store one worker alone (the process scope)."""
    server = make_server()
    server.route("/robots.txt", f"User-agent: *\nCrawl-delay: {LATE_DELAY}\n")
    if answer == "failure":
        for i in range(PAGES):
            server.route(f"/w0/{i}", handler=_drop)
    settings = store_settings(store, request, tmp_path)
    lates = (LATE,) if store == "memory" else (LATE, 0.0)
    workers = [
        start_worker(
            [server.url(f"/w{number}/{i}") for i in range(PAGES)],
            {
                **settings,
                "FLEET_LATE": late,
                "DOWNLOADER_MIDDLEWARES": {
                    "tests.support.fleet_crawl.LateMiddleware": 2_000_000,
                    **({} if pacing else {PACING: None}),
                },
                "USER_AGENT": f"TestBot/1.0 (worker {number})",
            },
        )
        for number, late in enumerate(lates)
    ]
    stats = [worker.wait() for worker in workers]
    for each in stats:
        assert each["finish_reason"] == "finished"
        assert "robots/store/errors" not in each
    if answer == "failure":
        assert stats[0]["downloader/exception_count"] == PAGES
    assert len(server.hits) == 1 + len(lates) * PAGES
    gaps = server.gaps()
    # Every hit in the message: which two requests came close, and whose.
    hits = [
        (round(hit.time, 3), hit.path, hit.headers.get("User-Agent"))
        for hit in sorted(server.hits, key=lambda hit: hit.time)
    ]
    assert min(gaps) >= LATE_DELAY - TOLERANCE, hits
