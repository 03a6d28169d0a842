"""Fetching robots.txt over Scrapy: :class:`RobotsFetcher`.

One robots.txt is downloaded through ``engine.download_async``, so that the
project's downloader middlewares (proxy, auth, retry, cache, user agent)
apply; redirects are followed here, hop by hop, under RFC 9309's limit; the
body is bounded by ``ROBOTS_MAX_BYTES`` (a gzip or deflate body by its
decoded size, as it arrives); the optional SSRF guard refuses private
addresses; and the HTTP result becomes an :class:`~scrapy_rfc9309.outcome.Outcome`.
"""

from __future__ import annotations

import ipaddress
import socket
import zlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.asyncio import run_in_thread
from w3lib.url import safe_url_string

from ._settings import positive_int, setting
from .outcome import (
    UNAVAILABLE,
    UNREACHABLE,
    Lifetimes,
    Outcome,
    kind_of_status,
    max_age,
    parsed,
    unavailable,
    unreachable,
)
from .parse import parse

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

__all__ = ["META_KEY", "RobotsFetcher"]

#: Request meta key marking this package's own robots.txt requests; the
#: value is the origin (its robots.txt URL) the request is fetched for.
META_KEY = "robots_txt_for"
# Where the _Body of a robots.txt request is kept.
_BODY_KEY = "_robots_txt_body"

PROFILES = ("rfc9309", "google")


def _redirect_target(base: str, location: bytes) -> str | None:
    """The http(s) URL a ``Location`` header points to, or ``None`` when it
    is malformed (bad IPv6 host, port out of range, ...) or another scheme."""
    try:
        url = urljoin(base, safe_url_string(location))
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return url


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # is_global is False for private, loopback, link-local (cloud metadata
    # at 169.254.169.254 included), shared (100.64/10), reserved and
    # unspecified addresses.
    return ip.is_global and not ip.is_multicast


def _resolve(host: str) -> list[str]:
    return sorted(
        {
            str(info[4][0])
            for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        }
    )


def _decoder(content_encoding: list[bytes]) -> Any:
    """A streaming zlib decoder for a gzip or deflate body, else ``None``."""
    if len(content_encoding) != 1:
        return None
    encoding = content_encoding[0].strip().lower()
    if encoding in (b"gzip", b"x-gzip", b"deflate"):
        # 32 + MAX_WBITS reads both the gzip and the zlib header.
        return zlib.decompressobj(32 + zlib.MAX_WBITS)
    return None


def _encodings(headers: Headers) -> list[bytes]:
    return [
        part.strip()
        for value in headers.getlist(b"Content-Encoding")
        for part in value.split(b",")
        if part.strip() and part.strip().lower() != b"identity"
    ]


class _Body:
    """A robots.txt body on its way, counted against ``ROBOTS_MAX_BYTES``.

    One per robots.txt request, shared by its retries (Scrapy copies meta
    into them); :meth:`start` begins each response.  A gzip or deflate body
    is counted by its decoded size, and decoded here as it arrives, so that
    a small gzip bomb stops as early as a large plain file and the decoded
    prefix is at hand when the transfer is cut.
    """

    __slots__ = ("_decoder", "_left", "compressed", "decoded", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.start([])

    def start(self, content_encoding: list[bytes]) -> None:
        self._left = self.limit
        self._decoder = _decoder(content_encoding)
        #: Whether the body is compressed in a way this class decodes.
        self.compressed = self._decoder is not None
        #: The decoded body so far (compressed bodies), at most limit + 1 bytes.
        self.decoded = bytearray()

    def spent_by(self, data: bytes) -> bool:
        """Take ``data`` in; whether the limit is now passed."""
        decoder = self._decoder
        if decoder is not None:
            try:
                # max_length bounds the work: one byte over the limit is
                # all it takes to know the body is too large.
                data = decoder.decompress(data, self._left + 1)
            except zlib.error:
                # Not what it claims to be: count it as it comes, and leave
                # it to HttpCompressionMiddleware.
                self._decoder = None
                self.compressed = False
            else:
                self.decoded += data
        self._left -= len(data)
        return self._left < 0


def _decoded(body: bytes, content_encoding: list[bytes], limit: int) -> bytes:
    """``body`` decoded when HttpCompressionMiddleware left it encoded
    (``COMPRESSION_ENABLED = False``), at most ``limit + 1`` bytes of it."""
    decoder = _decoder(content_encoding)
    if decoder is None:
        return body
    try:
        return bytes(decoder.decompress(body, limit + 1))
    except zlib.error:
        return body


class RobotsFetcher:
    """Fetches one origin's robots.txt and tells what came of it.

    ``lifetimes`` date the outcomes, ``clock`` (seconds since the epoch)
    is the time they are dated with.
    """

    def __init__(
        self, crawler: Crawler, *, lifetimes: Lifetimes, clock: Callable[[], float]
    ) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.lifetimes = lifetimes
        self.clock = clock
        self.profile = str(setting(settings, "ROBOTS_PROFILE")).strip().lower()
        if self.profile not in PROFILES:
            # Disabling the middleware on a typo would crawl without robots.txt.
            raise ValueError(
                f"ROBOTS_PROFILE must be one of {', '.join(map(repr, PROFILES))},"
                f" not {settings.get('ROBOTS_PROFILE')!r}"
            )
        self.max_bytes = positive_int(settings, "ROBOTS_MAX_BYTES", minimum=1)
        self.max_redirects = positive_int(settings, "ROBOTS_MAX_REDIRECTS", minimum=0)
        self.download_maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.ssrf_guard = settings.getbool(
            "ROBOTS_SSRF_GUARD", setting(settings, "ROBOTS_SSRF_GUARD")
        )
        self.stats = crawler.stats
        self._robots_in_flight = 0

    async def fetch(self, origin: str, previous: Outcome | None) -> Outcome:
        """Fetch ``origin`` (a robots.txt URL), following redirects."""
        self.stats.inc_value("robots/fetch_count")
        url = origin
        status = None
        # Redirects are followed here, one download per hop, rather than by
        # RedirectMiddleware: the hop limit is RFC 9309's, hops may leave
        # allowed_domains, and a spider's handle_httpstatus_* cannot stop it.
        for _ in range(self.max_redirects + 1):
            if self.ssrf_guard:
                refusal = await self._ssrf_refusal(url)
                if refusal:
                    return self._unreachable(previous, refusal)
            try:
                response = await self._download(url, origin)
            except IgnoreRequest as exc:
                # Another middleware refused to let robots.txt be fetched:
                # without it nothing is known, so the origin is unreachable.
                return self._unreachable(previous, f"robots.txt request ignored: {exc}")
            except Exception as exc:
                return self._unreachable(
                    previous, f"{type(exc).__name__}: {exc}".rstrip(": ")
                )
            status = response.status
            location = response.headers.get(b"Location")
            if 300 <= status < 400 and location:
                target = _redirect_target(response.url, location)
                if target is None:
                    # Nowhere robots.txt could be fetched from: not found.
                    return unavailable(
                        now=self.clock(),
                        lifetimes=self.lifetimes,
                        http_status=status,
                        detail=f"HTTP {status} to {location.decode('latin-1')!r}",
                    )
                url = target
                continue
            return self._classify(response, previous)
        return unavailable(
            now=self.clock(),
            lifetimes=self.lifetimes,
            http_status=status,
            detail=f"more than {self.max_redirects} redirects",
        )

    def _unreachable(
        self, previous: Outcome | None, detail: str, status: int | None = None
    ) -> Outcome:
        return unreachable(
            now=self.clock(),
            lifetimes=self.lifetimes,
            previous=previous,
            http_status=status,
            detail=detail,
        )

    def _classify(self, response: Response, previous: Outcome | None) -> Outcome:
        status = response.status
        if "dataloss" in response.flags:
            return self._unreachable(previous, "truncated body", status)
        kind = kind_of_status(status)
        if kind == UNREACHABLE:
            return self._unreachable(previous, f"HTTP {status}", status)
        cache_control = response.headers.get(b"Cache-Control")
        cache_max_age = max_age(
            None if cache_control is None else cache_control.decode("latin-1")
        )
        if kind == UNAVAILABLE:
            return unavailable(
                now=self.clock(),
                lifetimes=self.lifetimes,
                http_status=status,
                cache_max_age=cache_max_age,
            )
        body = response.body
        encodings = _encodings(response.headers)
        if encodings:
            body = _decoded(body, encodings, self.max_bytes)
        document = parse(body, profile=self.profile, max_bytes=self.max_bytes)
        detail = f"HTTP {status}"
        if len(body) > self.max_bytes:
            detail += f", cut at {self.max_bytes} bytes"
        return parsed(
            document,
            now=self.clock(),
            lifetimes=self.lifetimes,
            http_status=status,
            cache_max_age=cache_max_age,
            detail=detail,
        )

    async def _download(self, url: str, origin: str) -> Response:
        body = _Body(self.max_bytes)
        request = Request(
            url,
            callback=NO_CALLBACK,
            # The two encodings _Body decodes as they arrive.
            headers={"Accept-Encoding": "gzip, deflate"},
            meta={
                META_KEY: origin,
                _BODY_KEY: body,
                "dont_obey_robotstxt": True,
                "dont_redirect": True,
                "allow_offsite": True,
                # ROBOTS_MAX_BYTES is the limit: the body is cut there, and
                # DOWNLOAD_MAXSIZE never fails a robots.txt fetch.
                "download_maxsize": 0,
            },
            dont_filter=True,
        )
        self._track_bodies(+1)
        try:
            return await self.crawler.engine.download_async(request)
        except StopDownload as exc:
            # A compressed body cut at the limit (see _bytes_received): the
            # decoded prefix is _Body's, HttpCompressionMiddleware never saw it.
            if exc.response is None:
                raise
            headers = exc.response.headers.copy()
            headers.pop(b"Content-Encoding", None)
            return exc.response.replace(body=bytes(body.decoded), headers=headers)
        finally:
            self._track_bodies(-1)

    def _track_bodies(self, change: int) -> None:
        # The body signals fire for every response chunk of the crawl, so
        # they are only listened to while a robots.txt is on its way.
        connect = self.crawler.signals.connect
        if change < 0:
            connect = self.crawler.signals.disconnect
        before = self._robots_in_flight
        self._robots_in_flight += change
        if (before == 0) != (self._robots_in_flight == 0):
            connect(self._headers_received, signal=signals.headers_received)
            connect(self._bytes_received, signal=signals.bytes_received)

    def _headers_received(self, headers: Headers, request: Request) -> None:
        body = request.meta.get(_BODY_KEY)
        if body is None:
            return
        encodings = _encodings(headers)
        body.start(encodings)
        if encodings and not body.compressed:
            # An encoding _Body cannot decode (br, zstd, several at once),
            # sent although not asked for: HttpCompressionMiddleware decodes
            # the (cut) body within DOWNLOAD_MAXSIZE, as for any response.
            request.meta["download_maxsize"] = self.download_maxsize

    def _bytes_received(self, data: bytes, request: Request) -> None:
        body = request.meta.get(_BODY_KEY)
        if body is not None and body.spent_by(data):
            # A plain body goes on as a normal response, cut; a compressed
            # one fails the download so HttpCompressionMiddleware does not
            # decode all that arrived: its prefix is already decoded.
            raise StopDownload(fail=body.compressed)

    async def _ssrf_refusal(self, url: str) -> str | None:
        host = urlsplit(url).hostname
        if not host:
            return f"ROBOTS_SSRF_GUARD: no host in {url}"
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                addresses = await run_in_thread(_resolve, host)
            except OSError as exc:
                return f"DNS lookup of {host} failed: {exc}"
        for address in addresses:
            if not _is_public(address):
                return f"ROBOTS_SSRF_GUARD refused {host} ({address})"
        return None
