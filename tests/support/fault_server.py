"""A hostile HTTP server for fault tests: per-path behaviours on one host.

Each path of a :class:`FaultServer` answers with a *behaviour*, a function
that writes the whole response through an :class:`Exchange`: well-formed
answers of any status, but also stalls before the headers or in the middle
of the body, connections closed mid-body, bodies far larger than anyone
should read, and gzip bombs.  The server counts, per path, the requests that
reached it, the body bytes it managed to hand to the kernel, and whether the
client went away before the body was complete, so that a test can assert at
the server how much of a huge body was actually taken.

It is a plain threaded socket server: it works with any reactor and in
reactor-less mode, and ``close()`` ends every stall at once.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.server import LoopbackServer

__all__ = [
    "Behaviour",
    "Exchange",
    "FaultServer",
    "Served",
    "close_mid_body",
    "drip",
    "drip_headers",
    "gzip_bomb",
    "raw",
    "respond",
    "stall_before_headers",
    "stall_mid_body",
    "stream",
]

CHUNK = 64 * 1024
# How long one blocked write may take before the server gives up on a client
# that neither reads nor closes: a bound on every test, never reached when
# the client behaves.
_WRITE_TIMEOUT = 10.0

_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass
class Served:
    """What one path of the server gave: counted at the server."""

    hits: int = 0
    #: Body bytes the kernel accepted (headers not counted).
    body_bytes: int = 0
    #: The client closed the connection before the body was complete.
    client_gone: bool = False


class Exchange:
    """One request and the means to answer it, byte by byte."""

    def __init__(
        self, server: FaultServer, sock: socket.socket, path: str, served: Served
    ) -> None:
        self.server = server
        self.path = path
        self._sock = sock
        self._served = served

    def head(self, status: int, headers: dict[str, str] | None = None) -> bool:
        """Send the status line and headers; whether the client took them."""
        return self.send(_head(status, headers))

    def body(self, data: bytes) -> bool:
        """Send part of the body; whether the client took it all."""
        if not self.send(data):
            return False
        with self.server.lock:
            self._served.body_bytes += len(data)
        return True

    def wait(self, seconds: float) -> None:
        """Stall (ended early when the server closes)."""
        self.server.closing.wait(seconds)

    def drip(
        self, data: bytes, every: float, size: int, send: Callable[[bytes], bool]
    ) -> bool:
        """Send ``data`` with ``send``, ``size`` bytes every ``every``
        seconds; whether it was all sent before the client or the server
        went away."""
        for start in range(0, len(data), size):
            if not send(data[start : start + size]):
                return False
            self.wait(every)
            if self.server.closing.is_set():
                return False
        return True

    def send(self, data: bytes) -> bool:
        """Send ``data`` as it is (not counted as body); whether the client
        took it."""
        try:
            self._sock.sendall(data)
        except OSError:
            # EPIPE, ECONNRESET, or a client that stopped reading.
            with self.server.lock:
                self._served.client_gone = True
            return False
        return True


def _head(status: int, headers: dict[str, str] | None) -> bytes:
    """A status line and headers, ending the connection after the body."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


#: A path's behaviour: writes the whole response through the exchange.
Behaviour = Callable[[Exchange], None]


def respond(
    status: int = 200,
    body: bytes | str = b"",
    headers: dict[str, str] | None = None,
) -> Behaviour:
    """A well-formed answer with a Content-Length."""
    data = body.encode() if isinstance(body, str) else body

    def behaviour(exchange: Exchange) -> None:
        if exchange.head(status, {"Content-Length": str(len(data)), **(headers or {})}):
            exchange.body(data)

    return behaviour


def stall_before_headers(seconds: float) -> Behaviour:
    """Accept the request, then say nothing for ``seconds``."""

    def behaviour(exchange: Exchange) -> None:
        exchange.wait(seconds)

    return behaviour


def stall_mid_body(body: bytes, *, after: int, seconds: float) -> Behaviour:
    """Announce ``body``, send its first ``after`` bytes, then stall."""

    def behaviour(exchange: Exchange) -> None:
        if exchange.head(200, {"Content-Length": str(len(body))}) and exchange.body(
            body[:after]
        ):
            exchange.wait(seconds)

    return behaviour


def close_mid_body(body: bytes, *, after: int, chunked: bool = False) -> Behaviour:
    """Announce ``body`` (by length, or chunked), send ``after`` bytes of
    it, then close the connection."""

    def behaviour(exchange: Exchange) -> None:
        if chunked:
            part = body[:after]
            if exchange.head(200, {"Transfer-Encoding": "chunked"}):
                exchange.body(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        elif exchange.head(200, {"Content-Length": str(len(body))}):
            exchange.body(body[:after])

    return behaviour


def raw(data: bytes) -> Behaviour:
    """Send ``data`` as it is (no status line unless it has one), then close."""

    def behaviour(exchange: Exchange) -> None:
        exchange.body(data)

    return behaviour


def drip(body: bytes, *, every: float, size: int = 8) -> Behaviour:
    """Announce ``body``, then send it ``size`` bytes at a time, one piece
    ``every`` seconds: each piece in time, the whole far too slow."""

    def behaviour(exchange: Exchange) -> None:
        if exchange.head(200, {"Content-Length": str(len(body))}):
            exchange.drip(body, every, size, exchange.body)

    return behaviour


def drip_headers(body: bytes, *, every: float, size: int = 8) -> Behaviour:
    """Send the status line and headers ``size`` bytes at a time, one piece
    ``every`` seconds (each in time, the whole far too slow), then ``body``."""

    def behaviour(exchange: Exchange) -> None:
        head = _head(200, {"Content-Length": str(len(body))})
        if exchange.drip(head, every, size, exchange.send):
            exchange.body(body)

    return behaviour


def stream(
    head: bytes, line: bytes, size: int, headers: dict[str, str] | None = None
) -> Behaviour:
    """A ``size``-byte body, ``head`` then ``line`` repeated, written in
    chunks as the client takes them (never held whole in memory)."""
    chunk = (line * (CHUNK // len(line) + 1))[:CHUNK]

    def behaviour(exchange: Exchange) -> None:
        if not exchange.head(
            200, {"Content-Length": str(size), **(headers or {})}
        ) or not exchange.body(head):
            return
        left = size - len(head)
        while left > 0:
            piece = chunk[: min(left, CHUNK)]
            if not exchange.body(piece):
                return
            left -= len(piece)

    return behaviour


def gzip_bomb(head: bytes, decoded_size: int) -> tuple[bytes, Behaviour]:
    """A gzip body decoding to ``head`` and then zeros up to
    ``decoded_size`` bytes, and its behaviour; small on the wire."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(head)]
    zeros = bytes(1024 * 1024)
    left = decoded_size - len(head)
    while left > 0:
        parts.append(compressor.compress(zeros[: min(left, len(zeros))]))
        left -= len(zeros)
    parts.append(compressor.flush())
    data = b"".join(parts)
    return data, respond(200, data, {"Content-Encoding": "gzip"})


class _Handler(socketserver.BaseRequestHandler):
    server: _TCPServer

    def handle(self) -> None:
        owner = self.server.owner
        sock: socket.socket = self.request
        sock.settimeout(_WRITE_TIMEOUT)
        try:
            path = _read_request_path(sock)
        except OSError:
            return
        if path is None:
            return
        behaviour, served = owner.serve(path)
        behaviour(Exchange(owner, sock, path, served))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


def _read_request_path(sock: socket.socket) -> str | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
        if len(data) > 65_536:
            return None
    request_line = data.split(b"\r\n", 1)[0].decode("latin-1").split()
    return request_line[1] if len(request_line) >= 2 else None


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    owner: FaultServer


class FaultServer(LoopbackServer):
    """A hostile HTTP/1.1 server on ``host`` (port chosen by the OS).

    ``routes`` maps a path (query string ignored) to its behaviour; other
    paths answer 200 with a small HTML page.  ``served[path]`` counts what
    each path gave.
    """

    def __init__(self, host: str) -> None:
        self.routes: dict[str, Behaviour] = {}
        self.default: Behaviour = respond(
            200, b"<html><body>page</body></html>", {"Content-Type": "text/html"}
        )
        self.served: dict[str, Served] = {}
        self.lock = threading.Lock()
        tcp = _TCPServer((host, 0), _Handler)
        tcp.owner = self
        super().__init__(host, tcp)

    def serve(self, path: str) -> tuple[Behaviour, Served]:
        """The behaviour for ``path``, its hit counted."""
        bare = path.split("?", 1)[0]
        with self.lock:
            served = self.served.setdefault(bare, Served())
            served.hits += 1
        return self.routes.get(bare, self.default), served

    def hits(self, path: str | None = None) -> int:
        """Requests that reached ``path`` (any path when ``None``)."""
        with self.lock:
            if path is not None:
                return self.served.get(path, Served()).hits
            return sum(served.hits for served in self.served.values())
