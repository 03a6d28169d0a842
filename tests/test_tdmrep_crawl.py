"""TDMRep in real crawls on loopback origins: the origin's
``/.well-known/tdmrep.json`` (fetched once, path rules applied before each
request is sent), the ``tdm-reservation`` header and HTML meta on items,
every error case of the file, and a fleet sharing the file."""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import SQLiteStore
from scrapy_rfc9309.tdmmiddleware import TdmItemsMiddleware, TdmMiddleware, is_tdm
from tests.support.crawl_helpers import (
    ItemSpider,
    crawl,
    crawl_items,
    make_crawler,
    stats,
)
from tests.support.fleet_crawl import Worker
from tests.support.server import Route, Server
from tests.support.utils import coroutine_test, store_settings, utf8_log_file
from tests.test_commands import scrapy

TDM = "/.well-known/tdmrep.json"
TRAIN = {"ROBOTS_PURPOSES": ["train-ai"]}
F2 = json.dumps(
    [
        {"location": "/directory-a/", "tdm-reservation": 1},
        {
            "location": "/directory-b/html/",
            "tdm-reservation": 1,
            "tdm-policy": "https://provider.com/policies/policy.json",
        },
        {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
    ]
)
HTML = {"Content-Type": "text/html"}


class TdmSpider(ItemSpider):
    """Keeps each response's ``robots_tdm`` in ``kept``."""

    meta_key = "robots_tdm"


async def item_crawl(
    urls: list[str], settings: dict[str, Any]
) -> tuple[Any, list[Any]]:
    crawler = make_crawler(settings, TdmSpider)
    return crawler, await crawl_items(crawler, urls=urls)


@coroutine_test
async def test_file_rules_drop_reserved_requests(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    server.route(TDM, F2, headers={"Content-Type": "application/json"})
    paths = [
        "/directory-a/page",
        "/directory-b/html/a.html",
        "/directory-b/images/cat.jpg",
        "/directory-c/x.html",
    ]
    with (
        caplog.at_level(logging.INFO),
        caplog.at_level(logging.DEBUG, "scrapy_rfc9309.tdmmiddleware"),
    ):
        crawler = await crawl([server.url(p) for p in paths], TRAIN, TdmSpider)
    spider = crawler.spider
    assert isinstance(spider, TdmSpider)
    # Reserved URLs never reach the server.
    assert server.count("/directory-a/page") == 0
    assert server.count("/directory-b/html/a.html") == 0
    assert set(spider.dropped) == {server.url(p) for p in paths[:2]}
    dropped = spider.dropped[server.url("/directory-b/html/a.html")]
    assert dropped.cause == "tdm_reservation"
    assert dropped.origin == server.url(TDM)
    assert str(dropped) == f"Forbidden by TDMRep (tdm_reservation): {server.url(TDM)}"
    # Fetched once for the origin.
    assert server.count(TDM) == 1
    found = stats(crawler)
    assert found["robots/forbidden/tdm_reservation"] == 2
    assert found["robots/forbidden"] == 2
    assert found["robots/tdm/fetch_count"] == 1
    assert found["robots/tdm/file/parsed"] == 1
    # The log names the file and the rule.
    (line,) = [
        r.getMessage() for r in caplog.records if "/directory-b/html/" in r.getMessage()
    ]
    assert server.url(TDM) in line
    assert 'rule 2: "location": "/directory-b/html/", "tdm-reservation": 1' in line
    # The crawl's summary counts them with the other causes.
    assert any(
        "2 requests dropped (tdm_reservation 2)" in r.getMessage()
        for r in caplog.records
    )
    image = spider.kept[server.url("/directory-b/images/cat.jpg")]
    assert image["reservation"] == 0
    assert image["rule"] == {"index": 2, "location": "/directory-b/images/*.jpg"}
    assert image["source"] == "tdmrep.json"
    other = spider.kept[server.url("/directory-c/x.html")]
    assert other["reservation"] is None
    assert other["file"] == server.url(TDM)
    assert other["file_status"] == "parsed"


@coroutine_test
async def test_no_tdm_purpose_no_fetch(server: Server) -> None:
    server.route(TDM, F2)
    for settings in ({}, {"ROBOTS_PURPOSES": ["search"]}):
        crawler = await crawl([server.url("/directory-a/page")], settings)
        assert crawler.spider.crawled == [server.url("/directory-a/page")]  # type: ignore[union-attr]
    assert server.count(TDM) == 0
    # Off: not fetched, not obeyed, even for a training crawl.
    crawler = await crawl(
        [server.url("/directory-a/page")], {**TRAIN, "ROBOTS_TDMREP": "off"}
    )
    assert server.count(TDM) == 0
    assert server.count("/directory-a/page") == 3


@coroutine_test
async def test_annotate_keeps_requests_and_marks_items(server: Server) -> None:
    server.route(TDM, F2)
    crawler, items = await item_crawl(
        [server.url("/directory-a/page")], {**TRAIN, "ROBOTS_TDMREP": "annotate"}
    )
    (item,) = items
    assert item["robots_tdm"]["reservation"] == 1
    assert item["robots_tdm"]["source"] == "tdmrep.json"
    assert "robots/forbidden/tdm_reservation" not in stats(crawler)


@coroutine_test
async def test_header_and_meta_on_items(server: Server) -> None:
    """E6, E7, E8, E9: the header supersedes the file, meta the header; an
    absent property resets nothing; invalid values are unset."""
    server.route(TDM, json.dumps([{"location": "/", "tdm-reservation": 1}]))
    server.route("/e6", "<html></html>", headers={**HTML, "tdm-reservation": "0"})
    server.route(
        "/e7",
        '<html><head><meta name="tdm-policy" content="/p.json"></head></html>',
        headers={**HTML, "TDM-Reservation": "1"},
    )
    server.route(
        "/meta0",
        '<html><head><meta name="tdm-reservation" content="0"></head></html>',
        headers={**HTML, "tdm-reservation": "1"},
    )
    server.route(
        "/e9",
        "<html></html>",
        headers={**HTML, "tdm-reservation": "0", "tdm-policy": "P"},
    )
    # The file reserves "/", so only pages whose header lifts it are fetched:
    # the rest is dropped before it is sent (see the other tests).
    crawler, items = await item_crawl(
        [server.url(p) for p in ("/e6", "/e7", "/meta0", "/e9")], TRAIN
    )
    assert items == []
    assert stats(crawler)["robots/forbidden/tdm_reservation"] == 4

    # Without the file: header and meta alone.
    server.route(TDM, "", status=404)
    server.route("/e8", "<html></html>", headers={**HTML, "tdm-reservation": "2"})
    server.route(
        "/meta1",
        '<html><head><META NAME="TDM-Reservation" CONTENT="1"></head></html>',
        headers=HTML,
    )
    spider_urls = [
        server.url(p) for p in ("/e6", "/e7", "/meta0", "/e8", "/meta1", "/e9")
    ]
    crawler, items = await item_crawl(spider_urls, TRAIN)
    spider = crawler.spider
    assert isinstance(spider, TdmSpider)
    kept = {item["url"] for item in items}
    assert kept == {server.url(p) for p in ("/e6", "/meta0", "/e8", "/e9")}
    found = stats(crawler)
    assert found["robots/tdm/items_dropped"] == 2
    assert found["robots/tdm/file/missing"] == 1
    e7 = spider.kept[server.url("/e7")]
    assert (e7["reservation"], e7["source"]) == (1, "header")
    assert e7["policy"] == server.url("/p.json")
    assert spider.kept[server.url("/meta0")]["source"] == "meta"
    assert e7["file_status"] == "missing"
    e8 = spider.kept[server.url("/e8")]
    assert e8["reservation"] is None
    assert e8["problems"] == ["header: invalid tdm-reservation, ignored"]
    e9 = spider.kept[server.url("/e9")]
    assert (e9["reservation"], e9["policy"]) == (0, None)
    # Policy URLs are kept, never followed.
    assert server.count("/p.json") == 0
    assert server.count("/P") == 0


@pytest.mark.parametrize(
    ("route", "kind"),
    [
        (Route(status=404), "missing"),
        (Route(body=b"{not json"), "invalid"),
        (Route(body=b'{"location": "/", "tdm-reservation": 1}'), "invalid"),
        (Route(body=b"\xff\xfe[1]"), "invalid"),
        (Route(body=b"[" * 100_000), "invalid"),
        (Route(status=503), "unreachable"),
        (Route(body=b"[]", delay=3), "unreachable"),
    ],
    ids=["404", "bad-json", "object", "not-utf8", "deep", "503", "timeout"],
)
@coroutine_test
async def test_file_errors_are_no_rules(
    make_server: Callable[..., Server], route: Route, kind: str
) -> None:
    server = make_server()
    server.routes[TDM] = route
    crawler = await crawl(
        [server.url("/a"), server.url("/b")], {**TRAIN, "ROBOTS_TDMREP_TIMEOUT": 1}
    )
    assert sorted(crawler.spider.crawled) == [server.url("/a"), server.url("/b")]  # type: ignore[union-attr]
    found = stats(crawler)
    assert found[f"robots/tdm/file/{kind}"] == 1
    assert found["robots/tdm/fetch_count"] == 1
    assert "robots/forbidden" not in found
    assert crawler.spider.errors == []  # type: ignore[union-attr]


@coroutine_test
async def test_bad_rules_are_left_out_or_unset(server: Server) -> None:
    server.route(
        TDM,
        json.dumps(
            [
                "junk",
                {"tdm-reservation": 1},
                {"location": "/legacy/", "tdm-reservation": 2},
                {"location": "/", "tdm-reservation": "1"},
            ]
        ),
    )
    crawler = await crawl([server.url("/legacy/a"), server.url("/b")], TRAIN, TdmSpider)
    spider = crawler.spider
    assert isinstance(spider, TdmSpider)
    # The legacy 2 is unset and, as the first match, decides its URLs.
    assert spider.crawled == [server.url("/legacy/a")]
    assert spider.kept[server.url("/legacy/a")]["reservation"] is None
    assert set(spider.dropped) == {server.url("/b")}


@coroutine_test
async def test_redirected_file_is_followed(make_server: Callable[..., Server]) -> None:
    server = make_server()
    server.route(TDM, status=301, headers={"Location": "/tdm/real.json"})
    server.route(
        "/tdm/real.json", json.dumps([{"location": "/x", "tdm-reservation": 1}])
    )
    crawler = await crawl([server.url("/x"), server.url("/y")], TRAIN)
    assert crawler.spider.crawled == [server.url("/y")]  # type: ignore[union-attr]
    assert server.count("/tdm/real.json") == 1
    # A redirect loop: no file after ROBOTS_MAX_REDIRECTS hops (missing).
    looping = make_server()
    looping.route(TDM, status=302, headers={"Location": TDM})
    crawler = await crawl([looping.url("/x")], {**TRAIN, "ROBOTS_MAX_REDIRECTS": 3})
    assert crawler.spider.crawled == [looping.url("/x")]  # type: ignore[union-attr]
    assert looping.count(TDM) == 4
    assert stats(crawler)["robots/tdm/file/missing"] == 1


@coroutine_test
async def test_file_over_the_byte_limit(make_server: Callable[..., Server]) -> None:
    server = make_server()
    rules = [{"location": f"/p{i}/", "tdm-reservation": 1} for i in range(2000)]
    server.route(TDM, json.dumps(rules))
    crawler = await crawl([server.url("/p1/a")], {**TRAIN, "ROBOTS_MAX_BYTES": 1000})
    found = stats(crawler)
    assert found["robots/tdm/file/invalid"] == 1
    assert crawler.spider.crawled == [server.url("/p1/a")]  # type: ignore[union-attr]


def _reserving_sites(make_server: Callable[..., Server]) -> list[Server]:
    """Three origins whose slow TDMRep file reserves ``/r/``."""
    servers = []
    for _ in range(3):
        server = make_server()
        server.route(
            TDM, json.dumps([{"location": "/r/", "tdm-reservation": 1}]), delay=1.0
        )
        servers.append(server)
    return servers


def test_sqlite_fleet_fetches_the_file_once(
    make_server: Callable[..., Server],
    start_worker: Callable[..., Worker],
    tmp_path: Path,
) -> None:
    servers = _reserving_sites(make_server)
    urls = [s.url(p) for s in servers for p in ("/a", "/r/b")]
    settings = {
        **TRAIN,
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": str(tmp_path / "r.db"),
    }
    workers = [start_worker(urls, settings, reactorless=bool(i)) for i in range(2)]
    results = [worker.wait() for worker in workers]
    assert [s.count(TDM) for s in servers] == [1, 1, 1]
    assert sum(r.get("robots/tdm/fetch_count", 0) for r in results) == 3
    for result in results:
        assert result["robots/forbidden/tdm_reservation"] == 3
        assert "robots/store/errors" not in result
    assert [s.count("/r/b") for s in servers] == [0, 0, 0]
    assert [s.count("/a") for s in servers] == [2, 2, 2]


@pytest.mark.parametrize(("retry", "tries"), [({}, 3), ({"RETRY_ENABLED": False}, 1)])
def test_the_lease_covers_every_try_of_the_file(
    retry: dict[str, Any], tries: int
) -> None:
    # As robots.txt's: a file that times out is tried 1 + RETRY_TIMES times,
    # and a lease of twice one timeout ran out during the holder's tries.
    crawler = get_crawler(settings_dict={**TRAIN, "ROBOTS_TDMREP_TIMEOUT": 7, **retry})
    middleware = TdmMiddleware(crawler)
    assert middleware.leases.ttl == middleware.leases.wait == 2 * 7 * tries


@coroutine_test
async def test_installed_only_for_a_tdm_crawl(server: Server) -> None:
    assert is_tdm(["train-ai"])
    assert is_tdm(["search+ai-use"])
    assert not is_tdm(["search"])
    assert not is_tdm([])
    for settings, installed in (
        (TRAIN, True),
        ({"ROBOTS_PURPOSES": ["ai-use"]}, True),
        ({"ROBOTS_PURPOSES": ["search"]}, False),
        ({**TRAIN, "ROBOTS_TDMREP": "OFF"}, False),
    ):
        crawler = await crawl([server.url("/a")], settings)
        found = crawler.get_downloader_middleware(TdmMiddleware)
        assert (found is not None) == installed, settings
        items = crawler.get_spider_middleware(TdmItemsMiddleware)
        assert (items is not None) == installed, settings


def test_check_shows_tdmrep(server: Server, tmp_path: Path) -> None:
    server.route(TDM, F2)
    urls = [server.url(p) for p in ("/directory-b/html/a", "/directory-c/x")]
    purpose = ("-s", "ROBOTS_PURPOSES=train-ai")
    done = scrapy(tmp_path, "check", *urls, *purpose)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    reserved, other = done.stdout.splitlines()[1:]
    assert reserved.startswith("DISALLOWED")
    assert (
        f"tdm_reservation (TDMRep {server.url(TDM)} rule 2:"
        ' "location": "/directory-b/html/", "tdm-reservation": 1)'
    ) in reserved
    assert reserved.endswith(
        f"tdm-reservation 1 (rule 2: /directory-b/html/ {server.url(TDM)})"
        " policy https://provider.com/policies/policy.json"
    )
    assert other.startswith("allowed")
    assert other.endswith(f"tdm-reservation unset (no rule in {server.url(TDM)})")
    done = scrapy(tmp_path, "check", "--json", *urls, *purpose)
    first, second = json.loads(done.stdout)["results"]
    assert (first["allowed"], first["reason"]) == (False, "tdm_reservation")
    assert first["tdm"]["rule"] == {"index": 1, "location": "/directory-b/html/"}
    assert second["tdm"]["reservation"] is None
    # Without a TDM purpose, the file is not read.
    done = scrapy(tmp_path, "check", "--json", urls[0])
    (result,) = json.loads(done.stdout)["results"]
    assert (result["allowed"], result["tdm"]) == (True, None)
    assert server.count(TDM) == 2


@pytest.mark.parametrize("store", ["redis", "sqlite"])
@coroutine_test
async def test_stored_file_serves_the_next_crawl(
    make_server: Callable[..., Server],
    request: pytest.FixtureRequest,
    tmp_path: Path,
    store: str,
) -> None:
    """A crawl after another (a resumed job, a later worker) reads the file
    from the store: one fetch for both; the record expires with its lifetime."""
    server = make_server()
    server.route(TDM, json.dumps([{"location": "/r/", "tdm-reservation": 1}]))
    settings = {**TRAIN, **store_settings(store, request, tmp_path)}
    # A lifetime of 0: fetched, and not kept.
    await crawl([server.url("/a")], {**settings, "ROBOTS_CACHE_LIFETIME": 0})
    for _ in range(2):
        crawler = await crawl([server.url("/r/x"), server.url("/a")], settings)
        assert crawler.spider.crawled == [server.url("/a")]  # type: ignore[union-attr]
        assert "robots/store/errors" not in stats(crawler)
    assert server.count(TDM) == 2


def test_check_shows_a_missing_file(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    server.route(TDM, status=404)
    done = scrapy(tmp_path, "check", server.url("/a"), "-s", "ROBOTS_PURPOSES=train-ai")
    assert done.returncode == 0, done.stderr
    (row,) = done.stdout.splitlines()[1:]
    assert row.endswith(
        f"tdm-reservation unset (tdmrep.json missing: {server.url(TDM)})"
    )


@coroutine_test
async def test_memory_keeps_files_within_its_bounds(
    make_server: Callable[..., Server],
) -> None:
    """Files of many origins: what the process keeps stays within
    ROBOTS_MEMORY_MAX_BYTES (counted), the least recently used dropped."""
    servers = [make_server() for _ in range(4)]
    rules = [{"location": f"/p{i}/", "tdm-reservation": 1} for i in range(40)]
    for server in servers:
        server.route(TDM, json.dumps(rules))
    crawler = make_crawler({**TRAIN, "ROBOTS_MEMORY_MAX_BYTES": 45_000})
    await crawler.crawl_async(urls=[s.url("/a") for s in servers])
    middleware = crawler.get_downloader_middleware(TdmMiddleware)
    assert middleware is not None
    one = next(iter(middleware._sizes.values()))
    # 40 rules of ~460 bytes each: two files fit, not three.
    assert 15_000 < one < 22_500
    assert len(middleware._entries) == 2
    assert middleware.size == sum(middleware._sizes.values()) <= 45_000
    assert set(middleware._entries) < {s.url(TDM) for s in servers}


class OptingOut(TdmSpider):
    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield Request(url, callback=self.parse, meta={"dont_obey_robotstxt": True})


@coroutine_test
async def test_dont_obey_robotstxt_skips_tdmrep(server: Server) -> None:
    server.route(TDM, json.dumps([{"location": "/", "tdm-reservation": 1}]))
    server.route("/h", "<html></html>", headers={**HTML, "tdm-reservation": "1"})
    crawler = make_crawler(TRAIN, OptingOut)
    items = await crawl_items(crawler, urls=[server.url("/h")])
    assert items == [{"url": server.url("/h")}]
    assert server.count(TDM) == 0
    assert "robots/tdm/items_dropped" not in stats(crawler)


def test_two_workers_sharing_redis_fetch_the_file_once(
    make_server: Callable[..., Server],
    start_worker: Callable[..., Worker],
    redis_server: Any,
    redis_prefix: str,
) -> None:
    servers = _reserving_sites(make_server)
    urls = [s.url(p) for s in servers for p in ("/a", "/r/b")]
    settings = {
        **TRAIN,
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": redis_server.url,
        "ROBOTS_STORE_PREFIX": redis_prefix,
    }
    workers = [start_worker(urls, settings, reactorless=bool(i)) for i in range(2)]
    results = [worker.wait() for worker in workers]
    assert [s.count(TDM) for s in servers] == [1, 1, 1]
    for result in results:
        assert result["robots/forbidden/tdm_reservation"] == 3
        assert "robots/store/errors" not in result
    client = redis.Redis.from_url(redis_server.url)
    assert len(list(client.scan_iter(match=f"{redis_prefix}record:*"))) == 3
    assert not list(client.scan_iter(match=f"{redis_prefix}lease:*"))
    client.close()


@coroutine_test
async def test_records_expire_and_damaged_ones_are_fetched_again(
    server: Server, redis_server: Any, redis_prefix: str, tmp_path: Path
) -> None:
    sqlite = SQLiteStore(tmp_path / "r.db")
    redis_store = RedisStore(redis_server.url, prefix=redis_prefix)
    for store in (sqlite, redis_store):
        await store.put_record("k", "v", time.time() + 60)
        assert await store.get_record("k") == "v"
        await store.put_record("k", "v", time.time() - 1)
        assert await store.get_record("k") is None
        await store.close()
    # A record written by hand (another program, a damaged entry): missing.
    client = redis.Redis.from_url(redis_server.url)
    client.set(f"{redis_prefix}record:{server.url(TDM)}", b"\xff{not json")
    client.close()
    server.route(TDM, json.dumps([{"location": "/r", "tdm-reservation": 1}]))
    settings = {
        **TRAIN,
        "ROBOTS_STORE": "redis",
        "ROBOTS_STORE_URL": redis_server.url,
        "ROBOTS_STORE_PREFIX": redis_prefix,
    }
    crawler = await crawl([server.url("/r"), server.url("/a")], settings)
    assert crawler.spider.crawled == [server.url("/a")]  # type: ignore[union-attr]
    assert server.count(TDM) == 1
    assert "robots/store/errors" not in stats(crawler)


class OneSQLiteStore(SQLiteStore):
    """Counts the stores a crawl builds, and what each is asked."""

    built: list[OneSQLiteStore] = []  # noqa: RUF012 - the test's record

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        OneSQLiteStore.built.append(self)
        self.calls: list[str] = []

    async def get(self, origin: str) -> Any:
        self.calls.append("get")
        return await super().get(origin)

    async def get_record(self, key: str) -> str | None:
        self.calls.append("get_record")
        return await super().get_record(key)

    async def close(self) -> None:
        self.calls.append("close")
        await super().close()


@coroutine_test
async def test_the_file_is_kept_in_the_robots_txt_store(
    server: Server, tmp_path: Path
) -> None:
    """TdmMiddleware uses RobotsMiddleware's store: a SQLite (or Redis)
    crawl opens one connection, closed once, after both are done."""
    OneSQLiteStore.built = []
    server.route(TDM, F2)
    crawler = await crawl(
        [server.url("/directory-a/x"), server.url("/free")],
        {
            **TRAIN,
            "ROBOTS_STORE": f"{__name__}.OneSQLiteStore",
            "ROBOTS_STORE_URL": str(tmp_path / "r.db"),
        },
    )
    assert crawler.spider.crawled == [server.url("/free")]  # type: ignore[union-attr]
    (store,) = OneSQLiteStore.built
    # robots.txt's outcome and the TDMRep file, from the one store; closed
    # last, once.
    assert {"get", "get_record"} <= set(store.calls)
    assert store.calls.count("close") == 1
    assert store.calls[-1] == "close"
    assert "robots/store/errors" not in stats(crawler)


@coroutine_test
async def test_a_file_reached_at_a_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the file's host passed the guard's lookup, then the
    download reached a private address; its answer is not used."""
    crawler = get_crawler(Spider, {**TRAIN, "ROBOTS_SSRF_GUARD": True})
    tdm = TdmMiddleware(crawler)
    url = "http://example.com/.well-known/tdmrep.json"

    async def looked_up(url: str) -> None:
        return None

    async def download(url: str, origin: str, **kwargs: Any) -> tuple[Response, None]:
        address = ipaddress.ip_address("10.0.0.1")
        return Response(url, request=Request(url), ip_address=address), None

    monkeypatch.setattr(tdm.fetcher, "guard_refusal", looked_up)
    monkeypatch.setattr(tdm.fetcher, "download", download)
    refusal = await tdm._get(url, None)
    assert isinstance(refusal, str)
    assert "refused example.com (10.0.0.1" in refusal


@coroutine_test
async def test_a_replay_of_a_file_refused_by_its_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file the guard refused is kept in Scrapy's HTTP cache marked
    (fetch.REFUSED_HEADER): its replay, which tells no address, is refused
    by the mark."""
    crawler = get_crawler(Spider, {**TRAIN, "ROBOTS_SSRF_GUARD": True})
    tdm = TdmMiddleware(crawler)
    url = "http://example.com/.well-known/tdmrep.json"
    why = "ROBOTS_SSRF_GUARD refused example.com (10.0.0.1, reached after the check)"

    async def looked_up(url: str) -> None:
        return None

    async def download(url: str, origin: str, **kwargs: Any) -> tuple[Response, None]:
        headers = {"Date": formatdate(usegmt=True), "X-Robots-Refused-Address": why}
        replay = Response(url, request=Request(url), headers=headers, flags=["cached"])
        return replay, None

    monkeypatch.setattr(tdm.fetcher, "guard_refusal", looked_up)
    monkeypatch.setattr(tdm.fetcher, "download", download)
    refusal = await tdm._get(url, None)
    assert refusal == f"{why}, replayed from the HTTP cache"


#: A file whose JSON escapes lone surrogates (valid JSON, but no text UTF-8
#: can write): a location, a policy; ``\udce9`` is how the robots.txt reader
#: keeps an undecodable octet, ``\ud800`` any other.
SURROGATES = (
    '[{"location": "/a\\ud800", "tdm-reservation": 1, "tdm-policy": "/p\\ud800"},'
    ' {"location": "/b\\udce9", "tdm-reservation": 0}]'
)


@pytest.mark.parametrize("mode", ["annotate", "drop"])
@coroutine_test
async def test_lone_surrogates_of_the_file_reach_a_utf8_feed_and_log(
    server: Server,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    server.route(TDM, SURROGATES)
    feed = tmp_path / "items.jsonl"
    with utf8_log_file(tmp_path / "log.txt", "scrapy_rfc9309"):
        crawler, _ = await item_crawl(
            [server.url("/a%ED%A0%80"), server.url("/b%E9")],
            {
                **TRAIN,
                "ROBOTS_TDMREP": mode,
                "ROBOTS_PROVENANCE": True,
                "FEEDS": {str(feed): {"format": "jsonlines"}},
                "FEED_EXPORT_ENCODING": "utf-8",
            },
        )
    kept = 2 if mode == "annotate" else 1
    assert crawler.stats.get_value("item_scraped_count") == kept
    items = {
        item["url"]: item
        for item in map(json.loads, feed.read_text(encoding="utf-8").splitlines())
    }
    assert len(items) == kept
    # Each octet as the escape a URL matches it with.
    other = items[server.url("/b%E9")]
    assert other["robots_provenance"]["tdm"]["rule"]["location"] == "/b%E9"
    # A line the handler cannot write is "--- Logging error ---" on stderr.
    assert "Logging error" not in capsys.readouterr().err
    logged = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "Forbidden by TDMRep" in logged or mode == "annotate"
    if mode == "annotate":
        shown = items[server.url("/a%ED%A0%80")]["robots_tdm"]
        assert shown["rule"] == {"index": 0, "location": "/a%ED%A0%80"}
        assert shown["policy"] == server.url("/p%ED%A0%80")
        assert other["robots_tdm"]["rule"]["location"] == "/b%E9"
    else:
        # The refusal quotes the rule as the file writes it (JSON escapes).
        assert '"location": "/a\\ud800"' in logged
