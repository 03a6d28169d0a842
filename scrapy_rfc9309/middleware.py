"""``RobotsMiddleware``: RFC 9309 in a Scrapy crawl.

For each origin (scheme, host, port) it fetches ``/robots.txt`` once per
lifetime, through ``engine.download_async`` so that the project's downloader
middlewares (proxy, auth, retry, cache, user agent) apply, turns the result
into an :class:`~scrapy_rfc9309.outcome.Outcome` and judges every request of
the origin by it.  Requests arriving while the file is on its way wait for
it, each on its own awaitable.  The origin's Crawl-delay is applied to its
downloader slot, and origins whose Content-Signal refuses a purpose of the
crawl are not crawled.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
import zlib
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.asyncio import run_in_thread, sleep
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred
from w3lib.url import safe_url_string

from . import signals as robots_signals
from ._settings import (
    choice,
    flag,
    positive_int,
    purposes,
    robots_profile,
    robots_user_agent,
    seconds,
    setting,
)
from .match import Decision
from .outcome import (
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    Lifetimes,
    Outcome,
    explain_compiled,
    kind_of_status,
    max_age,
    parsed,
    unavailable,
    unreachable,
)
from .parse import parse, product_token
from .profiles import RULES, selector_for
from .stores import STORES
from .stores.base import OutcomeStore, StoreError
from .stores.memory import Entry, MemoryStore
from .stringify import rule_line
from .urls import robots_url

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.core.downloader import Downloader
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response
    from typing_extensions import Self

__all__ = ["META_KEY", "RobotsDisallowed", "RobotsMiddleware"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Request meta key marking this middleware's own robots.txt requests; the
#: value is the origin (its robots.txt URL) the request is fetched for.
META_KEY = "robots_txt_for"
# Where the _Body of a robots.txt request is kept.
_BODY_KEY = "_robots_txt_body"


class RobotsDisallowed(IgnoreRequest):
    """A request dropped because of its origin's robots.txt.

    ``decision`` is the :class:`~scrapy_rfc9309.match.Decision` (its
    ``rule`` is the deciding rule, with its line, when there is one),
    ``origin`` the robots.txt URL, and ``cause`` one of ``rule``,
    ``unreachable``, ``crawl_delay`` and ``content_signal``.
    """

    def __init__(self, decision: Decision, origin: str, cause: str) -> None:
        super().__init__(f"Forbidden by robots.txt ({cause}): {origin}")
        self.decision = decision
        self.origin = origin
        self.cause = cause

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.decision, self.origin, self.cause))


@lru_cache(maxsize=65_536)
def _origin_of(scheme: str, netloc: str) -> str | None:
    # robots_url only looks at scheme and authority, so one answer per
    # (scheme, netloc) serves every request of the origin.
    return robots_url(f"{scheme}://{netloc}/")


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


class RobotsMiddleware:
    """Downloader middleware obeying RFC 9309 robots.txt (see the README).

    ``clock`` (seconds since the epoch, default :func:`time.time`) is what
    lifetimes are measured with; tests replace it.
    """

    clock: Callable[[], float] = staticmethod(time.time)

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not flag(settings, "ROBOTS_ENABLED"):
            raise NotConfigured("ROBOTS_ENABLED is off")
        self.crawler = crawler
        self.user_agent = robots_user_agent(settings, crawler.spider)
        self.profile = robots_profile(settings)
        try:
            selector_for(self.profile, product_token(self.user_agent))
        except ValueError as exc:
            # A bounded profile answering for another agent would answer
            # under the wrong semantics.
            raise ValueError(
                f"ROBOTS_USER_AGENT {self.user_agent!r} does not suit"
                f" ROBOTS_PROFILE {self.profile!r}: {exc}"
            ) from None
        self.max_bytes = positive_int(settings, "ROBOTS_MAX_BYTES", minimum=1)
        self.max_redirects = positive_int(settings, "ROBOTS_MAX_REDIRECTS", minimum=0)
        self.lifetimes = Lifetimes(
            cache=seconds(settings, "ROBOTS_CACHE_LIFETIME"),
            unreachable=seconds(settings, "ROBOTS_UNREACHABLE_LIFETIME"),
            grace=seconds(settings, "ROBOTS_UNREACHABLE_GRACE"),
        )
        self.crawl_delay_enabled = flag(settings, "ROBOTS_CRAWL_DELAY")
        self.crawl_delay_max = seconds(settings, "ROBOTS_CRAWL_DELAY_MAX")
        over_max = choice(settings, "ROBOTS_CRAWL_DELAY_OVER_MAX", ("clamp", "skip"))
        self.skip_over_max = over_max == "skip"
        #: The purposes this crawl is for (``ROBOTS_CONTENT_SIGNALS`` set true).
        self.purposes = purposes(settings, "ROBOTS_CONTENT_SIGNALS")
        self.download_maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.ssrf_guard = flag(settings, "ROBOTS_SSRF_GUARD")
        # A lease is held for one fetch: redirects and retries included.
        timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0) or 180.0
        self.lease_ttl = timeout * 2
        self.lease_wait = timeout * 2

        self.stats = crawler.stats
        store = _build_store(crawler)
        if isinstance(store, MemoryStore):
            self.memory, self.store = store, None
        else:
            self.memory = MemoryStore.from_crawler(crawler)
            self.store = store
        self.memory.clock = self._now

        # Origin -> the waiters of its robots.txt fetch in flight.
        self._pending: dict[str, list[Deferred[Entry]]] = {}
        self._robots_in_flight = 0
        # Downloader slot key -> the Crawl-delay it must keep.
        self._slot_delays: dict[str, float] = {}
        self._delayed_origins: set[str] = set()
        self._downloader: Downloader | None = None
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _now(self) -> float:
        return self.clock()

    # -- deciding -------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        """Drop ``request`` (:class:`RobotsDisallowed`) unless robots.txt allows it."""
        # The per-request path, written for speed: with the origin's outcome
        # in memory and fresh, this is a dict lookup and a matcher call.
        if request.meta.get("dont_obey_robotstxt"):
            return
        parts = urlparse_cached(request)
        origin = _origin_of(parts.scheme, parts.netloc)
        if origin is None:
            # data:, file:, ftp:, s3: ... have no robots.txt to ask.
            return
        entry = self.memory.entry(origin)
        now = self.clock()
        if entry is None or entry.outcome.expires_at <= now:
            entry = await self._obtain(origin, request)
            now = self.clock()
        outcome = entry.outcome
        decision = explain_compiled(outcome, entry.matcher, request.url, now)
        if not decision.allowed:
            self._forbid(
                request,
                origin,
                decision,
                "unreachable" if decision.reason == UNREACHABLE else "rule",
                outcome,
            )
        matcher = entry.matcher
        if matcher is None or outcome.disallows_all(now):
            return
        if self.purposes:
            content_signals = matcher.content_signals
            for purpose in self.purposes:
                if content_signals.get(purpose) is False:
                    self._forbid(
                        request,
                        origin,
                        Decision(False, "content_signal", None),
                        "content_signal",
                        outcome,
                        f"Content-Signal {purpose}=no",
                    )
        delay = matcher.crawl_delay
        if delay and self.crawl_delay_enabled:
            if delay > self.crawl_delay_max:
                if self.skip_over_max:
                    self._forbid(
                        request,
                        origin,
                        Decision(False, "crawl_delay", None),
                        "crawl_delay",
                        outcome,
                        f"Crawl-delay {delay:g} over ROBOTS_CRAWL_DELAY_MAX"
                        f" {self.crawl_delay_max:g}",
                    )
                delay = self.crawl_delay_max
            if delay > 0:
                self._keep_delay(request, origin, delay)

    async def outcome_for(
        self, url: str, request: Request | None = None
    ) -> Outcome | None:
        """The outcome of ``url``'s origin, fetched if missing or stale.

        ``None`` for a URL without a robots.txt (not http or https).  The
        outcome is the one kept in memory: what answers for the crawl's
        agent.  ``request`` is the request it is needed for (passed on to
        the ``robots_outcome`` signal), by default a GET of ``url``.
        """
        origin = robots_url(url)
        if origin is None:
            return None
        entry = self.memory.entry(origin)
        if entry is None or entry.outcome.expires_at <= self.clock():
            entry = await self._obtain(origin, request or Request(url))
        return entry.restored()

    def _forbid(
        self,
        request: Request,
        origin: str,
        decision: Decision,
        cause: str,
        outcome: Outcome,
        why: str = "",
    ) -> NoReturn:
        self.stats.inc_value("robots/forbidden")
        self.stats.inc_value(f"robots/forbidden/{cause}")
        rule = decision.rule
        if rule is not None:
            why = f"line {rule.line}: {rule_line(rule)}"
        elif not why:
            why = (
                f"{outcome.kind}, {outcome.detail}" if outcome.detail else outcome.kind
            )
        logger.debug(
            "Forbidden by robots.txt: %(request)s (%(robots)s %(why)s)",
            {"request": request, "robots": origin, "why": why},
            extra={"spider": self.crawler.spider},
        )
        raise RobotsDisallowed(decision, origin, cause)

    # -- obtaining outcomes ---------------------------------------------------

    async def _obtain(self, origin: str, request: Request) -> Entry:
        """The fresh entry of ``origin``, fetching robots.txt once for all
        the requests that need it meanwhile."""
        # Each waiter gets its own Deferred: a Deferred awaited by several
        # coroutines gives its result to the first one only.
        waiter: Deferred[Entry] = Deferred()
        waiters = self._pending.get(origin)
        if waiters is None:
            self._pending[origin] = [waiter]
            # Its own task, so that one request being cancelled does not
            # cancel the fetch the others wait for.
            deferred_from_coro(self._refresh(origin, request))
        else:
            waiters.append(waiter)
        return await maybe_deferred_to_future(waiter)

    async def _refresh(self, origin: str, request: Request) -> None:
        entry: Entry | None = None
        try:
            entry = await self._fresh_entry(origin, request)
        except Exception:
            logger.error(
                "Error obtaining %(origin)s; judging it unreachable",
                {"origin": origin},
                exc_info=True,
                extra={"spider": self.crawler.spider},
            )
            outcome = unreachable(
                now=self.clock(), lifetimes=self.lifetimes, detail="internal error"
            )
            entry = self.memory.store(origin, outcome)
        finally:
            for waiter in self._pending.pop(origin, ()):
                if waiter.called:  # its request was cancelled
                    continue
                if entry is None:
                    waiter.errback(
                        IgnoreRequest(f"The fetch of {origin} was cancelled")
                    )
                else:
                    waiter.callback(entry)

    async def _fresh_entry(self, origin: str, request: Request) -> Entry:
        now = self.clock()
        known = self.memory.entry(origin)
        previous = None if known is None else known.restored()
        leased = False
        if self.store is not None:
            stored = await self._store_call(lambda store: store.get(origin), None)
            if stored is not None:
                if stored.expires_at > now:
                    return self._obtained(origin, stored, request)
                # The stored outcome holds whole documents, the memory one
                # only this crawl's agent: the 30-day rule keeps the former.
                if previous is None or stored.fetched_at >= previous.fetched_at:
                    previous = stored
            if self.store is not None and self.store.shared:
                leased = await self._store_call(
                    lambda store: store.acquire(origin, self.lease_ttl), False
                )
                if not leased:
                    waited = await self._wait_for_holder(origin)
                    if isinstance(waited, Outcome):
                        return self._obtained(origin, waited, request)
                    leased = waited
                if leased:
                    # Another process may have put its outcome and let the
                    # lease go between the lookup above and the acquire.
                    stored = await self._store_call(
                        lambda store: store.get(origin), None
                    )
                    if stored is not None and stored.expires_at > self.clock():
                        await self._store_call(
                            lambda store: store.release(origin), None
                        )
                        return self._obtained(origin, stored, request)
        try:
            outcome = await self._fetch(origin, previous)
            entry = self._obtained(origin, outcome, request)
            await self._store_call(lambda store: store.put(origin, outcome), None)
        finally:
            if leased:
                await self._store_call(lambda store: store.release(origin), None)
        return entry

    async def _wait_for_holder(self, origin: str) -> Outcome | bool:
        """Poll the shared store while another process fetches ``origin``.

        The fresh outcome it put, or whether the lease was taken over (its
        holder gave up or died), or ``False`` when the wait ran out.
        """
        deadline = time.monotonic() + self.lease_wait
        interval = 0.05
        while time.monotonic() < deadline and self.store is not None:
            await sleep(interval)
            interval = min(interval * 2, 1.0)
            stored = await self._store_call(lambda store: store.get(origin), None)
            if stored is not None and stored.expires_at > self.clock():
                return stored
            if await self._store_call(
                lambda store: store.acquire(origin, self.lease_ttl), False
            ):
                return True
        return False

    def _obtained(self, origin: str, outcome: Outcome, request: Request) -> Entry:
        entry = self.memory.store(origin, outcome)
        self.stats.inc_value(f"robots/outcome/{outcome.kind}")
        if outcome.kind != PARSED:
            if outcome.kind == UNAVAILABLE:
                effect = "every URL allowed"
            elif outcome.disallows_all(self.clock()):
                effect = "every URL disallowed for now"
            elif outcome.fallback is not None:
                effect = "unreachable for too long, judged by its last robots.txt"
            else:
                effect = "unreachable for too long, every URL allowed"
            logger.info(
                "robots.txt %(origin)s is %(kind)s (%(detail)s): %(effect)s",
                {
                    "origin": origin,
                    "kind": outcome.kind,
                    "detail": outcome.detail,
                    "effect": effect,
                },
                extra={"spider": self.crawler.spider},
            )
        self.crawler.signals.send_catch_log(
            signal=robots_signals.robots_outcome,
            origin=origin,
            outcome=outcome,
            request=request,
        )
        return entry

    # -- fetching -------------------------------------------------------------

    async def _fetch(self, origin: str, previous: Outcome | None) -> Outcome:
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
                return self._network_failure(
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

    def _network_failure(
        self, previous: Outcome | None, detail: str, status: int | None = None
    ) -> Outcome:
        """The outcome of no complete answer, as the profile says."""
        if RULES[self.profile].status["network"] == UNAVAILABLE:
            return unavailable(
                now=self.clock(),
                lifetimes=self.lifetimes,
                http_status=status,
                detail=detail,
            )
        return self._unreachable(previous, detail, status)

    def _classify(self, response: Response, previous: Outcome | None) -> Outcome:
        status = response.status
        if "dataloss" in response.flags:
            return self._network_failure(previous, "truncated body", status)
        kind = kind_of_status(status, self.profile)
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
        rules_of = RULES[self.profile]
        limit = min(self.max_bytes, rules_of.max_bytes or self.max_bytes)
        if len(body) > limit and rules_of.status["oversize"] == UNAVAILABLE:
            # Profile hook: Yandex reads a body over its limit as none.
            return unavailable(
                now=self.clock(),
                lifetimes=self.lifetimes,
                http_status=status,
                cache_max_age=cache_max_age,
                detail=f"HTTP {status}, body over {limit} bytes",
            )
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

    # -- Crawl-delay ----------------------------------------------------------

    def _keep_delay(self, request: Request, origin: str, delay: float) -> None:
        downloader = self._downloader
        if downloader is None:
            downloader = self._downloader = self.crawler.engine.downloader
        if origin not in self._delayed_origins:
            self._delayed_origins.add(origin)
            self.stats.inc_value("robots/crawl_delay/origins")
        key = downloader.get_slot_key(request)
        if self._slot_delays.get(key, 0.0) >= delay:
            return
        if not self._slot_delays:
            self.crawler.signals.connect(
                self._enforce_delay, signal=signals.request_reached_downloader
            )
            # Connected after AutoThrottle's handler, so it runs after it
            # and undoes any delay lowered below the Crawl-delay.
            self.crawler.signals.connect(
                self._enforce_delay, signal=signals.response_downloaded
            )
        # Origins sharing a slot (http and https, other ports) share its
        # delay: the largest of theirs.
        self._slot_delays[key] = delay
        self._raise_slot_delay(key, delay)
        logger.debug(
            "Crawl-delay %(delay)s s of %(origin)s applied to slot %(slot)s",
            {"delay": delay, "origin": origin, "slot": key},
            extra={"spider": self.crawler.spider},
        )

    def _enforce_delay(self, request: Request) -> None:
        """Keep the slot of ``request`` at least at its Crawl-delay.

        Run when a request reaches the downloader and after each response:
        a slot dropped for being idle comes back with the default delay,
        AutoThrottle rewrites ``slot.delay`` after each response, and a
        jitter would make some gaps shorter than the delay.
        """
        key = request.meta.get("download_slot")
        if key is not None:
            delay = self._slot_delays.get(key)
            if delay is not None:
                self._raise_slot_delay(key, delay)

    def _raise_slot_delay(self, key: str, delay: float) -> None:
        assert self._downloader is not None
        slot = self._downloader.slots.get(key)
        if slot is None:
            return
        if not hasattr(slot, "jitter"):
            # Scrapy < 2.19: a boolean randomize_delay (0.5x to 1.5x).
            if slot.delay < delay or slot.delay * 0.5 < delay:
                slot.delay = max(slot.delay, delay)
                slot.randomize_delay = False
            return
        if slot.delay < delay:
            slot.delay = delay
            slot.jitter = 0.0
        elif slot.jitter and slot.delay * (1 - slot.jitter) < delay:
            # A higher DOWNLOAD_DELAY keeps as much of its jitter as leaves
            # every gap at least the Crawl-delay.
            slot.jitter = 1 - delay / slot.delay

    # -- the store ------------------------------------------------------------

    async def _store_call(
        self, call: Callable[[OutcomeStore], Awaitable[_T]], default: _T
    ) -> _T:
        """``call`` the configured store; on failure, go on with memory alone."""
        store = self.store
        if store is None:
            return default
        try:
            return await call(store)
        except Exception as exc:
            self.stats.inc_value("robots/store/errors")
            if self.store is store:
                self.store = None
                logger.warning(
                    "The robots.txt store %(store)s failed (%(error)s); going on"
                    " with the memory store alone for the rest of the crawl",
                    {"store": type(store).__name__, "error": exc},
                    exc_info=not isinstance(exc, StoreError),
                    extra={"spider": self.crawler.spider},
                )
            return default

    async def _spider_closed(self) -> None:
        for store in (self.store, self.memory):
            if store is None:
                continue
            try:
                await store.close()
            except Exception as exc:
                self.stats.inc_value("robots/store/errors")
                logger.warning(
                    "Closing the robots.txt store %(store)s failed: %(error)s",
                    {"store": type(store).__name__, "error": exc},
                    extra={"spider": self.crawler.spider},
                )


def _build_store(crawler: Crawler) -> OutcomeStore:
    name = str(setting(crawler.settings, "ROBOTS_STORE")).strip()
    path = STORES.get(name.lower(), name)
    try:
        cls = load_object(path)
    except (ImportError, NameError, ValueError) as exc:
        raise ValueError(
            f"ROBOTS_STORE must be one of {', '.join(map(repr, STORES))} or the"
            f" import path of an OutcomeStore class; {name!r} cannot be loaded: {exc}"
        ) from exc
    try:
        store = build_from_crawler(cls, crawler)
    except StoreError as exc:
        crawler.stats.inc_value("robots/store/errors")
        logger.warning(
            "The robots.txt store %(store)s failed (%(error)s); going on with the"
            " memory store alone",
            {"store": name, "error": exc},
            extra={"crawler": crawler},
        )
        return build_from_crawler(MemoryStore, crawler)
    if not isinstance(store, OutcomeStore):
        raise ValueError(f"ROBOTS_STORE {name!r} is not an OutcomeStore")
    return store
