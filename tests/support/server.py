"""A tiny HTTP server for real crawls in tests.

It runs the standard library's ``ThreadingHTTPServer`` in a thread, so it
works with any reactor and in reactor-less mode alike, and records every hit
with its arrival time (``time.monotonic()``) so that delays can be measured at
the server.  Distinct loopback addresses (127.0.0.2, 127.0.0.3, ...) give
distinct hosts, hence distinct downloader slots.
"""

from __future__ import annotations

import contextlib
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from typing import Any

Handler = Callable[[BaseHTTPRequestHandler], None]


def truncated(body: bytes) -> Handler:
    """A handler answering 200 with ``body``, cut short: 1,000 bytes more
    announced (``Content-Length``), then the connection closed."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Length", str(len(body) + 1000))
        request.end_headers()
        request.wfile.write(body)
        request.wfile.flush()
        request.close_connection = True

    return handler


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before sending anything
    handler: Handler | None = None  # takes over the whole response


@dataclass
class Hit:
    path: str
    time: float
    headers: dict[str, str]


class LoopbackServer:
    """What the test servers share: a socketserver ``listening`` on
    ``host`` (port chosen by the OS), served from a daemon thread until
    :meth:`close`; ``closing`` is set as it closes, for handlers that wait."""

    def __init__(self, host: str, listening: socketserver.BaseServer) -> None:
        self.host = host
        self.port: int = listening.server_address[1]  # type: ignore[index]
        self.closing = threading.Event()
        self._listening = listening
        self._thread = threading.Thread(
            target=listening.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def close(self) -> None:
        self.closing.set()
        self._listening.shutdown()
        self._listening.server_close()


class Server(LoopbackServer):
    """An HTTP server on ``host`` (port chosen by the OS) with a route table.

    Unknown paths answer 200 with a small HTML page that links nowhere, unless
    ``default`` is given.
    """

    def __init__(self, host: str = "127.0.0.1", default: Route | None = None):
        self.routes: dict[str, Route] = {}
        self.default = default or Route(
            body=b"<html><body>page</body></html>",
            headers={"Content-Type": "text/html"},
        )
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                with server._lock:
                    server.hits.append(
                        Hit(self.path, time.monotonic(), dict(self.headers.items()))
                    )
                route = server.routes.get(self.path)
                if route is None:
                    route = server.routes.get(
                        self.path.split("?", 1)[0], server.default
                    )
                if route.delay:
                    server.closing.wait(route.delay)
                if route.handler is not None:
                    route.handler(self)
                    return
                headers = {"Content-Length": str(len(route.body)), **route.headers}
                # A client that gave up (a delayed route past its timeout)
                # is no error of the server's.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(route.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(route.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer((host, 0), _Handler)
        httpd.daemon_threads = True
        super().__init__(host, httpd)

    def route(self, path: str, body: bytes | str = b"", **kwargs: Any) -> None:
        if isinstance(body, str):
            body = body.encode()
        self.routes[path] = Route(body=body, **kwargs)

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for hit in self.hits if hit.path == path)

    def times(self, path_prefix: str = "/") -> list[float]:
        with self._lock:
            return [hit.time for hit in self.hits if hit.path.startswith(path_prefix)]

    def gaps(self) -> list[float]:
        """The gaps between the requests this server saw, robots.txt
        included, in the order they arrived."""
        times = sorted(self.times())
        return [later - earlier for earlier, later in pairwise(times)]
