"""Redirects of robots.txt: followed here, at most ROBOTS_MAX_REDIRECTS hops."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.crawl_helpers import crawl, httpx_downloads, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
RULES = "User-agent: *\nDisallow: /private\n"


def _chain(server: Server, hops: int, final: Server | None = None) -> None:
    """/robots.txt -> /hop1 -> ... -> /hop{hops-1} -> final /robots.txt."""
    final = final or server
    path = "/robots.txt"
    for hop in range(1, hops + 1):
        is_last = hop == hops
        target = final.url("/rules.txt") if is_last else server.url(f"/hop{hop}")
        server.route(path, status=302, headers={"Location": target})
        path = f"/hop{hop}"
    final.route("/rules.txt", RULES)


@pytest.mark.parametrize("hops", [1, 4, 5])
@coroutine_test
async def test_up_to_five_hops_followed(server: Server, hops: int) -> None:
    _chain(server, hops)
    crawler = await crawl([server.url("/private"), server.url("/public")])
    assert crawler.spider.crawled == [server.url("/public")]
    assert crawler.spider.dropped[server.url("/private")].cause == "rule"
    assert stats(crawler)["robots/outcome/parsed"] == 1
    assert stats(crawler)["robots/fetch_count"] == 1


@coroutine_test
async def test_six_hops_unavailable(server: Server) -> None:
    _chain(server, 6)
    crawler = await crawl([server.url("/private")])
    assert crawler.spider.crawled == [server.url("/private")]
    assert stats(crawler)["robots/outcome/unavailable"] == 1
    # Five hops followed, the sixth never requested.
    assert server.count("/rules.txt") == 0
    assert server.count("/hop5") == 1


@coroutine_test
async def test_max_redirects_setting(server: Server) -> None:
    _chain(server, 3)
    crawler = await crawl([server.url("/private")], {"ROBOTS_MAX_REDIRECTS": 2})
    assert crawler.spider.crawled == [server.url("/private")]
    assert stats(crawler)["robots/outcome/unavailable"] == 1


@coroutine_test
async def test_loop_unavailable(server: Server) -> None:
    server.route("/robots.txt", status=301, headers={"Location": "/robots.txt"})
    crawler = await crawl([server.url("/private")])
    assert crawler.spider.crawled == [server.url("/private")]
    assert stats(crawler)["robots/outcome/unavailable"] == 1
    assert server.count("/robots.txt") == 6


@coroutine_test
async def test_to_another_host_rules_apply_to_the_original_origin(
    make_server: MakeServer,
) -> None:
    first, second = make_server(), make_server()
    _chain(first, 2, final=second)
    second.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    crawler = await crawl([first.url("/private"), first.url("/public")])
    assert crawler.spider.crawled == [first.url("/public")]
    # The target host's own robots.txt was never asked: its rules are not
    # the first origin's.
    assert second.count("/robots.txt") == 0
    assert second.count("/rules.txt") == 1


@coroutine_test
async def test_to_a_host_outside_allowed_domains(make_server: MakeServer) -> None:
    first, second = make_server(), make_server()
    first.route("/robots.txt", status=301, headers={"Location": second.url("/r.txt")})
    second.route("/r.txt", RULES)
    # Scrapy's OffsiteMiddleware would drop the hop (and the built-in
    # RobotsTxtMiddleware then allows everything); allowed_domains says
    # nothing about robots.txt.
    crawler = await crawl(
        [first.url("/private"), first.url("/public")],
        allowed_domains=[first.host],
    )
    assert crawler.spider.crawled == [first.url("/public")]
    assert second.count("/r.txt") == 1
    assert crawler.spider.dropped[first.url("/private")].cause == "rule"


#: Locations the httpx client refuses to build a request from (see
#: ``httpx_downloads``), even when it does not follow the redirect.
HTTPX_REFUSES = {"mailto:someone@example.com", "http://[::1:bad/robots.txt"}


@pytest.mark.parametrize(
    "location",
    [
        "ftp://x/robots.txt",
        "mailto:someone@example.com",
        "http://[::1:bad/robots.txt",
        "http://127.0.0.1:99999/robots.txt",
        "http:///robots.txt",
        # Hosts Scrapy's downloader refuses (Invalid URI): a space, a zone.
        "http://exa mple.com/robots.txt",
        "http://[fe80::1%25eth0]/robots.txt",
    ],
)
@coroutine_test
async def test_redirect_to_an_unusable_url_unavailable(
    server: Server, location: str
) -> None:
    server.route("/robots.txt", status=302, headers={"Location": location})
    crawler = await crawl([server.url("/private")])
    if httpx_downloads() and location in HTTPX_REFUSES:
        # httpx (Scrapy 2.15 to 2.18 without a reactor) fails the download of a 302
        # whose Location it cannot parse: the package never sees the
        # redirect, only an error, so robots.txt is unreachable.
        assert crawler.spider.dropped[server.url("/private")].cause == "unreachable"
        assert crawler.spider.crawled == []
        assert stats(crawler)["robots/outcome/unreachable"] == 1
        return
    assert crawler.spider.crawled == [server.url("/private")]
    assert stats(crawler)["robots/outcome/unavailable"] == 1


@coroutine_test
async def test_redirect_without_location_unavailable(server: Server) -> None:
    server.route("/robots.txt", RULES, status=302)
    crawler = await crawl([server.url("/private")])
    assert crawler.spider.crawled == [server.url("/private")]


@coroutine_test
async def test_redirect_to_an_error_takes_the_error(make_server: MakeServer) -> None:
    first, second = make_server(), make_server()
    first.route("/robots.txt", status=307, headers={"Location": second.url("/x")})
    second.route("/x", "", status=503)
    crawler = await crawl([first.url("/page")])
    assert crawler.spider.dropped[first.url("/page")].cause == "unreachable"
