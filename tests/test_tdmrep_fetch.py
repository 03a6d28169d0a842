"""The TDMRep file is fetched as robots.txt is: routed as the page request
that needed it (its proxy, with the proxy's credentials), and answered by
Scrapy's HTTP cache only within the lifetime of what it gives (never a
cached failure)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.tdmmiddleware import TdmMiddleware
from tests.support.crawl_helpers import (
    crawl,
    httpx_ignores_proxies,
    stats,
    through_proxy,
)
from tests.support.server import Server
from tests.support.utils import FakeClock, coroutine_test
from tests.test_middleware_fetch import Steps

TDM = "/.well-known/tdmrep.json"
TRAIN = {"ROBOTS_PURPOSES": ["train-ai"]}
RESERVED = json.dumps([{"location": "/r/", "tdm-reservation": 1}])
SITE = "http://site.invalid"
DAY = 86_400


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.skipif(
    httpx_ignores_proxies(),
    reason="Scrapy 2.15's httpx download handler takes no proxy",
)
@coroutine_test
async def test_the_file_goes_through_the_pages_proxy(
    make_server: Callable[..., Server],
) -> None:
    # site.invalid is known to the proxy alone: fetched straight, the file
    # is unreachable and the reserved page is crawled.
    proxy = make_server()
    proxy.route(f"{SITE}/robots.txt", "User-agent: *\nAllow: /\n")
    proxy.route(f"{SITE}{TDM}", RESERVED)
    crawler = await crawl(
        [f"{SITE}/r/1", f"{SITE}/a"], TRAIN, spidercls=through_proxy(proxy)
    )
    assert crawler.spider.crawled == [f"{SITE}/a"]
    assert crawler.spider.dropped[f"{SITE}/r/1"].cause == "tdm_reservation"
    (hit,) = [hit for hit in proxy.hits if hit.path == f"{SITE}{TDM}"]
    # "user:pw", as HttpProxyMiddleware sends it to the proxy.
    assert hit.headers["Proxy-Authorization"] == "Basic dXNlcjpwdw=="
    assert stats(crawler)["robots/tdm/file/parsed"] == 1


def _http_cache(tmp_path: Path) -> dict[str, Any]:
    """Scrapy's HTTP cache in ``tmp_path``, as it comes: DummyPolicy, which
    keeps every answer for ever."""
    return {**TRAIN, "HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path)}


@coroutine_test
async def test_a_503_in_the_http_cache_is_asked_again_next_run(
    server: Server, tmp_path: Path
) -> None:
    # Replayed, a 503 would leave the origin without rules in every run.
    server.route(TDM, "busy", status=503)
    urls = [server.url("/r/1"), server.url("/a")]
    first = await crawl(urls, _http_cache(tmp_path))
    assert sorted(first.spider.crawled) == sorted(urls)
    assert stats(first)["robots/tdm/file/unreachable"] == 1
    server.route(TDM, RESERVED)
    second = await crawl(urls, _http_cache(tmp_path))
    assert server.count(TDM) == 2
    assert second.spider.crawled == [server.url("/a")]
    assert stats(second)["robots/tdm/file/parsed"] == 1
    # The file's 503, replayed by the cache, and not used.
    assert stats(second)["robots/httpcache/bypassed"] == 1


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Both middlewares' clock, to be moved on by the test."""
    clock = FakeClock(time.time())
    monkeypatch.setattr(TdmMiddleware, "clock", clock)
    monkeypatch.setattr(RobotsMiddleware, "clock", clock)
    return clock


@coroutine_test
async def test_the_http_cache_answers_for_the_files_lifetime_only(
    server: Server, tmp_path: Path, clock: FakeClock
) -> None:
    server.route(TDM, RESERVED, headers={"Cache-Control": "max-age=31536000"})
    urls = [server.url("/r/1"), server.url("/a")]
    await crawl(urls, _http_cache(tmp_path))
    server.route(TDM, "[]")
    # An hour later, the cached file is obeyed (an offline replay works) ...
    clock.now += 3600
    replay = await crawl(urls, _http_cache(tmp_path))
    assert server.count(TDM) == 1
    assert replay.spider.crawled == [server.url("/a")]
    assert "robots/httpcache/bypassed" not in stats(replay)
    # ... a day later (ROBOTS_CACHE_LIFETIME), the site is asked again.
    clock.now += DAY
    later = await crawl(urls, _http_cache(tmp_path))
    assert server.count(TDM) == 2
    assert sorted(later.spider.crawled) == sorted(urls)
    # robots.txt's answer and the file's.
    assert stats(later)["robots/httpcache/bypassed"] == 2


@coroutine_test
async def test_a_replayed_file_holds_only_what_is_left_of_its_lifetime(
    server: Server, tmp_path: Path, clock: FakeClock
) -> None:
    server.route(TDM, RESERVED)
    await crawl([server.url("/a")], _http_cache(tmp_path))
    server.route(TDM, "[]")
    start = clock.now
    times = [20 * 3600, DAY + 60]

    def before(index: int) -> None:
        clock.now = start + times[index]

    urls = [server.url("/r/1"), server.url("/r/2")]
    crawler = await crawl(urls, _http_cache(tmp_path), spidercls=Steps, before=before)
    # Stored 20 hours ago: reserving for the 4 hours left, not for a new day.
    assert crawler.spider.crawled == [server.url("/r/2")]
    assert server.count(TDM) == 2
