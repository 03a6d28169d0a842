"""Secrets in store URLs never reach a log line or an error message."""

from __future__ import annotations

import logging
import traceback

import pytest
from scrapy.utils.test import get_crawler

from scrapy_rfc9309._redact import masked, redacted
from scrapy_rfc9309.stores.base import StoreError
from scrapy_rfc9309.stores.redis import RedisStore, redis_url
from scrapy_rfc9309.stores.sqlite import sqlite_path
from tests.crawl_helpers import crawl, stats
from tests.server import Server
from tests.utils import coroutine_test

SECRET = "s3cr3t-pw"
USER = "robots-user"

URLS = [
    f"redis://{USER}:{SECRET}@127.0.0.1:1/0",
    f"redis://:{SECRET}@127.0.0.1:1/0",
    f"redis://127.0.0.1:1/0?password={SECRET}",
    f"redis://127.0.0.1:1/0?username={USER}&password={SECRET}",
    f"rediss://127.0.0.1:1/0?db=0&password={SECRET}&username={USER}",
    f"unix:///tmp/nowhere.sock?password={SECRET}",
    # An option redis-py only rejects when it connects.
    f"redis://127.0.0.1:1/0?Password={SECRET}&username={USER}",
]


def _leaks(text: str) -> bool:
    return SECRET in text or USER in text


@pytest.mark.parametrize("url", URLS)
def test_masked_hides_userinfo_and_query_credentials(url: str) -> None:
    shown = masked(url)
    assert not _leaks(shown)
    assert "***" in shown
    assert "127.0.0.1:1" in shown or "/tmp/nowhere.sock" in shown


def test_masked_matches_parameter_names_in_any_case() -> None:
    assert masked(f"redis://h/0?Password={SECRET}&AUTH_TOKEN=x") == (
        "redis://h/0?Password=***&AUTH_TOKEN=***"
    )


def test_masked_keeps_what_is_not_a_credential() -> None:
    url = "redis://r.example:6380/2?db=2&socket_timeout=3"
    assert masked(url) == url


def test_redacted_masks_credentials_quoted_alone() -> None:
    url = f"redis://{USER}:p%40{SECRET}@h:1"
    text = redacted(f"auth failed for {USER} with p@{SECRET} at {url}", url)
    assert not _leaks(text)


@pytest.mark.parametrize("url", URLS)
@coroutine_test
async def test_store_errors_hide_credentials(url: str) -> None:
    store = RedisStore(url)
    with pytest.raises(StoreError) as info:
        await store.get("http://example.com/robots.txt")
    message = "".join(traceback.format_exception(info.value))
    assert not _leaks(message)
    await store.close()


@pytest.mark.parametrize(
    "url",
    [
        f"http://{USER}:{SECRET}@127.0.0.1/?password={SECRET}",
        f"redis://{USER}:{SECRET}@127.0.0.1:notaport/0",
        f"redis://127.0.0.1:1/0?password={SECRET}&socket_timeout=abc",
    ],
)
def test_start_up_errors_hide_credentials(url: str) -> None:
    with pytest.raises(ValueError, match="Redis") as info:
        RedisStore(
            redis_url(get_crawler(settings_dict={"ROBOTS_STORE_URL": url}).settings)
        )
    assert not _leaks("".join(traceback.format_exception(info.value)))


def test_sqlite_store_url_errors_hide_credentials() -> None:
    url = f"redis://{USER}:{SECRET}@127.0.0.1:1/0?password={SECRET}"
    with pytest.raises(ValueError, match="not a SQLite path") as info:
        sqlite_path(get_crawler(settings_dict={"ROBOTS_STORE_URL": url}))
    assert not _leaks(str(info.value))


@pytest.mark.parametrize("url", URLS[:4])
@coroutine_test
async def test_a_crawl_with_a_failing_store_logs_no_credentials(
    server: Server, caplog: pytest.LogCaptureFixture, url: str
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    caplog.set_level(logging.DEBUG)
    crawler = await crawl(
        [server.url("/private"), server.url("/public")],
        {"ROBOTS_STORE": "redis", "ROBOTS_STORE_URL": url, "LOG_LEVEL": "DEBUG"},
    )
    # The store failed and the crawl went on with memory alone.
    assert stats(crawler)["robots/store/errors"] >= 1
    assert crawler.spider.crawled == [server.url("/public")]
    logged = [record.getMessage() for record in caplog.records]
    logged += [
        "".join(traceback.format_exception(*record.exc_info))
        for record in caplog.records
        if record.exc_info
    ]
    assert any("127.0.0.1:1" in line for line in logged)
    assert not any(_leaks(line) for line in logged)
