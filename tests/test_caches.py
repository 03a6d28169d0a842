"""The caches keyed by what sites send are bounded in bytes (issue 24, F3).

Hostile robots.txt files fill each cache with keys it may keep (just within
its key bound) and with keys it may not (lines of 16 KB); what the caches
hold stays within their budgets, as tracemalloc measures it, and no answer
changes: a hostile origin costs the others cache hits, never an answer.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from scrapy_rfc9309 import _caches
from scrapy_rfc9309._agents import AGENT_TOKENS, agent_token, product_token
from scrapy_rfc9309._caches import CACHES, BoundedCache
from scrapy_rfc9309._read import _KIND_CACHE
from scrapy_rfc9309.match import compile, is_allowed
from scrapy_rfc9309.parse import RFC9309, parse
from scrapy_rfc9309.urls import (
    _NORMALS,
    _ORIGINS,
    normal_pattern,
    normalize_pattern,
    origin_robots_url,
    robots_url,
)
from scrapy_rfc9309.usage import usage_explained, usage_preferences
from tests.support.crawl_helpers import crawl
from tests.support.server import Server
from tests.support.utils import coroutine_test

AGENT = "examplebot"
# Four bytes in UTF-8 and in a str; twelve once percent-encoded.
WIDE = "\U0001f600"


@pytest.fixture(autouse=True)
def empty_caches() -> Iterator[None]:
    for cache in CACHES.values():
        cache.clear()
    yield
    for cache in CACHES.values():
        cache.clear()


def hostile_body(origin: int, sets: int, wide: int) -> str:
    """``sets`` of lines whose keys are all new: patterns, Content-Usage
    paths and preferences, unknown keys and User-agent values."""
    lines = ["User-agent: *"]
    for j in range(sets):
        tag = f"{origin}x{j}"
        lines.append(f"Disallow: /{tag}/" + WIDE * wide)
        lines.append(f"Content-Usage: /{tag}/" + WIDE * wide + " train-ai=n")
        lines.append(f"Content-Usage: /u{tag} train-ai=n, a{tag}=" + "y" * wide)
        lines.append(f"X{tag}" + WIDE * wide + ": x")
    for j in range(sets):
        lines.append(f"User-agent: {origin}x{j}" + "a" * min(wide, 400))
        lines.append("Disallow: /z")
    return "\n".join(lines) + "\n"


def read_as_the_middleware_does(body: str, origin: int) -> None:
    document = parse(body)
    matcher = compile(document, AGENT)
    for j in range(3):
        url = f"http://h{origin}.test/u{origin}x{j}/p"
        matcher.is_allowed(url)
        usage_explained(document, AGENT, url)
    for j in range(50):
        origin_robots_url("http", f"u{j}:{'p' * 1900}@h{origin}-{j}.test")


def held_after(bodies: list[str]) -> int:
    """What tracemalloc finds still held once ``bodies`` are read and every
    document is gone."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for origin, body in enumerate(bodies):
            read_as_the_middleware_does(body, origin)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("sets", "wide"),
    [(60, 400), (5, 4000)],
    ids=["keys-within-the-bound", "lines-of-16-KB"],
)
def test_hostile_origins_leave_the_caches_within_their_budgets(
    sets: int, wide: int
) -> None:
    bodies = [hostile_body(origin, sets, wide) for origin in range(20)]
    assert all(len(body.encode()) <= 512_000 for body in bodies)
    held = held_after(bodies)
    # The caches' own count is what is held (it errs high), and within the
    # budget of each cache.
    assert held <= _caches.held_bytes() + 256 * 1024
    for cache in CACHES.values():
        assert cache.held <= cache.max_bytes, cache
    assert _caches.held_bytes() <= _caches.max_bytes() <= 33 << 19
    if wide <= 512:
        # The keys were kept until the budget ran out: the bound was
        # reached, not avoided.
        assert _NORMALS["normalize"].full
        assert _NORMALS["normalize"].held > (1 << 20)
    else:
        # Lines of 16 KB are never kept (the short paths are).
        assert all(len(key) < 100 for key in _NORMALS["normalize"])
        assert all(
            len(key) <= cache.max_key for cache in CACHES.values() for key in cache
        )


def test_the_estimate_covers_what_a_cache_holds() -> None:
    cache: BoundedCache[str, str] = BoundedCache("test.estimate", 8 << 20, 2048)
    try:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for i in range(1000):
            key = f"/{i}/" + WIDE * 300
            cache.put(key, normalize_pattern(key))
        gc.collect()
        measured = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        assert cache.generations == 0
        assert measured <= cache.held <= 1.5 * measured
    finally:
        del CACHES["test.estimate"]


def test_a_full_cache_takes_nothing_until_renewed() -> None:
    cache: BoundedCache[str, int] = BoundedCache("test.full", 10_000, 50)
    try:
        for i in range(1000):
            cache.put(f"key{i}", i)
            assert cache.held <= cache.max_bytes
        assert cache.full
        kept = dict(cache.data)
        assert all(value == int(key[3:]) for key, value in kept.items())
        assert "key999" not in cache
        # Renewed after RENEW_EVERY robots.txt files parsed: what the crawl
        # meets then is kept, whoever filled the cache before.
        for _ in range(_caches.RENEW_EVERY):
            parse("User-agent: *\nDisallow: /\n")
        assert not cache.full
        assert len(cache) == 0
        assert cache.generations == 1
        cache.put("key999", 999)
        assert cache["key999"] == 999
        cache.put("k" * 51, 1)
        assert "k" * 51 not in cache
    finally:
        del CACHES["test.full"]


BENIGN = """\
User-agent: *
Disallow: /private/%7Eadmin
Allow: /private/%7Eadmin/public
Disallow: /caf%C3%A9
Content-Usage: train-ai=n
Content-Usage: /open/ train-ai=y

User-agent: examplebot
Disallow: /only-for-others
"""
PROBES = [
    "http://benign.test/private/~admin",
    "http://benign.test/private/~admin/public",
    "http://benign.test/caf%C3%A9",
    "http://benign.test/café",
    "http://benign.test/only-for-others",
    "http://benign.test/open/page",
    "http://benign.test/other",
]


def benign_answers() -> list[Any]:
    answers: list[Any] = []
    for agent in (AGENT, "otherbot"):
        document = parse(BENIGN)
        for url in PROBES:
            answers.append(is_allowed(document, agent, url))
            answers.append(usage_preferences(document, agent, url))
    answers.append(origin_robots_url("https", "user:pw@Benign.TEST:443"))
    answers.append(origin_robots_url("http", "benign.test:8080"))
    return answers


def test_a_hostile_origin_cannot_change_what_others_are_answered() -> None:
    fresh = benign_answers()
    # examplebot's own group, then otherbot's (the * group).
    assert fresh[0:14:2] == [True, True, True, True, False, True, True]
    assert fresh[14:28:2] == [False, True, False, False, True, True, True]
    # Between the benign origin's first and later requests, hostile origins
    # fill every cache.
    for origin in range(10):
        read_as_the_middleware_does(hostile_body(origin, 60, 400), origin)
        assert benign_answers() == fresh
    # And hostile keys spelt like the benign ones mean what they mean.
    read_as_the_middleware_does(BENIGN + hostile_body(99, 60, 400), 99)
    assert benign_answers() == fresh


def test_long_keys_are_answered_right_and_not_kept() -> None:
    pattern = "/a%7e" + WIDE * 4000
    assert normal_pattern(pattern, "normalize") == normalize_pattern(pattern)
    assert pattern not in _NORMALS["normalize"]
    document = parse(f"User-agent: *\nDisallow: {pattern}\n")
    assert not is_allowed(document, AGENT, "http://a.test/a~" + WIDE * 4000 + "x")
    assert is_allowed(document, AGENT, "http://a.test/a~x")
    value = "LongBot" + "x" * 5000
    assert agent_token(value) == product_token(value) == value.lower()
    assert value not in AGENT_TOKENS
    key = "Disallow" + " " * 3000
    document = parse(f"User-agent: *\n{key}: /x\n")
    assert not is_allowed(document, AGENT, "http://a.test/x")
    assert key not in _KIND_CACHE[RFC9309]
    netloc = "a" * 400 + ".test"
    assert origin_robots_url("http", netloc) == robots_url(f"http://{netloc}/")
    assert netloc not in _ORIGINS["http"]


def test_userinfo_is_never_part_of_the_origin_key() -> None:
    for j in range(1000):
        netloc = f"u{j}:{'p' * 1900}@Host.Test:8080"
        assert origin_robots_url("http", netloc) == "http://host.test:8080/robots.txt"
    # As urlsplit reads it: userinfo runs to the last "@".
    assert origin_robots_url("http", "a@b@host.test") == robots_url(
        "http://a@b@host.test/"
    )
    assert (
        origin_robots_url("https", "@host.test:443") == "https://host.test/robots.txt"
    )
    assert origin_robots_url("ftp", "host.test") is None
    assert _ORIGINS["http"].data == {
        "Host.Test:8080": "http://host.test:8080/robots.txt",
        "host.test": "http://host.test/robots.txt",
    }
    assert _ORIGINS["http"].held < 1000


@coroutine_test
async def test_a_crawl_of_hostile_origins_keeps_the_caches_within_budget() -> None:
    servers = [Server() for _ in range(12)]
    benign = Server()
    try:
        for origin, server in enumerate(servers):
            server.route("/robots.txt", hostile_body(origin, 60, 400))
        benign.route("/robots.txt", BENIGN)
        urls = [server.url("/page") for server in servers]
        urls += [benign.url("/private/~admin"), benign.url("/open/page")]
        crawler = await crawl(
            urls,
            {"ROBOTS_PURPOSES": ["train-ai"], "CONCURRENT_REQUESTS": 4},
        )
    finally:
        for server in [*servers, benign]:
            server.close()
    spider: Any = crawler.spider
    assert sorted(spider.crawled) == sorted([*urls[:-2], benign.url("/open/page")])
    assert list(spider.dropped) == [benign.url("/private/~admin")]
    for cache in CACHES.values():
        assert cache.held <= cache.max_bytes, cache
    # The crawl filled the pattern cache to its budget (12 origins of ~4 MB
    # of keys and answers each).
    assert _NORMALS["normalize"].full
