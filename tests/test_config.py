"""The crawl's settings are read once, into one frozen object every
component shares (scrapy_rfc9309/_config.py).

Counted, not timed: how many times the settings are read in a crawl with
every component on, and which modules asked for the config.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import re
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
from scrapy import version_info
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings, Settings
from scrapy.spiders import Spider

import scrapy_rfc9309
from scrapy_rfc9309._config import RobotsConfig
from scrapy_rfc9309._settings import SettingError
from scrapy_rfc9309.middleware import RobotsMiddleware
from tests.support.crawl_helpers import crawl, make_crawler, middleware
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_settings import BAD

#: Every component a crawl can have on at once.
EVERYTHING = {
    "ROBOTS_SITEMAPS": True,
    "ROBOTS_PURPOSES": ["train-ai"],
    "ROBOTS_PROVENANCE": True,
    "ROBOTS_STORE": "sqlite",
}

#: The modules that read settings before the config held them, and read
#: the config now.
READERS = {
    "scrapy_rfc9309._store",
    "scrapy_rfc9309.fetch",
    "scrapy_rfc9309.middleware",
    "scrapy_rfc9309.politeness",
    "scrapy_rfc9309.provenance",
    "scrapy_rfc9309.sitemaps",
    "scrapy_rfc9309.spidermiddleware",
    "scrapy_rfc9309.stores.memory",
    "scrapy_rfc9309.stores.sqlite",
    "scrapy_rfc9309.tdmmiddleware",
    "scrapy_rfc9309.usagemiddleware",
}


class _Counted:
    """Counts the reads of the settings and who asks for the config."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.builds = 0
        self.handed: list[tuple[str, RobotsConfig]] = []
        read = RobotsConfig.from_settings.__func__  # type: ignore[attr-defined]
        kept = RobotsConfig.for_crawler.__func__  # type: ignore[attr-defined]
        counted = self

        def from_settings(
            cls: type[RobotsConfig], settings: BaseSettings, spider: Any = None
        ) -> RobotsConfig:
            counted.builds += 1
            return read(cls, settings, spider)  # type: ignore[no-any-return]

        def for_crawler(cls: type[RobotsConfig], crawler: Any) -> RobotsConfig:
            config: RobotsConfig = kept(cls, crawler)
            counted.handed.append((sys._getframe(1).f_globals["__name__"], config))
            return config

        monkeypatch.setattr(RobotsConfig, "from_settings", classmethod(from_settings))
        monkeypatch.setattr(RobotsConfig, "for_crawler", classmethod(for_crawler))


@coroutine_test
async def test_every_component_of_a_crawl_shares_one_config(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route(
        "/robots.txt",
        f"User-agent: *\nCrawl-delay: 0.01\nSitemap: {server.url('/sitemap.xml')}\n",
    )
    server.route("/.well-known/tdmrep.json", status=404)
    server.route(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
        f'sitemap/0.9"><url><loc>{server.url("/from-sitemap")}</loc></url></urlset>',
    )
    counted = _Counted(monkeypatch)
    settings = {
        **EVERYTHING,
        "ROBOTS_STORE_URL": str(tmp_path / "robots.sqlite3"),
        "ROBOTS_REPORT": str(tmp_path / "report.jsonl"),
    }
    crawler = await crawl([server.url("/page")], settings)
    assert crawler.spider is not None
    assert sorted(crawler.spider.crawled) == [
        server.url("/from-sitemap"),
        server.url("/page"),
    ]
    assert counted.builds == 1
    configs = {id(config) for _, config in counted.handed}
    assert configs == {id(middleware(crawler).config)}
    assert {module for module, _ in counted.handed} >= READERS


def test_a_config_is_frozen() -> None:
    crawler = make_crawler()
    crawler.spider = crawler._create_spider()
    mw = RobotsMiddleware.from_crawler(crawler)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mw.config.crawl_delay_max = 5  # type: ignore[misc]
    # The middleware's settings attributes are views of it.
    assert mw.crawl_delay_max == mw.config.crawl_delay_max == 30
    assert (
        mw.user_agent == mw.config.user_agent == "TestBot/1.0 (+http://127.0.0.1/bot)"
    )
    assert mw.lifetimes is mw.config.lifetimes
    with pytest.raises(AttributeError, match="read from the crawl's config"):
        mw.crawl_delay_max = 5


class AgentSpider(Spider):
    name = "agent"
    robots_user_agent = "SpiderBot/2.0"


def test_read_again_for_the_spider_set_later() -> None:
    """A component built before the crawler has its spider reads the
    settings' agent; the components built once the spider is set read the
    spider's (as every component of a crawl: Scrapy makes the spider before
    the engine)."""
    crawler = make_crawler(spidercls=AgentSpider)
    early = RobotsConfig.for_crawler(crawler)
    assert early.user_agent == "TestBot/1.0 (+http://127.0.0.1/bot)"
    crawler.spider = crawler._create_spider()
    config = RobotsConfig.for_crawler(crawler)
    assert config.user_agent == "SpiderBot/2.0"
    assert RobotsConfig.for_crawler(crawler) is config


@coroutine_test
async def test_a_bad_setting_of_a_component_that_is_off_is_refused_too(
    server: Server,
) -> None:
    """Read once for every component: a typo in a sitemap bound is found at
    start-up even while the sitemaps are off (they were read only by the
    sitemaps middleware, when on)."""
    with pytest.raises(
        SettingError,
        match=r"^ROBOTS_SITEMAP_MAX_DEPTH must be a whole number, 1 or more"
        r" \(such as 3\), not 0$",
    ):
        await crawl([server.url("/page")], {"ROBOTS_SITEMAP_MAX_DEPTH": 0})
    assert server.hits == []


def test_a_crawl_that_turned_the_package_off_is_not_refused_for_the_rest() -> None:
    crawler = make_crawler({"ROBOTS_ENABLED": False, "ROBOTS_MAX_BYTES": 0})
    crawler.spider = crawler._create_spider()
    with pytest.raises(NotConfigured):
        RobotsMiddleware.from_crawler(crawler)


@pytest.mark.parametrize("settings", [{}, {"ROBOTS_PROVENANCE": True}])
@coroutine_test
async def test_a_crawl_done_is_collected(
    server: Server, settings: dict[str, Any]
) -> None:
    """What the package keeps per crawl (its config, the Politeness that
    PacingMiddleware finds, the ledger) is kept on the crawler: a registry
    whose values refer to their crawler would keep every crawl, and its
    robots.txt memory, alive for the life of the process."""
    crawler = await crawl([server.url("/page")], settings)
    assert crawler.spider is not None
    assert crawler.spider.crawled == [server.url("/page")]
    crawled = weakref.ref(crawler)
    del crawler
    gc.collect()
    assert crawled() is None


#: Checked where only they can be: ``ROBOTS_ENABLED`` before the config is
#: read (``ensure_enabled``), the report's folder when the ledger is made
#: (``report_path``), the store's class and URL by the store.
ELSEWHERE = {"ROBOTS_ENABLED", "ROBOTS_REPORT", "ROBOTS_STORE", "ROBOTS_STORE_URL"}


@pytest.mark.parametrize("name", sorted(set(BAD) - ELSEWHERE))
def test_the_config_refuses_every_bad_value(name: str) -> None:
    """With nothing else set: whether its component is on or not."""
    value, message = BAD[name]
    with pytest.raises(SettingError, match=f"^{re.escape(message)}"):
        RobotsConfig.from_settings(Settings({name: value}))


#: The readers of scrapy_rfc9309/_settings.py.
_READERS = {
    "choice",
    "crawl_purposes",
    "flag",
    "positive_int",
    "purposes",
    "robots_profile",
    "robots_user_agent",
    "seconds",
    "setting",
    "text",
}
#: Who may call them besides the config: the command, on its options before
#: any crawl; RobotParser, which also serves Scrapy's own RobotsTxtMiddleware
#: (crawls that set nothing else of the package); the Redis store, on the
#: URL settings it shares with scrapy-redis.
_MAY_READ = {
    "_settings.py",
    "_config.py",
    "commands.py",
    "parser.py",
    "stores/redis.py",
}


def test_components_read_the_config_not_the_settings() -> None:
    package = Path(scrapy_rfc9309.__file__).parent
    reading = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if name in _MAY_READ:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        if calls & _READERS:
            reading[name] = sorted(calls & _READERS)
    assert reading == {}


@pytest.mark.skipif(
    version_info < (2, 14),
    reason="Scrapy 2.13 keeps every crawler it makes, with or without the"
    " package (the log counter handler it puts on the root logger)",
)
def test_a_crawl_that_never_started_is_collected() -> None:
    """Its store was built (RobotsMiddleware took it) but the spider never
    closed to give it back: the store, which holds the middleware's clock,
    is kept on the crawler, not in a registry that would keep the crawler."""
    crawler = make_crawler()
    crawler.spider = crawler._create_spider()
    robots = RobotsMiddleware.from_crawler(crawler)
    assert robots.memory.clock.__self__ is robots  # type: ignore[attr-defined]
    crawled = weakref.ref(crawler)
    del crawler, robots
    gc.collect()
    assert crawled() is None


class _Named(Spider):
    name = "named"
    robots_user_agent = "MyBot/1.0"


@pytest.mark.parametrize(
    ("settings", "spider", "named", "hint"),
    [
        (
            {"ROBOTS_USER_AGENT": "MyBot/1.0"},
            None,
            "ROBOTS_USER_AGENT 'MyBot/1.0'",
            False,
        ),
        (
            {"ROBOTSTXT_USER_AGENT": "MyBot/1.0"},
            None,
            "ROBOTSTXT_USER_AGENT 'MyBot/1.0'",
            False,
        ),
        ({"USER_AGENT": "MyBot/1.0"}, None, "USER_AGENT 'MyBot/1.0'", True),
        (
            {"ROBOTS_USER_AGENT": "bingbot"},
            _Named("named"),
            "the robots_user_agent attribute of spider 'named', 'MyBot/1.0',",
            False,
        ),
    ],
)
def test_an_agent_the_profile_refuses_is_named_where_it_comes_from(
    settings: dict[str, Any], spider: Spider | None, named: str, hint: bool
) -> None:
    """The error names the setting (or the spider's attribute) the agent
    came from; only an agent taken from USER_AGENT, which is also the
    header, points at ROBOTS_USER_AGENT."""
    with pytest.raises(SettingError) as raised:
        RobotsConfig.from_settings(
            Settings({"ROBOTS_PROFILE": "bing", **settings}), spider
        )
    message = str(raised.value)
    assert message.startswith(f"{named} does not suit ROBOTS_PROFILE 'bing': ")
    assert (
        message.endswith("(ROBOTS_USER_AGENT sets the robots.txt agent alone)") is hint
    )
