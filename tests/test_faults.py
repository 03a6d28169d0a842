"""Hostile robots.txt servers in real crawls.

Each case serves one kind of trouble on ``/robots.txt`` and crawls a few
pages of that origin.  Whatever the server does, the crawl finishes, the
origin gets the outcome RFC 9309 (SPEC.md section 2) assigns, memory stays
bounded, and every request is accounted for: each one that entered the
middleware was either downloaded or dropped with a counted cause.
"""

from __future__ import annotations

import functools
import gc
import gzip
import itertools
import socket
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import brotli
import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.reactor import is_reactor_installed

import scrapy_rfc9309._decode as decode_module
import scrapy_rfc9309.fetch as fetch_module
from scrapy_rfc9309._compat import spider_argument
from scrapy_rfc9309._decode import MAX_MEMBERS
from scrapy_rfc9309.middleware import META_KEY
from scrapy_rfc9309.outcome import Outcome
from scrapy_rfc9309.signals import robots_outcome
from tests.support.crawl_helpers import (
    httpx_downloads,
    httpx_ignores_proxies,
    make_crawler,
    stats,
)
from tests.support.fault_server import (
    Behaviour,
    Exchange,
    FaultServer,
    close_mid_body,
    drip,
    drip_headers,
    gzip_bomb,
    raw,
    respond,
    stall_before_headers,
    stall_mid_body,
    stream,
)
from tests.support.utils import coroutine_test, loopback_hosts, raw_deflate
from tests.test_decode import CALLS_PER_STAGE, count_codec_calls

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd

if TYPE_CHECKING:
    from typing_extensions import Self

MiB = 1024 * 1024
LIMIT = 512_000
RULES = "User-agent: *\nDisallow: /p/private\n"
#: Every crawl here with the default ROBOTS_MAX_BYTES stays within this much
#: memory allocated by Python (tracemalloc peak, server threads included)
#: over what it started with, whatever the server sends; the largest case
#: is 512 KB of rules (about 34,000) read whole.
MEMORY_BOUND = 24 * MiB

# Addresses of their own (conftest uses 127.0.x.y), so that fault hosts
# never share a downloader slot with another test's servers.
_hosts = loopback_hosts(9)


class _StatsMiddleware:
    """A test-only downloader middleware that keeps counts in the stats."""

    def __init__(self, crawler: Crawler) -> None:
        assert crawler.stats is not None
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)


@spider_argument
class Counter(_StatsMiddleware):
    """Just before RobotsMiddleware: counts the requests entering it, the
    spider's and robots.txt hops apart."""

    def process_request(self, request: Request) -> None:
        hop = META_KEY in request.meta
        self.stats.inc_value("test/robots_hops" if hop else "test/requests_in")


@spider_argument
class Dropper(_StatsMiddleware):
    """After RobotsMiddleware: drops the requests of ``/p/dropped``, as
    another middleware of a project might."""

    def process_request(self, request: Request) -> None:
        if request.url.endswith("/p/dropped"):
            self.stats.inc_value("test/dropped_by_others")
            raise IgnoreRequest("dropped by another middleware")


SETTINGS: dict[str, Any] = {
    "DOWNLOADER_MIDDLEWARES": {f"{__name__}.Counter": 99, f"{__name__}.Dropper": 200},
    "DOWNLOAD_TIMEOUT": 1,
    "CLOSESPIDER_TIMEOUT": 30,
    "LOG_LEVEL": "WARNING",
}


@pytest.fixture
def hosts() -> Iterator[Callable[[], FaultServer]]:
    servers: list[FaultServer] = []

    def factory() -> FaultServer:
        server = FaultServer(next(_hosts))
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.close()


@pytest.fixture
def localhost() -> Iterator[FaultServer]:
    """A fault server on 127.0.0.1, the address ``localhost`` names."""
    server = FaultServer("127.0.0.1")
    yield server
    server.close()


def _lines(n: int, template: str) -> str:
    return "".join(template.format(i) for i in range(n))


_HTML_ERROR_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Page not found</title></head>\n"
    b"<body><h1>Oops</h1><p>Disallow: nothing here, try /p/private</p>\n"
    b"</body></html>\n"
)
_EARLY_LATE = b"User-agent: *\nDisallow: /p/early\n"


_ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": raw_deflate,
    "br": brotli.compress,
    "zstd": zstd.compress,
}


def _zeros_after(head: bytes, size: int) -> bytes:
    return head + bytes(size - len(head))


_BOMB_ENCODING = {
    "multi-member-gzip": "gzip",
    "raw-deflate": "deflate",
    "br": "br",
    "zstd": "zstd",
    "gzip-gzip": "gzip, gzip",
}


@functools.cache
def _bomb(name: str) -> bytes:
    """A robots.txt of ``_EARLY_LATE`` then NUL bytes, a few KiB on the
    wire, 64 or 128 MiB decoded (built once: compressing takes a while)."""
    if name == "multi-member-gzip":
        # The rules in a small first member, then 8 members of 16 MiB each.
        return gzip.compress(_EARLY_LATE) + gzip_bomb(b"", 16 * MiB)[0] * 8
    if name == "gzip-gzip":
        return gzip.compress(gzip_bomb(_EARLY_LATE, 64 * MiB)[0])
    data = _zeros_after(_EARLY_LATE, 64 * MiB)
    if name == "br":
        return brotli.compress(data, quality=1)
    return _ENCODERS[_BOMB_ENCODING[name]](data)


def _hundred_thousand_rules(server: FaultServer) -> dict[str, Behaviour]:
    """A 1.6 MB robots.txt: /d0/ to /d99999/, then /p/private, disallowed."""
    return {
        "/robots.txt": respond(
            200,
            "User-agent: *\n"
            + _lines(100_000, "Disallow: /d{}/\n")
            + "Disallow: /p/private\n",
        )
    }


@dataclass(frozen=True)
class Case:
    """One hostile server: its robots.txt routes, what the crawl expects."""

    #: path -> behaviour; ``{origin}`` in a Location is filled in.
    routes: Callable[[FaultServer], dict[str, Behaviour]]
    kind: str
    #: Page paths requested, and those dropped (by cause).
    pages: tuple[str, ...] = ("/p/private", "/p/public")
    dropped: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    #: Robots.txt downloads expected (hops, redirects included).
    hops: int = 1
    #: A substring of the outcome's detail.
    detail: str = ""
    memory_bound: int = MEMORY_BOUND
    #: Robots.txt downloads whose connection closes without a reply: aiohttp
    #: (reactor-less mode) sends such a request once more by itself.
    resendable: int = 0


def _chain(server: FaultServer, hops: int, final: Behaviour) -> dict[str, Behaviour]:
    paths = ["/robots.txt", *(f"/hop{i}" for i in range(1, hops + 1))]
    routes = {
        source: respond(302, headers={"Location": server.url(target)})
        for source, target in itertools.pairwise(paths)
    }
    routes[paths[-1]] = final
    return routes


_PRIVATE = {"/p/private": "rule"}
_ALL_UNREACHABLE = {"/p/private": "unreachable", "/p/public": "unreachable"}

CASES: dict[str, Case] = {
    "200": Case(
        lambda s: {"/robots.txt": respond(200, RULES)}, "parsed", dropped=_PRIVATE
    ),
    "3xx-chain-of-5": Case(
        lambda s: _chain(s, 5, respond(200, RULES)),
        "parsed",
        dropped=_PRIVATE,
        hops=6,
    ),
    "3xx-chain-of-6": Case(
        lambda s: _chain(s, 6, respond(200, RULES)),
        "unavailable",
        hops=6,
        detail="more than 5 redirects",
    ),
    "3xx-loop": Case(
        lambda s: {"/robots.txt": respond(301, headers={"Location": "/robots.txt"})},
        "unavailable",
        hops=6,
    ),
    "3xx-ping-pong": Case(
        lambda s: {
            "/robots.txt": respond(307, headers={"Location": "/b"}),
            "/b": respond(308, headers={"Location": "/robots.txt"}),
        },
        "unavailable",
        hops=3,
        settings={"ROBOTS_MAX_REDIRECTS": 2},
    ),
    **{
        f"{status}": Case(
            lambda s, status=status: {  # type: ignore[misc]
                "/robots.txt": respond(status, "User-agent: *\nDisallow: /\n")
            },
            "unavailable",
        )
        for status in (400, 401, 403, 404, 410)
    },
    **{
        f"{status}": Case(
            lambda s, status=status: {  # type: ignore[misc]
                "/robots.txt": respond(status, "User-agent: *\nAllow: /\n")
            },
            "unreachable",
            dropped=_ALL_UNREACHABLE,
        )
        for status in (429, 500, 502, 503)
    },
    "stall-before-headers": Case(
        lambda s: {"/robots.txt": stall_before_headers(10)},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        settings={"DOWNLOAD_TIMEOUT": 0.5},
    ),
    "stall-mid-body": Case(
        lambda s: {
            "/robots.txt": stall_mid_body(
                RULES.encode() * 100, after=len(RULES), seconds=10
            )
        },
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        settings={"DOWNLOAD_TIMEOUT": 0.5},
    ),
    "close-mid-body": Case(
        lambda s: {"/robots.txt": close_mid_body(RULES.encode() * 100, after=40)},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
    ),
    "close-mid-chunked-body": Case(
        lambda s: {
            "/robots.txt": close_mid_body(RULES.encode() * 100, after=40, chunked=True)
        },
        "unreachable",
        dropped=_ALL_UNREACHABLE,
    ),
    "drip-feed": Case(
        lambda s: {"/robots.txt": drip(RULES.encode() * 50, every=0.05)},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        settings={"DOWNLOAD_TIMEOUT": 0.5},
    ),
    "drip-fed-headers": Case(
        lambda s: {"/robots.txt": drip_headers(RULES.encode(), every=0.1, size=4)},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        settings={"DOWNLOAD_TIMEOUT": 0.5},
    ),
    "empty-reply": Case(
        lambda s: {"/robots.txt": raw(b"")},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        resendable=1,
    ),
    "not-http": Case(
        lambda s: {"/robots.txt": raw(b"SSH-2.0-OpenSSH_9.6\r\n" + RULES.encode())},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
    ),
    "huge-header": Case(
        lambda s: {"/robots.txt": respond(200, RULES, {"X-Junk": "x" * (256 * 1024)})},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
    ),
    "gzip-header-plain-body": Case(
        lambda s: {"/robots.txt": respond(200, RULES, {"Content-Encoding": "gzip"})},
        "unreachable",
        dropped=_ALL_UNREACHABLE,
    ),
    "invalid-location": Case(
        lambda s: {
            "/robots.txt": respond(302, headers={"Location": "http://[::1:bad/x"})
        },
        "unavailable",
    ),
    "location-bad-port": Case(
        lambda s: {
            "/robots.txt": respond(
                302, headers={"Location": f"http://{s.host}:99999/robots.txt"}
            )
        },
        "unavailable",
    ),
    "50-MiB-body": Case(
        lambda s: {
            "/robots.txt": stream(_EARLY_LATE, b"# " + b"x" * 61 + b"\n", 50 * MiB + 1)
        },
        "parsed",
        ("/p/early", "/p/late"),
        {"/p/early": "rule"},
        detail=f"cut at {LIMIT} bytes",
    ),
    "gzip-bomb-10-MiB": Case(
        lambda s: {"/robots.txt": gzip_bomb(_EARLY_LATE, 10 * MiB)[1]},
        "parsed",
        ("/p/early", "/p/late"),
        {"/p/early": "rule"},
    ),
    "gzip-bomb-10-MiB-no-compression-mw": Case(
        lambda s: {"/robots.txt": gzip_bomb(_EARLY_LATE, 10 * MiB)[1]},
        "parsed",
        ("/p/early", "/p/late"),
        {"/p/early": "rule"},
        settings={"COMPRESSION_ENABLED": False},
    ),
    "invalid-utf8": Case(
        lambda s: {
            "/robots.txt": respond(
                200,
                b"\xff\xfe\xfa\x80 junk\nUser-agent: *\n\xc3\x28\xa0\xa1\n"
                b"Disallow: /p/private\nDisallow: /p/\xe9t\xe9\n",
            )
        },
        "parsed",
        ("/p/private", "/p/public", "/p/%C3%A9t%C3%A9", "/p/%E9t%E9"),
        # Bytes that are not UTF-8 stand for themselves, percent-encoded.
        {"/p/private": "rule", "/p/%E9t%E9": "rule"},
    ),
    # UTF-16 is not robots.txt: read as UTF-8, every line ends at its first
    # NUL, no rule survives, so everything is allowed.
    "utf16-bom": Case(
        lambda s: {"/robots.txt": respond(200, RULES.encode("utf-16"))}, "parsed"
    ),
    "utf8-bom": Case(
        lambda s: {"/robots.txt": respond(200, b"\xef\xbb\xbf" + RULES.encode())},
        "parsed",
        dropped=_PRIVATE,
    ),
    "nul-bytes": Case(
        lambda s: {
            "/robots.txt": respond(
                200,
                b"User-agent: *\x00ignored\nDisallow: /p/private\x00/p/public\n"
                b"\x00Disallow: /p/\n",
            )
        },
        "parsed",
        dropped=_PRIVATE,
    ),
    "1-MiB-line": Case(
        lambda s: {
            "/robots.txt": respond(
                200, _EARLY_LATE + b"# " + b"x" * MiB + b"\nDisallow: /p/late\n"
            )
        },
        "parsed",
        ("/p/early", "/p/late"),
        {"/p/early": "rule"},
    ),
    "100000-rules-cut-at-the-limit": Case(
        _hundred_thousand_rules,
        "parsed",
        ("/p/private", "/d0/x", "/d30000/x"),
        {"/d0/x": "rule"},
    ),
    "100000-rules": Case(
        _hundred_thousand_rules,
        "parsed",
        ("/p/private", "/p/public", "/d0/x", "/d99999/x", "/d100000/x"),
        {"/p/private": "rule", "/d0/x": "rule", "/d99999/x": "rule"},
        settings={"ROBOTS_MAX_BYTES": 4 * MiB},
        # A 1.6 MB body read whole, 100,000 rules kept: a bound of its own.
        memory_bound=64 * MiB,
    ),
    "html-error-page-200": Case(
        lambda s: {
            "/robots.txt": respond(
                200, _HTML_ERROR_PAGE, {"Content-Type": "text/html; charset=utf-8"}
            )
        },
        "parsed",
    ),
    "1000-user-agent-groups": Case(
        lambda s: {
            "/robots.txt": respond(
                200,
                _lines(1000, "User-agent: bot{0}\nDisallow: /p/bot{0}\n\n")
                + "User-agent: TestBot\nDisallow: /p/private\n",
            )
        },
        "parsed",
        ("/p/private", "/p/public", "/p/bot7"),
        _PRIVATE,
    ),
    **{
        f"encoded-{name}": Case(
            lambda s, name=name: {  # type: ignore[misc]
                "/robots.txt": respond(
                    200, _ENCODERS[name](RULES.encode()), {"Content-Encoding": name}
                )
            },
            "parsed",
            dropped=_PRIVATE,
        )
        for name in _ENCODERS
    },
    # Decoded to 64 or 128 MiB: only the limit is ever decoded.
    # Before the bounded decoder, Scrapy's HttpCompressionMiddleware decoded
    # all of each (and the old counter saw only the first gzip member).
    **{
        f"{name}-bomb": Case(
            lambda s, name=name: {  # type: ignore[misc]
                "/robots.txt": respond(
                    200, _bomb(name), {"Content-Encoding": _BOMB_ENCODING[name]}
                )
            },
            "parsed",
            ("/p/early", "/p/late"),
            {"/p/early": "rule"},
            detail=f"cut at {LIMIT} bytes",
        )
        for name in _BOMB_ENCODING
    },
    "unknown-encoding": Case(
        lambda s: {
            "/robots.txt": respond(200, RULES, {"Content-Encoding": "compress"})
        },
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        detail="Content-Encoding 'compress' is not supported",
    ),
    "gzip-then-unknown-encoding": Case(
        lambda s: {
            "/robots.txt": respond(
                200, gzip.compress(RULES.encode()), {"Content-Encoding": "gzip, xz"}
            )
        },
        "unreachable",
        dropped=_ALL_UNREACHABLE,
        detail="Content-Encoding 'xz' is not supported",
    ),
    "max-age-of-400-digits": Case(
        lambda s: {
            "/robots.txt": respond(
                200, RULES, {"Cache-Control": "max-age=" + "9" * 400}
            )
        },
        "parsed",
        dropped=_PRIVATE,
    ),
}


def _case(name: str) -> Case:
    """``CASES[name]`` as this run's HTTP client meets it.  httpx (Scrapy
    2.15 to 2.18 without a reactor, see ``httpx_downloads``) fails the download of
    a 302 whose Location it cannot parse, so the package sees an error, not
    a redirect (docs/reliability.md).  Its DOWNLOAD_TIMEOUT bounds each
    read, not the whole download: fetch.BodyTimeout ends the drip-fed body
    as the other clients do, but headers dripped in time are read whole."""
    case = CASES[name]
    if httpx_downloads() and name == "invalid-location":
        return replace(case, kind="unreachable", dropped=_ALL_UNREACHABLE)
    if httpx_downloads() and name == "drip-fed-headers":
        # Each piece of the headers in time: httpx reads them all (up to
        # httpcore's 100 KiB), and the package sees nothing before they end.
        return replace(case, kind="parsed", dropped=_PRIVATE)
    return case


@dataclass(frozen=True)
class Crawl:
    crawler: Crawler
    outcomes: list[tuple[str, Outcome]]
    memory_peak: int


async def _crawl(urls: list[str], settings: dict[str, Any]) -> Crawl:
    crawler = make_crawler({**SETTINGS, **settings})
    outcomes: list[tuple[str, Outcome]] = []

    def record(origin: str, outcome: Outcome, request: Request) -> None:
        outcomes.append((origin, outcome))

    crawler.signals.connect(record, signal=robots_outcome)
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        await crawler.crawl_async(urls=urls)
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    return Crawl(crawler, outcomes, peak)


def _assert_accounted(
    result: Crawl,
    servers: list[FaultServer],
    unserved_hops: int = 0,
    resendable: int = 0,
) -> None:
    """Every request that entered the middleware was downloaded or dropped
    with a counted cause; none lost, none counted twice.

    ``unserved_hops``: robots.txt downloads that reached no server;
    ``resendable``: those the HTTP client may send twice (see Case).
    """
    crawler = result.crawler
    spider: Any = crawler.spider
    everything = stats(crawler, "")
    assert everything["finish_reason"] == "finished"
    # Hostile input is an outcome, never a traceback: the only errors are
    # the failed robots.txt downloads, each counted.
    assert everything.get("log_count/ERROR", 0) == sum(
        value
        for key, value in everything.items()
        if key.startswith("robots/fetch_error/")
    )
    dropped_by_others = everything.get("test/dropped_by_others", 0)
    assert len(spider.errors) == dropped_by_others
    assert all(
        type(failure.value) is IgnoreRequest
        and failure.request.url.endswith("/p/dropped")
        for failure in spider.errors
    )
    requests_in = everything.get("test/requests_in", 0)
    assert requests_in == len(spider.urls)
    forbidden = everything.get("robots/forbidden", 0)
    by_cause = {
        key: value
        for key, value in everything.items()
        if key.startswith("robots/forbidden/")
    }
    assert forbidden == sum(by_cause.values()) == len(spider.dropped)
    # The routes of a fault server are robots.txt and its redirect hops;
    # every other path it served is a page.
    page_hits = sum(
        served.hits
        for server in servers
        for path, served in server.served.items()
        if path not in server.routes
    )
    assert requests_in == len(spider.crawled) + forbidden + dropped_by_others
    assert page_hits == len(spider.crawled)
    # downloader/request_count has the pages and every robots.txt hop.
    hops = everything.get("test/robots_hops", 0)
    assert everything.get("downloader/request_count", 0) == page_hits + hops
    robots_hits = sum(server.hits() for server in servers) - page_hits
    resent = robots_hits + unserved_hops - hops
    assert resent == 0 or (not is_reactor_installed() and resent <= resendable)


@pytest.mark.parametrize("name", CASES)
@coroutine_test
async def test_hostile_robots_txt(name: str, hosts: Callable[[], FaultServer]) -> None:
    case = _case(name)
    server = hosts()
    server.routes.update(case.routes(server))
    urls = [server.url(page) for page in case.pages]
    result = await _crawl(urls, case.settings)
    crawler = result.crawler
    spider: Any = crawler.spider

    assert [(origin, outcome.kind) for origin, outcome in result.outcomes] == [
        (server.url("/robots.txt"), case.kind)
    ]
    assert case.detail in result.outcomes[0][1].detail
    robots = stats(crawler)
    assert robots["robots/fetch_count"] == 1
    assert robots[f"robots/outcome/{case.kind}"] == 1
    dropped = {url[len(server.origin) :]: e.cause for url, e in spider.dropped.items()}
    assert dropped == case.dropped
    assert sorted(spider.crawled) == sorted(
        url for url in urls if url[len(server.origin) :] not in case.dropped
    )
    assert stats(crawler, "test/")["test/robots_hops"] == case.hops
    _assert_accounted(result, [server], resendable=case.resendable)
    assert result.memory_peak < case.memory_bound


@coroutine_test
async def test_50_mib_body_is_not_read_past_the_limit(
    hosts: Callable[[], FaultServer],
) -> None:
    server = hosts()
    line = b"Disallow: /p/x\n"
    server.routes["/robots.txt"] = stream(_EARLY_LATE, line, 50 * MiB)
    result = await _crawl([server.url("/p/early"), server.url("/p/late")], {})
    served = server.served["/robots.txt"]
    # The client hung up once past ROBOTS_MAX_BYTES; what the kernel took
    # beyond that is socket buffers, a few MiB at most, not the 50 MiB.
    assert served.client_gone
    assert served.body_bytes < 16 * MiB
    received = stats(result.crawler, "downloader/")["downloader/response_bytes"]
    assert received < 2 * LIMIT
    assert result.crawler.spider.crawled == [server.url("/p/late")]  # type: ignore[union-attr]
    assert result.memory_peak < MEMORY_BOUND
    _assert_accounted(result, [server])


@pytest.mark.parametrize(
    "endless",
    [
        pytest.param(gzip.compress(b""), id="empty-members"),
        pytest.param(b"\0" * 64, id="junk"),
    ],
)
@coroutine_test
async def test_small_gzip_member_then_endless_bytes_is_not_read_on(
    hosts: Callable[[], FaultServer], endless: bytes
) -> None:
    # A whole robots.txt in a first gzip member, then 50 MiB that decode to
    # nothing: the transfer stops within the limit (junk: at once), where
    # it used to run until DOWNLOAD_TIMEOUT or the end.
    server = hosts()
    first = gzip.compress(_EARLY_LATE)
    server.routes["/robots.txt"] = stream(
        first, endless, 50 * MiB, {"Content-Encoding": "gzip"}
    )
    result = await _crawl(
        [server.url("/p/early"), server.url("/p/late")], {"DOWNLOAD_TIMEOUT": 30}
    )
    assert [outcome.kind for _, outcome in result.outcomes] == ["parsed"]
    assert result.crawler.spider.crawled == [server.url("/p/late")]  # type: ignore[union-attr]
    served = server.served["/robots.txt"]
    assert served.client_gone
    received = stats(result.crawler, "downloader/")["downloader/response_bytes"]
    assert received < 2 * LIMIT
    assert result.memory_peak < MEMORY_BOUND
    _assert_accounted(result, [server])


@coroutine_test
async def test_stacked_empty_members_do_not_stall_another_origin(
    hosts: Callable[[], FaultServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 772 bytes as gzip, gzip, gzip: 4 million empty gzip members after the
    # rules (issue 24, F1).  Decoding them all took 5-6 s in one call on the
    # event loop (80 s under tracemalloc), and another origin's page, on its
    # way meanwhile, failed with a timeout: now a bounded number of codec
    # calls (counted, as time is not), the rules before them read, and the
    # other page fetched.
    hostile, other = hosts(), hosts()
    body = (Path(__file__).parent / "data/hostile/gzip3-empty-members.gz").read_bytes()
    answer = respond(200, body, {"Content-Encoding": "gzip, gzip, gzip"})

    def later(exchange: Exchange) -> None:
        exchange.wait(0.5)  # while the other origin's page is on its way
        answer(exchange)

    hostile.routes["/robots.txt"] = later
    other.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    # 4 MiB in 64 KiB pieces over about a second: more than the socket
    # buffers hold, so after a stall the client still has reading to do,
    # and DOWNLOAD_TIMEOUT, overdue, fires first.
    other.default = drip(bytes(4 * MiB), every=0.02, size=65_536)
    calls = count_codec_calls(monkeypatch)
    urls = [other.url("/p/page"), hostile.url("/private"), hostile.url("/public")]
    result = await _crawl(urls, {"DOWNLOAD_TIMEOUT": 5})
    spider: Any = result.crawler.spider
    assert sorted(spider.crawled) == sorted([urls[0], urls[2]])
    assert list(spider.dropped) == [urls[1]]
    (outcome,) = [o for _, o in result.outcomes if o.detail != "HTTP 200"]
    assert (
        outcome.detail == "HTTP 200, cut at 512000 bytes (more than 256 gzip members)"
    )
    walked, made = calls
    assert made <= 3 * (MAX_MEMBERS + 1)
    assert walked <= 3 * CALLS_PER_STAGE
    _assert_accounted(result, [hostile, other])


@pytest.mark.parametrize(("module", "encoding"), [("_BROTLI", "br"), ("_ZSTD", "zstd")])
@coroutine_test
async def test_a_codec_not_installed_is_an_outcome(
    hosts: Callable[[], FaultServer],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    encoding: str,
) -> None:
    # As on an installation without brotli / backports.zstd: the server
    # sends the encoding anyway, and the origin is unreachable, no crash.
    monkeypatch.setattr(decode_module, module, None)
    server = hosts()
    server.routes["/robots.txt"] = respond(
        200, _ENCODERS[encoding](RULES.encode()), {"Content-Encoding": encoding}
    )
    result = await _crawl([server.url("/p/private"), server.url("/p/public")], {})
    ((_, outcome),) = result.outcomes
    assert outcome.kind == "unreachable"
    assert outcome.detail == f"Content-Encoding {encoding!r} is not supported"
    _assert_accounted(result, [server])


@coroutine_test
async def test_gzip_bomb_is_small_on_the_wire_and_bounded_decoded(
    hosts: Callable[[], FaultServer],
) -> None:
    server = hosts()
    body, server.routes["/robots.txt"] = gzip_bomb(_EARLY_LATE, 256 * MiB)
    assert len(body) < MiB
    result = await _crawl([server.url("/p/early"), server.url("/p/late")], {})
    assert result.crawler.spider.crawled == [server.url("/p/late")]  # type: ignore[union-attr]
    decoded = stats(result.crawler, "httpcompression/")
    # HttpCompressionMiddleware decoded the page only, never the bomb.
    assert decoded.get("httpcompression/response_bytes", 0) < LIMIT
    assert result.memory_peak < MEMORY_BOUND
    _assert_accounted(result, [server])


def _closed_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@coroutine_test
async def test_connection_refused(hosts: Callable[[], FaultServer]) -> None:
    server = hosts()
    origin = f"http://{server.host}:{_closed_port(server.host)}"
    urls = [origin + "/p/private", origin + "/p/public"]
    result = await _crawl(urls, {})
    assert [outcome.kind for _, outcome in result.outcomes] == ["unreachable"]
    spider: Any = result.crawler.spider
    assert {e.cause for e in spider.dropped.values()} == {"unreachable"}
    assert len(spider.dropped) == 2
    _assert_accounted(result, [server], unserved_hops=1)


def _guard_trusts(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """The SSRF guard, with ``address`` (a loopback test host) taken for a
    public one: every other address is judged by the real guard."""
    real = fetch_module._is_public
    monkeypatch.setattr(
        fetch_module,
        "_is_public",
        lambda candidate: candidate == address or real(candidate),
    )


def _lookups_find_public(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SSRF guard's lookup finds every name public, as a name that
    rebinds to a private address for the download answers it."""
    monkeypatch.setattr(fetch_module, "_resolve", lambda host: ["93.184.216.34"])


@pytest.mark.parametrize("target_host", ["ip", "localhost"])
@coroutine_test
async def test_ssrf_guard_refuses_a_redirect_to_a_private_address(
    hosts: Callable[[], FaultServer],
    monkeypatch: pytest.MonkeyPatch,
    target_host: str,
) -> None:
    front, target = hosts(), hosts()
    target.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    host = target.host if target_host == "ip" else "localhost"
    location = f"http://{host}:{target.port}/robots.txt"
    front.routes["/robots.txt"] = respond(302, headers={"Location": location})
    _guard_trusts(monkeypatch, front.host)
    urls = [front.url("/p/private"), front.url("/p/public")]
    result = await _crawl(urls, {"ROBOTS_SSRF_GUARD": True})

    [(origin, outcome)] = result.outcomes
    assert (origin, outcome.kind) == (front.url("/robots.txt"), "unreachable")
    assert "ROBOTS_SSRF_GUARD refused" in outcome.detail
    assert host in outcome.detail
    # The first hop was fetched, the redirect never followed.
    assert front.hits("/robots.txt") == 1
    assert target.hits() == 0
    assert stats(result.crawler, "test/")["test/robots_hops"] == 1
    spider: Any = result.crawler.spider
    assert {e.cause for e in spider.dropped.values()} == {"unreachable"}
    _assert_accounted(result, [front, target])


@coroutine_test
async def test_ssrf_guard_refuses_the_first_hop_to_loopback(
    hosts: Callable[[], FaultServer],
) -> None:
    server = hosts()
    result = await _crawl([server.url("/p/public")], {"ROBOTS_SSRF_GUARD": True})
    [(_, outcome)] = result.outcomes
    assert outcome.kind == "unreachable"
    assert "ROBOTS_SSRF_GUARD refused" in outcome.detail
    assert server.hits() == 0
    _assert_accounted(result, [server])


@coroutine_test
async def test_ssrf_guard_refuses_a_name_reached_at_a_private_address(
    monkeypatch: pytest.MonkeyPatch, localhost: FaultServer
) -> None:
    """DNS rebinding: ``localhost`` is public when the guard looks it up,
    then the download reaches it on loopback.  The request has gone out,
    but its answer is not used: the origin is refused for good."""
    _lookups_find_public(monkeypatch)
    server = localhost
    server.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    origin = f"http://localhost:{server.port}"
    result = await _crawl([origin + "/p/public"], {"ROBOTS_SSRF_GUARD": True})

    [(_, outcome)] = result.outcomes
    assert (outcome.kind, outcome.guard_refused) == ("unreachable", True)
    assert "ROBOTS_SSRF_GUARD refused localhost (127.0.0.1" in outcome.detail
    assert server.hits("/robots.txt") == 1
    assert server.hits() == 1
    spider: Any = result.crawler.spider
    assert {e.cause for e in spider.dropped.values()} == {"unreachable"}
    _assert_accounted(result, [server])


@coroutine_test
async def test_ssrf_guard_drops_a_page_answered_from_a_refused_address(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, localhost: FaultServer
) -> None:
    """DNS rebinding after robots.txt: a run without the guard stored the
    origin's robots.txt; the next, with the guard, finds ``localhost``
    public by its lookup, but the page comes from loopback.  The page is
    downloaded and dropped, and the origin refused for good (in the store
    too)."""
    server = localhost
    store = {"ROBOTS_STORE": "sqlite", "ROBOTS_STORE_URL": str(tmp_path / "r.db")}
    server.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    origin = f"http://localhost:{server.port}"
    first = await _crawl([origin + "/p/first"], store)
    assert [o.kind for _, o in first.outcomes] == ["parsed"]
    _lookups_find_public(monkeypatch)
    guarded = {**store, "ROBOTS_SSRF_GUARD": True}
    result = await _crawl([origin + "/p/public"], guarded)
    again = await _crawl([origin + "/p/again"], guarded)

    spider: Any = result.crawler.spider
    assert spider.crawled == []
    [(url, refusal)] = spider.dropped.items()
    assert (url, refusal.cause) == (origin + "/p/public", "unreachable")
    assert "ROBOTS_SSRF_GUARD refused localhost (127.0.0.1" in refusal.why
    counted = stats(result.crawler)
    assert counted["robots/forbidden/unreachable"] == 1
    assert counted["robots/outcome/unreachable"] == 1
    # The page was downloaded (its answer told the address), robots.txt not.
    assert (server.hits("/robots.txt"), server.hits("/p/public")) == (1, 1)
    # The next run takes the refusal from the store: nothing downloaded.
    [(_, outcome)] = again.outcomes
    assert (outcome.kind, outcome.guard_refused) == ("unreachable", True)
    assert server.hits("/p/again") == 0


@coroutine_test
async def test_ssrf_guard_refuses_a_replay_of_a_refused_robots_txt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, localhost: FaultServer
) -> None:
    """The robots.txt the guard refused by its address is in Scrapy's HTTP
    cache all the same (HttpCacheMiddleware stored it first).  Its replay
    tells no address: it is refused by the mark it was stored with, so the
    next run neither uses its rules nor downloads a page."""
    _lookups_find_public(monkeypatch)
    server = localhost
    server.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    origin = f"http://localhost:{server.port}"
    cached = {
        "ROBOTS_SSRF_GUARD": True,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
    }
    first = await _crawl([origin + "/p/public"], cached)
    again = await _crawl([origin + "/p/public"], cached)

    for result in (first, again):
        [(_, outcome)] = result.outcomes
        assert (outcome.kind, outcome.guard_refused) == ("unreachable", True)
        assert "ROBOTS_SSRF_GUARD refused localhost (127.0.0.1" in outcome.detail
        spider: Any = result.crawler.spider
        assert spider.crawled == []
        assert {e.cause for e in spider.dropped.values()} == {"unreachable"}
    assert "replayed from the HTTP cache" in again.outcomes[0][1].detail
    assert stats(again.crawler, "httpcache/")["httpcache/hit"] == 1
    # Only the first run's robots.txt reached the server.
    assert server.hits() == 1


@coroutine_test
async def test_ssrf_guard_refuses_a_replay_of_a_refused_page(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, localhost: FaultServer
) -> None:
    """A page dropped for the address it came from is kept in Scrapy's HTTP
    cache marked refused: a later run replaying it drops it again, rather
    than give the spider what a private address sent."""
    server = localhost
    server.routes["/robots.txt"] = respond(200, "User-agent: *\nAllow: /\n")
    origin = f"http://localhost:{server.port}"
    cache = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path / "cache")}
    # A run without the guard puts robots.txt in the cache; the next ones,
    # with the guard, replay it (it tells no address) and find the name
    # public by its lookup, but the page comes from loopback.
    await _crawl([origin + "/p/first"], cache)
    _lookups_find_public(monkeypatch)
    guarded = {**cache, "ROBOTS_SSRF_GUARD": True}
    first = await _crawl([origin + "/p/public"], guarded)
    again = await _crawl([origin + "/p/public"], guarded)

    for result in (first, again):
        spider: Any = result.crawler.spider
        assert spider.crawled == []
        [(url, refusal)] = spider.dropped.items()
        assert (url, refusal.cause) == (origin + "/p/public", "unreachable")
        assert "ROBOTS_SSRF_GUARD refused localhost (127.0.0.1" in refusal.why
    assert "replayed from the HTTP cache" in again.crawler.spider.dropped[url].why
    # The page was downloaded once, by the first guarded run.
    assert (server.hits("/robots.txt"), server.hits("/p/public")) == (1, 1)


@coroutine_test
async def test_ssrf_guard_stores_a_servers_own_refusal_mark_without_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hosts: Callable[[], FaultServer]
) -> None:
    """An answer that comes with the refusal mark from the server itself,
    from an address the guard lets through, is kept in the cache without
    it: its replay is used, not refused."""
    server = hosts()
    _guard_trusts(monkeypatch, server.host)
    mark = {"X-Robots-Refused-Address": "a server's own"}
    server.routes["/robots.txt"] = respond(
        200, "User-agent: *\nDisallow: /p/private\n", headers=mark
    )
    server.routes["/p/public"] = respond(200, "page", headers=mark)
    cached = {
        "ROBOTS_SSRF_GUARD": True,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
    }
    urls = [server.url("/p/private"), server.url("/p/public")]
    first = await _crawl(urls, cached)
    again = await _crawl(urls, cached)

    for result in (first, again):
        assert [o.kind for _, o in result.outcomes] == ["parsed"]
        spider: Any = result.crawler.spider
        assert spider.crawled == [server.url("/p/public")]
    assert stats(again.crawler, "httpcache/")["httpcache/hit"] == 2
    assert (server.hits("/robots.txt"), server.hits("/p/public")) == (1, 1)


@coroutine_test
async def test_ssrf_guard_takes_a_proxy_address_for_no_refusal(
    monkeypatch: pytest.MonkeyPatch, hosts: Callable[[], FaultServer]
) -> None:
    """Through a proxy (here on loopback) every answer comes from the
    proxy's address: the guard judges the names by its lookup alone."""
    if httpx_ignores_proxies():
        pytest.skip("Scrapy 2.15's httpx download handler takes no proxy")
    proxy = hosts()
    rules = "User-agent: *\nDisallow: /p/private\n"
    proxy.routes["http://example.test/robots.txt"] = respond(200, rules)
    for name in ("http_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://{proxy.host}:{proxy.port}")
    _lookups_find_public(monkeypatch)
    urls = ["http://example.test/p/private", "http://example.test/p/public"]
    result = await _crawl(urls, {"ROBOTS_SSRF_GUARD": True})

    assert [o.kind for _, o in result.outcomes] == ["parsed"]
    spider: Any = result.crawler.spider
    assert spider.crawled == ["http://example.test/p/public"]
    assert {url: e.cause for url, e in spider.dropped.items()} == {
        "http://example.test/p/private": "rule"
    }
    assert proxy.hits("http://example.test/robots.txt") == 1


@coroutine_test
async def test_every_fault_at_once_in_one_crawl(
    hosts: Callable[[], FaultServer],
) -> None:
    """A broad crawl meeting all the hostile servers together, interleaved:
    each origin still gets its own outcome, and nothing is lost."""
    servers: dict[str, FaultServer] = {}
    urls: list[str] = []
    expected: dict[str, str] = {}
    for name in CASES:
        case = _case(name)
        if case.settings:
            continue
        server = servers[name] = hosts()
        server.routes.update(case.routes(server))
        expected[server.url("/robots.txt")] = case.kind
        urls.extend(server.url(page) for page in (*case.pages, "/p/dropped"))
    # Interleave origins so their fetches overlap.
    urls.sort(key=lambda url: (url.rsplit("/", 1)[-1], url))
    # No case here stalls (those set their own timeout and run alone), but
    # the servers stream their bombs from threads of this process: sharing
    # the GIL with them, a step of the crawl can take most of a second, and
    # a 1 s timeout then turns a healthy origin unreachable.  It takes 4 s
    # alone; on a machine loaded many times over it once took more than
    # the 30 s bound of the others.
    settings = {"CONCURRENT_REQUESTS": 32, "DOWNLOAD_TIMEOUT": 10}
    result = await _crawl(urls, {**settings, "CLOSESPIDER_TIMEOUT": 120})

    kinds = {origin: outcome.kind for origin, outcome in result.outcomes}
    assert kinds == expected
    assert len(result.outcomes) == len(expected)
    assert stats(result.crawler)["robots/fetch_count"] == len(expected)
    # Another middleware dropped /p/dropped of every origin robots.txt let
    # through, and only those.
    allowed = sum(kind != "unreachable" for kind in expected.values())
    assert stats(result.crawler, "test/")["test/dropped_by_others"] == allowed
    _assert_accounted(
        result,
        list(servers.values()),
        resendable=sum(CASES[name].resendable for name in servers),
    )
    assert result.memory_peak < MEMORY_BOUND
