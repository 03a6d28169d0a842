"""Compact entries of the shared stores (issue 27 item 3), and the previous
form still read: unit tests of the codec, and real crawls with an entry of
the previous form in a SQLite file and in Redis."""

from __future__ import annotations

import gzip
import logging
import random
import sqlite3
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from scrapy import version_info

from scrapy_rfc9309.outcome import Lifetimes, parsed
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.stores._codec import (
    COMPACT,
    DICTIONARY,
    DISCARDED,
    MAX_DECODED,
    decode,
    encode,
    legacy_encode,
    pack,
)
from tests.support.crawl_helpers import crawl, make_crawler, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test, store_settings, stored_outcome

# -- the codec -----------------------------------------------------------------

WITH_RECORDS = (
    "User-agent: *\nDisallow: /private\nHost: example.com\nClean-param: ref\n"
    "Sitemap: https://www.example.com/sitemap.xml\n"
)


def test_an_entry_is_compressed_and_smaller_than_its_json() -> None:
    value = stored_outcome()
    data = encode(value)
    assert data.startswith(COMPACT)
    assert len(data) < len(legacy_encode(value)) / 2
    assert decode(data, "o") == value


def test_other_records_are_not_stored_and_nothing_that_decides_is_lost() -> None:
    value = parsed(parse(WITH_RECORDS), now=1e9, lifetimes=Lifetimes())
    assert value.document is not None
    assert len(value.document.records) == 2
    read = decode(encode(value), "o")
    assert read is not None
    assert read.document is not None
    assert read.document.records == ()
    assert read.document.groups == value.document.groups
    assert read.document.sitemaps == value.document.sitemaps
    assert read == replace(value, document=read.document)


def test_the_fallback_of_an_unreachable_outcome_is_kept() -> None:
    document = parse(WITH_RECORDS)
    value = replace(stored_outcome(), kind="unreachable", document=None)
    value = replace(value, fallback=document, grace_ends_at=value.retain_until)
    read = decode(encode(value), "o")
    assert read is not None
    assert read.fallback is not None
    assert read.fallback.groups == document.groups


def test_an_entry_of_the_previous_form_still_reads() -> None:
    value = parsed(parse(WITH_RECORDS), now=1e9, lifetimes=Lifetimes())
    previous = legacy_encode(value)
    assert previous.startswith("{")
    # As text (Redis gives bytes, SQLite bytes too): the same outcome, whole.
    assert decode(previous, "o") == value
    assert decode(previous.encode(), "o") == value


def _bomb() -> bytes:
    """A readable outcome, but for the whitespace that makes it decompress
    to more than MAX_DECODED bytes."""
    compressor = zlib.compressobj(9, zdict=DICTIONARY)
    spaces = b" " * (1024 * 1024)
    body = compressor.compress(b"{")
    for _ in range(MAX_DECODED // len(spaces)):
        body += compressor.compress(spaces)
    rest = legacy_encode(stored_outcome())[1:].encode()
    return COMPACT + body + compressor.compress(rest) + compressor.flush()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("truncated", encode(stored_outcome())[:-10]),
        ("trailing bytes", encode(stored_outcome()) + b"junk"),
        ("not zlib", COMPACT + b"\xf9\x00garbage"),
        ("another dictionary", COMPACT + zlib.compress(b"{}")),
        ("not an outcome", pack([1, 2, 3])),
        ("newer format", pack({**stored_outcome().to_dict(), "format": 99})),
        ("bomb", _bomb()),
        # A readable outcome of the previous (bare JSON) form, but of over
        # MAX_DECODED bytes: not parsed at all.
        (
            "bare JSON over the limit",
            b"{" + b" " * MAX_DECODED + legacy_encode(stored_outcome())[1:].encode(),
        ),
    ],
)
def test_an_entry_that_cannot_be_read_is_missing_and_counted(
    name: str, data: bytes
) -> None:
    crawler = make_crawler()
    if version_info < (2, 14):  # its stats take the spider
        crawler.stats.open_spider(crawler._create_spider())  # type: ignore[union-attr]
    else:
        crawler.stats.open_spider()  # type: ignore[union-attr]
    assert decode(data, "o", crawler) is None
    assert stats(crawler) == {DISCARDED: 1}


@given(st.binary(max_size=300))
def test_no_bytes_after_the_prefix_raise(data: bytes) -> None:
    assert decode(COMPACT + data, "o") is None


@given(st.binary(max_size=300))
def test_no_compressed_json_raises(data: bytes) -> None:
    compressor = zlib.compressobj(zdict=DICTIONARY)
    decode(COMPACT + compressor.compress(data) + compressor.flush(), "o")


# -- an entry of the previous form in a crawl ------------------------------------

RULES = "User-agent: *\nDisallow: /private\n"


def _previous_entry(settings: dict[str, Any], origin: str) -> None:
    """Write ``origin``'s fresh outcome in the previous form (the bare
    JSON), in the store itself, as the previous version wrote it."""
    value = parsed(parse(RULES), now=time.time(), lifetimes=Lifetimes())
    data = legacy_encode(value)
    if settings["ROBOTS_STORE"] == "sqlite":
        with sqlite3.connect(settings["ROBOTS_STORE_URL"]) as db:
            db.execute(
                "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?)",
                (origin, data, value.retain_until),
            )
        return
    client = redis.Redis.from_url(settings["ROBOTS_STORE_URL"])
    key = f"{settings['ROBOTS_STORE_PREFIX']}outcome:{origin}"
    client.set(key, data, px=60_000)
    client.close()


@pytest.fixture(params=["sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    return store_settings(request.param, request, tmp_path)


@coroutine_test
async def test_a_crawl_reads_an_entry_of_the_previous_form(
    server: Server, shared_store: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    settings = shared_store
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    urls = [server.url("/private"), server.url("/public")]
    await crawl(urls, settings)
    # The entry replaced by one of the previous form saying otherwise.
    _previous_entry(settings, server.url("/robots.txt"))
    caplog.set_level(logging.INFO)
    crawler = await crawl(urls, settings)
    # Judged by that entry: robots.txt not fetched again, /public crawled.
    assert server.count("/robots.txt") == 1
    assert crawler.spider.crawled == [server.url("/public")]
    assert DISCARDED not in stats(crawler)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@coroutine_test
async def test_an_entry_written_now_reads_in_the_next_crawl(
    server: Server, shared_store: dict[str, Any]
) -> None:
    server.route("/robots.txt", RULES + "Host: example.com\n")
    urls = [server.url("/private"), server.url("/public")]
    await crawl(urls, shared_store)
    crawler = await crawl(urls, shared_store)
    assert server.count("/robots.txt") == 1
    assert crawler.spider.crawled == [server.url("/public")]
    assert DISCARDED not in stats(crawler)


# -- F7: a bounded number of bytes per origin ------------------------------------

#: F7's body: 537 bytes of gzip that decode to 512,000 bytes of ``a:`` lines.
JUNK = gzip.compress(b"a:\n" * (512_000 // 3))


def _random_rules(seed: int, size: int) -> bytes:
    """``size`` bytes of distinct, incompressible Disallow rules."""
    rng = random.Random(seed)
    lines = [b"User-agent: *\n"]
    total = len(lines[0])
    while total < size:
        line = b"Disallow: /%016x\n" % rng.getrandbits(64)
        lines.append(line)
        total += len(line)
    return b"".join(lines)[:size]


def stored_bytes(settings: dict[str, Any]) -> dict[str, int]:
    """What the store holds per origin, in bytes: Redis's own count of each
    key (``MEMORY USAGE``: key, value and overhead), or SQLite's length of
    each row's entry."""
    if settings["ROBOTS_STORE"] == "sqlite":
        with sqlite3.connect(settings["ROBOTS_STORE_URL"]) as db:
            rows = db.execute("SELECT origin, length(outcome) FROM outcomes")
            return dict(rows.fetchall())
    client = redis.Redis.from_url(settings["ROBOTS_STORE_URL"])
    prefix = f"{settings['ROBOTS_STORE_PREFIX']}outcome:"
    sizes = {
        key.decode()[len(prefix) :]: int(client.memory_usage(key) or 0)
        for key in client.scan_iter(match=f"{prefix}*")
    }
    client.close()
    return sizes


def _files_bytes(settings: dict[str, Any]) -> int:
    """The SQLite file with its WAL, or nothing for Redis."""
    if settings["ROBOTS_STORE"] != "sqlite":
        return 0
    path = Path(settings["ROBOTS_STORE_URL"])
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@coroutine_test
async def test_hostile_origins_keep_a_bounded_number_of_bytes_each(
    make_server: Any, shared_store: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    # F7: 537 bytes of gzip made 2.6 MB per origin in Redis and in SQLite.
    junk = [make_server() for _ in range(4)]
    for server in junk:
        server.route("/robots.txt", JUNK, headers={"Content-Encoding": "gzip"})
    # 200,000 bytes of rules that compress to more than the bound.
    dense = make_server()
    dense.route("/robots.txt", _random_rules(0, 200_000))
    servers = [*junk, dense]
    caplog.set_level(logging.WARNING)
    # Parsing 512,000 bytes of junk takes the loop a moment per origin: the
    # timeout leaves room for that on a loaded machine.
    settings = {**shared_store, "DOWNLOAD_TIMEOUT": 60}
    crawler = await crawl([server.url("/page") for server in servers], settings)
    assert sorted(crawler.spider.crawled) == sorted(s.url("/page") for s in servers)
    sizes = stored_bytes(shared_store)
    # The junk is stored, shared, in well under a kilobyte per origin.
    assert sorted(sizes) == sorted(server.url("/robots.txt") for server in junk)
    assert max(sizes.values()) <= 1_000
    # The dense one, over ROBOTS_STORE_MAX_ENTRY_BYTES (64 KiB), is not.
    assert stats(crawler)["robots/store/oversized"] == 1
    (oversized,) = [r.getMessage() for r in caplog.records if "not shared" in r.message]
    assert dense.url("/robots.txt") in oversized
    assert "over ROBOTS_STORE_MAX_ENTRY_BYTES (65536)" in oversized
    # The whole SQLite file (tables, indexes, WAL): 5 origins, not 10 MB.
    assert _files_bytes(shared_store) <= 256 * 1024


@coroutine_test
async def test_an_entry_over_the_bound_is_not_shared_and_fetched_again(
    server: Server, shared_store: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    settings = {**shared_store, "ROBOTS_STORE_MAX_ENTRY_BYTES": 2048}
    body = _random_rules(7, 20_000) + b"\nDisallow: /private\n"
    server.route("/robots.txt", body)
    urls = [server.url("/private"), server.url("/public")]
    caplog.set_level(logging.WARNING)
    for crawls in (1, 2):
        crawler = await crawl(urls, settings)
        # Judged by it all the same; each crawl (each worker) fetches it.
        assert crawler.spider.crawled == [server.url("/public")]
        assert server.count("/robots.txt") == crawls
        assert stats(crawler)["robots/store/oversized"] == 1
        assert stored_bytes(settings) == {}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@coroutine_test
async def test_an_older_entry_goes_when_its_successor_is_over_the_bound(
    server: Server, shared_store: dict[str, Any]
) -> None:
    # Kept (for the 30-day rule) but expired at once: fetched again next.
    expiring = {**shared_store, "ROBOTS_CACHE_LIFETIME": 0}
    server.route("/robots.txt", RULES)
    await crawl([server.url("/page")], expiring)
    assert list(stored_bytes(shared_store)) == [server.url("/robots.txt")]
    # Now too large to store.
    server.route("/robots.txt", _random_rules(3, 20_000))
    settings = {**expiring, "ROBOTS_STORE_MAX_ENTRY_BYTES": 2048}
    crawler = await crawl([server.url("/page")], settings)
    assert server.count("/robots.txt") == 2
    assert stats(crawler)["robots/store/oversized"] == 1
    assert stored_bytes(shared_store) == {}
