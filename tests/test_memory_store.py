"""The memory store: LRU bound, entries kept for one agent, leases."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import _sizes
from scrapy_rfc9309.match import (
    MATCHERS_PER_DOCUMENT,
    Matcher,
    compile,
    content_signals,
    crawl_delay,
)
from scrapy_rfc9309.outcome import (
    Lifetimes,
    explain_by,
    parsed,
    unavailable,
    unreachable,
)
from scrapy_rfc9309.parse import Document, Rule, parse
from scrapy_rfc9309.stores.base import OutcomeStore
from scrapy_rfc9309.stores.memory import Entry, MemoryStore, entry_size, new_entry
from scrapy_rfc9309.usage import matched_usage, usage_explained, usage_preferences
from tests.support.crawl_helpers import crawl, middleware
from tests.support.server import Server
from tests.support.utils import coroutine_test

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
        "Allow: /dir/index.html\nDisallow: /dir/\nDisallow: /mine\n"
        "Content-Usage: train-ai=n\nContent-Usage: /mine/open train-ai=y\n\n"
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
        # What usage needs: the rules and the lines that explain them.
        for url in ("/mine/open/x", "/dir/", "/mine", "/all"):
            assert usage_explained(rules, "TestBot", url) == usage_explained(
                original, "TestBot", url
            )
        assert usage_preferences(rules, "TestBot", "/mine/open/x")["train-ai"]
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


# -- the byte bound ------------------------------------------------------------


def hostile_body(size: int = 512_000) -> bytes:
    """A robots.txt of ``size`` bytes of short rules, the costliest shape per
    byte: ~30,000 rules, several MB once parsed and compiled."""
    lines = [b"User-agent: *", b"Disallow: /private"]
    total = sum(len(line) + 1 for line in lines)
    index = 0
    while total < size - 20:
        line = b"Disallow: /%d" % index
        lines.append(line)
        total += len(line) + 1
        index += 1
    return b"\n".join(lines) + b"\n"


def held_after(work: Callable[[], object]) -> int:
    """Bytes still allocated once ``work`` is done and garbage collected."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = work()
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
        del kept
    finally:
        tracemalloc.stop()
    return size


def test_hostile_origins_stay_within_the_byte_bound() -> None:
    # Ten hostile robots.txt files took ~17 MB when only origins were
    # counted; with a bound of two and a half entries the store evicts
    # down to the two most recent.  (128 KB bodies: tracemalloc slows
    # parsing down, and the shape, not the size, is the point.)
    body = hostile_body(128_000)
    one = entry_size(
        "http://host0.example/robots.txt",
        MemoryStore(user_agent="TestBot").store(
            "http://host0.example/robots.txt",
            parsed(parse(body), now=0, lifetimes=LIFETIMES),
        ),
    )
    bound = 2 * one + one // 2
    store = MemoryStore(user_agent="TestBot", max_bytes=bound)

    def fill() -> MemoryStore:
        for index in range(10):
            outcome = parsed(parse(body), now=0, lifetimes=LIFETIMES)
            store.store(f"http://host{index}.example/robots.txt", outcome)
        return store

    held = held_after(fill)
    assert held < bound
    assert store.size <= bound
    assert len(store) == 2
    assert store.evictions == 8
    # The most recent origins are the ones kept, and they still answer.
    assert list(store._entries) == [
        "http://host8.example/robots.txt",
        "http://host9.example/robots.txt",
    ]
    entry = store.entry("http://host9.example/robots.txt")
    assert entry is not None
    assert entry.matcher is not None
    assert not entry.matcher.explain("/private/x").allowed
    assert entry.matcher.explain("/public").allowed


# The costliest shapes of robots.txt to keep, per byte of body.
COSTLY_BODIES = pytest.mark.parametrize(
    "body",
    [
        hostile_body(100_000),
        # Wildcards and text beyond ASCII: the costliest rules per character.
        "User-agent: *\n"
        + "".join(f"Disallow: /*{i}*\u0436\U0001f600$\n" for i in range(3000)),
        "User-agent: *\n"
        + "".join(f"Disallow: /*{i}{'*a' * 50}\n" for i in range(500)),
        "User-agent: *\n" + "".join(f"Sitemap: /s{i}.xml\n" for i in range(3000)),
        # Content-Usage rules: the matcher keeps each, path and preference.
        "User-agent: *\n"
        + "".join(f"Content-Usage: /p{i}/ train-ai=n, ai-use=y\n" for i in range(3000)),
    ],
    ids=["short", "wildcard-unicode", "many-wildcards", "sitemaps", "content-usage"],
)


@COSTLY_BODIES
def test_the_estimate_stays_above_what_is_held_and_near_it(body: str | bytes) -> None:
    # The bound is only as good as entry_size(): it must not undercount
    # the costliest shapes.
    store = MemoryStore(user_agent="TestBot")
    # A first store fills the parser's process-wide caches.
    store.store(
        "http://warm/robots.txt", parsed(parse(body), now=0, lifetimes=LIFETIMES)
    )
    origin = "http://example.com/robots.txt"

    def fill() -> None:
        store.store(origin, parsed(parse(body), now=0, lifetimes=LIFETIMES))
        kept = store.entry(origin)
        assert kept is not None
        assert kept.matcher is not None
        if kept.matcher.content_usage:
            # Asked once, the matcher compiles its Content-Usage table.
            matched_usage(kept.matcher, "http://example.com/p1/x")

    held = held_after(fill)
    entry = store.entry(origin)
    assert entry is not None
    assert entry_size(origin, entry) >= held
    # Nor overcount them much: the bound would keep far fewer origins
    # than it could.
    assert entry_size(origin, entry) <= 2 * held


@COSTLY_BODIES
def test_whole_documents_are_counted_with_every_matcher_they_may_keep(
    body: str | bytes,
) -> None:
    # Without an agent (library use) the store keeps whole documents, and
    # each agent asked of one compiles a matcher the document keeps, up to
    # MATCHERS_PER_DOCUMENT; the entry's own matcher (for "*") outlives the
    # document's dict being emptied. The estimate counts them all at once.
    store = MemoryStore()
    origin = "http://example.com/robots.txt"
    asked = [f"Bot{agent}" for agent in range(MATCHERS_PER_DOCUMENT + 3)]

    def ask(document: Document | None) -> None:
        assert document is not None
        for agent in asked:
            # Asked once, each matcher compiles its Content-Usage table too.
            matched_usage(compile(document, agent), "http://example.com/p1/x")

    # A first store fills the parser's process-wide caches.
    warm = parsed(parse(body), now=0, lifetimes=LIFETIMES)
    ask(store.store("http://warm/robots.txt", warm).outcome.document)

    def fill() -> None:
        entry = store.store(origin, parsed(parse(body), now=0, lifetimes=LIFETIMES))
        ask(entry.outcome.document)

    held = held_after(fill)
    entry = store.entry(origin)
    assert entry is not None
    assert entry.outcome.document is not None
    # The dict was emptied once and filled again: it keeps the last agents.
    assert list(entry.outcome.document._matchers) == asked[-MATCHERS_PER_DOCUMENT:]
    assert entry_size(origin, entry) >= held
    assert entry_size(origin, entry) <= 2.5 * held


def _counted_by_rules(origin: str, entry: Entry) -> int:
    # The estimate counted rule by rule on the matcher's document: what
    # entry_size() must give without making that document.
    matcher = entry.matcher
    assert matcher is not None
    size = entry_size(origin, entry._replace(matcher=None))
    specials = 0
    for group in matcher.document().groups:
        for rule in group.rules:
            size += _sizes.MATCHER_RULE_BYTES + _sizes.chars(
                rule.pattern, _sizes.MATCHER_CHAR
            )
            stars = rule.pattern.count("*")
            if stars or rule.pattern.endswith("$"):
                specials += 1
                size += _sizes.MATCHER_SPECIAL_BYTES + _sizes.WILDCARD_BYTES * stars
        size += _sizes.extras_size(group.content_signals, group.content_usage)
    return size + (_sizes.MATCHER_SPECIAL_TABLES_BYTES if specials else 0)


@pytest.mark.parametrize(
    ("body", "profile"),
    [
        (
            "User-agent: *\n" + "".join(f"Disallow: /p{i}/x\n" for i in range(3000)),
            "rfc9309",
        ),
        (
            "User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /*.pdf$\n"
            "Allow: /s*q=\nDisallow: /%7Ex\nDisallow: /\u00e9t\u00e9\nAllow: /x*\n"
            "Disallow: /x\nDisallow: /p$\nContent-Signal: search=yes\n"
            "Content-Usage: /u train-ai=n\n",
            "rfc9309",
        ),
        (
            "User-agent: *\nDisallow: /\u00e9t\u00e9\nAllow: /\u00e9*\nDisallow: /a\n",
            "bing",
        ),
        ("User-agent: *\nDisallow:\nDisallow: /a\n", "yandex"),
        ("User-agent: *\nDisallow: /%61b\nAllow: /*\u0436$\n", "google"),
    ],
    ids=["plain", "every-shape", "verbatim-octets", "empty-disallow", "google"],
)
def test_the_estimate_counts_each_rule_without_making_it(
    body: str, profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = parsed(parse(body, profile=profile), now=0, lifetimes=LIFETIMES)
    origin = "http://example.com/robots.txt"
    entry = new_entry(
        outcome, {"yandex": "Yandex", "bing": "bingbot"}.get(profile, "bot")
    )
    expected = _counted_by_rules(origin, entry)
    # A robots.txt of tens of thousands of plain prefixes is counted from
    # one string: no document, and the spelling of a pattern is read only
    # for those that are not a plain prefix kept as written.
    matcher = entry.matcher
    assert matcher is not None
    read = []
    spelling = Matcher._pattern

    def counted(self: Matcher, index: int) -> str:
        read.append(index)
        return spelling(self, index)

    monkeypatch.setattr(Matcher, "_pattern", counted)
    monkeypatch.setattr(Matcher, "document", None)
    assert entry_size(origin, entry) == expected
    plain = len(matcher._plain)
    assert all(index >= plain or index in (matcher._originals or {}) for index in read)


def test_a_pattern_is_counted_by_one_formula() -> None:
    # Matcher.estimated_bytes and the memory store's count of the matchers
    # of a kept document both call _sizes.patterns_size: no other module
    # of the package spells out what a pattern costs.
    package = Path(_sizes.__file__).parent
    figures = (
        "MATCHER_CHAR",
        "MATCHER_SPECIAL_BYTES",
        "MATCHER_SPECIAL_TABLES_BYTES",
        "WILDCARD_BYTES",
    )
    spelt = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if any(name in path.read_text(encoding="utf-8") for name in figures)
    )
    assert spelt == ["_sizes.py"]
    # Each pattern, the pieces of each "*", the special tables once.
    assert _sizes.patterns_size(["/a", "/x*y$", "/*z"]) == (
        (64 + 2) + (64 + 5 + 100 + 12) + (64 + 3 + 100 + 12) + 600
    )
    assert _sizes.patterns_size(["/a", "/\u00e9"]) == (64 + 2) + (64 + 2 * 28)


def test_an_entry_over_the_bound_is_kept_alone() -> None:
    store = MemoryStore(user_agent="TestBot", max_bytes=10_000)
    store.store("http://small/robots.txt", parsed(DOC, now=0, lifetimes=LIFETIMES))
    big = parsed(parse(hostile_body(50_000)), now=0, lifetimes=LIFETIMES)
    store.store("http://big/robots.txt", big)
    # The only entry: its origin is answered without fetching robots.txt
    # again for every request, and the bound holds again with the next one.
    assert list(store._entries) == ["http://big/robots.txt"]
    entry = store.entry("http://big/robots.txt")
    assert entry is not None
    assert entry.matcher is not None
    assert not entry.matcher.explain("/private").allowed
    store.store("http://small/robots.txt", parsed(DOC, now=0, lifetimes=LIFETIMES))
    assert list(store._entries) == ["http://small/robots.txt"]
    assert store.size <= 10_000


@coroutine_test
async def test_sizes_follow_replacement_and_expiry() -> None:
    store = MemoryStore(user_agent="TestBot", clock=lambda: 10**12)
    outcome = parsed(DOC, now=0, lifetimes=LIFETIMES)
    store.store("http://a/robots.txt", outcome)
    one = store.size
    store.store("http://a/robots.txt", outcome)
    assert store.size == one
    store.store("http://b/robots.txt", unavailable(now=0, lifetimes=LIFETIMES))
    assert store.size > one
    # Past retain_until, get() drops the entries and their sizes.
    for origin in ("http://a/robots.txt", "http://b/robots.txt"):
        assert await store.get(origin) is None
    assert store.size == 0


def test_byte_bound_setting() -> None:
    crawler = get_crawler(settings_dict={"ROBOTS_MEMORY_MAX_BYTES": 1_000_000})
    assert MemoryStore.from_crawler(crawler).max_bytes == 1_000_000
    assert MemoryStore.from_crawler(get_crawler()).max_bytes == 268_435_456
    for value in (0, "lots"):
        crawler = get_crawler(settings_dict={"ROBOTS_MEMORY_MAX_BYTES": value})
        with pytest.raises(ValueError, match="ROBOTS_MEMORY_MAX_BYTES"):
            MemoryStore.from_crawler(crawler)


@coroutine_test
async def test_crawl_of_hostile_origins_stays_within_the_byte_bound(
    make_server: Callable[..., Server],
) -> None:
    servers = [make_server() for _ in range(6)]
    for server in servers:
        server.route("/robots.txt", hostile_body())
    one = entry_size(
        "http://127.0.0.2:1/robots.txt",
        MemoryStore(user_agent="TestBot").store(
            "http://127.0.0.2:1/robots.txt",
            parsed(parse(hostile_body()), now=0, lifetimes=LIFETIMES),
        ),
    )
    bound = 2 * one + one // 2
    urls = [url for s in servers for url in (s.url("/page"), s.url("/private/x"))]
    crawler = await crawl(
        urls, {"ROBOTS_MEMORY_MAX_BYTES": bound, "CONCURRENT_REQUESTS": 1}
    )
    memory = middleware(crawler).memory
    assert memory.size <= bound
    assert len(memory) == 2
    assert memory.evictions >= 4
    spider = crawler.spider
    assert sorted(spider.crawled) == sorted(s.url("/page") for s in servers)
    assert sorted(spider.dropped) == sorted(s.url("/private/x") for s in servers)
