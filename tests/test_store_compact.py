"""Compact entries of the shared stores (issue 27 item 3), and the previous
form still read: unit tests of the codec, and real crawls with an entry of
the previous form in a SQLite file and in Redis."""

from __future__ import annotations

import logging
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
from tests.crawl_helpers import crawl, make_crawler, stats
from tests.redis_server import RedisServer
from tests.server import Server
from tests.utils import coroutine_test, stored_outcome

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
    ],
)
def test_an_entry_that_cannot_be_read_is_missing_and_counted(
    name: str, data: bytes
) -> None:
    crawler = make_crawler()
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


def store_settings(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> dict[str, Any]:
    """The settings of a store of ``kind`` of this test's own."""
    if kind == "sqlite":
        path = str(tmp_path / "robots.sqlite3")
        return {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": path}
    server: RedisServer = request.getfixturevalue("redis_server")
    return {
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": server.url,
        "ROBOTS_STORE_PREFIX": request.getfixturevalue("redis_prefix"),
    }


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
