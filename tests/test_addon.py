"""The add-on, and enabling the middleware by hand."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest
from scrapy import version_info
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.conf import build_component_list
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import Addon, DirectivesMiddleware, RobotsMiddleware
from scrapy_rfc9309._defaults import DEFAULTS
from scrapy_rfc9309.addon import BUILTIN_MIDDLEWARE
from tests.support.crawl_helpers import RecordingSpider, crawl, middleware, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test

DIRECTIVES = "scrapy_rfc9309.spidermiddleware.DirectivesMiddleware"


def _downloader_mws(crawler: Any) -> list[type]:
    return [type(mw) for mw in crawler.engine.downloader.middleware.middlewares]


def _settings(settings: dict[str, Any]) -> Any:
    return get_crawler(RecordingSpider, settings).settings


def test_addon_writes_defaults_at_addon_priority() -> None:
    settings = _settings({"ADDONS": {Addon: 100}, "ROBOTS_MAX_REDIRECTS": 9})
    for name, value in DEFAULTS.items():
        if name == "ROBOTS_MAX_REDIRECTS":
            continue
        assert settings.get(name) == value, name
        assert settings.getpriority(name) == 15, name
    # Project settings win.
    assert settings.getint("ROBOTS_MAX_REDIRECTS") == 9


def test_addon_installs_both_middlewares_and_removes_the_builtin() -> None:
    settings = _settings({"ADDONS": {"scrapy_rfc9309.Addon": 100}})
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert downloader[RobotsMiddleware] == 100
    assert downloader[RobotsTxtMiddleware] is None
    # Last in the chain, after HttpCache (900) and whatever picks slots.
    assert downloader["scrapy_rfc9309.politeness.PacingMiddleware"] == 1_000_000
    assert settings.getdict("SPIDER_MIDDLEWARES")[DIRECTIVES] == 550


def test_addon_respects_middlewares_placed_by_the_project() -> None:
    settings = _settings(
        {
            "ADDONS": {"scrapy_rfc9309.Addon": 100},
            "DOWNLOADER_MIDDLEWARES": {"scrapy_rfc9309.RobotsMiddleware": 120},
            "SPIDER_MIDDLEWARES": {"scrapy_rfc9309.DirectivesMiddleware": None},
        }
    )
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert downloader == {
        "scrapy_rfc9309.RobotsMiddleware": 120,
        RobotsTxtMiddleware: None,
        "scrapy_rfc9309.tdmmiddleware.TdmMiddleware": 105,
        "scrapy_rfc9309.politeness.PacingMiddleware": 1_000_000,
        # Scrapy 2.14 also needs the built-in named as its base setting does.
        **({BUILTIN_MIDDLEWARE: None} if version_info < (2, 15) else {}),
    }
    spider = settings.getdict("SPIDER_MIDDLEWARES")
    assert spider["scrapy_rfc9309.DirectivesMiddleware"] is None
    assert DIRECTIVES not in spider


class OwnRobots(RobotsMiddleware):
    """A project's RobotsMiddleware, overriding a method."""


class OwnDirectives(DirectivesMiddleware):
    pass


def test_addon_respects_subclasses_placed_by_the_project() -> None:
    """A second, base RobotsMiddleware beside the project's own would fetch
    robots.txt again and judge every request again, overriding nothing."""
    settings = _settings(
        {
            "ADDONS": {"scrapy_rfc9309.Addon": 100},
            "DOWNLOADER_MIDDLEWARES": {f"{__name__}.OwnRobots": 100},
            "SPIDER_MIDDLEWARES": {OwnDirectives: 550},
        }
    )
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert f"{__name__}.OwnRobots" in downloader
    assert RobotsMiddleware not in downloader
    assert DIRECTIVES not in settings.getdict("SPIDER_MIDDLEWARES")


def test_addon_places_its_own_beside_a_subclass_disabled() -> None:
    """A project's subclass switched off (``None``, a spider turning the
    project's own middleware off): the add-on's RobotsMiddleware is placed,
    else nothing would obey robots.txt."""
    settings = _settings(
        {
            "ADDONS": {"scrapy_rfc9309.Addon": 100},
            "DOWNLOADER_MIDDLEWARES": {f"{__name__}.OwnRobots": None},
        }
    )
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[RobotsMiddleware] == 100


def _builds(settings: dict[str, Any]) -> bool:
    """Whether a crawler with ``settings`` gets its downloader middlewares."""
    try:
        crawler = get_crawler(RecordingSpider, settings)
        build_component_list(crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    except ImportError:
        return False
    return True


def test_addon_fails_no_project_scrapy_alone_runs() -> None:
    """A plug-in the project disabled, then uninstalled: Scrapy runs
    without it; the add-on must not import it."""
    settings = {"DOWNLOADER_MIDDLEWARES": {"not_installed_pkg.ProxyMiddleware": None}}
    assert _builds(settings)
    assert _builds({**settings, "ADDONS": {"scrapy_rfc9309.Addon": 100}})


@coroutine_test
async def test_builtin_never_runs_beside_ours_even_with_robotstxt_obey(
    server: Server,
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n")
    # Scrapy's project template sets this at project priority.
    crawler = await crawl(
        [server.url("/a"), server.url("/b"), server.url("/private")],
        {"ROBOTSTXT_OBEY": True},
    )
    assert server.count("/robots.txt") == 1
    mws = _downloader_mws(crawler)
    assert RobotsMiddleware in mws
    assert RobotsTxtMiddleware not in mws
    assert "robotstxt/request_count" not in stats(crawler, "robotstxt/")
    assert sorted(crawler.spider.crawled) == [server.url("/a"), server.url("/b")]


@coroutine_test
async def test_enabled_by_hand(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /private\n", status=200)
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        crawler = await crawl(
            [server.url("/a"), server.url("/private")],
            {
                "ADDONS": {},
                "DOWNLOADER_MIDDLEWARES": {
                    "scrapy_rfc9309.RobotsMiddleware": 100,
                    "scrapy_rfc9309.politeness.PacingMiddleware": 1_000_000,
                },
                # As getting-started enables it by hand: for the built-in,
                # which this replaces, so nothing to warn about.
                "ROBOTSTXT_OBEY": False,
            },
        )
    assert crawler.spider.crawled == [server.url("/a")]
    assert [
        r
        for r in caplog.records
        if r.name.startswith("scrapy_rfc9309") and r.levelno >= logging.WARNING
    ] == []
    assert stats(crawler) == {
        "robots/fetch_count": 1,
        "robots/outcome/parsed": 1,
        "robots/forbidden": 1,
        "robots/forbidden/rule": 1,
    }
    mw = middleware(crawler)
    # The defaults without the add-on writing them.
    assert mw.fetcher.max_bytes == DEFAULTS["ROBOTS_MAX_BYTES"]
    assert mw.lifetimes.cache == DEFAULTS["ROBOTS_CACHE_LIFETIME"]


class Custom(RecordingSpider):
    custom_settings: ClassVar[dict[str, Any]] = {"ROBOTS_ENABLED": False}


@coroutine_test
async def test_spider_custom_settings_win(server: Server) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n")
    crawler = await crawl([server.url("/a")], spidercls=Custom)
    assert crawler.spider.crawled == [server.url("/a")]
    assert server.count("/robots.txt") == 0


# -- a component a setting needs, not enabled ------------------------------------

#: getting-started's "enabled by hand", with RobotsMiddleware alone.
ROBOTS_ALONE = {
    "ADDONS": {},
    "DOWNLOADER_MIDDLEWARES": {"scrapy_rfc9309.RobotsMiddleware": 100},
    # What PacingMiddleware (not enabled) would do, off.
    "ROBOTS_RETRY_AFTER": False,
}
MISSING = "is not enabled in"


def _missing(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("scrapy_rfc9309")
        and record.levelno == logging.WARNING
        and MISSING in record.getMessage()
    ]


async def _start(settings: dict[str, Any], caplog: pytest.LogCaptureFixture) -> Any:
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        return await crawl([], {"ROBOTSTXT_OBEY": False, **settings})


@coroutine_test
async def test_a_setting_whose_component_is_not_enabled_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _start(
        {**ROBOTS_ALONE, "ROBOTS_SITEMAPS": True, "ROBOTS_PURPOSES": ["train-ai"]},
        caplog,
    )
    purposes = (
        "The crawl declares purposes (ROBOTS_PURPOSES, ROBOTS_CONTENT_SIGNALS), but"
    )
    see = " (the add-on enables it; see docs/getting-started.md)"
    assert _missing(caplog) == [
        "ROBOTS_SITEMAPS is on, but scrapy_rfc9309.sitemaps.SitemapsMiddleware is"
        " not enabled in SPIDER_MIDDLEWARES: robots.txt's sitemaps are not"
        " requested" + see,
        f"{purposes} scrapy_rfc9309.usagemiddleware.UsageMiddleware is not enabled"
        " in SPIDER_MIDDLEWARES: items are not judged by their Content-Usage"
        " header" + see,
        f"{purposes} scrapy_rfc9309.tdmmiddleware.TdmMiddleware is not enabled in"
        " DOWNLOADER_MIDDLEWARES: requests are not judged by TDMRep files" + see,
        f"{purposes} scrapy_rfc9309.tdmmiddleware.TdmItemsMiddleware is not enabled"
        " in SPIDER_MIDDLEWARES: items are not judged by their tdm-reservation"
        " header or meta" + see,
    ]


@coroutine_test
async def test_retry_after_without_pacing_middleware_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Only PacingMiddleware (last in the chain) hears the 429s and 503s that
    # RetryMiddleware turns into retries: without it nothing is paused.
    await _start({**ROBOTS_ALONE, "ROBOTS_RETRY_AFTER": True}, caplog)
    assert _missing(caplog) == [
        "ROBOTS_RETRY_AFTER is on, but scrapy_rfc9309.politeness.PacingMiddleware"
        " is not enabled in DOWNLOADER_MIDDLEWARES: a 429 or 503's Retry-After"
        " pauses nothing (the add-on enables it; see docs/getting-started.md)"
    ]


@coroutine_test
async def test_a_component_disabled_under_the_addon_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _start(
        {
            "ROBOTS_CONTENT_SIGNALS": {"ai-train": True},
            "ROBOTS_TDMREP": "off",
            "SPIDER_MIDDLEWARES": {"scrapy_rfc9309.UsageMiddleware": None},
        },
        caplog,
    )
    (warning,) = _missing(caplog)
    assert "usagemiddleware.UsageMiddleware is not enabled" in warning


@pytest.mark.parametrize(
    "settings",
    [
        # Everything the add-on enables, or enabled by hand as getting-started
        # shows; and a setting that turns what the component does off.
        {"ROBOTS_SITEMAPS": True, "ROBOTS_PURPOSES": ["train-ai"]},
        {
            **ROBOTS_ALONE,
            "ROBOTS_PURPOSES": ["train-ai"],
            "ROBOTS_USAGE": "off",
            "ROBOTS_TDMREP": "off",
        },
        {**ROBOTS_ALONE, "ROBOTS_PURPOSES": ["search"], "ROBOTS_USAGE": "off"},
        ROBOTS_ALONE,
    ],
)
@coroutine_test
async def test_no_warning_when_every_component_needed_is_enabled(
    caplog: pytest.LogCaptureFixture, settings: dict[str, Any]
) -> None:
    await _start(settings, caplog)
    assert _missing(caplog) == []
