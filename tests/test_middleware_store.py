"""The middleware with a configured store: shared outcomes, the fetch lease,
and degrading to memory when the store fails."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import pytest
from scrapy import Request
from scrapy.http import Response

from scrapy_rfc9309 import signals as robots_signals
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.outcome import Lifetimes, Outcome, parsed, unreachable
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.stores.base import OutcomeStore, StoreError
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.crawl_helpers import RecordingSpider, crawl, make_crawler, stats
from tests.support.server import Server
from tests.support.utils import FakeClock, coroutine_test

HERE = __name__
ROBOTS = (
    "User-agent: TestBot\nDisallow: /private\n\n"
    "User-agent: OtherBot\nDisallow: /\n\nSitemap: /sitemap.xml\n"
)


class SharedStore(OutcomeStore):
    """A store shared by every instance (as by the processes of a fleet),
    recording what is done to it; tests script it through class attributes."""

    shared = True
    outcomes: ClassVar[dict[str, Outcome]] = {}
    calls: ClassVar[list[tuple[str, str]]] = []
    #: Answers of acquire(), in order (then True).
    leases: ClassVar[list[bool]] = []
    #: get() answers None this many times before answering for real.
    hide: int = 0

    async def get(self, origin: str) -> Outcome | None:
        self.calls.append(("get", origin))
        if SharedStore.hide:
            SharedStore.hide -= 1
            return None
        return self.outcomes.get(origin)

    async def put(self, origin: str, outcome: Outcome) -> None:
        self.calls.append(("put", origin))
        self.outcomes[origin] = outcome

    async def acquire(self, origin: str, ttl: float) -> bool:
        self.calls.append(("acquire", origin))
        return self.leases.pop(0) if self.leases else True

    async def release(self, origin: str) -> None:
        self.calls.append(("release", origin))

    async def close(self) -> None:
        self.calls.append(("close", ""))


@pytest.fixture(autouse=True)
def _fresh_store() -> None:
    SharedStore.outcomes = {}
    SharedStore.calls = []
    SharedStore.leases = []
    SharedStore.hide = 0


SHARED = {"ROBOTS_STORE": f"{HERE}.SharedStore"}


def _kinds() -> list[str]:
    return [kind for kind, _ in SharedStore.calls]


@coroutine_test
async def test_fetched_outcome_written_whole(server: Server) -> None:
    server.route("/robots.txt", ROBOTS)
    crawler = await crawl([server.url("/private"), server.url("/public")], SHARED)
    assert crawler.spider.crawled == [server.url("/public")]
    assert _kinds() == ["get", "acquire", "get", "put", "release", "close"]
    stored = SharedStore.outcomes[server.url("/robots.txt")]
    # The whole document: other agents' groups and the sitemaps too.
    assert stored.document is not None
    assert len(stored.document.groups) == 2
    assert stored.document.sitemaps == ("/sitemap.xml",)


@coroutine_test
async def test_fresh_shared_outcome_used_without_fetching(server: Server) -> None:
    origin = server.url("/robots.txt")
    SharedStore.outcomes[origin] = parsed(
        parse("User-agent: *\nDisallow: /private\n"),
        now=time.time(),
        lifetimes=Lifetimes(),
    )
    crawler = make_crawler(SHARED)
    sent: list[Any] = []

    def on_outcome(**kwargs: Any) -> None:
        sent.append(kwargs)

    crawler.signals.connect(on_outcome, signal=robots_signals.robots_outcome)
    await crawler.crawl_async(urls=[server.url("/private"), server.url("/public")])
    assert server.count("/robots.txt") == 0
    assert crawler.spider.crawled == [server.url("/public")]
    # Taken from the store, the outcome is announced as a fetched one is.
    assert [item["origin"] for item in sent] == [origin]
    assert sent[0]["outcome"] == SharedStore.outcomes[origin]
    assert stats(crawler) == {
        "robots/outcome/parsed": 1,
        "robots/forbidden": 1,
        "robots/forbidden/rule": 1,
    }


@coroutine_test
async def test_stale_shared_outcome_is_the_fallback_of_the_30_day_rule(
    server: Server,
) -> None:
    origin = server.url("/robots.txt")
    lifetimes, day, now = Lifetimes(), 86_400, time.time()
    good = parsed(parse(ROBOTS), now=now - 40 * day, lifetimes=lifetimes)
    # Unreachable for 31 days already (last seen so yesterday), the parsed
    # copy carried along.
    first = unreachable(now=now - 31 * day, lifetimes=lifetimes, previous=good)
    SharedStore.outcomes[origin] = unreachable(
        now=now - day, lifetimes=lifetimes, previous=first
    )
    server.route("/robots.txt", "", status=503)
    crawler = await crawl([server.url("/private"), server.url("/public")], SHARED)
    assert crawler.spider.crawled == [server.url("/public")]
    assert crawler.spider.dropped[server.url("/private")].cause == "rule"
    written = SharedStore.outcomes[origin]
    assert written.kind == "unreachable"
    assert written.fallback is not None
    assert len(written.fallback.groups) == 2


@coroutine_test
async def test_waits_for_the_lease_holder(server: Server) -> None:
    origin = server.url("/robots.txt")
    server.route("/robots.txt", "User-agent: *\n")
    # Another process holds the lease and puts its outcome after a while.
    SharedStore.leases = [False, False, False]
    SharedStore.hide = 3
    SharedStore.outcomes[origin] = parsed(
        parse("User-agent: *\nDisallow: /private\n"),
        now=time.time(),
        lifetimes=Lifetimes(),
    )
    crawler = await crawl([server.url("/private"), server.url("/public")], SHARED)
    assert server.count("/robots.txt") == 0
    assert crawler.spider.crawled == [server.url("/public")]
    assert "put" not in _kinds()


@coroutine_test
async def test_outcome_put_just_before_the_lease_is_taken_is_found(
    server: Server,
) -> None:
    # The holder put its outcome and released the lease between this
    # worker's lookup and its acquire.
    origin = server.url("/robots.txt")
    SharedStore.hide = 1
    SharedStore.outcomes[origin] = parsed(
        parse("User-agent: *\nDisallow: /private\n"),
        now=time.time(),
        lifetimes=Lifetimes(),
    )
    crawler = await crawl([server.url("/private"), server.url("/public")], SHARED)
    assert server.count("/robots.txt") == 0
    assert crawler.spider.crawled == [server.url("/public")]
    assert _kinds() == ["get", "acquire", "get", "release", "close"]


@coroutine_test
async def test_takes_over_the_lease_of_a_holder_that_gave_up(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    SharedStore.leases = [False, False]
    crawler = await crawl([server.url("/private"), server.url("/public")], SHARED)
    assert server.count("/robots.txt") == 1
    assert crawler.spider.crawled == [server.url("/public")]
    assert _kinds()[-3:] == ["put", "release", "close"]


class FailingStore(OutcomeStore):
    shared = True
    failures = 0

    async def _fail(self) -> Any:
        FailingStore.failures += 1
        raise StoreError("backend down")

    async def get(self, origin: str) -> Outcome | None:
        return await self._fail()  # type: ignore[no-any-return]

    async def put(self, origin: str, outcome: Outcome) -> None:
        await self._fail()

    async def acquire(self, origin: str, ttl: float) -> bool:
        return await self._fail()  # type: ignore[no-any-return]

    async def release(self, origin: str) -> None:
        await self._fail()

    async def close(self) -> None:
        await self._fail()


class BrokenStore(FailingStore):
    def __init__(self) -> None:
        raise StoreError("cannot connect")


@pytest.mark.parametrize("store", ["FailingStore", "BrokenStore"])
@coroutine_test
async def test_failing_store_degrades_to_memory(
    make_server: Any, caplog: pytest.LogCaptureFixture, store: str
) -> None:
    FailingStore.failures = 0
    first, second = make_server(), make_server()
    for server in (first, second):
        server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    urls = [
        first.url("/private"),
        first.url("/a"),
        second.url("/private"),
        second.url("/b"),
    ]
    with caplog.at_level(logging.WARNING):
        crawler = await crawl(urls, {"ROBOTS_STORE": f"{HERE}.{store}"})
    # No request lost, every decision made.
    assert sorted(crawler.spider.crawled) == sorted([first.url("/a"), second.url("/b")])
    assert len(crawler.spider.dropped) == 2
    warnings = [r for r in caplog.records if "robots.txt store" in r.getMessage()]
    assert len(warnings) == 1
    # One failure for the store that failed (then it is left alone); the
    # one that never started counts its failure to start.
    assert stats(crawler)["robots/store/errors"] == 1
    assert FailingStore.failures == (1 if store == "FailingStore" else 0)
    assert stats(crawler)["robots/fetch_count"] == 2


YANDEX = {"ROBOTS_PROFILE": "yandex", "ROBOTS_USER_AGENT": "Yandex"}


@coroutine_test
async def test_crawls_of_two_profiles_sharing_a_store_each_read_their_own(
    server: Server, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """One project's spiders share the SQLite file, each with its profile:
    an outcome read under one profile (its document, its status policy) is
    not another's.  Yandex reads an empty Disallow as ``Allow: /``, which
    beats ``Disallow: /``; RFC 9309 reads it as no rule."""
    server.route("/robots.txt", "User-agent: *\nDisallow:\nDisallow: /\n")
    store = {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": str(tmp_path / "r.db")}
    with caplog.at_level(logging.ERROR):
        yandex = await crawl([server.url("/x")], {**store, **YANDEX})
        default = await crawl([server.url("/y")], store)
        again = await crawl([server.url("/z")], {**store, **YANDEX})
    assert [r.getMessage() for r in caplog.records] == []
    assert yandex.spider.crawled == [server.url("/x")]
    assert [e.cause for e in default.spider.dropped.values()] == ["rule"]
    assert again.spider.crawled == [server.url("/z")]
    # Once per profile; the last crawl read the first one's.
    assert server.count("/robots.txt") == 2
    assert stats(again)["robots/outcome/parsed"] == 1
    assert "robots/fetch_count" not in stats(again)


DAY = 86_400
OTHER_GROUPS = "".join(
    f"User-agent: other{i}\nDisallow: /{hashlib.sha256(b'%d' % i).hexdigest()}\n\n"
    for i in range(300)
)


class TwoSteps(RecordingSpider):
    """Asks its first URL, then (the clock 2 days on, robots.txt now
    answering 503) its second."""

    clock: FakeClock
    server: Server

    async def start(self) -> AsyncIterator[Request]:
        yield Request(self.urls[0], callback=self.parse, dont_filter=True)

    def parse(self, response: Response) -> Iterator[Request]:  # type: ignore[override]
        super().parse(response)
        if response.url == self.urls[0]:
            self.clock.now += 2 * DAY
            self.server.route("/robots.txt", "", status=503)
            yield Request(
                self.urls[1], callback=self.parse, errback=self.failed, dont_filter=True
            )


@coroutine_test
async def test_a_fallback_of_one_agents_rules_is_not_shared(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outcome too large for the store is kept in memory for the crawl's
    agent only.  When robots.txt then fails, the 30-day fallback made of
    that agent's rules stays in this process: shared, it would judge
    another agent's worker by them once the 30 days are over (BotB was
    allowed /a and refused /b, BotA's rules)."""
    clock = FakeClock(1_700_000_000.0)
    monkeypatch.setattr(RobotsMiddleware, "clock", staticmethod(clock))
    monkeypatch.setattr(SQLiteStore, "clock", staticmethod(clock))
    rules = "User-agent: BotA\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n"
    server.route("/robots.txt", rules + OTHER_GROUPS)
    store = {
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": str(tmp_path / "r.db"),
        "ROBOTS_STORE_MAX_ENTRY_BYTES": 4000,
    }
    TwoSteps.clock, TwoSteps.server = clock, server
    first = await crawl(
        [server.url("/p1"), server.url("/a")],
        {**store, "ROBOTS_USER_AGENT": "BotA"},
        TwoSteps,
    )
    assert stats(first)["robots/store/oversized"] == 1
    clock.now += 30 * DAY + 60
    other = await crawl(
        [server.url("/a"), server.url("/b")], {**store, "ROBOTS_USER_AGENT": "BotB"}
    )
    # BotB's group is '*' (/b), which nobody kept: its worker has no copy
    # to fall back on, rather than BotA's rules (/a) read as everyone's.
    assert other.spider.crawled == []
    assert {e.cause for e in other.spider.dropped.values()} == {"unreachable"}
