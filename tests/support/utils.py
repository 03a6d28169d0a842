"""Helpers shared by the test modules."""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import zlib
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.reactor import is_reactor_installed

from scrapy_rfc9309._read import Handler
from scrapy_rfc9309.parse import Document
from scrapy_rfc9309.stores.contract import SAMPLE_SHA256, sample_outcome

if TYPE_CHECKING:
    import pytest

    from tests.support.redis_server import RedisServer


def coroutine_test(
    coro_f: Callable[..., Coroutine[Any, Any, Any]],
) -> Callable[..., Any]:
    """Run an ``async def`` test under pytest-twisted (or pytest-asyncio
    when no reactor is installed), as Scrapy's own test suite does.

    ``@pytest_twisted.ensureDeferred`` breaks real crawls under the asyncio
    reactor, so the coroutine is wrapped in a Deferred instead.
    """
    if not is_reactor_installed():
        import pytest

        return pytest.mark.asyncio(coro_f)  # type: ignore[no-any-return]

    @wraps(coro_f)
    def f(*args: Any, **kwargs: Any) -> Any:
        return deferred_from_coro(coro_f(*args, **kwargs))

    return f


def loopback_hosts(block: int) -> Iterator[str]:
    """Loopback addresses 127.<block>.x.y (x.y from 0.2 on) for this process
    alone: under ``pytest -n`` worker gwN takes 127.<block + 10 N>, so two
    workers never share a host (nor a downloader slot, nor a port probed
    free and closed)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    second = block + 10 * int(worker.removeprefix("gw") or 0)
    if not 0 <= second <= 255:
        raise RuntimeError(f"too many pytest workers for 127.{second}.x.y")
    return (f"127.{second}.{i // 250}.{i % 250 + 2}" for i in itertools.count())


@contextmanager
def utf8_log_file(path: Path, name: str) -> Iterator[None]:
    """While open, the lines of logger ``name`` (DEBUG and up) go to
    ``path`` alone, through a strict UTF-8 handler as ``LOG_FILE``'s is:
    a line it cannot write is "--- Logging error ---" on stderr.  (Alone:
    pytest-xdist could not carry a lone surrogate in a failure's log.)"""
    handler = logging.FileHandler(path, encoding="utf-8")
    logger = logging.getLogger(name)
    # setLevel, which clears the levels its loggers cached.
    propagate, level = logger.propagate, logger.level
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
        handler.close()


class FakeClock:
    """A clock (seconds since the epoch) that only the test moves, to check
    lifetimes, retention and leases without waiting or racing a real one."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def store_settings(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> dict[str, Any]:
    """The settings of a store of ``kind`` (``memory``, ``sqlite`` or
    ``redis``), the same for every crawl of a test: a SQLite file or a
    Redis key prefix of the test's own."""
    if kind == "memory":
        return {}
    if kind == "sqlite":
        path = str(tmp_path / "robots.sqlite3")
        return {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": path}
    server: RedisServer = request.getfixturevalue("redis_server")
    return {
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": server.url,
        "ROBOTS_STORE_PREFIX": request.getfixturevalue("redis_prefix"),
    }


#: The origin the store tests keep outcomes under.
STORE_ORIGIN = "http://example.com/robots.txt"


#: A parsed outcome with every kind of line a store must keep: what the
#: store tests put and get back (the store contract's own sample).
stored_outcome = sample_outcome
#: The ``body_sha256`` of :func:`stored_outcome`.
STORED_SHA256 = SAMPLE_SHA256


def read_document(document: Document) -> Document:
    """A copy of ``document`` with its groups read: ``parse()`` leaves them
    unread, and ``compile()`` then reads only those that apply; on this
    copy, it compiles from the groups."""
    return Document(
        document.groups, document.sitemaps, document.records, document.profile
    )


def raw_deflate(data: bytes) -> bytes:
    """``data`` as raw deflate (no zlib header): what some servers send as
    ``Content-Encoding: deflate``."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


class Recorder(Handler):
    """A reader's handler that keeps every event it hears, in order, as
    ``(line, method, arguments)``."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, tuple[Any, ...]]] = []


def _recording(name: str) -> Callable[..., None]:
    def record(self: Recorder, line: int, *arguments: Any) -> None:
        self.events.append((line, name, arguments))

    return record


for _name in vars(Handler):
    if not _name.startswith("_"):
        setattr(Recorder, _name, _recording(_name))


def usage_error(command: list[str]) -> list[str]:
    """The standard error lines of ``command``, a usage error: exit status
    2, nothing on standard output."""
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    return done.stderr.splitlines()
