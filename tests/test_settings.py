"""Every ROBOTS_* setting given a bad value stops the crawl at start-up.

Each case starts a real crawl with the add-on: the crawl must fail before
any request is sent, with a message naming the setting, the value given and
what is accepted (never Scrapy's generic message, never a component quietly
switched off). The readers of scrapy_rfc9309/_settings.py are also checked
on the good values each kind of setting accepts, as ``-s NAME=VALUE`` gives
them (text) and as a settings module does (Python values).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from scrapy import version_info
from scrapy.downloadermiddlewares.useragent import UserAgentMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import (
    DirectivesMiddleware,
    ProvenanceMiddleware,
    RobotsMiddleware,
    UsageMiddleware,
)
from scrapy_rfc9309 import _settings as settings_module
from scrapy_rfc9309._config import RobotsConfig
from scrapy_rfc9309._defaults import DEFAULTS
from scrapy_rfc9309._settings import (
    SettingError,
    choice,
    ensure_enabled,
    flag,
    positive_int,
    purposes,
    refusals_logged,
    robots_profile,
    seconds,
    text,
)
from scrapy_rfc9309.sitemaps import SitemapsMiddleware
from scrapy_rfc9309.stores.memory import MemoryStore
from tests.support.crawl_helpers import BASE_SETTINGS, RecordingSpider, crawl
from tests.support.server import Server
from tests.support.utils import coroutine_test

FLAG = "True or False (or 1/0, 'true'/'false' as text)"
PURPOSES = (
    'a dict of purposes set to True or False, such as {"ai-train": True}'
    " (or that dict as a JSON object)"
)

#: setting -> (bad value, the start-up error's message).
BAD = {
    "ROBOTS_CACHE_LIFETIME": (
        -5,
        "ROBOTS_CACHE_LIFETIME must be a number of seconds from 0 to 1,000,000,000"
        " (such as 86400), not -5",
    ),
    "ROBOTS_CONTENT_SIGNALS": (
        {"ai-train": "maybe"},
        f"ROBOTS_CONTENT_SIGNALS must be {PURPOSES}, not {{'ai-train': 'maybe'}}",
    ),
    "ROBOTS_CRAWL_DELAY": ("maybe", f"ROBOTS_CRAWL_DELAY must be {FLAG}, not 'maybe'"),
    "ROBOTS_CRAWL_DELAY_MAX": (
        "nan",
        "ROBOTS_CRAWL_DELAY_MAX must be a number of seconds from 0 to 1,000,000,000"
        " (such as 30), not 'nan'",
    ),
    "ROBOTS_CRAWL_DELAY_OVER_MAX": (
        "wait",
        "ROBOTS_CRAWL_DELAY_OVER_MAX must be one of 'clamp', 'skip', not 'wait'",
    ),
    "ROBOTS_CRAWL_DELAY_SCOPE": (
        "world",
        "ROBOTS_CRAWL_DELAY_SCOPE must be one of 'fleet', 'process', not 'world'",
    ),
    "ROBOTS_DIRECTIVES": (
        "maybe",
        "ROBOTS_DIRECTIVES must be one of 'drop', 'annotate', 'off', not 'maybe'",
    ),
    "ROBOTS_ENABLED": ("maybe", f"ROBOTS_ENABLED must be {FLAG}, not 'maybe'"),
    "ROBOTS_MAX_BYTES": (
        0,
        "ROBOTS_MAX_BYTES must be a whole number, 1 or more (such as 512000), not 0",
    ),
    "ROBOTS_MAX_REDIRECTS": (
        2.5,
        "ROBOTS_MAX_REDIRECTS must be a whole number, 0 or more (such as 5), not 2.5",
    ),
    "ROBOTS_MEMORY_MAX_ORIGINS": (
        "many",
        "ROBOTS_MEMORY_MAX_ORIGINS must be a whole number, 1 or more"
        " (such as 100000), not 'many'",
    ),
    "ROBOTS_MEMORY_MAX_BYTES": (
        0,
        "ROBOTS_MEMORY_MAX_BYTES must be a whole number, 1 or more"
        " (such as 268435456), not 0",
    ),
    "ROBOTS_PROFILE": (
        "yahoo",
        "ROBOTS_PROFILE must be one of 'rfc9309', 'google', 'yandex', 'bing',"
        " not 'yahoo'",
    ),
    "ROBOTS_PROVENANCE": (
        "maybe",
        f"ROBOTS_PROVENANCE must be {FLAG}, not 'maybe'",
    ),
    "ROBOTS_PURPOSES": (
        ["train"],
        "ROBOTS_PURPOSES must be a list of draft-ietf-aipref-vocab-08 categories"
        " (train-ai, ai-use, search; several joined by '+' for one use), such as"
        " ['train-ai'] (or their comma-separated text), not ['train']",
    ),
    "ROBOTS_SITEMAP_MAX_BYTES": (
        "50 MiB",
        "ROBOTS_SITEMAP_MAX_BYTES must be a whole number, 1 or more"
        " (such as 52428800), not '50 MiB'",
    ),
    "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT": (
        -1,
        "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT must be a whole number, 0 or more"
        " (such as 100), not -1",
    ),
    "ROBOTS_SITEMAP_MAX_REQUESTS": (
        1.5,
        "ROBOTS_SITEMAP_MAX_REQUESTS must be a whole number, 0 or more"
        " (such as 50000), not 1.5",
    ),
    "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT": (
        "lots",
        "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT must be a whole number, 0 or more"
        " (such as 100000), not 'lots'",
    ),
    "ROBOTS_SITEMAP_OTHER_SITES": (
        "maybe",
        f"ROBOTS_SITEMAP_OTHER_SITES must be {FLAG}, not 'maybe'",
    ),
    "ROBOTS_SITEMAP_MAX_DEPTH": (
        0,
        "ROBOTS_SITEMAP_MAX_DEPTH must be a whole number, 1 or more (such as 3), not 0",
    ),
    "ROBOTS_REFUSED": (
        "ignore",
        "ROBOTS_REFUSED must be one of 'allow', 'disallow', not 'ignore'",
    ),
    "ROBOTS_RETRY_AFTER": ("maybe", f"ROBOTS_RETRY_AFTER must be {FLAG}, not 'maybe'"),
    "ROBOTS_RETRY_AFTER_MAX": (
        -1,
        "ROBOTS_RETRY_AFTER_MAX must be a number of seconds from 0 to 1,000,000,000"
        " (such as 600), not -1",
    ),
    "ROBOTS_REPORT": (
        "no-such-folder/report-%(name)s.jsonl",
        "ROBOTS_REPORT must be the path of a file to write, in an existing,"
        " writable folder (%(name)s, %(time)s, %(pid)s and the spider's other"
        " attributes are replaced; %% for a literal %), not"
        " 'no-such-folder/report-%(name)s.jsonl': folder no-such-folder does not"
        " exist",
    ),
    "ROBOTS_SITEMAPS": ("maybe", f"ROBOTS_SITEMAPS must be {FLAG}, not 'maybe'"),
    "ROBOTS_SSRF_GUARD": ("maybe", f"ROBOTS_SSRF_GUARD must be {FLAG}, not 'maybe'"),
    "ROBOTS_STORE": (
        3,
        "ROBOTS_STORE must be one of 'memory', 'redis', 'sqlite' or the import"
        " path of an OutcomeStore class; '3' cannot be loaded",
    ),
    "ROBOTS_STORE_MAX_ENTRY_BYTES": (
        -1,
        "ROBOTS_STORE_MAX_ENTRY_BYTES must be a whole number, 1 or more"
        " (such as 65536), not -1",
    ),
    "ROBOTS_STORE_PREFIX": (3, "ROBOTS_STORE_PREFIX must be text, not 3"),
    "ROBOTS_STORE_URL": (
        "sqlite:///robots.sqlite3",
        "ROBOTS_STORE_URL must be a Redis URL (redis://, rediss:// or unix://)"
        " for ROBOTS_STORE='redis', not 'sqlite:///robots.sqlite3'",
    ),
    "ROBOTS_UNREACHABLE_GRACE": (
        "a month",
        "ROBOTS_UNREACHABLE_GRACE must be a number of seconds from 0 to 1,000,000,000"
        " (such as 2592000), not 'a month'",
    ),
    "ROBOTS_UNREACHABLE_LIFETIME": (
        True,
        "ROBOTS_UNREACHABLE_LIFETIME must be a number of seconds from 0 to"
        " 1,000,000,000 (such as 600), not True",
    ),
    "ROBOTS_TDMREP": (
        "maybe",
        "ROBOTS_TDMREP must be one of 'drop', 'annotate', 'off', not 'maybe'",
    ),
    "ROBOTS_TDMREP_TIMEOUT": (
        0,
        "ROBOTS_TDMREP_TIMEOUT must be a number of seconds more than 0, up to"
        " 1,000,000,000 (such as 30), not 0",
    ),
    "ROBOTS_USAGE": (
        "maybe",
        "ROBOTS_USAGE must be one of 'drop', 'annotate', 'off', not 'maybe'",
    ),
    "ROBOTS_USER_AGENT": (
        "42",
        "ROBOTS_USER_AGENT must be a user agent starting with its product token"
        " (letters, '_' and '-', such as 'MyBot/1.0'), not '42'",
    ),
}

#: What else a setting needs for the component reading it to be on.
CONTEXT: dict[str, dict[str, Any]] = {
    "ROBOTS_SITEMAP_MAX_BYTES": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_SITEMAP_MAX_DEPTH": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_SITEMAP_MAX_REQUESTS": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_SITEMAP_OTHER_SITES": {"ROBOTS_SITEMAPS": True},
    "ROBOTS_STORE_MAX_ENTRY_BYTES": {"ROBOTS_STORE": "sqlite"},
    "ROBOTS_STORE_PREFIX": {"ROBOTS_STORE": "redis"},
    "ROBOTS_TDMREP": {"ROBOTS_PURPOSES": ["train-ai"]},
    "ROBOTS_TDMREP_TIMEOUT": {"ROBOTS_PURPOSES": ["train-ai"]},
    "ROBOTS_STORE_URL": {"ROBOTS_STORE": "redis"},
}


def test_every_setting_has_a_bad_value_case() -> None:
    assert sorted(BAD) == sorted(DEFAULTS)


def _robots_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("scrapy_rfc9309") and record.levelno >= logging.ERROR
    ]


@pytest.mark.parametrize("name", sorted(BAD))
@coroutine_test
async def test_bad_value_stops_the_crawl_at_start_up(
    server: Server, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    value, message = BAD[name]
    settings = {**CONTEXT.get(name, {}), name: value}
    with pytest.raises(SettingError, match=f"^{re.escape(message)}"):
        await crawl([server.url("/page")], settings)
    assert server.hits == []
    # Said once, in one line, by the component that refused it.
    (error,) = _robots_errors(caplog)
    assert error.startswith(f"The crawl cannot start: {message}")
    assert "\n" not in error


class StoreNeedingAnArgument(MemoryStore):
    """A project's store whose constructor Scrapy cannot call."""

    def __init__(self, database: str) -> None:
        super().__init__()
        self.database = database


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("scrapy_rfc9309.stores.memory", "is not an OutcomeStore class"),
        ("os.path.join", "is not an OutcomeStore class"),
        ("builtins.int", "is not an OutcomeStore class"),
        (
            "scrapy_rfc9309.stores.base.OutcomeStore",
            "is abstract: it does not define acquire, get, put,",
        ),
        (
            f"{__name__}.StoreNeedingAnArgument",
            "could not be made: TypeError: ",
        ),
    ],
)
@coroutine_test
async def test_a_store_that_cannot_be_made_stops_the_crawl_at_start_up(
    server: Server, value: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(SettingError, match=re.escape(f"ROBOTS_STORE {value!r} ")):
        await crawl([server.url("/page")], {"ROBOTS_STORE": value})
    assert server.hits == []
    (error,) = _robots_errors(caplog)
    assert message in error
    assert "\n" not in error


@pytest.mark.parametrize(
    ("value", "agent"),
    [("yandex", "TestBot/1.0"), ("Bing", "YandexBot/3.0"), ("bing", "msnbot")],
)
@coroutine_test
async def test_bounded_profile_refuses_an_agent_it_does_not_answer_for(
    server: Server, value: str, agent: str
) -> None:
    message = (
        f"ROBOTS_USER_AGENT {agent!r} does not suit ROBOTS_PROFILE"
        f" {value.lower()!r}: the {value.lower()} profile answers for the group"
        " labels "
    )
    with pytest.raises(SettingError, match=f"^{re.escape(message)}"):
        await crawl(
            [server.url("/page")],
            {"ROBOTS_PROFILE": value, "ROBOTS_USER_AGENT": agent},
        )
    assert server.hits == []


class AgentAttribute(RecordingSpider):
    name = "attributed"
    robots_user_agent = "42"


AGENT = (
    " must be a user agent starting with its product token (letters, '_' and"
    " '-', such as 'MyBot/1.0'), not "
)


@pytest.mark.parametrize(
    ("settings", "spidercls", "message"),
    [
        (
            {"ROBOTSTXT_USER_AGENT": "42"},
            RecordingSpider,
            f"ROBOTSTXT_USER_AGENT{AGENT}'42'",
        ),
        (
            {"USER_AGENT": "(compatible)"},
            RecordingSpider,
            f"USER_AGENT{AGENT}'(compatible)' (ROBOTS_USER_AGENT sets the robots.txt"
            " agent alone)",
        ),
        (
            # The attribute is the agent: a good setting below it is not.
            {"ROBOTS_USER_AGENT": "GoodBot/1.0"},
            AgentAttribute,
            f"the robots_user_agent attribute of spider 'attributed'{AGENT}'42'",
        ),
        ({"ROBOTS_USER_AGENT": 42}, RecordingSpider, f"ROBOTS_USER_AGENT{AGENT}42"),
        # Not a way to leave it unset (None, or ""): it was passed over.
        ({"ROBOTS_USER_AGENT": 0}, RecordingSpider, f"ROBOTS_USER_AGENT{AGENT}0"),
        (
            {"ROBOTS_USER_AGENT": False},
            RecordingSpider,
            f"ROBOTS_USER_AGENT{AGENT}False",
        ),
        ({"ROBOTS_USER_AGENT": []}, RecordingSpider, f"ROBOTS_USER_AGENT{AGENT}[]"),
    ],
)
@coroutine_test
async def test_the_agent_without_a_product_token_is_refused_where_it_comes_from(
    server: Server,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, Any],
    spidercls: type[RecordingSpider],
    message: str,
) -> None:
    """Whichever source gives the agent (spider attribute, ROBOTS_USER_AGENT,
    ROBOTSTXT_USER_AGENT, USER_AGENT, in that order), an agent without a
    product token matches only the '*' groups: refused, naming its source."""
    with pytest.raises(SettingError, match=f"^{re.escape(message)}$"):
        await crawl([server.url("/page")], settings, spidercls)
    assert server.hits == []
    (error,) = _robots_errors(caplog)
    assert error == f"The crawl cannot start: {message}"


@coroutine_test
async def test_a_setting_below_the_agent_in_use_is_not_read(server: Server) -> None:
    # ROBOTS_USER_AGENT wins: the User-Agent header may be anything.
    server.route("/robots.txt", "User-agent: goodbot\nDisallow: /page\n")
    crawler = await crawl(
        [server.url("/page"), server.url("/a")],
        {"ROBOTS_USER_AGENT": "GoodBot/1.0", "USER_AGENT": "(compatible)"},
    )
    assert crawler.spider.crawled == [server.url("/a")]


class SendsGoodBot(RecordingSpider):
    custom_settings: ClassVar[dict[str, Any]] = {
        "USER_AGENT": "Mozilla/5.0 (compatible; GoodBot/2.0)"
    }


@pytest.mark.parametrize(
    ("settings", "spidercls", "warned"),
    [
        ({"ROBOTS_USER_AGENT": "GoodBot/1.0"}, RecordingSpider, True),
        ({"ROBOTSTXT_USER_AGENT": "GoodBot"}, RecordingSpider, True),
        ({"ROBOTS_USER_AGENT": "testbot"}, RecordingSpider, False),
        ({}, RecordingSpider, False),
        (
            {"ROBOTS_USER_AGENT": "GoodBot", "USER_AGENT": "Mozilla/5.0 (GoodBot)"},
            RecordingSpider,
            False,
        ),
        ({"ROBOTS_USER_AGENT": "GoodBot/1.0"}, SendsGoodBot, False),
        # DefaultHeadersMiddleware sets the header first.
        (
            {
                "ROBOTS_USER_AGENT": "GoodBot",
                "DEFAULT_REQUEST_HEADERS": {"user-agent": "GoodBot/1.0"},
            },
            RecordingSpider,
            False,
        ),
        # Another component picks the header: nothing is known of it.
        (
            {
                "ROBOTS_USER_AGENT": "GoodBot",
                "DOWNLOADER_MIDDLEWARES": {
                    "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None
                },
            },
            RecordingSpider,
            False,
        ),
        # Disabled by its class (Scrapy 2.15 and newer read it so).
        (
            {
                "ROBOTS_USER_AGENT": "GoodBot",
                "DOWNLOADER_MIDDLEWARES": {UserAgentMiddleware: None},
            },
            RecordingSpider,
            version_info < (2, 15),
        ),
    ],
)
@coroutine_test
async def test_an_agent_the_user_agent_header_does_not_name_is_said_once(
    server: Server,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, Any],
    spidercls: type[RecordingSpider],
    warned: bool,
) -> None:
    """RFC 9309 2.2.1: the product token SHOULD be in the User-Agent header
    (USER_AGENT, or the spider's user_agent, which UserAgentMiddleware
    sends): a site cannot tell which of its groups a crawler that sends
    another name obeys. Said at INFO (Googlebot-News breaks it on purpose);
    crawled all the same, under the agent's rules."""
    server.route("/robots.txt", "User-agent: goodbot\nDisallow: /page\n")
    caplog.set_level(logging.INFO, logger="scrapy_rfc9309")
    await crawl([server.url("/page"), server.url("/a")], settings, spidercls)
    lines = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if "User-Agent header" in r.getMessage()
    ]
    expected = (
        "Obeying the robots.txt rules of 'goodbot' while the User-Agent header"
        " sent is 'TestBot/1.0 (+http://127.0.0.1/bot)', which does not name it"
        " (RFC 9309 2.2.1: the product token should be part of the User-Agent)"
    )
    assert lines == ([(logging.INFO, expected)] if warned else [])


# -- how `scrapy crawl` says it ----------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SPIDER = """\
import scrapy


class Quiet(scrapy.Spider):
    name = "quiet"
    start_urls = ["http://127.0.0.1:1/"]
"""


@pytest.mark.parametrize(
    ("where", "options", "line"),
    [
        (
            "cmdline",
            ["-s", "ROBOTS_CACHE_LIFETIME=abc"],
            "ROBOTS_CACHE_LIFETIME must be a number of seconds from 0 to"
            " 1,000,000,000 (such as 86400), not 'abc'",
        ),
        (
            "project",
            [],
            "USER_AGENT 'QuietBot/1.0' does not suit ROBOTS_PROFILE 'bing':",
        ),
        (
            "project",
            ["-s", "TWISTED_REACTOR_ENABLED=False"],
            "USER_AGENT 'QuietBot/1.0' does not suit ROBOTS_PROFILE 'bing':",
        ),
    ],
)
def test_scrapy_crawl_says_a_refused_setting_in_one_line(
    tmp_path: Path, where: str, options: list[str], line: str
) -> None:
    """As the user meets it: `scrapy crawl` in a project, exit status 1, one
    ERROR line naming the setting and no traceback (Scrapy prints asyncio's
    "Task exception was never retrieved" with every frame for a crawl that
    fails to start, its own bad settings included)."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = quiet.settings\n")
    package = tmp_path / "quiet"
    package.mkdir()
    (package / "__init__.py").write_text(SPIDER)
    (package / "settings.py").write_text(
        'SPIDER_MODULES = ["quiet"]\n'
        'ADDONS = {"scrapy_rfc9309.Addon": 100}\n'
        'USER_AGENT = "QuietBot/1.0"\n'
        "TELNETCONSOLE_ENABLED = False\n"
        + ('ROBOTS_PROFILE = "bing"\n' if where == "project" else "")
    )
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")
    }
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), env.get("PYTHONPATH")])
    )
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "quiet", *options],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Scrapy 2.14 sets 1 only for a spider it could not make.
    assert done.returncode == (0 if version_info[:2] == (2, 14) else 1), done.stderr
    if version_info >= (2, 14):
        # Scrapy 2.13 leaves the crawl's Deferred failed, and Twisted logs
        # its traceback (CRITICAL) under the line.
        assert "Traceback" not in done.stderr, done.stderr
    assert "never retrieved" not in done.stderr
    # Every log line of the package's: the one ERROR.
    (error,) = re.findall(r"^\S+ \S+ \[scrapy_rfc9309.*", done.stderr, re.MULTILINE)
    assert f"[scrapy_rfc9309._settings] ERROR: The crawl cannot start: {line}" in error


def test_a_crawl_task_failing_otherwise_is_still_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the refusal logged is kept from asyncio's report: a task that
    went on and failed on something else is reported as asyncio would."""
    # The test's tasks stand for those Scrapy makes.
    monkeypatch.setattr(settings_module, "_made_by_scrapy", lambda task: True)
    crawler = get_crawler(RecordingSpider, BASE_SETTINGS)

    async def refused() -> None:
        with refusals_logged(crawler):
            raise SettingError("ROBOTS_X must be good, not 'bad'")

    async def refused_then_broken() -> None:
        with contextlib.suppress(SettingError):
            await refused()
        raise KeyError("something else")

    def run(loop: asyncio.AbstractEventLoop) -> None:
        for work in (refused, refused_then_broken):
            task = loop.create_task(work())
            loop.run_until_complete(asyncio.wait([task]))
            # asyncio reports an exception never retrieved when the task is
            # collected.
            del task
            gc.collect()

    assert [type(error) for error in _reported(run)] == [KeyError]


def _reported(
    run: Callable[[asyncio.AbstractEventLoop], None],
) -> list[BaseException]:
    """What asyncio reports (never retrieved) while ``run`` runs on a loop
    of its own, in a thread of its own: the test's reactor runs one."""
    reported: list[BaseException] = []

    def target() -> None:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(
            lambda _, context: reported.append(context["exception"])
        )
        try:
            run(loop)
        finally:
            loop.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    return reported


def test_a_scripts_own_task_is_left_to_the_script() -> None:
    """A script awaiting crawl_async() in its own task gets the refusal
    back: it may catch it and end on another exception, which asyncio.run
    hands it; asyncio is not told that one was never retrieved."""
    crawler = get_crawler(RecordingSpider, BASE_SETTINGS)

    async def main() -> None:
        try:
            with refusals_logged(crawler):
                raise SettingError("ROBOTS_X must be good, not 'bad'")
        except SettingError:
            raise RuntimeError("giving up") from None

    def run(loop: asyncio.AbstractEventLoop) -> None:
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(main())
        gc.collect()

    assert _reported(run) == []


@pytest.mark.parametrize(
    ("where", "scrapys"),
    [
        ("core/engine.py", True),
        # Packages named after it are not it.
        ("_redis/spiders.py", False),
    ],
)
def test_a_task_is_scrapys_by_its_coroutines_module(where: str, scrapys: bool) -> None:
    home = settings_module._SCRAPY.rstrip(os.sep)
    filename = home + (os.sep if where[0] != "_" else "") + where
    namespace: dict[str, Any] = {}
    exec(compile("async def crawl():\n    pass\n", filename, "exec"), namespace)
    coroutine = namespace["crawl"]()
    # What the check asks of a task.
    task: Any = SimpleNamespace(get_coro=lambda: coroutine)
    try:
        assert settings_module._made_by_scrapy(task) is scrapys
    finally:
        coroutine.close()


@pytest.mark.parametrize(
    "component",
    [
        RobotsMiddleware,
        DirectivesMiddleware,
        SitemapsMiddleware,
        UsageMiddleware,
        ProvenanceMiddleware,
    ],
)
def test_every_component_refuses_a_bad_robots_enabled(component: Any) -> None:
    crawler = get_crawler(RecordingSpider, {**BASE_SETTINGS, "ROBOTS_ENABLED": "no"})
    crawler.spider = crawler._create_spider()
    with pytest.raises(ValueError, match=r"^ROBOTS_ENABLED must be True or False"):
        component.from_crawler(crawler)


@pytest.mark.parametrize(
    "component",
    [
        RobotsMiddleware,
        DirectivesMiddleware,
        SitemapsMiddleware,
        UsageMiddleware,
        ProvenanceMiddleware,
    ],
)
def test_every_component_is_off_when_robots_enabled_is_false_text(
    component: Any,
) -> None:
    # What `scrapy crawl -s ROBOTS_ENABLED=false` gives.
    crawler = get_crawler(RecordingSpider, {**BASE_SETTINGS, "ROBOTS_ENABLED": "false"})
    crawler.spider = crawler._create_spider()
    with pytest.raises(NotConfigured):
        component.from_crawler(crawler)


# -- the readers on good values -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        ("1", True),
        ("0", False),
        ("true", True),
        ("False", False),
        (None, True),  # not set: the package default
    ],
)
def test_flag(value: Any, expected: bool) -> None:
    assert flag(Settings({"ROBOTS_ENABLED": value}), "ROBOTS_ENABLED") is expected


@pytest.mark.parametrize("value", [2, "yes", "on", 0.5, "", [], {}])
def test_flag_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^ROBOTS_ENABLED must be True or False"):
        flag(Settings({"ROBOTS_ENABLED": value}), "ROBOTS_ENABLED")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0.0), (3600, 3600.0), (0.5, 0.5), ("86400", 86400.0), (" 1e3 ", 1000.0)],
)
def test_seconds(value: Any, expected: float) -> None:
    settings = Settings({"ROBOTS_CACHE_LIFETIME": value})
    assert seconds(settings, "ROBOTS_CACHE_LIFETIME") == expected


@pytest.mark.parametrize(
    "value",
    [-1, "-0.5", math.inf, "inf", "", "1 day", [], pytest.param(10**400, id="10**400")],
)
def test_seconds_refuses(value: Any) -> None:
    with pytest.raises(
        ValueError, match="must be a number of seconds from 0 to 1,000,000,000"
    ):
        seconds(Settings({"ROBOTS_CACHE_LIFETIME": value}), "ROBOTS_CACHE_LIFETIME")


@pytest.mark.parametrize("value", [0, "0", 0.0, -1, "abc", math.inf, "nan", 10**10])
def test_timeout_refuses_every_bad_value_alike(value: Any) -> None:
    # One message for every value refused, 0 included (ROBOTS_TDMREP_TIMEOUT).
    name = "ROBOTS_TDMREP_TIMEOUT"
    message = (
        f"{name} must be a number of seconds more than 0, up to 1,000,000,000"
        f" (such as 30), not {value!r}"
    )
    with pytest.raises(SettingError, match=f"^{re.escape(message)}$"):
        RobotsConfig.from_settings(Settings({name: value}))


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0), (5, 5), ("7", 7), (3.0, 3), ("1e2", 100)]
)
def test_positive_int(value: Any, expected: int) -> None:
    settings = Settings({"ROBOTS_MAX_REDIRECTS": value})
    assert positive_int(settings, "ROBOTS_MAX_REDIRECTS", minimum=0) == expected


@pytest.mark.parametrize(
    "value", [-1, 1.5, "two", False, math.nan, pytest.param(10**400, id="10**400")]
)
def test_positive_int_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match="must be a whole number, 0 or more"):
        positive_int(
            Settings({"ROBOTS_MAX_REDIRECTS": value}), "ROBOTS_MAX_REDIRECTS", minimum=0
        )


def test_choice_ignores_case_and_spaces() -> None:
    settings = Settings({"ROBOTS_DIRECTIVES": " Annotate "})
    assert choice(settings, "ROBOTS_DIRECTIVES", ("drop", "annotate")) == "annotate"
    assert robots_profile(Settings({"ROBOTS_PROFILE": "GOOGLE"})) == "google"
    assert robots_profile(Settings()) == "rfc9309"


def test_profile_given_on_the_command_line_is_named_so() -> None:
    assert robots_profile(Settings(), "google") == "google"
    with pytest.raises(ValueError, match=r"^--profile must be one of .*, not 'x'$"):
        robots_profile(Settings(), "x")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, ()),
        ({"ai-train": True, "search": False}, ("ai-train",)),
        ({" AI-Input ": "true"}, ("ai-input",)),
        ('{"ai-train": true, "search": false}', ("ai-train",)),
    ],
)
def test_purposes(value: Any, expected: tuple[str, ...]) -> None:
    settings = Settings({"ROBOTS_CONTENT_SIGNALS": value})
    assert purposes(settings, "ROBOTS_CONTENT_SIGNALS") == expected


@pytest.mark.parametrize(
    "value", ["ai-train", ["ai-train"], 1, "{not json", {"": True}, {3: True}]
)
def test_purposes_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^ROBOTS_CONTENT_SIGNALS must be a dict"):
        purposes(Settings({"ROBOTS_CONTENT_SIGNALS": value}), "ROBOTS_CONTENT_SIGNALS")


def test_text() -> None:
    assert text(Settings(), "ROBOTS_STORE_URL") is None
    assert text(Settings(), "ROBOTS_STORE_PREFIX") == "robots:"
    with pytest.raises(ValueError, match=r"^ROBOTS_STORE_URL must be text, not 5$"):
        text(Settings({"ROBOTS_STORE_URL": 5}), "ROBOTS_STORE_URL")


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_none_takes_the_default(name: str) -> None:
    """docs/settings.md: a setting set to None reads as its default (not as
    "off" or "no limit"), whatever the priority of that None."""
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert "A setting set to `None` takes its default" in text
    settings = Settings()
    # Above the add-on's default, as a project's or a spider's would be.
    settings.set(name, None, "cmdline")
    assert RobotsConfig.from_settings(settings) == RobotsConfig.from_settings(
        Settings()
    )
    crawler = get_crawler(RecordingSpider, {name: None})
    ensure_enabled(crawler)  # ROBOTS_ENABLED = None: still on
