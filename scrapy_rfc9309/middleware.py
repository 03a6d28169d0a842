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
from scrapy.downloadermiddlewares.defaultheaders import DefaultHeadersMiddleware
from scrapy.downloadermiddlewares.useragent import UserAgentMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached

from ._closing import REQUEUED_META, RobotsCancelled, closing
from ._compat import spider_argument
from ._config import RobotsConfig
from ._coordination import GuardedStore, Outcomes
from ._settings import enabled_components, ensure_enabled, refusals_logged
from ._slots import QUEUE_META
from .fetch import META_KEY, RobotsFetcher
from .match import Cause, Decision, Matcher, product_token
from .outcome import (
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    Lifetimes,
    Outcome,
    explain_compiled,
)
from .politeness import (
    PACE_META,
    TURN_META,
    PacingMiddleware,
    Politeness,
)
from .provenance import EVIDENCE_KEY, ledger_for
from .stores.base import OutcomeStore
from .stores.memory import Entry
from .stringify import readable, rule_line, usage_line
from .urls import origin_robots_url, robots_url
from .usage import matched_usage, refused

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["META_KEY", "USAGE_META_KEY", "RobotsDisallowed", "RobotsMiddleware"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
# A page dropped as if its robots.txt were unreachable: answered from an
# address ROBOTS_SSRF_GUARD refuses, or an http(s) URL without a host.
_UNREACHABLE = Decision(False, "unreachable", None)
# The schemes whose URLs have a robots.txt; why one without a host is dropped.
_HTTP = frozenset(("http", "https"))
_NO_HOST = "no host robots.txt could be asked for"

#: The causes of a dropped request (``robots/forbidden/<cause>``).
CAUSES: tuple[Cause, ...] = get_args(Cause)
#: Request (and so response) meta key of the usage preferences that apply
#: (robots.txt's here; combined with the response header's by
#: :class:`~scrapy_rfc9309.usagemiddleware.UsageMiddleware`).
USAGE_META_KEY = "robots_usage"
# robots.txt's License lines for the request (scrapy_rfc9309.licenses).
LICENSES_META_KEY = "robots_licenses"
#: Request meta key of a robots.txt sitemap: how far below robots.txt it is
#: (``scrapy_rfc9309.sitemaps.DEPTH_KEY``).  A sitemap is read to find
#: pages, never kept as an item: the usage preferences of its own URL (and
#: its TDMRep reservation) do not stop it.
SITEMAP_DEPTH_KEY = "robots_sitemap_depth"


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
        source = "TDMRep" if cause == "tdm_reservation" else "robots.txt"
        super().__init__(f"Forbidden by {source} ({cause}): {origin}")
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


@spider_argument
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
        _warn_missing_components(crawler, config)
        _log_agent_not_sent(crawler, config.user_agent)
        self.fetcher = RobotsFetcher(
            crawler, lifetimes=config.lifetimes, clock=self._now
        )
        # A lease is held for one fetch, its retries included (a robots.txt
        # that times out is tried download_tries times), twice over: a worker
        # waiting on it would fetch the same robots.txt at the same time.
        lease = config.download_timeout * config.download_tries * 2

        self.stats = crawler.stats
        #: The crawl's store (shared with TdmMiddleware: one connection for
        #: the crawl) and the memory store, every call of the former guarded.
        self.stores = GuardedStore.for_crawl(crawler, self._now)
        self.memory = self.stores.memory
        #: The crawl's evidence (ROBOTS_PROVENANCE, ROBOTS_REPORT), if kept.
        self.ledger = ledger_for(crawler)
        self.politeness = Politeness(
            crawler, self.stores if self.stores.fleet else None
        )
        # What a page's meta carries on to its links or a redirect (spiders
        # pass meta on) is not theirs: its marks, licences, preferences,
        # evidence; dropped from every request before it is judged.
        self._carried = (PACE_META, QUEUE_META, LICENSES_META_KEY) + (
            (USAGE_META_KEY,) if config.usage_purposes else ()
        )
        if self.ledger is not None:
            self._carried += (EVIDENCE_KEY,)
        #: The outcome of each origin, its robots.txt fetched once.
        self.outcomes = Outcomes(
            crawler,
            self.fetcher,
            self.stores,
            lifetimes=config.lifetimes,
            refused_allows=config.refused_allows,
            lease_ttl=lease,
            lease_wait=lease,
            clock=self._now,
            on_fetch=self._robots_turn,
        )
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def _now(self) -> float:
        return self.clock()

    @property
    def store(self) -> OutcomeStore | None:
        """The configured store while it works; ``None`` with the memory
        store configured or once it failed."""
        return self.stores.store

    # -- deciding -------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        """Drop ``request`` (:class:`RobotsDisallowed`) unless robots.txt allows it."""
        # The per-request path, written for speed: with the origin's outcome
        # in memory and fresh, this is a dict lookup and a matcher call.
        meta, config = request.meta, self.config
        for key in self._carried:
            meta.pop(key, None)
        if REQUEUED_META in meta:
            request.dont_filter = meta.pop(REQUEUED_META)
        if meta.get("dont_obey_robotstxt"):
            if META_KEY in meta and closing(self.crawler):
                self._closed(request)
            if not self.politeness.paced_later:
                # The package's own request (robots.txt, a TDMRep file) to
                # an origin known under a Crawl-delay takes its turn here.
                await self.politeness.pace(request)
            return
        parts = urlparse_cached(request)
        origin = origin_robots_url(parts.scheme, parts.netloc)
        if origin is None:
            if parts.scheme in _HTTP:
                self._no_robots_txt(request, parts.scheme, parts.netloc)
            # data:, file:, ftp:, s3: ... have no robots.txt to ask.
            return
        entry = self.memory.entry(origin)
        now = self.clock()
        if entry is None or entry.outcome.expires_at <= now:
            obtaining = self.outcomes.obtain(origin, request)
            entry = await self.politeness.wait(request, obtaining)
            now = self.clock()
        outcome = entry.outcome
        if entry.licenses:
            # Shown in items and records: undecodable octets as %XX.
            meta[LICENSES_META_KEY] = [
                {"url": readable(url), "source": "robots.txt"} for url in entry.licenses
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
        politeness = self.politeness
        if politeness.paused and origin in politeness.paused and politeness.paced_later:
            # It waits for the pause in PacingMiddleware.
            politeness.slots.note_queue(request)
        if self.ledger is not None:
            self.ledger.decided(request, origin, outcome, entry.matcher, decision, now)
        matcher = entry.matcher
        if matcher is None or outcome.disallows_all(now):
            return
        if config.purposes:
            self._check_signals(request, origin, matcher, outcome)
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
                politeness.mark(request, origin, kept)
                if not politeness.paced_later:
                    # No PacingMiddleware in the chain: the turn is taken
                    # here, in the slot chosen so far.
                    await politeness.pace(request)

    def _closed(self, request: Request) -> NoReturn:
        """Drop ``request``, the package's own (robots.txt, a TDMRep file),
        reaching the chain once the crawl closes: a retry (RetryMiddleware),
        a redirect hop, or a first request started just before.  Scrapy
        sends no page's retry then; the close waited for each, and the
        origin was judged from a failure at close."""
        cancelled = RobotsCancelled(
            "the spider closed: the package's own requests are not sent again"
        )
        self.politeness.dropped(request, cancelled)
        raise cancelled

    def _no_robots_txt(self, request: Request, scheme: str, netloc: str) -> NoReturn:
        """Drop ``request``, an http(s) URL without a host robots.txt could
        be asked for (``http:///p``, a host with no ASCII form): unchecked,
        it would still go out (a proxy takes it)."""
        origin = f"{scheme}://{netloc.rpartition('@')[2]}/robots.txt"
        self._forbid(request, origin, _UNREACHABLE, "unreachable", None, _NO_HOST)

    def _kept_delay(self, delay: float) -> float | None:
        """The delay kept for a Crawl-delay of ``delay``: clamped to
        ``ROBOTS_CRAWL_DELAY_MAX``, or ``None`` when the origin is skipped."""
        config = self.config
        if delay > config.crawl_delay_max:
            return None if config.crawl_delay_skip else config.crawl_delay_max
        return delay

    def _check_signals(
        self, request: Request, origin: str, matcher: Matcher, outcome: Outcome
    ) -> None:
        """Drop ``request`` if its origin's Content-Signal refuses a purpose
        of the crawl."""
        content_signals = matcher.content_signals
        purposes = self.config.purposes
        refusals = [p for p in purposes if content_signals.get(p) is False]
        if refusals:
            self._forbid(
                request,
                origin,
                Decision(False, "content_signal", None),
                "content_signal",
                outcome,
                ", ".join(f"Content-Signal {p}=no" for p in refusals),
            )

    def _check_usage(
        self, request: Request, origin: str, matcher: Matcher, outcome: Outcome
    ) -> None:
        """Keep the robots.txt usage preferences of ``request`` in its meta;
        drop it if they refuse a purpose of the crawl."""
        preferences, rules = matched_usage(matcher, request.url)
        request.meta[USAGE_META_KEY] = preferences
        purposes = self.config.usage_purposes
        if refused(preferences, purposes) is not None and (
            SITEMAP_DEPTH_KEY not in request.meta
        ):
            refusals = ", ".join(
                purpose
                for purpose in purposes
                if refused(preferences, [purpose]) is not None
            )
            lines = "; ".join(f"line {rule.line}: {usage_line(rule)}" for rule in rules)
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
        next turn of the origin from this answer's arrival too; with
        ``ROBOTS_SSRF_GUARD``, drop a page that came from an address the
        guard refuses (its origin is then refused for good)."""
        if TURN_META in request.meta and "cached" not in response.flags:
            await self.politeness.fetched(request)
        if self.config.ssrf_guard and not request.meta.get("dont_obey_robotstxt"):
            refusal = self.fetcher.address_refusal(request, response)
            if refusal is not None:
                await self._refuse(request, refusal)
        return response

    async def _refuse(self, request: Request, refusal: str) -> None:
        """Drop ``request``, whose answer came from an address the guard
        refuses (a name that resolved elsewhere when its robots.txt was
        fetched: DNS rebinding), and refuse its origin."""
        parts = urlparse_cached(request)
        origin = origin_robots_url(parts.scheme, parts.netloc)
        if origin is None:
            # s3: and the like, which have no robots.txt to refuse.
            return
        outcome = await self.outcomes.refuse(origin, refusal, request)
        self._forbid(request, origin, _UNREACHABLE, "unreachable", outcome, refusal)

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

        Raises :class:`~scrapy_rfc9309.RobotsCancelled` when the spider
        closes before the outcome is known.
        """
        origin = robots_url(url)
        if origin is None:
            return None
        entry = self.memory.entry(origin)
        if entry is None or entry.outcome.expires_at <= self.clock():
            entry = await self.outcomes.obtain(origin, request or Request(url))
        return entry.restored()

    def _forbid(
        self,
        request: Request,
        origin: str,
        decision: Decision,
        cause: Cause,
        outcome: Outcome | None,
        why: str = "",
    ) -> NoReturn:
        self.stats.inc_value("robots/forbidden")
        self.stats.inc_value(f"robots/forbidden/{cause}")
        rule = decision.rule
        if rule is not None:
            why = f"line {rule.line}: {rule_line(rule)}"
        elif not why and outcome is not None:
            why = (
                f"{outcome.kind}, {outcome.detail}" if outcome.detail else outcome.kind
            )
        # Undecodable octets of robots.txt as %XX: the log line, the report
        # and the exception say the same, and a UTF-8 log file can write it.
        why = readable(why)
        if self.ledger is not None:
            self.ledger.dropped(origin, cause, why)
        logger.debug(
            "Forbidden by robots.txt: %(request)s (%(robots)s %(why)s)",
            {"request": request, "robots": origin, "why": why},
            extra={"spider": self.crawler.spider},
        )
        raise RobotsDisallowed(decision, origin, cause, why)

    # -- around the outcomes --------------------------------------------------

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

    def _summary(self) -> str:
        """The crawl's robots.txt work in one line (logged at spider close)."""
        values = self.stats.get_stats()

        def counts(prefix: str, names: tuple[str, ...]) -> tuple[int, str]:
            found = [(name, values.get(f"{prefix}/{name}", 0)) for name in names]
            parts = ", ".join(f"{name} {count}" for name, count in found if count)
            return sum(count for _, count in found), parts

        kinds = (PARSED, UNAVAILABLE, UNREACHABLE)
        last = self.outcomes.origins
        origins = sum(last.values())
        by_kind = ", ".join(f"{kind} {last[kind]}" for kind in kinds if last[kind])
        details = [by_kind] if by_kind else []
        outcomes = counts("robots/outcome", kinds)[0]
        if outcomes != origins:
            details.append(f"{outcomes} outcomes obtained")
        refused = values.get("robots/refused", 0)
        if refused:
            details.append(f"{refused} refused by another component")
        detail = "; ".join(details)
        dropped, by_cause = counts("robots/forbidden", CAUSES)
        delayed = values.get("robots/crawl_delay/origins", 0)
        return (
            f"robots.txt: {origins} origin{'s' * (origins != 1)}"
            f"{f' ({detail})' if detail else ''},"
            f" {dropped} request{'s' * (dropped != 1)} dropped"
            f"{f' ({by_cause})' if by_cause else ''},"
            f" {delayed} origin{'s' * (delayed != 1)} under a Crawl-delay"
        )

    async def _spider_closed(self) -> None:
        logger.info(
            "%(summary)s",
            {"summary": self._summary()},
            extra={"spider": self.crawler.spider},
        )
        await self.stores.close()


def _warn_missing_components(crawler: Crawler, config: RobotsConfig) -> None:
    """One WARNING per component a setting in use needs that the crawl does
    not enable (middlewares enabled by hand, one left out or set to
    ``None``): without it, the setting would do nothing, silently."""
    # Imported here: each of these modules imports this one.
    from .provenancemiddleware import ProvenanceMiddleware
    from .sitemaps import SitemapsMiddleware
    from .tdmmiddleware import TdmItemsMiddleware, TdmMiddleware, is_tdm
    from .usagemiddleware import UsageMiddleware

    spider, downloader = "SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES"
    purposes = "The crawl declares purposes (ROBOTS_PURPOSES, ROBOTS_CONTENT_SIGNALS)"
    needed: list[tuple[str, str, type, str]] = []
    if config.sitemaps:
        sitemaps = "robots.txt's sitemaps are not requested"
        needed.append(("ROBOTS_SITEMAPS is on", spider, SitemapsMiddleware, sitemaps))
    if config.usage_purposes and config.usage != "off":
        usage = "items are not judged by their Content-Usage header"
        needed.append((purposes, spider, UsageMiddleware, usage))
    if config.tdmrep != "off" and is_tdm(config.usage_purposes):
        files = "requests are not judged by TDMRep files"
        needed.append((purposes, downloader, TdmMiddleware, files))
        reservation = "items are not judged by their tdm-reservation header or meta"
        needed.append((purposes, spider, TdmItemsMiddleware, reservation))
    if config.retry_after:
        pauses = "a 429 or 503's Retry-After pauses nothing"
        needed.append(
            ("ROBOTS_RETRY_AFTER is on", downloader, PacingMiddleware, pauses)
        )
    if config.provenance or config.report:
        evidence = "items get no robots_provenance record, and none is counted kept"
        setting = "ROBOTS_PROVENANCE or ROBOTS_REPORT is on"
        needed.append((setting, spider, ProvenanceMiddleware, evidence))
    chains: dict[str, list[type] | None] = {}
    for setting, chain, component, effect in needed:
        if chain not in chains:
            chains[chain] = enabled_components(crawler, chain)
        enabled = chains[chain]
        if enabled is None or any(issubclass(cls, component) for cls in enabled):
            continue
        logger.warning(
            "%(setting)s, but %(component)s is not enabled in %(chain)s:"
            " %(effect)s (the add-on enables it; see docs/getting-started.md)",
            {
                "setting": setting,
                "component": f"{component.__module__}.{component.__qualname__}",
                "chain": chain,
                "effect": effect,
            },
            extra={"crawler": crawler},
        )


def _log_agent_not_sent(crawler: Crawler, agent: str) -> None:
    """One INFO line when the product token of ``agent``, whose rules apply,
    is not in the User-Agent header the crawl sends: the one in
    ``DEFAULT_REQUEST_HEADERS`` (DefaultHeadersMiddleware sets it first),
    else the spider's ``user_agent`` or ``USER_AGENT`` (UserAgentMiddleware);
    nothing is said when neither component is enabled (another one picks
    it).  RFC 9309 2.2.1 says the token SHOULD be in it, so that a site can
    tell which of its groups the crawler obeys; Googlebot-News breaks that
    on purpose (its own group, Googlebot's string), so it is said, not
    warned of."""
    token = product_token(agent)
    enabled = enabled_components(crawler, "DOWNLOADER_MIDDLEWARES") or []
    sent = None
    if any(issubclass(cls, DefaultHeadersMiddleware) for cls in enabled):
        headers = crawler.settings.getdict("DEFAULT_REQUEST_HEADERS")
        sent = next((v for k, v in headers.items() if k.lower() == "user-agent"), None)
    if sent is None and any(issubclass(cls, UserAgentMiddleware) for cls in enabled):
        spider_agent = getattr(crawler.spider, "user_agent", None)
        sent = spider_agent or crawler.settings.get("USER_AGENT")
    if not token or not isinstance(sent, str) or token in sent.lower():
        return
    logger.info(
        "Obeying the robots.txt rules of %(token)r while the User-Agent header"
        " sent is %(sent)r, which does not name it (RFC 9309 2.2.1: the"
        " product token should be part of the User-Agent)",
        {"token": token, "sent": sent},
        extra={"crawler": crawler},
    )
