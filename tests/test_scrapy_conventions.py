"""Scrapy's own conventions, kept: ``ROBOTSTXT_OBEY``, ``robots_parsed``,
``ROBOTSTXT_PARSER``, log levels a Scrapy user watches, the HTTP cache.

Real crawls against loopback servers.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scrapy import Request
from scrapy.crawler import Crawler, CrawlerRunner

try:
    from scrapy.crawler import AsyncCrawlerRunner
except ImportError:  # Scrapy 2.13, which always runs a reactor
    AsyncCrawlerRunner = CrawlerRunner  # type: ignore[misc,assignment]
from scrapy.exceptions import IgnoreRequest
from scrapy.robotstxt import RobotParser as ScrapyRobotParser
from scrapy.settings import Settings
from scrapy.utils.reactor import is_reactor_installed
from scrapy.utils.test import get_reactor_settings

import scrapy_rfc9309.fetch as fetch_module
from scrapy_rfc9309 import DirectivesMiddleware, RobotParser
from scrapy_rfc9309._compat import spider_argument
from scrapy_rfc9309.addon import DOWNLOADER_PRIORITY
from scrapy_rfc9309.middleware import RobotsMiddleware
from scrapy_rfc9309.sitemaps import SitemapsMiddleware
from tests.support.crawl_helpers import (
    BASE_SETTINGS,
    ROBOTS_PARSED,
    DownloadConnectionRefusedError,
    RecordingSpider,
    crawl,
    make_crawler,
    middleware,
    needs_robots_parsed,
    stats,
)
from tests.support.server import Server
from tests.support.utils import FakeClock, coroutine_test
from tests.test_middleware_fetch import Steps

RULES = "User-agent: *\nDisallow: /private\nCrawl-delay: 7\n"
OBEY_LOG = "ROBOTSTXT_OBEY = False"


def _robots_logs(
    caplog: pytest.LogCaptureFixture, text: str
) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name.startswith("scrapy_rfc9309") and text in record.getMessage()
    ]


# -- ROBOTSTXT_OBEY -------------------------------------------------------------


def _cmdline_crawler(
    project: dict[str, Any], cmdline: dict[str, Any], spidercls: type = RecordingSpider
) -> Crawler:
    """A crawler with ``project`` settings and ``cmdline`` ones (``-s``)."""
    settings = Settings(
        {
            "TELNETCONSOLE_ENABLED": False,
            **get_reactor_settings(),
            **BASE_SETTINGS,
            **project,
        }
    )
    settings.setdict(cmdline, priority="cmdline")
    runner = (
        CrawlerRunner(settings)
        if is_reactor_installed()
        else AsyncCrawlerRunner(settings)
    )
    return runner.create_crawler(spidercls)


class ObeyOff(RecordingSpider):
    custom_settings: ClassVar[dict[str, Any]] = {"ROBOTSTXT_OBEY": False}


async def _crawl_obey_off(
    server: Server, where: str, caplog: pytest.LogCaptureFixture
) -> Any:
    server.route("/robots.txt", RULES)
    settings = {"ROBOTS_SITEMAPS": True}
    if where == "spider":
        crawler = make_crawler(settings, ObeyOff)
    else:
        crawler = _cmdline_crawler(settings, {"ROBOTSTXT_OBEY": False})
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawler.crawl_async(urls=[server.url("/private/1"), server.url("/a")])
    return crawler


@pytest.mark.parametrize("where", ["cmdline", "spider"])
@coroutine_test
async def test_robotstxt_obey_false_above_project_turns_robots_off(
    server: Server, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    crawler = await _crawl_obey_off(server, where, caplog)
    assert sorted(crawler.spider.crawled) == [
        server.url("/a"),
        server.url("/private/1"),
    ]
    assert server.count("/robots.txt") == 0
    assert stats(crawler) == {}
    assert middleware(crawler) is None
    assert crawler.get_spider_middleware(DirectivesMiddleware) is None
    assert crawler.get_spider_middleware(SitemapsMiddleware) is None
    # Said once for the crawl, at INFO, not once per component; no WARNING.
    (record,) = _robots_logs(caplog, OBEY_LOG)
    assert record.levelno == logging.INFO
    assert where in record.getMessage()
    assert [
        r
        for r in caplog.records
        if r.name.startswith("scrapy_rfc9309") and r.levelno >= logging.WARNING
    ] == []


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every WARNING or worse of the crawl, Scrapy's ("Disabled X: why")
    included."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


class RobotsOff(RecordingSpider):
    custom_settings: ClassVar[dict[str, Any]] = {"ROBOTS_ENABLED": False}


@pytest.mark.parametrize("where", ["cmdline", "spider", "robots_enabled"])
@coroutine_test
async def test_switched_off_no_component_warns(
    server: Server, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    """The off switch is one INFO line: no component (PacingMiddleware,
    which needs RobotsMiddleware, among them) is reported disabled at
    WARNING."""
    if where == "robots_enabled":
        server.route("/robots.txt", RULES)
        crawler = make_crawler({}, RobotsOff)
        with caplog.at_level(logging.INFO):
            await crawler.crawl_async(urls=[server.url("/private/1")])
        assert server.count("/robots.txt") == 0
    else:
        with caplog.at_level(logging.INFO):
            await _crawl_obey_off(server, where, caplog)
    disabled = [m for m in _warnings(caplog) if m.startswith("Disabled ")]
    assert [m for m in disabled if "PacingMiddleware" in m] == []
    if where == "robots_enabled":
        # RobotsMiddleware and DirectivesMiddleware say why, as Scrapy
        # reports a component switched off; the others are quiet.
        assert len(disabled) == 2
        assert all(m.endswith(": ROBOTS_ENABLED is off") for m in disabled)
    else:
        # The INFO line says it all.
        assert disabled == []


@coroutine_test
async def test_pacing_without_robots_middleware_is_warned_of(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    # A real misconfiguration, not the off switch: said at WARNING.
    crawler = make_crawler(
        {"DOWNLOADER_MIDDLEWARES": {"scrapy_rfc9309.RobotsMiddleware": None}}
    )
    with caplog.at_level(logging.INFO):
        await crawler.crawl_async(urls=[server.url("/a")])
    assert (
        "Disabled scrapy_rfc9309.politeness.PacingMiddleware: PacingMiddleware needs"
        " scrapy_rfc9309.RobotsMiddleware enabled, before it in"
        " DOWNLOADER_MIDDLEWARES"
    ) in _warnings(caplog)


@coroutine_test
async def test_robotstxt_obey_false_in_project_settings_is_not_a_switch(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """The project template writes ROBOTSTXT_OBEY for the built-in: adding
    the add-on is the consent that counts at that level, and one WARNING
    says so, naming what does turn robots.txt off."""
    server.route("/robots.txt", RULES)
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl(
            [server.url("/private/1"), server.url("/a")],
            {
                "ROBOTSTXT_OBEY": False,
                "ROBOTS_CRAWL_DELAY": False,
                "ROBOTS_SITEMAPS": True,
            },
        )
    assert crawler.spider.crawled == [server.url("/a")]
    assert server.count("/robots.txt") == 1
    # Once for the crawl, whichever of the four components is built first.
    (record,) = _robots_logs(caplog, OBEY_LOG)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "ROBOTSTXT_OBEY = False (project settings) does not turn scrapy-rfc9309"
        " off: robots.txt is still fetched and obeyed. ROBOTS_ENABLED = False"
        " turns it off, as does ROBOTSTXT_OBEY = False on the command line (-s)"
        " or in a spider's custom_settings"
    )


@coroutine_test
async def test_robotstxt_obey_left_at_scrapy_default_says_nothing(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    # Scrapy's default_settings say False: nobody wrote it.
    server.route("/robots.txt", RULES)
    assert "ROBOTSTXT_OBEY" not in BASE_SETTINGS
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        # Without waiting out the Crawl-delay of 7 s before /a.
        crawler = await crawl(
            [server.url("/private/1"), server.url("/a")], {"ROBOTS_CRAWL_DELAY": False}
        )
    assert crawler.settings.getpriority("ROBOTSTXT_OBEY") == 0
    assert crawler.spider.crawled == [server.url("/a")]
    assert _robots_logs(caplog, OBEY_LOG) == []


@coroutine_test
async def test_robotstxt_obey_true_on_command_line_leaves_robots_on(
    server: Server,
) -> None:
    server.route("/robots.txt", RULES)
    crawler = _cmdline_crawler({"ROBOTS_CRAWL_DELAY": False}, {"ROBOTSTXT_OBEY": True})
    await crawler.crawl_async(urls=[server.url("/private/1"), server.url("/a")])
    assert crawler.spider.crawled == [server.url("/a")]
    # The add-on keeps the built-in out whatever ROBOTSTXT_OBEY says.
    assert server.count("/robots.txt") == 1


# -- robots_parsed --------------------------------------------------------------


class ParsedRecorder(RecordingSpider):
    """Records every ``robots_parsed``, from an async handler as Scrapy
    allows since it sends the signal with ``send_catch_log_async``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parsed: list[tuple[ScrapyRobotParser, Request]] = []

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if ROBOTS_PARSED is not None:
            crawler.signals.connect(spider.robots_parsed, signal=ROBOTS_PARSED)
        return spider

    async def robots_parsed(
        self, robotparser: ScrapyRobotParser, request: Request
    ) -> None:
        self.parsed.append((robotparser, request))


@needs_robots_parsed
@coroutine_test
async def test_robots_parsed_once_per_robots_txt(
    make_server: Any,
) -> None:
    rules, missing, failing = make_server(), make_server(), make_server()
    rules.route("/robots.txt", RULES + "\nUser-agent: otherbot\nDisallow: /\n")
    missing.route("/robots.txt", "User-agent: *\nDisallow: /\n", status=404)
    failing.route("/robots.txt", "", status=503)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    urls = [
        rules.url("/a"),
        rules.url("/private/1"),
        rules.url("/b"),
        missing.url("/a"),
        failing.url("/a"),
        closed + "/a",
    ]
    crawler = await crawl(urls, {"ROBOTS_CRAWL_DELAY": False}, ParsedRecorder)
    parsed = {request.url: parser for parser, request in crawler.spider.parsed}
    # One per robots.txt that came back, whatever its status; none for the
    # origin nothing came back from; the request is the one that asked.
    assert len(crawler.spider.parsed) == 3
    assert set(parsed) <= set(urls)
    by_origin = {url.rsplit("/", 1)[0]: parser for url, parser in parsed.items()}
    assert set(by_origin) == {rules.origin, missing.origin, failing.origin}

    parser = by_origin[rules.origin]
    assert isinstance(parser, ScrapyRobotParser)
    assert parser.allowed(rules.url("/a"), "TestBot/1.0")
    assert not parser.allowed(rules.url("/private/x"), "TestBot/1.0")
    assert not parser.allowed(rules.url("/a"), "OtherBot/2.0 (+https://x)")
    assert not parser.allowed(rules.url("/private/x"), b"OtherBot")
    assert parser.crawl_delay("TestBot/1.0") == 7
    assert parser.crawl_delay("otherbot") is None
    # RFC 9309's outcomes: a 4xx body is not rules, a 5xx disallows all.
    assert by_origin[missing.origin].allowed(missing.url("/a"), "TestBot")
    assert not by_origin[failing.origin].allowed(failing.url("/a"), "TestBot")
    assert by_origin[failing.origin].crawl_delay("TestBot") is None


@needs_robots_parsed
@coroutine_test
async def test_robots_parsed_for_an_outcome_from_a_shared_store(
    server: Server, tmp_path: Path
) -> None:
    """A robots.txt another run (or worker) fetched is sent too: each crawl
    hears of every robots.txt it obeys."""
    server.route("/robots.txt", RULES)
    settings = {
        "ROBOTS_STORE": "sqlite",
        "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
        "ROBOTS_CRAWL_DELAY": False,
    }
    first = await crawl([server.url("/a")], settings, ParsedRecorder)
    second = await crawl([server.url("/private/1")], settings, ParsedRecorder)
    assert server.count("/robots.txt") == 1
    assert "robots/fetch_count" not in stats(second)
    for crawler, url in ((first, "/a"), (second, "/private/1")):
        ((parser, request),) = crawler.spider.parsed
        assert request.url == server.url(url)
        assert not parser.allowed(server.url("/private/2"), "TestBot")
    assert second.spider.dropped[server.url("/private/1")].cause == "rule"


# -- ROBOTSTXT_PARSER -----------------------------------------------------------

BUILTIN = {"ADDONS": {}, "ROBOTSTXT_OBEY": True}


@pytest.mark.parametrize("parser", ["scrapy_rfc9309.RobotParser", None])
@coroutine_test
async def test_robot_parser_in_scrapys_own_middleware(
    server: Server, parser: str | None
) -> None:
    server.route(
        "/robots.txt",
        "User-agent: *\nDisallow: /\nAllow: /page\n\n"
        "User-agent: Googlebot\nDisallow: /page\n",
    )
    settings: dict[str, Any] = {
        **BUILTIN,
        "USER_AGENT": "TestBot/1.0 (compatible; like Googlebot)",
    }
    if parser is not None:
        settings["ROBOTSTXT_PARSER"] = parser
    urls = [server.url("/page"), server.url("/other")]
    crawler = await crawl(urls, settings, ParsedRecorder)
    if parser is None:
        # Protego finds "googlebot" anywhere in the User-Agent string.
        assert crawler.spider.crawled == [server.url("/other")]
        return
    # RFC 9309: the product token, "testbot", takes the "*" group, where the
    # longer Allow wins.
    assert crawler.spider.crawled == [server.url("/page")]
    assert stats(crawler, "robotstxt/") == {
        "robotstxt/request_count": 1,
        "robotstxt/response_count": 1,
        "robotstxt/response_status_count/200": 1,
        "robotstxt/forbidden": 1,
    }
    if ROBOTS_PARSED is not None:
        ((robotparser, _),) = crawler.spider.parsed
        assert isinstance(robotparser, RobotParser)


@pytest.mark.parametrize(("profile", "crawled"), [("rfc9309", False), ("google", True)])
@coroutine_test
async def test_robot_parser_reads_the_profile(
    server: Server, profile: str, crawled: bool
) -> None:
    # RFC 9309 compares paths percent-decoded ("%7E" is "~"); Google's
    # matcher compares them as written.
    server.route("/robots.txt", "User-agent: *\nDisallow: /%7Efoo\n")
    crawler = await crawl(
        [server.url("/~foo")],
        {
            **BUILTIN,
            "ROBOTSTXT_PARSER": "scrapy_rfc9309.RobotParser",
            "ROBOTS_PROFILE": profile,
        },
    )
    assert crawler.spider.crawled == ([server.url("/~foo")] if crawled else [])


# -- logging --------------------------------------------------------------------


@pytest.mark.parametrize("retry", [False, True])
@coroutine_test
async def test_failed_download_logged_at_error_with_request_and_reason(
    caplog: pytest.LogCaptureFixture, retry: bool
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl(
            [origin + "/a", origin + "/b"], {"RETRY_ENABLED": retry, "RETRY_TIMES": 2}
        )
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    # With retries, RetryMiddleware's "Gave up retrying" comes first, for
    # the same download: two ERROR lines, one robots/fetch_error (stats.md).
    assert [r.name for r in errors] == [
        *(["scrapy.downloadermiddlewares.retry"] if retry else []),
        "scrapy_rfc9309.fetch",
    ]
    assert stats(crawler, "log_count/ERROR") == {"log_count/ERROR": len(errors)}
    # Once for the origin, not per request; the request and the reason.
    error = errors[-1]
    message = error.getMessage()
    assert f"<GET {origin}/robots.txt>" in message
    assert "ConnectionRefused" in message
    (warning,) = _robots_logs(caplog, "every URL disallowed for now")
    assert warning.levelno == logging.WARNING
    assert {
        key: value
        for key, value in stats(crawler).items()
        if key.startswith("robots/fetch_error/")
    } == {f"robots/fetch_error/{DownloadConnectionRefusedError.__name__}": 1}


def _summaries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The summary lines logged at spider close."""
    return [
        record
        for record in _robots_logs(caplog, "robots.txt: ")
        if record.getMessage().startswith("robots.txt: ")
    ]


@coroutine_test
async def test_summary_at_spider_close(
    make_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rules, missing, failing = make_server(), make_server(), make_server()
    rules.route("/robots.txt", "User-agent: *\nDisallow: /private\nCrawl-delay: 0.01\n")
    missing.route("/robots.txt", status=404)
    failing.route("/robots.txt", status=503)
    urls = [
        rules.url("/a"),
        rules.url("/private/1"),
        missing.url("/a"),
        failing.url("/a"),
        failing.url("/b"),
    ]
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawl(urls)
    (summary,) = _summaries(caplog)
    assert summary.levelno == logging.INFO
    assert summary.getMessage() == (
        "robots.txt: 3 origins (parsed 1, unavailable 1, unreachable 1),"
        " 3 requests dropped (rule 1, unreachable 2),"
        " 1 origin under a Crawl-delay"
    )


@coroutine_test
async def test_summary_counts_each_origin_under_its_last_outcome(
    server: Server, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An origin whose robots.txt, parsed, is fetched again two days later
    and answers 503: one origin, unreachable, two outcomes obtained. The
    summary said "2 outcomes obtained (parsed 1, unreachable 1)"."""
    clock = FakeClock()
    monkeypatch.setattr(RobotsMiddleware, "clock", clock)
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")

    def before(index: int) -> None:
        if index == 1:
            clock.now += 2 * 86_400
            server.route("/robots.txt", "busy", status=503)

    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawl(
            [server.url("/a"), server.url("/b")], spidercls=Steps, before=before
        )
    (summary,) = _summaries(caplog)
    assert summary.getMessage() == (
        "robots.txt: 1 origin (unreachable 1; 2 outcomes obtained),"
        " 1 request dropped (unreachable 1), 0 origins under a Crawl-delay"
    )


@coroutine_test
async def test_summary_counts_an_origin_judged_after_an_internal_error_once(
    server: Server, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first fetch of an origin fails inside the package (judged
    unreachable, "internal error"); two days later its robots.txt is
    parsed: one origin, parsed. The failure's outcome was not counted, so
    the summary said "0 origins (parsed 1, unreachable -1; ...)"."""
    clock = FakeClock()
    monkeypatch.setattr(RobotsMiddleware, "clock", clock)
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    fetch = fetch_module.RobotsFetcher.fetch
    calls = 0

    async def failing_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a bug")
        return await fetch(self, *args, **kwargs)

    monkeypatch.setattr(fetch_module.RobotsFetcher, "fetch", failing_once)

    def before(index: int) -> None:
        if index == 1:
            clock.now += 2 * 86_400

    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        await crawl(
            [server.url("/a"), server.url("/b")], spidercls=Steps, before=before
        )
    (summary,) = _summaries(caplog)
    assert summary.getMessage().startswith("robots.txt: 1 origin (parsed 1),")


# -- a robots.txt request refused by another component --------------------------


@spider_argument
class RefuseRobots:
    """A project's middleware refusing robots.txt requests."""

    def process_request(self, request: Request) -> None:
        if request.url.endswith("/robots.txt"):
            raise IgnoreRequest("robots.txt filtered out")


@pytest.mark.parametrize(
    ("policy", "crawled", "kind"),
    [("allow", True, "unavailable"), ("disallow", False, "unreachable")],
)
@coroutine_test
async def test_refused_robots_txt(
    server: Server,
    caplog: pytest.LogCaptureFixture,
    policy: str,
    crawled: bool,
    kind: str,
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl(
            [server.url("/a"), server.url("/b")],
            {
                "DOWNLOADER_MIDDLEWARES": {f"{__name__}.RefuseRobots": 10},
                "ROBOTS_REFUSED": policy,
            },
        )
    assert sorted(crawler.spider.crawled) == (
        [server.url("/a"), server.url("/b")] if crawled else []
    )
    assert server.count("/robots.txt") == 0
    counted = stats(crawler)
    assert counted["robots/refused"] == 1
    assert counted[f"robots/outcome/{kind}"] == 1
    # Logged once, saying what refused it; never an ERROR: nothing failed.
    (record,) = _robots_logs(caplog, f"{server.url('/robots.txt')} is {kind}")
    assert "refused by another component" in record.getMessage()
    assert "robots.txt filtered out" in record.getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_refused_setting_checked() -> None:
    from scrapy_rfc9309.middleware import RobotsMiddleware

    with pytest.raises(ValueError, match="ROBOTS_REFUSED must be one of"):
        RobotsMiddleware(make_crawler({"ROBOTS_REFUSED": "maybe"}))


@coroutine_test
async def test_http_cache_replay(make_server: Any, tmp_path: Path) -> None:
    """A replay from the HTTP cache: robots.txt in the cache is obeyed from
    there; an origin whose robots.txt is not in it is not blocked for it."""
    cached, uncached = make_server(), make_server()
    for server in (cached, uncached):
        server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    cache = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path)}
    await crawl([cached.url("/a")], cache)
    assert cached.count("/robots.txt") == 1

    replay = await crawl(
        [cached.url("/a"), cached.url("/private/1"), uncached.url("/a")],
        {**cache, "HTTPCACHE_IGNORE_MISSING": True},
    )
    spider = replay.spider
    assert spider.crawled == [cached.url("/a")]
    assert cached.count("/robots.txt") == 1  # from the cache
    assert {url: e.cause for url, e in spider.dropped.items()} == {
        cached.url("/private/1"): "rule"
    }
    # The uncached page is ignored by the cache, not dropped by robots.txt.
    assert [f.request.url for f in spider.errors] == [uncached.url("/a")]
    assert uncached.hits == []
    counted = stats(replay)
    assert counted["robots/refused"] == 1
    assert counted["robots/outcome/parsed"] == 1
    assert "robots/forbidden/unreachable" not in counted


@coroutine_test
async def test_ssrf_guard_refusal_stays_unreachable_and_is_no_error(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """The guard's own refusal is this package's rule, not another
    component's: unreachable whatever ROBOTS_REFUSED says, a WARNING."""
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl(
            [server.url("/page")],
            {"ROBOTS_SSRF_GUARD": True, "ROBOTS_REFUSED": "allow"},
        )
    assert crawler.spider.dropped[server.url("/page")].cause == "unreachable"
    assert "robots/refused" not in stats(crawler)
    (record,) = _robots_logs(caplog, "ROBOTS_SSRF_GUARD refused")
    assert record.levelno == logging.WARNING
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@coroutine_test
async def test_ssrf_guard_lookup_failure_is_a_download_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_such_host(host: str) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, f"{host}: no such host")

    monkeypatch.setattr(fetch_module, "_resolve", no_such_host)
    url = "http://unresolvable.test/page"
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl([url], {"ROBOTS_SSRF_GUARD": True})
    assert crawler.spider.dropped[url].cause == "unreachable"
    (error,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "<GET http://unresolvable.test/robots.txt>" in error.getMessage()
    assert "no such host" in error.getMessage()
    assert stats(crawler)["robots/fetch_error/gaierror"] == 1


# -- a project's subclass of the middleware -------------------------------------


class CountingRobots(RobotsMiddleware):
    """A project's subclass overriding a hook, as written for Scrapy 2.14 on
    (no spider): on Scrapy 2.13, which passes one, it works too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[str] = []

    async def process_request(self, request: Request) -> None:
        self.seen.append(request.url)
        await super().process_request(request)


@coroutine_test
async def test_a_subclass_overriding_a_hook(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    crawler = await crawl(
        [server.url("/a"), server.url("/private/1")],
        {
            "DOWNLOADER_MIDDLEWARES": {
                RobotsMiddleware: None,
                CountingRobots: DOWNLOADER_PRIORITY,
            }
        },
    )
    subclass = middleware(crawler)
    assert isinstance(subclass, CountingRobots)
    assert server.url("/private/1") in subclass.seen
    assert crawler.spider.crawled == [server.url("/a")]
    assert list(crawler.spider.dropped) == [server.url("/private/1")]
    assert stats(crawler)["robots/forbidden/rule"] == 1
