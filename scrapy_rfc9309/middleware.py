"""``RobotsMiddleware``: RFC 9309 in a Scrapy crawl.

For each origin (scheme, host, port) it fetches ``/robots.txt`` once per
lifetime, through ``engine.download_async`` so that the project's downloader
middlewares (proxy, auth, retry, cache, user agent) apply, turns the result
into an :class:`~scrapy_rfc9309.outcome.Outcome` and judges every request of
the origin by it.  Requests arriving while the file is on its way wait for
it, each on its own awaitable.  Requests to an origin with a Crawl-delay are
marked for :class:`~scrapy_rfc9309.politeness.PacingMiddleware` to space
(with a shared store, across the fleet: see
:mod:`~scrapy_rfc9309.politeness`), and origins whose Content-Signal refuses
a purpose of the crawl are not crawled, nor URLs whose Content-Usage rules
refuse one.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, get_args, overload

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from scrapy_rfc9309._compat import sleep

from . import signals as robots_signals
from ._config import RobotsConfig
from ._settings import ensure_enabled, refusals_logged
from ._store import crawl_store, release_store
from .fetch import META_KEY, Refused, RobotsFetcher
from .match import Cause, Decision, Matcher
from .outcome import (
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    Lifetimes,
    Outcome,
    explain_compiled,
    unavailable,
    unreachable,
)
from .parser import RobotParser
from .politeness import (
    PACE_META,
    TURN_META,
    Politeness,
    crawl_delay_scope,
    keeps_extends,
    keeps_pauses,
    reserve_turn,
)
from .provenance import EVIDENCE_KEY, ledger_for
from .stores.base import OutcomeStore, StoreError
from .stores.memory import Entry, MemoryStore
from .stringify import _rule_line, _usage_line
from .urls import _origin_robots_url, robots_url
from .usage import matched_usage, refused

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["META_KEY", "USAGE_META_KEY", "RobotsDisallowed", "RobotsMiddleware"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: The causes of a dropped request (``robots/forbidden/<cause>``).
CAUSES: tuple[Cause, ...] = get_args(Cause)
#: Request (and so response) meta key of the usage preferences that apply
#: (robots.txt's here; combined with the response header's by
#: :class:`~scrapy_rfc9309.usagemiddleware.UsageMiddleware`).
USAGE_META_KEY = "robots_usage"
# robots.txt's License lines for the request (scrapy_rfc9309.licenses).
LICENSES_META_KEY = "robots_licenses"


class RobotsDisallowed(IgnoreRequest):
    """A request dropped because of its origin's robots.txt.

    ``decision`` is the :class:`~scrapy_rfc9309.match.Decision` (its
    ``rule`` is the deciding rule, with its line, when there is one),
    ``origin`` the robots.txt URL, and ``cause`` one of ``rule``,
    ``unreachable``, ``crawl_delay``, ``content_signal``, ``content_usage`` and
    ``tdm_reservation`` (the origin's TDMRep file; ``origin`` is then its URL).
    ``why`` is the refusal as the log line gives it: the deciding line
    (``line 3: Disallow: /private``), else what refused (``Content-Signal
    ai-train=no``, ``Crawl-delay 60 over ROBOTS_CRAWL_DELAY_MAX 30``), else the
    outcome (``unreachable, HTTP 503``).
    """

    def __init__(
        self, decision: Decision, origin: str, cause: Cause, why: str = ""
    ) -> None:
        super().__init__(f"Forbidden by robots.txt ({cause}): {origin}")
        self.decision = decision
        self.origin = origin
        self.cause = cause
        self.why = why

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.decision, self.origin, self.cause, self.why))


class _Configured(Generic[_T]):
    """A read-only attribute of the middleware: a field of its config."""

    def __init__(self, field: str) -> None:
        self.field = field

    @overload
    def __get__(self, middleware: None, owner: type) -> Self: ...
    @overload
    def __get__(self, middleware: RobotsMiddleware, owner: type) -> _T: ...
    def __get__(self, middleware: RobotsMiddleware | None, owner: type) -> Any:
        return self if middleware is None else getattr(middleware.config, self.field)

    def __set__(self, middleware: RobotsMiddleware, value: _T) -> None:
        raise AttributeError(f"{self.field} is read from the crawl's config")


class RobotsMiddleware:
    """Downloader middleware obeying RFC 9309 robots.txt (see the README).

    ``clock`` (seconds since the epoch, default :func:`time.time`) is what
    lifetimes are measured with; tests replace it.
    """

    clock: Callable[[], float] = staticmethod(time.time)

    # The settings read into attributes before the config object held them.
    user_agent = _Configured[str]("user_agent")
    lifetimes = _Configured[Lifetimes]("lifetimes")
    crawl_delay_enabled = _Configured[bool]("crawl_delay")
    crawl_delay_max = _Configured[float]("crawl_delay_max")
    skip_over_max = _Configured[bool]("crawl_delay_skip")
    #: Whether a robots.txt request another component refused
    #: (``IgnoreRequest``) allows the origin (``ROBOTS_REFUSED``).
    refused_allows = _Configured[bool]("refused_allows")
    #: The purposes this crawl is for: Content-Signal keys, and aipref
    #: categories (``ROBOTS_PURPOSES``, ``ROBOTS_CONTENT_SIGNALS``).
    purposes = _Configured[tuple[str, ...]]("purposes")
    usage_purposes = _Configured[tuple[str, ...]]("usage_purposes")

    def __init__(self, crawler: Crawler) -> None:
        ensure_enabled(crawler)
        self.crawler = crawler
        # The crawl's settings (RobotsConfig), shared with its other components.
        self.config = config = RobotsConfig.for_crawler(crawler)
        self.fetcher = RobotsFetcher(
            crawler, lifetimes=config.lifetimes, clock=self._now
        )
        # A lease is held for one fetch: redirects and retries included.
        self.lease_ttl = self.lease_wait = config.download_timeout * 2

        self.stats = crawler.stats
        # Shared with TdmMiddleware: one connection for the crawl.
        self._crawl_store = store = crawl_store(crawler)
        if isinstance(store, MemoryStore):
            self.memory, self.store = store, None
        else:
            self.memory = MemoryStore.from_crawler(crawler)
            self.store = store
        self.memory.clock = self._now

        # Origin -> the waiters of its robots.txt fetch in flight.
        self._pending: dict[str, list[Deferred[Entry]]] = {}
        #: The crawl's evidence (ROBOTS_PROVENANCE, ROBOTS_REPORT), if kept.
        self.ledger = ledger_for(crawler)
        fleet = crawl_delay_scope(config, self.store) == "fleet"
        self.politeness = Politeness(
            crawler,
            self._reserve if fleet else None,
            self._store_call if fleet and keeps_pauses(self.store) else None,
            self._store_call if fleet and keeps_extends(self.store) else None,
        )
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def _now(self) -> float:
        return self.clock()

    # -- deciding -------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        """Drop ``request`` (:class:`RobotsDisallowed`) unless robots.txt allows it."""
        # The per-request path, written for speed: with the origin's outcome
        # in memory and fresh, this is a dict lookup and a matcher call.
        meta, config = request.meta, self.config
        if config.usage_purposes:
            # Spiders pass meta on: a page's preferences are not its links'.
            meta.pop(USAGE_META_KEY, None)
        # Nor its licences.
        meta.pop(LICENSES_META_KEY, None)
        # A mark carried over (meta passed on to a link, a redirect to
        # another origin) is not this request's.
        meta.pop(PACE_META, None)
        if self.ledger is not None:
            meta.pop(EVIDENCE_KEY, None)
        if meta.get("dont_obey_robotstxt"):
            return
        parts = urlparse_cached(request)
        origin = _origin_robots_url(parts.scheme, parts.netloc)
        if origin is None:
            # data:, file:, ftp:, s3: ... have no robots.txt to ask.
            return
        entry = self.memory.entry(origin)
        now = self.clock()
        if entry is None or entry.outcome.expires_at <= now:
            entry = await self._obtain(origin, request)
            now = self.clock()
        outcome = entry.outcome
        if entry.licenses:
            meta[LICENSES_META_KEY] = [
                {"url": url, "source": "robots.txt"} for url in entry.licenses
            ]
        decision = explain_compiled(outcome, entry.matcher, request.url, now)
        if not decision.allowed:
            self._forbid(
                request,
                origin,
                decision,
                "unreachable" if decision.reason == UNREACHABLE else "rule",
                outcome,
            )
        if self.ledger is not None:
            self.ledger.decided(request, origin, outcome, entry.matcher, decision, now)
        matcher = entry.matcher
        if matcher is None or outcome.disallows_all(now):
            return
        if config.purposes:
            content_signals = matcher.content_signals
            refusals = [p for p in config.purposes if content_signals.get(p) is False]
            if refusals:
                self._forbid(
                    request,
                    origin,
                    Decision(False, "content_signal", None),
                    "content_signal",
                    outcome,
                    ", ".join(f"Content-Signal {p}=no" for p in refusals),
                )
        if config.usage_purposes:
            self._check_usage(request, origin, matcher, outcome)
        delay = matcher.crawl_delay
        if delay and config.crawl_delay:
            kept = self._kept_delay(delay)
            if kept is None:
                self._forbid(
                    request,
                    origin,
                    Decision(False, "crawl_delay", None),
                    "crawl_delay",
                    outcome,
                    f"Crawl-delay {delay:g} over ROBOTS_CRAWL_DELAY_MAX"
                    f" {config.crawl_delay_max:g}",
                )
            if kept > 0:
                politeness = self.politeness
                politeness.mark(request, origin, kept)
                if not politeness.paced_later:
                    # No PacingMiddleware in the chain: the turn is taken
                    # here, in the slot chosen so far.
                    await politeness.take_turn(request, origin, kept)

    def _kept_delay(self, delay: float) -> float | None:
        """The delay kept for a Crawl-delay of ``delay``: clamped to
        ``ROBOTS_CRAWL_DELAY_MAX``, or ``None`` when the origin is skipped."""
        config = self.config
        if delay > config.crawl_delay_max:
            return None if config.crawl_delay_skip else config.crawl_delay_max
        return delay

    def _check_usage(
        self, request: Request, origin: str, matcher: Matcher, outcome: Outcome
    ) -> None:
        """Keep the robots.txt usage preferences of ``request`` in its meta;
        drop it if they refuse a purpose of the crawl."""
        preferences, rules = matched_usage(matcher, request.url)
        request.meta[USAGE_META_KEY] = preferences
        purposes = self.config.usage_purposes
        if refused(preferences, purposes) is not None:
            refusals = ", ".join(
                purpose
                for purpose in purposes
                if refused(preferences, [purpose]) is not None
            )
            lines = "; ".join(
                f"line {rule.line}: {_usage_line(rule)}" for rule in rules
            )
            self._forbid(
                request,
                origin,
                Decision(False, "content_usage", None),
                "content_usage",
                outcome,
                f"Content-Usage refuses {refusals} ({lines})",
            )

    async def process_response(self, request: Request, response: Response) -> Response:
        """Without PacingMiddleware (which does it first otherwise), space the
        next turn of the origin from this answer's arrival too."""
        if TURN_META in request.meta and "cached" not in response.flags:
            await self.politeness.fetched(request)
        return response

    async def process_exception(self, request: Request, exception: Exception) -> None:
        if TURN_META in request.meta:
            await self.politeness.fetched(request)

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
        cause: Cause,
        outcome: Outcome,
        why: str = "",
    ) -> NoReturn:
        self.stats.inc_value("robots/forbidden")
        self.stats.inc_value(f"robots/forbidden/{cause}")
        rule = decision.rule
        if rule is not None:
            why = f"line {rule.line}: {_rule_line(rule)}"
        elif not why:
            why = (
                f"{outcome.kind}, {outcome.detail}" if outcome.detail else outcome.kind
            )
        if self.ledger is not None:
            self.ledger.dropped(origin, cause, why)
        logger.debug(
            "Forbidden by robots.txt: %(request)s (%(robots)s %(why)s)",
            {"request": request, "robots": origin, "why": why},
            extra={"spider": self.crawler.spider},
        )
        raise RobotsDisallowed(decision, origin, cause, why)

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
                    return await self._from_store(origin, stored, request)
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
                        return await self._from_store(origin, waited, request)
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
                        return await self._from_store(origin, stored, request)
        try:
            try:
                outcome = await self.fetcher.fetch(origin, previous)
            except Refused as refused:
                # This process's own components refused it: kept in memory,
                # never shared, as another worker's may let it through.
                return await self._obtained(
                    origin, self._refused(refused, previous), request
                )
            entry = await self._obtained(origin, outcome, request)
            await self._robots_turn(origin, entry)
            await self._store_call(lambda store: store.put(origin, outcome), None)
        finally:
            if leased:
                await self._store_call(lambda store: store.release(origin), None)
        return entry

    async def _from_store(
        self, origin: str, outcome: Outcome, request: Request
    ) -> Entry:
        """The entry of a fresh ``outcome`` found in the store.

        With ``ROBOTS_SSRF_GUARD`` on, an origin the guard refuses stays
        refused, whatever another process or an earlier run without the
        guard stored for it.
        """
        if not outcome.guard_refused:
            refusal = await self.fetcher.guard_refusal(origin)
            if refusal is not None:
                outcome = self.fetcher.guard_refused(outcome, refusal)
        return await self._obtained(origin, outcome, request)

    async def _robots_turn(self, origin: str, entry: Entry) -> None:
        """In the fleet scope, count the robots.txt just fetched as a turn of
        its origin, before other workers can read the outcome (put next),
        so that none of their requests follows it sooner than its delay."""
        matcher = entry.matcher
        if not (self.politeness.fleet and self.crawl_delay_enabled):
            return
        if matcher is None or not matcher.crawl_delay:
            return
        delay = self._kept_delay(matcher.crawl_delay)
        if delay:
            await self.politeness.turn_taken(origin, delay)

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

    def _refused(self, refused: Refused, previous: Outcome | None) -> Outcome:
        """The outcome of a robots.txt request another component refused."""
        self.stats.inc_value("robots/refused")
        detail = f"refused by another component: {refused.reason}".rstrip(": ")
        if self.refused_allows:
            # As Scrapy's RobotsTxtMiddleware: a crawl replayed from the HTTP
            # cache (HTTPCACHE_IGNORE_MISSING) or filtered by the project is
            # not a site that failed to answer.
            return unavailable(
                now=self.clock(), lifetimes=self.lifetimes, detail=detail
            )
        return unreachable(
            now=self.clock(), lifetimes=self.lifetimes, previous=previous, detail=detail
        )

    async def _obtained(self, origin: str, outcome: Outcome, request: Request) -> Entry:
        entry = self.memory.store(origin, outcome)
        self.stats.inc_value(f"robots/outcome/{outcome.kind}")
        if outcome.kind != PARSED:
            self._log_outcome(origin, outcome)
        self.crawler.signals.send_catch_log(
            signal=robots_signals.robots_outcome,
            origin=origin,
            outcome=outcome,
            request=request,
        )
        if outcome.http_status is not None:
            # A robots.txt came back (any status), as when Scrapy's own
            # middleware sends it; network failures and refusals do not.
            await _send_robots_parsed(
                self.crawler, RobotParser(outcome, clock=self._now), request
            )
        return entry

    def _log_outcome(self, origin: str, outcome: Outcome) -> None:
        level = logging.INFO
        if outcome.kind == UNAVAILABLE:
            effect = "every URL allowed"
        elif outcome.guard_refused:
            level = logging.WARNING
            effect = "every URL disallowed (ROBOTS_SSRF_GUARD)"
        elif outcome.disallows_all(self.clock()):
            # A whole site not crawled: seen under LOG_LEVEL = "WARNING".
            level = logging.WARNING
            effect = "every URL disallowed for now"
        elif outcome.fallback is not None:
            effect = "unreachable for too long, judged by its last robots.txt"
        else:
            effect = "unreachable for too long, every URL allowed"
        logger.log(
            level,
            "robots.txt %(origin)s is %(kind)s (%(detail)s): %(effect)s",
            {
                "origin": origin,
                "kind": outcome.kind,
                "detail": outcome.detail,
                "effect": effect,
            },
            extra={"spider": self.crawler.spider},
        )

    def _summary(self) -> str:
        """The crawl's robots.txt work in one line (logged at spider close)."""
        values = self.stats.get_stats()

        def counts(prefix: str, names: tuple[str, ...]) -> tuple[int, str]:
            found = [(name, values.get(f"{prefix}/{name}", 0)) for name in names]
            parts = ", ".join(f"{name} {count}" for name, count in found if count)
            return sum(count for _, count in found), parts

        outcomes, by_kind = counts("robots/outcome", (PARSED, UNAVAILABLE, UNREACHABLE))
        refused = values.get("robots/refused", 0)
        if refused:
            by_kind += f"; {refused} refused by another component"
        dropped, by_cause = counts("robots/forbidden", CAUSES)
        delayed = values.get("robots/crawl_delay/origins", 0)
        return (
            f"robots.txt: {outcomes} outcome{'s' * (outcomes != 1)} obtained"
            f"{f' ({by_kind})' if by_kind else ''},"
            f" {dropped} request{'s' * (dropped != 1)} dropped"
            f"{f' ({by_cause})' if by_cause else ''},"
            f" {delayed} origin{'s' * (delayed != 1)} under a Crawl-delay"
        )

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
                    " with the memory store alone for the rest of the crawl%(delay)s",
                    {
                        "store": type(store).__name__,
                        "error": exc,
                        "delay": ", Crawl-delays kept per process"
                        if self.politeness.fleet
                        else "",
                    },
                    exc_info=not isinstance(exc, StoreError),
                    extra={"spider": self.crawler.spider},
                )
            return default

    async def _reserve(self, origin: str, delay: float) -> float | None:
        """The next Crawl-delay turn of ``origin`` in the shared store: the
        seconds to wait for it, ``None`` when the store is gone."""
        return await self._store_call(
            lambda store: reserve_turn(
                store, origin, delay, self.politeness.turn_limit
            ),
            None,
        )

    async def _spider_closed(self) -> None:
        logger.info(
            "%(summary)s",
            {"summary": self._summary()},
            extra={"spider": self.crawler.spider},
        )
        shared = self._crawl_store
        # Given back to the crawl (TdmMiddleware may still hold it); a store
        # that failed during the crawl is left alone.
        await self._close(
            release_store(
                self.crawler,
                shared,
                failed=shared is not self.memory and self.store is None,
            ),
            shared,
        )
        if self.memory is not shared:
            await self._close(self.memory.close(), self.memory)

    async def _close(self, closing: Awaitable[None], store: OutcomeStore) -> None:
        try:
            await closing
        except Exception as exc:
            self.stats.inc_value("robots/store/errors")
            logger.warning(
                "Closing the robots.txt store %(store)s failed: %(error)s",
                {"store": type(store).__name__, "error": exc},
                extra={"spider": self.crawler.spider},
            )


async def _send_robots_parsed(
    crawler: Crawler, parser: RobotParser, request: Request
) -> None:
    """Send Scrapy's ``robots_parsed`` as Scrapy's own middleware does,
    awaiting its async handlers, on Scrapy versions that have it."""
    signal = getattr(signals, "robots_parsed", None)
    if signal is None:
        return
    send_async = getattr(crawler.signals, "send_catch_log_async", None)
    if send_async is None:
        crawler.signals.send_catch_log(
            signal=signal, robotparser=parser, request=request
        )
    else:
        await send_async(signal=signal, robotparser=parser, request=request)
