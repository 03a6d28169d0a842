"""The memory store: LRU bound, entries kept for one agent, leases."""

from __future__ import annotations

import pytest
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.match import content_signals, crawl_delay
from scrapy_rfc9309.outcome import (
    Lifetimes,
    explain_by,
    parsed,
    unavailable,
    unreachable,
)
from scrapy_rfc9309.parse import Rule, parse
from scrapy_rfc9309.stores.base import OutcomeStore
from scrapy_rfc9309.stores.memory import MemoryStore, new_entry
from tests.utils import coroutine_test

LIFETIMES = Lifetimes(cache=100, unreachable=10, grace=1000)
DOC = parse(
    "User-agent: TestBot\nDisallow: /mine\n\n"
    "User-agent: *\nDisallow: /all\n\n"
    "User-agent: OtherBot\nDisallow: /other\n"
)


def test_is_an_outcome_store() -> None:
    assert isinstance(MemoryStore(), OutcomeStore)
    assert MemoryStore.shared is False


def test_least_recently_used_origin_goes_first() -> None:
    store = MemoryStore(max_origins=2, user_agent="TestBot")
    outcome = parsed(DOC, now=0, lifetimes=LIFETIMES)
    store.store("http://a/robots.txt", outcome)
    store.store("http://b/robots.txt", outcome)
    # Using a makes b the least recently used.
    assert store.entry("http://a/robots.txt") is not None
    store.store("http://c/robots.txt", outcome)
    assert len(store) == 2
    assert "http://a/robots.txt" in store
    assert "http://b/robots.txt" not in store
    assert "http://c/robots.txt" in store


def test_keeps_only_what_answers_for_the_agent() -> None:
    store = MemoryStore(user_agent="TestBot/2.0")
    outcome = parsed(DOC, now=0, lifetimes=LIFETIMES)
    entry = store.store("http://a/robots.txt", outcome)
    # No document beside the matcher: it answers and explains on its own.
    assert entry.outcome.document is None
    assert entry.matcher is not None
    decision = entry.matcher.explain("http://a/mine/page")
    assert not decision.allowed
    assert decision.rule == Rule(False, "/mine", 2)
    assert entry.matcher.explain("http://a/all").allowed


def test_restored_outcome_answers_as_the_original() -> None:
    body = (
        "User-agent: TestBot\nDisallow: /mine\nAllow: /mine/open\nCrawl-delay: 2\n"
        "Content-Signal: ai-train=no\nDisallow: /*.pdf$\n"
        "Allow: /dir/index.html\nDisallow: /dir/\nDisallow: /mine\n\n"
        "User-agent: *\nDisallow: /all\nSitemap: https://a/s.xml\n"
    )
    failed = unreachable(
        now=LIFETIMES.grace + 1,
        lifetimes=LIFETIMES,
        previous=parsed(parse(body), now=LIFETIMES.grace, lifetimes=LIFETIMES),
    )
    for outcome in (parsed(parse(body), now=0, lifetimes=LIFETIMES), failed):
        entry = new_entry(outcome, "TestBot/2.0")
        restored = entry.restored()
        assert restored.kind == outcome.kind
        rules, original = restored.rules, outcome.rules
        assert rules is not None
        assert original is not None
        assert rules.sitemaps == ("https://a/s.xml",)
        now = 3 * LIFETIMES.grace
        for url in ("/mine", "/mine/open", "/a.pdf", "/dir/", "/dir/x", "/all", "/"):
            assert explain_by(restored, "TestBot", url, now=now) == explain_by(
                outcome, "TestBot", url, now=now
            )
        for function in (crawl_delay, content_signals):
            assert function(rules, "TestBot") == function(original, "TestBot")
        # Kept again (the 30-day rule carries it on), it answers the same.
        again = new_entry(restored, "TestBot/2.0")
        assert again.restored() == restored


def test_without_agent_keeps_whole_documents() -> None:
    store = MemoryStore()
    entry = store.store("http://a/robots.txt", parsed(DOC, now=0, lifetimes=LIFETIMES))
    assert entry.outcome.document == DOC


def test_unavailable_has_no_matcher() -> None:
    store = MemoryStore(user_agent="TestBot")
    entry = store.store("http://a/robots.txt", unavailable(now=0, lifetimes=LIFETIMES))
    assert entry.matcher is None


@coroutine_test
async def test_async_interface_and_retention() -> None:
    now = [0.0]
    store = MemoryStore(user_agent="TestBot", clock=lambda: now[0])
    outcome = parsed(DOC, now=0, lifetimes=LIFETIMES)
    await store.put("http://a/robots.txt", outcome)
    got = await store.get("http://a/robots.txt")
    assert got is not None
    assert (got.kind, got.expires_at) == (outcome.kind, outcome.expires_at)
    assert explain_by(got, "TestBot", "/mine", now=0).rule == Rule(False, "/mine", 2)
    assert await store.get("http://b/robots.txt") is None
    # Stale entries are kept until retain_until (the 30-day rule needs them).
    now[0] = outcome.expires_at + 1
    assert await store.get("http://a/robots.txt") is not None
    now[0] = outcome.retain_until
    assert await store.get("http://a/robots.txt") is None
    assert "http://a/robots.txt" not in store


@coroutine_test
async def test_lease() -> None:
    store = MemoryStore()
    taken = [await store.acquire("o", 60)]
    taken.append(await store.acquire("o", 60))
    await store.release("o")
    taken.append(await store.acquire("o", 60))
    await store.release("o")
    await store.release("o")  # not held: nothing happens
    taken.append(await store.acquire("o", 0))
    # A lease of 0 seconds has already expired.
    taken.append(await store.acquire("o", 60))
    await store.close()
    assert taken == [True, False, True, True, True]


def test_from_crawler_reads_settings_and_agent() -> None:
    crawler = get_crawler(
        settings_dict={"ROBOTS_MEMORY_MAX_ORIGINS": 7, "ROBOTS_USER_AGENT": "Foo/1"}
    )
    store = MemoryStore.from_crawler(crawler)
    assert store.max_origins == 7
    assert store.user_agent == "Foo/1"


def test_defaults_without_settings() -> None:
    store = MemoryStore.from_crawler(get_crawler(settings_dict={"USER_AGENT": "Bar/1"}))
    assert store.max_origins == 100_000
    assert store.user_agent == "Bar/1"


def test_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="ROBOTS_MEMORY_MAX_ORIGINS"):
        MemoryStore(max_origins=0)


def test_bound_setting_must_be_a_number() -> None:
    crawler = get_crawler(settings_dict={"ROBOTS_MEMORY_MAX_ORIGINS": "many"})
    with pytest.raises(ValueError, match="ROBOTS_MEMORY_MAX_ORIGINS"):
        MemoryStore.from_crawler(crawler)
