"""The SSRF guard never wears off, and tampered store entries are fetched
again: real crawls against loopback servers, with each store."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import redis

from scrapy_rfc9309 import signals as robots_signals
from scrapy_rfc9309.fetch import RobotsFetcher, _is_public
from scrapy_rfc9309.outcome import Lifetimes, Outcome
from scrapy_rfc9309.stores._codec import pack, unpack
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from tests.support.crawl_helpers import crawl, make_crawler, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test, store_settings

RULES = "User-agent: *\nDisallow: /private\n"


@pytest.fixture(params=["memory", "sqlite", "redis"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    return store_settings(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "redis"])
def kept_store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """A store that outlives the crawl."""
    return store_settings(request.param, request, tmp_path)


def _outcomes(crawler: Any) -> list[Outcome]:
    """The outcomes the crawl obtains, as the robots_outcome signal sends them."""
    seen: list[Outcome] = []

    def record(outcome: Outcome, **_: Any) -> None:
        seen.append(outcome)

    # Signal receivers are weak references by default.
    crawler.signals.connect(record, signal=robots_signals.robots_outcome, weak=False)
    return seen


# -- the SSRF guard ---------------------------------------------------------------


@coroutine_test
async def test_a_refused_host_stays_refused_past_the_grace(
    server: Server, any_store: dict[str, Any]
) -> None:
    # ROBOTS_UNREACHABLE_GRACE = 0: an unreachable origin is at once past
    # the 30-day rule, which used to allow every URL of a host the guard
    # had refused (the loopback test server).
    server.route("/robots.txt", "User-agent: *\nAllow: /\n")
    settings = {
        **any_store,
        "ROBOTS_SSRF_GUARD": True,
        "ROBOTS_UNREACHABLE_GRACE": 0,
    }
    for _ in range(2):  # the second crawl reads what the first one stored
        crawler = make_crawler(settings)
        seen = _outcomes(crawler)
        await crawler.crawl_async(urls=[server.url("/page"), server.url("/other")])
        assert server.hits == []
        assert {e.cause for e in crawler.spider.dropped.values()} == {"unreachable"}
        assert len(crawler.spider.dropped) == 2
        (outcome,) = seen
        assert outcome.guard_refused
        assert outcome.disallows_all(outcome.fetched_at + 10**9)


@coroutine_test
async def test_refusals_are_stored_with_the_outcome(
    server: Server, kept_store: dict[str, Any]
) -> None:
    await crawl([server.url("/page")], {**kept_store, "ROBOTS_SSRF_GUARD": True})
    url = kept_store["ROBOTS_STORE_URL"]
    store = (
        SQLiteStore(url)
        if kept_store["ROBOTS_STORE"] == "sqlite"
        else RedisStore(url, prefix=kept_store["ROBOTS_STORE_PREFIX"])
    )
    stored = await store.get(server.url("/robots.txt"))
    await store.close()
    assert stored is not None
    assert stored.guard_refused
    assert "ROBOTS_SSRF_GUARD refused" in stored.detail


@coroutine_test
async def test_a_stored_outcome_does_not_open_a_refused_host(
    server: Server, kept_store: dict[str, Any]
) -> None:
    # A first run without the guard stored the host's robots.txt; a run
    # with the guard does not crawl the host on the strength of it.
    settings = kept_store
    server.route("/robots.txt", RULES)
    first = await crawl([server.url("/page")], settings)
    assert first.spider.crawled == [server.url("/page")]
    hits = len(server.hits)
    guarded = await crawl(
        [server.url("/page")], {**settings, "ROBOTS_SSRF_GUARD": True}
    )
    assert len(server.hits) == hits
    assert guarded.spider.dropped[server.url("/page")].cause == "unreachable"


@pytest.mark.parametrize(
    "address",
    [
        "::127.0.0.1",  # IPv4-compatible
        "::10.0.0.1",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "64:ff9b::127.0.0.1",  # NAT64 well-known prefix
        "64:ff9b::192.168.0.1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1",  # NAT64 local-use prefix
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo
    ],
)
def test_addresses_embedding_private_ipv4_are_refused(address: str) -> None:
    assert _is_public(address) is False


@pytest.mark.parametrize(
    "address", ["2002:5db8:d822::1", "64:ff9b::5db8:d822", "::ffff:93.184.216.34"]
)
def test_addresses_embedding_public_ipv4_pass(address: str) -> None:
    assert _is_public(address) is True


@coroutine_test
async def test_ipv4_compatible_loopback_is_refused_in_a_crawl() -> None:
    # Nothing listens there: what matters is that the guard refuses it
    # before any connection, and that it never wears off.
    url = "http://[::127.0.0.1]:8080/page"
    crawler = make_crawler({"ROBOTS_SSRF_GUARD": True, "ROBOTS_UNREACHABLE_GRACE": 0})
    seen = _outcomes(crawler)
    await crawler.crawl_async(urls=[url])
    (outcome,) = seen
    assert "ROBOTS_SSRF_GUARD refused ::127.0.0.1" in outcome.detail
    assert crawler.spider.dropped[url].cause == "unreachable"
    assert "downloader/request_count" not in stats(crawler, "downloader/")


@coroutine_test
async def test_refusal_is_none_with_the_guard_off() -> None:
    fetcher = RobotsFetcher(make_crawler(), lifetimes=Lifetimes(), clock=lambda: 0.0)
    assert await fetcher.guard_refusal("http://127.0.0.1/robots.txt") is None


# -- tampered store entries -------------------------------------------------------


def _tamper(data: dict[str, Any], how: str) -> None:
    group = data["document"]["groups"][0]
    if how == "rule-line--1":
        group["rules"][0][2] = -1
    elif how == "rule-line-2**64":
        group["rules"][0][2] = 2**64
    elif how == "group-line-huge":
        group["line"] = 10**30
    elif how == "crawl-delay-inf":
        group["crawl_delay"] = float("inf")
    elif how == "crawl-delay-negative":
        group["crawl_delay"] = -5
    elif how == "expires-at-infinity":
        data["expires_at"] = data["retain_until"] = float("inf")
    elif how == "expires-at-nan":
        data["expires_at"] = float("nan")
    elif how == "expires-past-retain":
        data["expires_at"] = data["retain_until"] + 10**6
    elif how == "status--5":
        data["http_status"] = -5
    elif how == "guard-refused-string":
        data["guard_refused"] = "no"


TAMPERINGS = [
    "rule-line--1",
    "rule-line-2**64",
    "group-line-huge",
    "crawl-delay-inf",
    "crawl-delay-negative",
    "expires-at-infinity",
    "expires-at-nan",
    "expires-past-retain",
    "status--5",
    "guard-refused-string",
]


def _rewrite(settings: dict[str, Any], origin: str, how: str) -> None:
    """Tamper with the stored entry of ``origin``, in the store itself."""
    if settings["ROBOTS_STORE"] == "sqlite":
        with sqlite3.connect(settings["ROBOTS_STORE_URL"]) as db:
            (text,) = db.execute(
                "SELECT outcome FROM outcomes WHERE origin = ?", (origin,)
            ).fetchone()
            data = unpack(text)
            _tamper(data, how)
            db.execute(
                "UPDATE outcomes SET outcome = ? WHERE origin = ?",
                (pack(data), origin),
            )
        return
    client = redis.Redis.from_url(settings["ROBOTS_STORE_URL"])
    key = f"{settings['ROBOTS_STORE_PREFIX']}outcome:{origin}"
    data = unpack(client.get(key))  # type: ignore[arg-type]
    _tamper(data, how)
    client.set(key, pack(data), keepttl=True)
    client.close()


@pytest.mark.parametrize("how", TAMPERINGS)
@coroutine_test
async def test_a_tampered_entry_is_fetched_again(
    server: Server,
    kept_store: dict[str, Any],
    how: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = kept_store
    server.route("/robots.txt", RULES + "Crawl-delay: 0\n")
    urls = [server.url("/private"), server.url("/public")]
    await crawl(urls, settings)
    _rewrite(settings, server.url("/robots.txt"), how)
    caplog.set_level(logging.INFO)
    crawler = await crawl(urls, settings)
    # Read, refused, counted, and robots.txt asked for once more.
    assert server.count("/robots.txt") == 2
    robots = stats(crawler)
    # Counted per read (a shared store is read again once the lease is taken).
    assert robots["robots/store/discarded"] >= 1
    assert robots["robots/outcome/parsed"] == 1
    assert crawler.spider.crawled == [server.url("/public")]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
