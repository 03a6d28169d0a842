"""TDMRep in a Scrapy crawl (W3C TDM Reservation Protocol, 2024).

Only for a crawl whose ``ROBOTS_PURPOSES`` is text and data mining (see
:func:`is_tdm`).  :class:`TdmMiddleware` (downloader) fetches each origin's
``/.well-known/tdmrep.json`` once per lifetime, through
``engine.download_async`` as robots.txt is, bounded by ``ROBOTS_MAX_BYTES``
and ``ROBOTS_TDMREP_TIMEOUT``, kept in memory and in a shared store (SQLite,
Redis: one fetch per origin for a fleet), and drops the requests its rules
reserve before they are sent.  :class:`TdmItemsMiddleware` (spider) reads
the response's ``tdm-reservation`` header and HTML meta, which supersede the
file, and drops the items of a reserved response.  Decisions: docs/rights.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from ._closing import RobotsCancelled
from ._compat import spider_argument
from ._config import RobotsConfig
from ._coordination import Leases, SingleFlight, StoreGuard
from ._json import loads
from ._settings import ensure_enabled, refusals_logged
from ._store import crawl_store
from .directives import is_html
from .fetch import RobotsFetcher
from .match import Decision
from .middleware import SITEMAP_DEPTH_KEY, RobotsDisallowed
from .outcome import lifetime, max_age, one_value
from .politeness import politeness_of
from .provenance import ledger_for
from .spidermiddleware import annotate
from .tdmrep import (
    FILE_PATH,
    POLICY,
    RESERVATION,
    TdmFile,
    TdmState,
    from_file,
    header_values,
    meta_values,
    parse_file,
    resolve,
)
from .urls import http_url, robots_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from ._decode import BoundedDecoder
    from .stores.base import OutcomeStore

__all__ = ["META_KEY", "TdmEntry", "TdmItemsMiddleware", "TdmMiddleware", "is_tdm"]

logger = logging.getLogger(__name__)

#: Request / response meta key and item field: what TDMRep says of the URL.
META_KEY = FIELD = "robots_tdm"
# The TdmState behind META_KEY, for the spider middleware.
_STATE_KEY = "_robots_tdm_state"
#: The aipref categories whose use is text and data mining.
TDM_LABELS = ("train-ai", "ai-use")
#: What came of an origin's file.
KINDS = ("parsed", "missing", "invalid", "unreachable")


def is_tdm(purposes: Iterable[str]) -> bool:
    """Whether a crawl of these aipref purposes mines text and data: one of
    them names ``train-ai`` or ``ai-use`` (alone or joined); ``search`` is
    not read as TDM (see docs/rights.md)."""
    return any(
        label in TDM_LABELS for purpose in purposes for label in purpose.split("+")
    )


def _drops(crawler: Crawler) -> bool:
    """Whether this crawl drops what TDMRep reserves (``ROBOTS_TDMREP =
    "drop"``) rather than annotating it; :exc:`NotConfigured` when TDMRep is
    off or the crawl declares no text and data mining purpose."""
    ensure_enabled(crawler, quiet=True)
    config = RobotsConfig.for_crawler(crawler)
    mode = config.tdmrep
    if mode == "off" or not is_tdm(config.usage_purposes):
        raise NotConfigured
    return mode == "drop"


def file_url(url: str) -> str | None:
    """The URL of ``url``'s origin's ``tdmrep.json`` (``None``: not http)."""
    robots = robots_url(url)
    return None if robots is None else robots[: -len("/robots.txt")] + FILE_PATH


# What a kept file costs beyond its text, in bytes: the entry, the
# TdmFile and the LRU slots; then each rule (its tuple, strings' headers)
# and each character of text.  Set above what tracemalloc measures on
# CPython 3.11, 64-bit (1 rule: 1,372 bytes; 40 with a "*": 14,780;
# 1,000 of 36 characters with a "*" and a policy: 499,168), an estimate,
# as the robots.txt memory store's.  A location is kept twice: as written
# and split for matching.
_ENTRY_BYTES = 1_000
_RULE_BYTES = 450


def entry_bytes(tdm_url: str, entry: TdmEntry) -> int:
    """The bytes kept in memory for ``entry``, estimated from its counts."""
    size = _ENTRY_BYTES + len(tdm_url) + len(entry.detail)
    tdm_file = entry.file
    if tdm_file is not None:
        size += sum(
            _RULE_BYTES + 2 * len(rule.location) + len(rule.policy or "")
            for rule in tdm_file.rules
        )
        size += sum(len(problem) + 64 for problem in tdm_file.problems)
    return size


class TdmEntry(NamedTuple):
    """What is kept of an origin's file."""

    #: The rules read; ``None`` when the origin gives none (see ``kind``).
    file: TdmFile | None
    #: One of :data:`KINDS`.
    kind: str
    detail: str
    fetched_at: float
    expires_at: float

    def encode(self) -> str:
        rules = None if self.file is None else self.file.to_list()
        problems = [] if self.file is None else list(self.file.problems)
        return json.dumps(
            {
                "tdmrep": 1,
                "rules": rules,
                "problems": problems,
                "kind": self.kind,
                "detail": self.detail,
                "fetched_at": self.fetched_at,
                "expires_at": self.expires_at,
            }
        )

    @classmethod
    def decode(cls, text: str | None, base: str) -> TdmEntry | None:
        """The entry stored as ``text``; ``None`` if it cannot be read."""
        try:
            data = loads(text or "")
            rules = data["rules"]
            tdm_file = None
            if rules is not None:
                tdm_file = parse_file(json.dumps(rules), base)
                tdm_file = tdm_file._replace(problems=tuple(map(str, data["problems"])))
            kind = data["kind"]
            if data["tdmrep"] != 1 or kind not in KINDS:
                return None
            return cls(
                tdm_file,
                kind,
                str(data["detail"]),
                float(data["fetched_at"]),
                float(data["expires_at"]),
            )
        # Whatever is stored came from outside this process: unreadable
        # means "not stored", and the file is fetched again.
        except Exception:
            return None


@spider_argument
class TdmMiddleware:
    """Apply each origin's ``tdmrep.json`` to the requests of a TDM crawl.

    Every request gets ``request.meta["robots_tdm"]``; with ``ROBOTS_TDMREP
    = "drop"`` (the default) a request the file reserves is dropped
    (:class:`~scrapy_rfc9309.RobotsDisallowed`, cause ``tdm_reservation``).
    """

    clock: Callable[[], float] = staticmethod(time.time)

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.drop = _drops(crawler)
        config = RobotsConfig.for_crawler(crawler)
        self.timeout = config.tdmrep_timeout
        self.lifetimes = config.lifetimes
        self.fetcher = RobotsFetcher(crawler, lifetimes=self.lifetimes, clock=self._now)
        self.max_entries = config.memory_max_origins
        self.max_bytes = config.memory_max_bytes
        #: What the kept files take, as :func:`entry_bytes` counts it.
        self.size = 0
        self._sizes: dict[str, int] = {}
        # RobotsMiddleware's: one connection for the crawl.
        self.stores = StoreGuard(
            crawler,
            crawl_store(crawler),
            "TDMRep files are kept in memory alone for the rest of the crawl",
            logger,
        )
        self._entries: OrderedDict[str, TdmEntry] = OrderedDict()
        self._flight: SingleFlight[TdmEntry] = SingleFlight()
        # A lease is held for one fetch of the file, as robots.txt's: twice
        # its timeout for each try RetryMiddleware makes.
        lease = self.timeout * config.download_tries * 2
        self.leases = Leases(self.stores, lease, lease)
        #: The crawl's evidence (ROBOTS_REPORT counts the requests dropped).
        self.ledger = ledger_for(crawler)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def _now(self) -> float:
        return self.clock()

    @property
    def store(self) -> OutcomeStore | None:
        """The configured store while it works and keeps records; ``None``
        with the memory store configured or once it failed."""
        return self.stores.store

    async def process_request(self, request: Request) -> None:
        meta = request.meta
        # A page's TDMRep state is not its links'.
        meta.pop(META_KEY, None)
        meta.pop(_STATE_KEY, None)
        if meta.get("dont_obey_robotstxt"):
            return
        url = file_url(request.url)
        if url is None:
            return
        try:
            state = await self.state_for(request.url, url, via=request)
        except RobotsCancelled as cancelled:  # its file's fetch, the crawl closing
            politeness = politeness_of(self.crawler)
            if politeness is not None:
                politeness.dropped(request, cancelled)
            raise
        meta[_STATE_KEY] = state
        meta[META_KEY] = state.to_dict()
        rule = state.rule
        # A sitemap is read for its pages, each then judged on its own.
        sitemap = SITEMAP_DEPTH_KEY in meta
        if state.reservation == 1 and self.drop and rule is not None and not sitemap:
            self.stats.inc_value("robots/forbidden")
            self.stats.inc_value("robots/forbidden/tdm_reservation")
            # One text for the refusal: the report's and the exception's.
            why = f"TDMRep {url} {rule.describe()}"
            origin = robots_url(request.url)
            if self.ledger is not None and origin is not None:
                self.ledger.dropped(origin, "tdm_reservation", why)
            logger.debug(
                "Forbidden by TDMRep: %(request)s (%(file)s %(rule)s)",
                {"request": request, "file": url, "rule": rule.describe()},
                extra={"spider": self.crawler.spider},
            )
            raise RobotsDisallowed(
                Decision(False, "tdm_reservation", None),
                url,
                "tdm_reservation",
                why,
            )

    async def state_for(
        self, url: str, tdm_url: str | None = None, *, via: Request | None = None
    ) -> TdmState:
        """What the origin's file says of ``url`` (fetched if missing or
        stale, routed as ``via``: see :meth:`entry`)."""
        tdm_url = tdm_url or file_url(url)
        if tdm_url is None:
            return TdmState()
        entry = await self.entry(tdm_url, via=via)
        state = from_file(entry.file, tdm_url, url)
        return state._replace(file=tdm_url, file_status=entry.kind)

    async def entry(self, tdm_url: str, *, via: Request | None = None) -> TdmEntry:
        """The fresh entry of the file at ``tdm_url``, fetched once for all
        the requests that need it meanwhile, routed as ``via`` (the request
        that asked first) as robots.txt is: its proxy, downloader slot and
        local address (:data:`~scrapy_rfc9309.fetch.ROUTING_META`)."""
        entry = self._entries.get(tdm_url)
        if entry is not None and entry.expires_at > self.clock():
            self._entries.move_to_end(tdm_url)
            return entry
        return await self._flight.run(tdm_url, lambda: self._refresh(tdm_url, via))

    async def _refresh(self, tdm_url: str, via: Request | None) -> TdmEntry:
        try:
            entry = await self._fresh(tdm_url, via)
        except RobotsCancelled:
            raise  # the crawl closes: nothing learnt, nothing kept
        except Exception:
            logger.error(
                "Error obtaining %(file)s; no TDMRep rules for its origin",
                {"file": tdm_url},
                exc_info=True,
                extra={"spider": self.crawler.spider},
            )
            now = self.clock()
            entry = TdmEntry(
                None, "unreachable", "internal error", now, now + self.timeout
            )
        self._keep(tdm_url, entry)
        return entry

    def _keep(self, tdm_url: str, entry: TdmEntry) -> None:
        """Keep ``entry``, least recently used files dropped first to stay
        within ``ROBOTS_MEMORY_MAX_ORIGINS`` and ``ROBOTS_MEMORY_MAX_BYTES``
        (a file larger than that alone is still kept, as the only one)."""
        entries = self._entries
        self.size -= self._sizes.pop(tdm_url, 0)
        entries[tdm_url] = entry
        entries.move_to_end(tdm_url)
        self._sizes[tdm_url] = size = entry_bytes(tdm_url, entry)
        self.size += size
        while len(entries) > self.max_entries or (
            self.size > self.max_bytes and len(entries) > 1
        ):
            oldest, _ = entries.popitem(last=False)
            self.size -= self._sizes.pop(oldest)

    async def _fresh(self, tdm_url: str, via: Request | None) -> TdmEntry:
        previous = self._entries.get(tdm_url)
        leased: TdmEntry | bool = False
        if self.stores.store is not None:
            stored = await self._stored(tdm_url)
            if stored is not None:
                return stored
            leased = await self.leases.take(tdm_url, lambda: self._stored(tdm_url))
            if isinstance(leased, TdmEntry):
                return leased
        try:
            entry = await self._download(tdm_url, previous, via)
            self.stats.inc_value(f"robots/tdm/file/{entry.kind}")
            await self.stores.put_record(tdm_url, entry.encode(), entry.expires_at)
        finally:
            if leased:
                await self.leases.release(tdm_url)
        return entry

    async def _stored(self, tdm_url: str) -> TdmEntry | None:
        text = await self.stores.get_record(tdm_url)
        entry = TdmEntry.decode(text, tdm_url)
        if entry is None or entry.expires_at <= self.clock():
            return None
        return entry

    async def _get(
        self, tdm_url: str, via: Request | None
    ) -> tuple[Response, BoundedDecoder, float | None] | str:
        """The file's response, redirects followed here hop by hop (each
        hop checked by ``ROBOTS_SSRF_GUARD``, at most
        ``ROBOTS_MAX_REDIRECTS``), each routed as ``via`` and answered by
        Scrapy's HTTP cache as robots.txt's are
        (:meth:`~scrapy_rfc9309.fetch.RobotsFetcher.answer`): with when the
        cache stored the answer, if replayed; or why the guard refused it."""
        url = tdm_url
        got: tuple[Response, BoundedDecoder, float | None] | str = ""
        for _ in range(self.fetcher.max_redirects + 1):
            refusal = await self.fetcher.guard_refusal(url)
            if refusal is not None:
                return refusal
            got = await self.fetcher.answer(
                url, tdm_url, via, self._held, meta={"download_timeout": self.timeout}
            )
            response = got[0]
            refusal = self.fetcher.address_refusal(response.request, response)
            if refusal is not None:
                return refusal
            location = response.headers.get(b"Location")
            if not (300 <= response.status < 400 and location):
                break
            target = http_url(response.url, location)
            if target is None:
                break
            url = target
        # Past the last hop, a 3xx: no file to be had, so none (missing).
        return got

    def _held(
        self, response: Response, decoded: BoundedDecoder, stored: float, now: float
    ) -> float | None:
        """``stored``, for a file replayed from Scrapy's HTTP cache whose
        answer, dated then, still holds at ``now``: not a failure, not past
        its lifetime; else ``None`` (fetched again)."""
        if _failure(response) is not None or self._expires(response, stored) <= now:
            return None
        return stored

    def _expires(self, response: Response, fetched_at: float) -> float:
        cache_control = one_value(response.headers.getlist(b"Cache-Control"))
        return fetched_at + lifetime(self.lifetimes, max_age(cache_control))

    async def _download(
        self, tdm_url: str, previous: TdmEntry | None, via: Request | None
    ) -> TdmEntry:
        self.stats.inc_value("robots/tdm/fetch_count")
        try:
            got = await self._get(tdm_url, via)
        except RobotsCancelled:
            raise
        except Exception as exc:
            # A timeout, a refused connection, a component refusing it: no
            # answer from the server, so no rules for now.
            return self._failed(tdm_url, f"{type(exc).__name__}: {exc}", previous)
        if isinstance(got, str):
            return self._failed(tdm_url, got, previous)
        response, decoded, stored = got
        failure = _failure(response)
        if failure is not None:
            return self._failed(tdm_url, failure, previous)
        # A file replayed from the HTTP cache is as old as the cache's copy.
        now = self.clock() if stored is None else stored
        expires_at = self._expires(response, now)
        status = response.status
        if not 200 <= status < 300:
            # 404 and the rest: the origin does not implement the protocol.
            return TdmEntry(None, "missing", f"HTTP {status}", now, expires_at)
        if decoded.error is not None or decoded.cut:
            why = decoded.error or f"over ROBOTS_MAX_BYTES ({self.fetcher.max_bytes})"
            return self._unusable(tdm_url, f"HTTP {status}, {why}", now, expires_at)
        tdm_file = parse_file(decoded.body, response.url)
        if not tdm_file.rules and tdm_file.problems:
            detail = f"HTTP {status}, {tdm_file.problems[0]}"
            return self._unusable(tdm_url, detail, now, expires_at)
        if tdm_file.problems:
            logger.info(
                "TDMRep %(file)s: %(problems)s",
                {"file": tdm_url, "problems": "; ".join(tdm_file.problems)},
                extra={"spider": self.crawler.spider},
            )
        return TdmEntry(tdm_file, "parsed", f"HTTP {status}", now, expires_at)

    def _unusable(
        self, tdm_url: str, detail: str, now: float, expires_at: float
    ) -> TdmEntry:
        logger.info(
            "TDMRep %(file)s is invalid (%(detail)s): no TDMRep rules for its origin",
            {"file": tdm_url, "detail": detail},
            extra={"spider": self.crawler.spider},
        )
        return TdmEntry(None, "invalid", detail, now, expires_at)

    def _failed(self, tdm_url: str, detail: str, previous: TdmEntry | None) -> TdmEntry:
        """No answer: the last rules read (within ``ROBOTS_UNREACHABLE_GRACE``)
        or none, for ``ROBOTS_UNREACHABLE_LIFETIME``, then fetched again."""
        now = self.clock()
        kept = None
        if (
            previous is not None
            and previous.file is not None
            and now - previous.fetched_at <= self.lifetimes.grace
        ):
            kept = previous.file
            detail += ", last file read kept"
        logger.info(
            "TDMRep %(file)s is unreachable (%(detail)s)%(effect)s",
            {
                "file": tdm_url,
                "detail": detail,
                "effect": "" if kept else ": no TDMRep rules for its origin for now",
            },
            extra={"spider": self.crawler.spider},
        )
        fetched_at = now if previous is None or kept is None else previous.fetched_at
        return TdmEntry(
            kept, "unreachable", detail, fetched_at, now + self.lifetimes.unreachable
        )

    async def _spider_closed(self) -> None:
        await self.stores.close()


def _failure(response: Response) -> str | None:
    """Why ``response`` is no answer of the file's (a temporary failure: a
    5xx, a 429, a truncated body), or ``None``."""
    status = response.status
    if "dataloss" in response.flags:
        return f"HTTP {status}, truncated body"
    if status >= 500 or status == 429:
        return f"HTTP {status}"
    return None


def response_state(response: Response) -> TdmState:
    """What TDMRep says of ``response``: the file's rule (left in its meta
    by :class:`TdmMiddleware`), then its header, then its HTML meta."""
    state = response.meta.get(_STATE_KEY)
    if not isinstance(state, TdmState):
        state = TdmState()
    headers = response.headers
    steps = [
        (
            "header",
            header_values(
                headers.getlist(RESERVATION), headers.getlist(POLICY), response.url
            ),
        )
    ]
    text = getattr(response, "text", None) if is_html(response) else None
    if isinstance(text, str):
        steps.append(("meta", meta_values(text, response.url)))
    return resolve(state, steps)


@spider_argument
class TdmItemsMiddleware:
    """Apply the ``tdm-reservation`` header and HTML meta of each response
    of a TDM crawl: ``response.meta["robots_tdm"]`` says the result; with
    ``ROBOTS_TDMREP = "drop"`` the items of a reserved response are dropped
    (``robots/tdm/items_dropped``), with ``"annotate"`` items get a
    ``robots_tdm`` field.  Requests are left alone."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.drop = _drops(crawler)
        self._read: WeakKeyDictionary[Response, TdmState] = WeakKeyDictionary()
        #: The crawl's evidence (ROBOTS_REPORT counts the items dropped).
        self.ledger = ledger_for(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        with refusals_logged(crawler):
            return cls(crawler)

    def state(self, response: Response) -> TdmState:
        """The state of ``response``, read once (kept in its meta)."""
        state = self._read.get(response)
        if state is None:
            state = self._read[response] = response_state(response)
            response.meta[_STATE_KEY] = state
            response.meta[META_KEY] = state.to_dict()
        return state

    def process_spider_input(self, response: Response) -> None:
        if not response.meta.get("dont_obey_robotstxt"):
            self.state(response)

    async def process_spider_output(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        state = None
        # dont_obey_robotstxt: the request opted out of TDMRep too.
        if response is not None and not response.meta.get("dont_obey_robotstxt"):
            state = self.state(response)
        async for output in result:
            if (
                state is None
                or isinstance(output, Request)
                or not ItemAdapter.is_item(output)
            ):
                yield output
            elif not self.drop:
                annotate(output, FIELD, state.to_dict())
                yield output
            elif state.reservation != 1:
                yield output
            else:
                assert response is not None
                self.stats.inc_value("robots/tdm/items_dropped")
                if self.ledger is not None:
                    self.ledger.item_dropped(
                        response.url, "tdm", f"tdm-reservation 1 ({state.source})"
                    )
                logger.debug(
                    "Dropped %(output)r of %(url)s: TDMRep reserves it (%(source)s)",
                    {"output": output, "url": response.url, "source": state.source},
                    extra={"spider": self.crawler.spider},
                )
