"""A real ``redis-server`` for the store tests, on a free loopback port.

The server runs without persistence (``--save "" --appendonly no``) in a
temporary directory.  ``redis_server`` is one server for the whole session;
``make_redis_server`` starts extra ones that a test may stop (to watch a
crawl lose its Redis).  ``redis_prefix`` gives each test its own key prefix
and deletes its keys afterwards.  A missing ``redis-server`` fails the tests:
the shared stores are part of the package and must be tested.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; ``stop()`` ends it."""

    def __init__(self, binary: str = REDIS_SERVER, timeout: float = 10.0) -> None:
        path = shutil.which(binary)
        if path is None:
            raise FileNotFoundError(
                f"{binary!r} not found: install redis-server "
                "(apt-get install redis-server) to run the store tests"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="robots-redis-"))
        # Another process may take the port between the probe and the bind;
        # a few attempts make that race harmless.
        for _ in range(5):
            self.port = _free_port()
            self.process = subprocess.Popen(
                [
                    path,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.dir),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.process.poll() is None:
                if _ping(self.port):
                    return
                time.sleep(0.02)
            self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError(f"{path} did not start on a free loopback port")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def _kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server at once (SIGKILL, as a crash would) and clean up."""
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _start() -> RedisServer:
    try:
        return RedisServer()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One Redis for the session; tests keep apart through ``redis_prefix``."""
    with _start() as server:
        yield server


@pytest.fixture
def make_redis_server() -> Iterator[Callable[[], RedisServer]]:
    """Start extra Redis servers, each stopped at the end of the test."""
    servers: list[RedisServer] = []

    def factory() -> RedisServer:
        server = _start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.stop()


_prefixes = (f"robots-test-{uuid.uuid4().hex[:8]}-{i}:" for i in itertools.count())


@pytest.fixture
def redis_prefix(redis_server: RedisServer) -> Iterator[str]:
    """A key prefix of this test's own on ``redis_server``; its keys go after."""
    prefix = next(_prefixes)
    yield prefix
    import redis

    client = redis.Redis.from_url(redis_server.url)
    with contextlib.closing(client):
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
