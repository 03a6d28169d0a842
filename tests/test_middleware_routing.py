"""The robots.txt request routed as the page request that needed it: the
page's proxy (with its ``Proxy-Authorization``), downloader slot and local
address, on every hop; never the page's own site credentials.

The site is reachable only through the proxy: a loopback server answering
absolute-form requests for names (``site.invalid``) that only it knows.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from scrapy_rfc9309._compat import spider_argument
from tests.support.crawl_helpers import (
    Routed,
    crawl,
    httpx_ignores_proxies,
    stats,
    through_proxy,
)
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_commands import scrapy

MakeServer = Callable[..., Server]
RULES = "User-agent: *\nDisallow: /private\n"
SITE = "http://site.invalid"
# "user:pw", as HttpProxyMiddleware sends it to the proxy.
PROXY_CREDENTIALS = "Basic dXNlcjpwdw=="

pytestmark = pytest.mark.skipif(
    httpx_ignores_proxies(),
    reason="Scrapy 2.15's httpx download handler takes no proxy",
)


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


@coroutine_test
async def test_robots_txt_goes_through_the_pages_proxy(
    make_server: MakeServer,
) -> None:
    proxy = make_server()
    proxy.route(f"{SITE}/robots.txt", RULES)
    # Site credentials of the page's own (Scrapy 2.17's meta keys).
    spider = through_proxy(
        proxy, http_user="site", http_pass="secret", http_auth_domain=None
    )
    crawler = await crawl([f"{SITE}/a", f"{SITE}/private/1"], spidercls=spider)
    assert crawler.spider.crawled == [f"{SITE}/a"]
    assert crawler.spider.dropped[f"{SITE}/private/1"].cause == "rule"
    (robots,) = [hit for hit in proxy.hits if hit.path == f"{SITE}/robots.txt"]
    assert robots.headers["Proxy-Authorization"] == PROXY_CREDENTIALS
    # The page's site credentials stay the page's.
    assert "Authorization" not in robots.headers
    assert [hit.path for hit in proxy.hits] == [f"{SITE}/robots.txt", f"{SITE}/a"]


@coroutine_test
async def test_every_redirect_hop_keeps_the_proxy(make_server: MakeServer) -> None:
    proxy = make_server()
    moved = "http://elsewhere.invalid/robots.txt"
    proxy.route(f"{SITE}/robots.txt", status=301, headers={"Location": moved})
    proxy.route(moved, RULES)
    crawler = await crawl([f"{SITE}/private/1"], spidercls=through_proxy(proxy))
    assert crawler.spider.dropped[f"{SITE}/private/1"].cause == "rule"
    hops = [hit for hit in proxy.hits if hit.path.endswith("/robots.txt")]
    assert [hit.path for hit in hops] == [f"{SITE}/robots.txt", moved]
    assert {hit.headers["Proxy-Authorization"] for hit in hops} == {PROXY_CREDENTIALS}


@coroutine_test
async def test_a_proxy_authorization_header_goes_with_the_proxy(
    make_server: MakeServer,
) -> None:
    # A page whose proxy credentials are a header of its own (or a retry,
    # which HttpProxyMiddleware already gave the header).
    proxy = make_server()
    proxy.route(f"{SITE}/robots.txt", RULES)

    class Header(Routed):
        name = "header"
        meta: ClassVar[dict[str, Any]] = {"proxy": f"http://{proxy.host}:{proxy.port}"}

        async def start(self) -> AsyncIterator[Any]:
            async for request in super().start():
                request.headers["Proxy-Authorization"] = "Basic b3RoZXI6cHc="
                yield request

    crawler = await crawl([f"{SITE}/a"], spidercls=Header)
    assert crawler.spider.crawled == [f"{SITE}/a"]
    robots = proxy.hits[0]
    assert robots.path == f"{SITE}/robots.txt"
    assert robots.headers["Proxy-Authorization"] == "Basic b3RoZXI6cHc="


@coroutine_test
async def test_an_http_url_without_a_robots_txt_is_dropped_not_sent(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # No host (or one that cannot be written in ASCII): no robots.txt to
    # ask.  A proxy would take such a request and answer it unchecked.
    proxy = make_server()
    urls = ["http:///p", "http://:80/p", "http://user@/p", "http://\u00fc..example/p"]
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309.middleware"):
        crawler = await crawl(urls, spidercls=through_proxy(proxy))
    assert proxy.hits == []
    assert crawler.spider.crawled == []
    assert sorted(crawler.spider.dropped) == sorted(urls)
    dropped = crawler.spider.dropped["http:///p"]
    assert (dropped.cause, dropped.origin) == ("unreachable", "http:///robots.txt")
    assert dropped.why == "no host robots.txt could be asked for"
    assert stats(crawler) == {
        "robots/forbidden": 4,
        "robots/forbidden/unreachable": 4,
    }
    logged = [r.getMessage() for r in caplog.records if "http:///p" in r.getMessage()]
    assert logged == [
        "Forbidden by robots.txt: <GET http:///p> (http:///robots.txt"
        " no host robots.txt could be asked for)"
    ]


@spider_argument
class Departing:
    """Records the routing meta of each robots.txt request as it leaves the
    downloader middlewares (placed last)."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def process_request(self, request: Request) -> None:
        if request.url.endswith("/robots.txt"):
            keys = ("proxy", "download_slot", "bindaddress", "http_user")
            self.seen.append({key: request.meta.get(key) for key in keys})


@coroutine_test
async def test_robots_txt_takes_the_pages_slot_and_local_address(
    server: Server,
) -> None:
    server.route("/robots.txt", RULES)
    Departing.seen = []

    class Slotted(Routed):
        name = "slotted"
        meta: ClassVar[dict[str, Any]] = {
            "download_slot": "pool-1",
            "bindaddress": ("127.0.0.1", 0),
            "http_user": "site",
            "http_pass": "secret",
        }

    crawler = await crawl(
        [server.url("/a")],
        {"DOWNLOADER_MIDDLEWARES": {f"{__name__}.Departing": 2_000_000}},
        spidercls=Slotted,
    )
    assert crawler.spider.crawled == [server.url("/a")]
    assert Departing.seen == [
        {
            "proxy": None,
            "download_slot": "pool-1",
            "bindaddress": ("127.0.0.1", 0),
            "http_user": None,
        }
    ]


@spider_argument
class ZyteApiManual:
    """As scrapy-zyte-api (its downloader middleware at 633), its
    transparent mode as ``ZYTE_API_TRANSPARENT_MODE`` says: a request goes
    through Zyte API (here the proxy ``api``) when its ``zyte_api`` meta is
    a dict (``{}`` included) or ``True``, or else its ``zyte_api_automap``
    meta (the transparent mode when it has none) is anything but ``False``;
    any other straight to the site (the proxy ``direct``: the site as it
    answers the crawler's own address).  Records the Zyte API meta of each
    robots.txt request."""

    api = direct = ""
    seen: ClassVar[list[Any]] = []

    def __init__(self, crawler: Crawler) -> None:
        self.transparent = crawler.settings.getbool("ZYTE_API_TRANSPARENT_MODE")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ZyteApiManual:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        raw = request.meta.get("zyte_api", False)
        automap = request.meta.get("zyte_api_automap", self.transparent)
        zyte = raw == {} or bool(raw) or automap is not False
        request.meta["proxy"] = self.api if zyte else self.direct
        if request.url.endswith("/robots.txt"):
            self.seen.append(request.meta.get("zyte_api_automap", "unset"))


@pytest.mark.parametrize(
    ("meta", "sent"),
    [
        ({"zyte_api_automap": True}, True),
        # Where from, not what: never a browser's rendering of robots.txt.
        (
            {"zyte_api": {"browserHtml": True, "geolocation": "FR"}},
            {"geolocation": "FR"},
        ),
        (
            {"zyte_api_automap": {"screenshot": True, "ipType": "residential"}},
            {"ipType": "residential"},
        ),
        ({"zyte_api_automap": {"browserHtml": True}}, True),
        # scrapy-zyte-api's defaults (ZYTE_API_DEFAULT_PARAMS and
        # ZYTE_API_AUTOMAP_PARAMS): through Zyte API all the same.
        ({"zyte_api": {}}, True),
        ({"zyte_api_automap": {}}, True),
        # A page kept out of Zyte API (in its transparent mode): robots.txt too.
        ({"zyte_api_automap": False}, False),
    ],
)
@coroutine_test
async def test_robots_txt_goes_through_zyte_api_as_the_page(
    make_server: MakeServer, meta: dict[str, Any], sent: Any
) -> None:
    """scrapy-zyte-api's meta keys route robots.txt as the page: through
    Zyte API, for its raw body, from the page's place and kind of address."""
    await _through_zyte_api(make_server, {}, meta, sent)


#: scrapy-zyte-api's add-on, its defaults asking for a browser's rendering.
TRANSPARENT = {
    "ZYTE_API_TRANSPARENT_MODE": True,
    "ZYTE_API_AUTOMAP_PARAMS": {"browserHtml": True, "geolocation": "DE"},
}


@pytest.mark.parametrize(
    ("settings", "meta", "sent"),
    [
        # The defaults' browserHtml unset, their geolocation kept.
        (TRANSPARENT, {}, {"browserHtml": None}),
        (
            TRANSPARENT,
            {"zyte_api_automap": {"ipType": "residential"}},
            {"browserHtml": None, "ipType": "residential"},
        ),
        (TRANSPARENT, {"zyte_api_automap": False}, False),
        ({"ZYTE_API_TRANSPARENT_MODE": True}, {}, True),
        # An empty default scrapy-zyte-api drops: nothing to unset.
        (
            {**TRANSPARENT, "ZYTE_API_AUTOMAP_PARAMS": {"browserHtml": None}},
            {},
            True,
        ),
        # A zyte_api page goes from where ZYTE_API_DEFAULT_PARAMS says, not
        # the automap defaults: its robots.txt too.
        (
            {"ZYTE_API_DEFAULT_PARAMS": {"geolocation": "FR"}},
            {"zyte_api": {}},
            {"geolocation": "FR"},
        ),
        (
            {**TRANSPARENT, "ZYTE_API_DEFAULT_PARAMS": {"ipType": "residential"}},
            {"zyte_api": True},
            {"browserHtml": None, "geolocation": None, "ipType": "residential"},
        ),
        (
            {"ZYTE_API_DEFAULT_PARAMS": {"geolocation": "FR"}},
            {"zyte_api": {"geolocation": "IE"}, "zyte_api_default_params": False},
            {"geolocation": "IE"},
        ),
    ],
)
@coroutine_test
async def test_robots_txt_is_no_rendering_of_the_zyte_api_defaults(
    make_server: MakeServer, settings: dict[str, Any], meta: dict[str, Any], sent: Any
) -> None:
    """ZYTE_API_AUTOMAP_PARAMS asking for a browser's rendering (or a
    screenshot, actions) of every request: a robots.txt so fetched would be
    an HTML page of no rules, everything allowed."""
    await _through_zyte_api(make_server, settings, meta, sent)


@spider_argument
class ZyteApiRecorder:
    """Records the Zyte API meta of every request (a stand-in placed where
    scrapy-zyte-api's downloader middleware is, answering nothing)."""

    seen: ClassVar[dict[str, Any]] = {}

    def process_request(self, request: Request) -> None:
        self.seen[request.url.rsplit("/", 1)[-1]] = request.meta.get(
            "zyte_api_automap", "unset"
        )


@coroutine_test
async def test_sitemaps_are_no_rendering_of_the_zyte_api_defaults(
    server: Server,
) -> None:
    """The sitemaps robots.txt names are requested for their raw body too: a
    browser's rendering of XML is an HTML page with no <urlset>."""
    server.route("/robots.txt", "User-agent: *\nSitemap: /s.xml\n")
    server.route("/s.xml", "<urlset/>")
    ZyteApiRecorder.seen = {}
    await crawl(
        [server.url("/a")],
        {
            **TRANSPARENT,
            "ROBOTS_SITEMAPS": True,
            "DOWNLOADER_MIDDLEWARES": {f"{__name__}.ZyteApiRecorder": 633},
        },
    )
    assert ZyteApiRecorder.seen == {
        "robots.txt": {"browserHtml": None},
        "s.xml": {"browserHtml": None},
        "a": "unset",
    }


async def _through_zyte_api(
    make_server: MakeServer, settings: dict[str, Any], meta: dict[str, Any], sent: Any
) -> None:
    api, direct = make_server(), make_server()
    api.route(f"{SITE}/robots.txt", RULES)
    # The site refuses the crawler's own address everything.
    direct.route(f"{SITE}/robots.txt", "User-agent: *\nDisallow: /\n")
    ZyteApiManual.api = f"http://{api.host}:{api.port}"
    ZyteApiManual.direct = f"http://{direct.host}:{direct.port}"
    ZyteApiManual.seen = []

    class Zyte(Routed):
        name = "zyte"

    Zyte.meta = meta
    crawler = await crawl(
        [f"{SITE}/a", f"{SITE}/private/1"],
        {**settings, "DOWNLOADER_MIDDLEWARES": {f"{__name__}.ZyteApiManual": 633}},
        spidercls=Zyte,
    )
    assert ZyteApiManual.seen == [sent]
    through, around = (api, direct) if sent else (direct, api)
    assert [hit.path for hit in through.hits][:1] == [f"{SITE}/robots.txt"]
    assert around.hits == []
    dropped = {url: e.cause for url, e in crawler.spider.dropped.items()}
    if sent:
        assert crawler.spider.crawled == [f"{SITE}/a"]
        assert dropped == {f"{SITE}/private/1": "rule"}
    else:
        assert crawler.spider.crawled == []
        assert dropped == {f"{SITE}/a": "rule", f"{SITE}/private/1": "rule"}


def test_the_commands_take_the_proxy_of_the_environment(
    make_server: MakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scrapy robots makes its own requests, without a spider's meta: a proxy
    # reaches them through HttpProxyMiddleware (or a project's middleware).
    proxy = make_server()
    proxy.route(f"{SITE}/robots.txt", RULES)
    monkeypatch.setenv("http_proxy", f"http://user:pw@{proxy.host}:{proxy.port}")
    linted = scrapy(tmp_path, "lint", f"{SITE}/robots.txt")
    assert linted.returncode == 0, linted.stderr
    checked = scrapy(tmp_path, "check", f"{SITE}/private/1")
    assert checked.returncode == 1, checked.stderr
    assert "rule_disallow (line 2: Disallow: /private)" in checked.stdout
    hits = [(hit.path, hit.headers["Proxy-Authorization"]) for hit in proxy.hits]
    assert hits == [(f"{SITE}/robots.txt", PROXY_CREDENTIALS)] * 2
