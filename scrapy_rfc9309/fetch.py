"""Fetching robots.txt over Scrapy: :class:`RobotsFetcher`.

One robots.txt is downloaded through ``engine.download_async``, so that the
project's downloader middlewares (proxy, auth, retry, cache, user agent)
apply, routed as the page request that needed it (:data:`ROUTING_META`);
redirects are followed here, hop by hop, under RFC 9309's limit; the
body is decoded here, whatever its ``Content-Encoding``, and bounded by
``ROBOTS_MAX_BYTES`` decoded (see :mod:`scrapy_rfc9309._decode`), the
transfer stopping as soon as that limit is certain; the optional SSRF guard
refuses private addresses; and the HTTP result becomes an
:class:`~scrapy_rfc9309.outcome.Outcome`.

Scrapy's HTTP cache (``HTTPCACHE_ENABLED``) answers robots.txt as any
request, but never for longer than the outcome's own lifetime: an answer
replayed from it is used only while the outcome it gives, dated when the
cache stored it, would still hold (see ``RobotsFetcher.answer``, which
the TDMRep file's fetch shares).

Scrapy's ``HttpCompressionMiddleware`` never decodes a robots.txt body: its
``Content-Encoding`` header is renamed :data:`ENCODING_HEADER` when the
response is downloaded, before any middleware sees it (and so is it in an
HTTP cache entry), and the body decoded here, within the limit.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.downloadermiddlewares.httpcache import HttpCacheMiddleware
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK

from ._closing import RobotsCancelled
from ._compat import DownloadTimeoutError, crawl_engine, download, run_in_thread
from ._config import RobotsConfig
from ._decode import ACCEPT_ENCODING, BoundedDecoder, codings, decode
from ._retryafter import http_date
from ._routing import ROUTING_META, ZyteApi, routing
from ._ssrf import is_public as _is_public
from .outcome import (
    UNREACHABLE,
    Answer,
    Lifetimes,
    Outcome,
    classify,
    one_value,
    unavailable,
    unreachable,
)
from .urls import http_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

__all__ = [
    "ENCODING_HEADER",
    "META_KEY",
    "REFUSED_HEADER",
    "ROUTING_META",
    "TRUNCATED_HEADER",
    "BodyTimeout",
    "Refused",
    "RobotsFetcher",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Request meta key marking this package's own robots.txt requests; the
#: value is the origin (its robots.txt URL) the request is fetched for.
META_KEY = "robots_txt_for"
# Where the _Body of a robots.txt request is kept.
_BODY_KEY = "_robots_txt_body"
#: The ``Content-Encoding`` of a robots.txt response, renamed so that no
#: downloader middleware decodes the body (this module does, bounded).
ENCODING_HEADER = b"X-Robots-Content-Encoding"
#: Added to a truncated answer (its ``dataloss`` flag) stored in Scrapy's
#: HTTP cache, which keeps no flags before Scrapy 2.19: its replay is
#: flagged again, never read as the whole file.
TRUNCATED_HEADER = b"X-Robots-Dataloss"
#: Added to an answer stored in Scrapy's HTTP cache that ``ROBOTS_SSRF_GUARD``
#: refused by the address it came from (the value: why): its replay, which
#: tells no address, is refused again rather than used.
REFUSED_HEADER = b"X-Robots-Refused-Address"


def _resolve(host: str) -> list[str]:
    return sorted(
        {
            str(info[4][0])
            for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        }
    )


class BodyTimeout(StopDownload, DownloadTimeoutError):
    """A robots.txt body still arriving ``timeout`` seconds (the request's
    ``download_timeout``) after its headers: the download fails as a timeout
    (retried as one, then an unreachable robots.txt).  Every download handler
    bounds a whole download by ``DOWNLOAD_TIMEOUT`` but httpx, which bounds
    each read, so that a server dripping the body held the fetch."""

    def __init__(self, timeout: float) -> None:
        super().__init__(fail=True)
        self.timeout = timeout

    def __str__(self) -> str:
        return f"robots.txt body not received within {self.timeout:g} s"


class _Body:
    """A robots.txt body on its way, decoded as it arrives.

    One per robots.txt request, shared by its retries and redirects (Scrapy
    copies meta into them); :meth:`start` begins each response, which must
    be in by ``deadline`` (a :func:`time.monotonic` time).
    """

    __slots__ = ("deadline", "decoder", "limit", "timeout")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.decoder: BoundedDecoder | None = None
        self.timeout = self.deadline = math.inf

    def start(self, headers: Headers, timeout: float | None) -> None:
        self.decoder = BoundedDecoder(headers.getlist(b"Content-Encoding"), self.limit)
        if timeout:
            self.timeout = timeout
            self.deadline = time.monotonic() + timeout

    def decoded(self, response: Response) -> BoundedDecoder:
        """The decoded body of ``response``: the one decoded as it arrived
        when that was all of it, else ``response.body`` decoded now (a
        response that did not stream: an HTTP cache hit, a handler without
        the bytes_received signal)."""
        decoder = self.decoder
        encodings = response.headers.getlist(ENCODING_HEADER)
        if (
            decoder is None
            or decoder.encoded != len(response.body)
            or decoder.codings != codings(encodings)
        ):
            return decode(response.body, encodings, self.limit)
        decoder.end()
        return decoder


class Refused(Exception):
    """Another component refused the robots.txt request: a downloader
    middleware (HTTP cache ignoring what it lacks, a URL filter, a user's
    own) raised ``IgnoreRequest`` for it.  Nothing was asked of the server,
    so what it means is the caller's policy (``ROBOTS_REFUSED``)."""

    def __init__(self, url: str, reason: IgnoreRequest) -> None:
        super().__init__(f"<GET {url}> refused: {_reason(reason)}")
        self.url = url
        self.reason = reason


# The most of an exception's text a reason (logged with each request it
# drops) keeps.
_REASON_CHARS = 300


def _reason(exc: BaseException) -> str:
    """``exc`` in one bounded line: its type and text; for an HTTP error of
    an API between the crawl and the site (aiohttp's ``ClientResponseError``,
    as scrapy-zyte-api raises Zyte API's), its status and error type rather
    than the headers and body its text holds."""
    name = type(exc).__name__
    status = getattr(exc, "status", None)
    if isinstance(status, int) and hasattr(exc, "request_info"):
        try:
            kind = getattr(getattr(exc, "parsed", None), "type", None)
        except Exception:  # a body that does not parse
            kind = None
        text = f"HTTP {status} {kind or getattr(exc, 'message', '') or ''}"
    else:
        text = str(exc)
        if text.startswith(f"{name}: "):
            text = text[len(name) + 2 :]
    reason = f"{name}: {text.strip()}".rstrip(": ")
    if len(reason) > _REASON_CHARS:
        reason = reason[: _REASON_CHARS - 1] + "\u2026"
    return reason


def _stored_at(response: Response) -> float | None:
    """When Scrapy's HTTP cache stored ``response`` (seconds since the
    epoch): the ``cache_timestamp`` its storage gives (Scrapy 2.19), else
    the ``Date`` header, which HttpCacheMiddleware adds to a response
    without one before storing it; ``None`` when neither tells."""
    request = response.request
    stamp = None if request is None else request.meta.get("cache_timestamp")
    if (
        isinstance(stamp, (int, float))
        and not isinstance(stamp, bool)
        and math.isfinite(stamp)
    ):
        return float(stamp)
    date = response.headers.get(b"Date")
    return http_date(date) if date else None


class RobotsFetcher:
    """Fetches one origin's robots.txt and tells what came of it.

    ``lifetimes`` date the outcomes, ``clock`` (seconds since the epoch)
    is the time they are dated with.
    """

    def __init__(
        self, crawler: Crawler, *, lifetimes: Lifetimes, clock: Callable[[], float]
    ) -> None:
        config = RobotsConfig.for_crawler(crawler)
        self.crawler = crawler
        self.lifetimes = lifetimes
        self.clock = clock
        self.profile = config.profile
        self.max_bytes = config.max_bytes
        self.max_redirects = config.max_redirects
        self.ssrf_guard = config.ssrf_guard
        self.zyte_api = ZyteApi.from_settings(crawler.settings)
        self.stats = crawler.stats
        self._robots_in_flight = 0

    async def fetch(
        self, origin: str, previous: Outcome | None, *, via: Request | None = None
    ) -> Outcome:
        """Fetch ``origin`` (a robots.txt URL), following redirects, each
        hop routed as ``via`` (the request that needed it; see
        :data:`ROUTING_META`).

        Raises :class:`Refused` when a component of the crawl refuses one
        of the requests (``IgnoreRequest``).
        """
        self.stats.inc_value("robots/fetch_count")
        url = origin
        status = None
        # Redirects are followed here, one download per hop, rather than by
        # RedirectMiddleware: the hop limit is RFC 9309's, hops may leave
        # allowed_domains, and a spider's handle_httpstatus_* cannot stop it.
        for _ in range(self.max_redirects + 1):
            try:
                if self.ssrf_guard:
                    refusal = await self._ssrf_refusal(url)
                    if refusal:
                        return self.guard_refused(previous, refusal)
                response, decoded, replayed = await self.answer(
                    url,
                    origin,
                    via,
                    lambda response, decoded, stored, now: self._held(
                        response, decoded, previous, stored, now
                    ),
                )
                refusal = self.address_refusal(response.request, response)
                if refusal:
                    return self.guard_refused(previous, refusal)
            except RobotsCancelled:
                raise  # the crawl closes: nothing came of it
            except IgnoreRequest as exc:
                # Not the server's answer but a component of this crawl's:
                # the caller decides what it means.
                raise Refused(url, exc) from exc
            except Exception as exc:
                # As Scrapy's RobotsTxtMiddleware logs it, for whoever watches
                # for errors; the outcome (unreachable) is logged by the caller.
                self.stats.inc_value(f"robots/fetch_error/{type(exc).__name__}")
                logger.error(
                    "Error downloading %(request)s: %(reason)s",
                    {"request": f"<GET {url}>", "reason": _reason(exc)},
                    extra={"spider": self.crawler.spider},
                )
                return self._outcome(_reason(exc), previous)
            status = response.status
            location = response.headers.get(b"Location")
            if 300 <= status < 400 and location:
                target = http_url(response.url, location)
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
            if replayed is not None:
                return replayed
            return self._classify(response, decoded, previous)
        return unavailable(
            now=self.clock(),
            lifetimes=self.lifetimes,
            http_status=status,
            detail=f"more than {self.max_redirects} redirects",
        )

    def _outcome(
        self,
        answer: Answer | str,
        previous: Outcome | None,
        fetched_at: float | None = None,
    ) -> Outcome:
        return classify(
            answer,
            profile=self.profile,
            max_bytes=self.max_bytes,
            now=self.clock() if fetched_at is None else fetched_at,
            lifetimes=self.lifetimes,
            previous=previous,
        )

    def guard_refused(self, previous: Outcome | None, detail: str) -> Outcome:
        """The outcome of an origin ``ROBOTS_SSRF_GUARD`` refuses: unreachable,
        and never allowed by the 30-day rule."""
        return unreachable(
            now=self.clock(),
            lifetimes=self.lifetimes,
            previous=previous,
            detail=detail,
            guard_refused=True,
        )

    async def answer(
        self,
        url: str,
        origin: str,
        via: Request | None,
        held: Callable[[Response, BoundedDecoder, float, float], _T | None],
        *,
        meta: dict[str, Any] | None = None,
    ) -> tuple[Response, BoundedDecoder, _T | None]:
        """Download ``url`` for ``origin`` (a robots.txt, or the TDMRep
        file: see :meth:`download`; ``meta``: more request meta) routed as
        ``via`` (:data:`ROUTING_META`): the response, its body decoded, and,
        for an answer replayed from Scrapy's HTTP cache that is not a
        redirect, what ``held`` made of it.

        ``held(response, decoded, stored, now)`` says what a replayed answer
        gives, dated ``stored`` (when the cache stored it), if that still
        holds at ``now``: never a temporary failure (a 5xx, a 429, RFC 9309
        2.3.1.4), nor past its lifetime (``ROBOTS_CACHE_LIFETIME``, or a
        shorter ``Cache-Control``); ``None`` otherwise.  A redirect is
        followed while younger than ``ROBOTS_CACHE_LIFETIME``.  Else (or
        when its age is unknown) ``url`` is downloaded again past the cache
        (``dont_cache``), counted in ``robots/httpcache/bypassed``, and the
        new answer stored in the cache in its place (:meth:`_recache`).
        """
        route, headers = routing(via, self.zyte_api)
        meta = {**route, **(meta or {})}
        response, decoded = await self.download(url, origin, meta=meta, headers=headers)
        self.mark_truncation(response)
        if "cached" not in response.flags:
            return response, decoded, None
        now = self.clock()
        stored = _stored_at(response)
        if stored is not None and stored > now:
            # A server's Date ahead of the clock tells no age: taken as now,
            # the answer would be replayed as fresh in every run, for ever.
            stored = None
        if stored is not None:
            if 300 <= response.status < 400 and response.headers.get(b"Location"):
                if now - stored < self.lifetimes.cache:
                    return response, decoded, None
            else:
                replayed = held(response, decoded, stored, now)
                if replayed is not None:
                    return response, decoded, replayed
        self.stats.inc_value("robots/httpcache/bypassed")
        logger.debug(
            "Downloading %(request)s again: the HTTP cache's answer (HTTP"
            " %(status)s, stored %(age)s) is not used",
            {
                "request": f"<GET {url}>",
                "status": response.status,
                "age": "at an unknown time"
                if stored is None
                else f"{now - stored:.0f} s ago",
            },
            extra={"spider": self.crawler.spider},
        )
        response, decoded = await self.download(
            url, origin, meta={**meta, "dont_cache": True}, headers=headers
        )
        self._recache(response)
        return response, decoded, None

    def mark_truncation(self, response: Response) -> None:
        """Keep a truncated answer known as one across Scrapy's HTTP cache,
        which keeps no flags before Scrapy 2.19: a download whose
        ``dataloss`` flag and :data:`TRUNCATED_HEADER` disagree (a server
        may send the header) is stored again, marked as it is; a replay
        marked truncated gets its ``dataloss`` flag back."""
        truncated = "dataloss" in response.flags
        if "cached" not in response.flags:
            if truncated != (TRUNCATED_HEADER in response.headers):
                self._recache(response, again=True)
        elif TRUNCATED_HEADER in response.headers and not truncated:
            response.flags.append("dataloss")

    def _held(
        self,
        response: Response,
        decoded: BoundedDecoder,
        previous: Outcome | None,
        stored: float,
        now: float,
    ) -> Outcome | None:
        """The outcome of a robots.txt replayed from the HTTP cache, dated
        ``stored``, while it holds at ``now`` (see :meth:`answer`)."""
        outcome = self._classify(response, decoded, previous, stored)
        if outcome.kind != UNREACHABLE and outcome.expires_at > now:
            return outcome
        return None

    def _recache(
        self,
        response: Response,
        request: Request | None = None,
        *,
        again: bool = False,
        refusal: str | None = None,
    ) -> None:
        """Store ``response``, downloaded past Scrapy's HTTP cache, in the
        cache in place of the answer not used, as HttpCacheMiddleware stores
        an answer (its policy's ``should_cache_response``, a ``Date`` added,
        ``httpcache/store``); ``dont_cache`` kept it from doing so.  Else the
        stale entry would be replayed and bypassed in every later crawl, and
        an offline replay would never have the new answer.  A truncated
        answer is stored with :data:`TRUNCATED_HEADER`, any other without;
        one the SSRF guard refused (``refusal``: why) with
        :data:`REFUSED_HEADER`, any other without.  ``again``:
        HttpCacheMiddleware stored (and counted) it already.  ``request``:
        the one ``response`` answers, if not yet its ``request`` (as in a
        downloader middleware's ``process_response``)."""
        if crawl_engine(self.crawler) is None:
            return  # no crawl, so no cache
        cache = self.crawler.get_downloader_middleware(HttpCacheMiddleware)
        request = request or response.request
        if cache is None or request is None:
            return
        if b"Date" not in response.headers:
            response.headers[b"Date"] = formatdate(usegmt=True)
        truncated = "dataloss" in response.flags
        if (
            truncated != (TRUNCATED_HEADER in response.headers)
            or refusal is not None
            or REFUSED_HEADER in response.headers
        ):
            headers = response.headers.copy()
            for name in (TRUNCATED_HEADER, REFUSED_HEADER):
                headers.pop(name, None)
            if truncated:
                headers[TRUNCATED_HEADER] = b"1"
            if refusal is not None:
                headers[REFUSED_HEADER] = refusal
            response = response.replace(headers=headers)
        try:
            if cache.policy.should_cache_response(response, request):
                cache.storage.store_response(self.crawler.spider, request, response)
                if not again:
                    self.stats.inc_value("httpcache/store")
        except Exception as exc:
            # The answer came all the same: it is used, only not kept.
            logger.warning(
                "Could not store %(request)s in the HTTP cache: %(error)s",
                {"request": request, "error": _reason(exc)},
                extra={"spider": self.crawler.spider},
            )

    def _classify(
        self,
        response: Response,
        decoded: BoundedDecoder,
        previous: Outcome | None,
        fetched_at: float | None = None,
    ) -> Outcome:
        """The outcome of ``response``, dated ``fetched_at`` (default now)."""
        answer = Answer(
            response.status,
            decoded.body,
            cache_control=one_value(response.headers.getlist(b"Cache-Control")),
            truncated="dataloss" in response.flags,
            cut=decoded.cut,
            overrun=decoded.overrun,
            error=decoded.error,
        )
        return self._outcome(answer, previous, fetched_at)

    async def download(
        self,
        url: str,
        origin: str,
        *,
        redirects: bool = False,
        meta: dict[str, Any] | None = None,
        headers: dict[str, bytes] | None = None,
    ) -> tuple[Response, BoundedDecoder]:
        """Download ``url`` for ``origin``'s robots.txt: the response (its
        body as it came, encoded, no more of it than it took to know the
        limit was passed) and its body decoded, at most ``ROBOTS_MAX_BYTES
        + 1`` bytes (``cut`` past the limit, ``error`` if undecodable).

        ``redirects``: let RedirectMiddleware follow them (the ``lint``
        command, the TDMRep file), rather than returning the 3xx; ``meta``:
        more request meta (a ``download_timeout``, a ``proxy``);
        ``headers``: more request headers (a ``Proxy-Authorization``).
        """
        body = _Body(self.max_bytes)
        request = Request(
            url,
            callback=NO_CALLBACK,
            # What _Body decodes; others are sent anyway by some servers.
            headers={"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})},
            meta={
                META_KEY: origin,
                _BODY_KEY: body,
                "dont_obey_robotstxt": True,
                "dont_redirect": not redirects,
                "allow_offsite": True,
                # ROBOTS_MAX_BYTES is the limit, counted decoded: the transfer
                # stops there, DOWNLOAD_MAXSIZE never fails a robots.txt, and
                # DOWNLOAD_WARNSIZE never warns of one.
                "download_maxsize": 0,
                "download_warnsize": 0,
                **(meta or {}),
            },
            dont_filter=True,
        )
        self._track_bodies(+1)
        try:
            response = await download(self.crawler, request)
        finally:
            self._track_bodies(-1)
        return response, body.decoded(response)

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
            connect(self._response_downloaded, signal=signals.response_downloaded)

    def _headers_received(self, headers: Headers, request: Request) -> None:
        body = request.meta.get(_BODY_KEY)
        # Only the fetcher's own requests carry a _Body (the key is no
        # promise to others' requests).
        if not isinstance(body, _Body):
            return
        body.start(headers, request.meta.get("download_timeout"))
        if body.decoder is not None and body.decoder.done:
            # An encoding that cannot be decoded: no use reading the body.
            raise StopDownload(fail=False)

    def _bytes_received(self, data: bytes, request: Request) -> None:
        body = request.meta.get(_BODY_KEY)
        if not isinstance(body, _Body) or body.decoder is None:
            return
        if time.monotonic() > body.deadline:
            raise BodyTimeout(body.timeout)
        decoder = body.decoder
        # Past the limit, undecodable, or bytes after the end of the encoded
        # stream: what came so far is the response, the rest is not read.
        # (A stream that ends with the body is let finish normally.)
        if decoder.done or (
            decoder.feed(data) and (decoder.cut or decoder.error is not None)
        ):
            raise StopDownload(fail=False)

    def _response_downloaded(self, response: Response | None, request: Request) -> None:
        # Sent before any downloader middleware's process_response: with the
        # header renamed, HttpCompressionMiddleware leaves the body alone.
        # (scrapy-zyte-api's handler gives None for a body over
        # DOWNLOAD_MAXSIZE: the download then fails.)
        if response is not None and isinstance(request.meta.get(_BODY_KEY), _Body):
            encodings = response.headers.pop(b"Content-Encoding", None)
            if encodings is not None:
                response.headers.setlist(ENCODING_HEADER, encodings)

    async def guard_refusal(self, url: str) -> str | None:
        """Why ``ROBOTS_SSRF_GUARD`` refuses ``url``'s host; ``None`` when it
        does not (or the guard is off).  A host whose lookup fails now is
        refused: what it resolves to cannot be checked."""
        if not self.ssrf_guard:
            return None
        try:
            return await self._ssrf_refusal(url)
        except OSError as exc:
            return (
                f"ROBOTS_SSRF_GUARD could not look up {urlsplit(url).hostname}: {exc}"
            )

    def address_refusal(
        self, request: Request | None, response: Response
    ) -> str | None:
        """Why ``ROBOTS_SSRF_GUARD`` refuses the address ``response`` (to
        ``request``) came from: a name found public when checked, then
        reached at another address by the download (DNS rebinding); its
        answer is not used, and is kept in Scrapy's HTTP cache marked with
        :data:`REFUSED_HEADER`, so that its replay is refused again.
        ``None`` when the guard is off, through a proxy (the address is the
        proxy's) or when the download handler tells no address."""
        if not self.ssrf_guard:
            return None
        if "cached" in response.flags:
            marked = response.headers.get(REFUSED_HEADER)
            if marked is None:
                return None
            return f"{marked.decode('utf-8', 'replace')}, replayed from the HTTP cache"
        address = response.ip_address
        refusal = None
        if (
            address is not None
            and not (request is not None and request.meta.get("proxy"))
            and not _is_public(str(address))
        ):
            host = urlsplit(response.url).hostname
            refusal = (
                f"ROBOTS_SSRF_GUARD refused {host} ({address}, reached after the check)"
            )
        if refusal is not None or REFUSED_HEADER in response.headers:
            # What HttpCacheMiddleware stored is replaced: marked refused, or
            # without a mark the server sent itself.
            self._recache(response, request, again=True, refusal=refusal)
        return refusal

    async def _ssrf_refusal(self, url: str) -> str | None:
        host = urlsplit(url).hostname
        if not host:
            return f"ROBOTS_SSRF_GUARD: no host in {url}"
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            # A failed lookup (OSError) is the download's failure, as it
            # would have been without the guard.
            addresses = await run_in_thread(_resolve, host)
        for address in addresses:
            if not _is_public(address):
                return f"ROBOTS_SSRF_GUARD refused {host} ({address})"
        return None
