"""``scrapy robots check`` and ``scrapy robots lint``, run as the user runs
them: in a subprocess (its own reactor), against local servers, bounded in
time.  Outside a project unless a test makes one."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.server import Server, truncated

ROBOTS = """\
User-agent: *
Disallow: /private
Disallow: /%7Efoo
Crawl-delay: 2
Content-Signal: search=yes, ai-train=no

User-agent: examplebot
Disallow: /
"""
SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>{page}</loc></url>
</urlset>
"""
# Nothing listens on port 1: connection refused.
REFUSED = "http://127.0.0.1:1"
TIMEOUT = 60
# The checkout under test, first on the path of the commands run from
# elsewhere (a temporary directory), whatever copy of the package the
# interpreter has installed.
ROOT = str(Path(__file__).resolve().parent.parent)


def command_env() -> dict[str, str]:
    """The environment of a command run outside any project."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    return env


def scrapy(
    cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run(cwd, [sys.executable, "-m", "scrapy", "robots", *args], stdin)


def run(
    cwd: Path, argv: list[str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=command_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The usage error of ``done``: exit 2, one line on stderr, no output."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("scrapy robots: error: ")
    return lines[0]


@pytest.fixture
def site(make_server: Callable[..., Server]) -> dict[str, Server]:
    rules = make_server()
    rules.route("/robots.txt", ROBOTS)
    missing = make_server()
    missing.route("/robots.txt", "Disallow: /", status=404)
    failing = make_server()
    failing.route("/robots.txt", "Disallow: /", status=503)
    return {"rules": rules, "missing": missing, "failing": failing}


def by_url(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {result["url"]: result for result in document["results"]}


# -- check ----------------------------------------------------------------------


def test_check_json_outcomes(site: dict[str, Server], tmp_path: Path) -> None:
    rules, missing, failing = site["rules"], site["missing"], site["failing"]
    urls = [
        rules.url("/page"),
        rules.url("/private/x"),
        rules.url("/robots.txt"),
        missing.url("/x"),
        failing.url("/x"),
        f"{REFUSED}/x",
        "data:,hello",
    ]
    done = scrapy(tmp_path, "check", *urls, "--json", "-s", "RETRY_ENABLED=False")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["version"] == 1
    assert document["command"] == "check"
    assert document["agent"].startswith("Scrapy/")
    assert document["product_token"] == "scrapy"
    assert document["profile"] == "rfc9309"
    assert document["allowed"] is False
    assert [result["url"] for result in document["results"]] == urls
    results = by_url(document)

    page = results[rules.url("/page")]
    assert page["allowed"] is True
    assert page["reason"] == "default_allow"
    assert page["rule"] is None
    assert page["robots_txt"] == rules.url("/robots.txt")
    assert page["outcome"]["kind"] == "parsed"
    assert page["outcome"]["http_status"] == 200
    assert page["outcome"]["expires_at"] > page["outcome"]["fetched_at"]
    assert page["crawl_delay"] == 2
    assert page["content_signals"] == {"search": True, "ai-train": False}

    private = results[rules.url("/private/x")]
    assert private["allowed"] is False
    assert private["reason"] == "rule_disallow"
    assert private["rule"] == {
        "line": 2,
        "allow": False,
        "pattern": "/private",
        "text": "Disallow: /private",
    }

    assert results[rules.url("/robots.txt")]["reason"] == "robots_txt"
    assert results[rules.url("/robots.txt")]["allowed"] is True

    unavailable = results[missing.url("/x")]
    assert unavailable["allowed"] is True
    assert unavailable["reason"] == "unavailable"
    assert unavailable["outcome"]["kind"] == "unavailable"
    assert unavailable["outcome"]["http_status"] == 404
    assert unavailable["crawl_delay"] is None
    assert unavailable["content_signals"] == {}

    unreachable = results[failing.url("/x")]
    assert unreachable["allowed"] is False
    assert unreachable["reason"] == "unreachable"
    assert unreachable["outcome"]["kind"] == "unreachable"
    assert unreachable["outcome"]["http_status"] == 503

    refused = results[f"{REFUSED}/x"]
    assert refused["allowed"] is False
    assert refused["reason"] == "unreachable"
    assert refused["outcome"]["kind"] == "unreachable"
    assert refused["outcome"]["http_status"] is None
    assert "refused" in refused["outcome"]["detail"].lower()

    data = results["data:,hello"]
    assert data["allowed"] is True
    assert data["reason"] == "no_robots_txt"
    assert data["outcome"] is None
    assert data["robots_txt"] is None

    # Each origin's robots.txt fetched once, however many of its URLs.
    for server in site.values():
        assert server.count("/robots.txt") == 1
        assert server.count("/x") + server.count("/page") == 0


def test_check_text(site: dict[str, Server], tmp_path: Path) -> None:
    rules, missing, failing = site["rules"], site["missing"], site["failing"]
    done = scrapy(
        tmp_path,
        "check",
        rules.url("/page"),
        rules.url("/private/x"),
        missing.url("/x"),
        failing.url("/x"),
        f"{REFUSED}/x",
    )
    assert done.returncode == 1, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.startswith("agent 'Scrapy/")
    assert "product token 'scrapy'" in header
    assert "profile rfc9309" in header
    assert len(rows) == 5
    page, private, unavailable, unreachable, refused = rows
    assert page.startswith(f"allowed     {rules.url('/page')}  default_allow  ")
    assert f"parsed (HTTP 200) {rules.url('/robots.txt')}" in page
    assert page.endswith("crawl-delay 2s  content-signal search=yes, ai-train=no")
    assert private.startswith(f"DISALLOWED  {rules.url('/private/x')}  ")
    assert "rule_disallow (line 2: Disallow: /private)" in private
    assert "  unavailable  unavailable (HTTP 404) " in unavailable
    assert unavailable.startswith("allowed ")
    assert "  unreachable  unreachable (HTTP 503) " in unreachable
    assert unreachable.startswith("DISALLOWED ")
    assert refused.startswith("DISALLOWED ")
    assert "ConnectionRefused" in refused
    assert "Traceback" not in done.stderr
    # Scrapy's INFO lines stay out of the way outside a project.
    assert "INFO" not in done.stderr


@pytest.mark.parametrize(
    "reactor",
    [
        "TWISTED_REACTOR=twisted.internet.epollreactor.EPollReactor",
        "TWISTED_REACTOR_ENABLED=False",
    ],
)
def test_check_other_reactors(
    site: dict[str, Server], tmp_path: Path, reactor: str
) -> None:
    """CrawlerProcess under a non-asyncio reactor, and reactor-less mode."""
    rules, missing = site["rules"], site["missing"]
    urls = [rules.url("/page"), rules.url("/private/x"), missing.url("/x")]
    done = scrapy(tmp_path, "check", *urls, "--json", "-s", reactor)
    assert done.returncode == 1, done.stderr
    results = json.loads(done.stdout)["results"]
    assert [(r["allowed"], r["reason"]) for r in results] == [
        (True, "default_allow"),
        (False, "rule_disallow"),
        (True, "unavailable"),
    ]
    assert "Traceback" not in done.stderr

    done = scrapy(tmp_path, "check", *urls, "-s", reactor, "-s", "ROBOTS_MAX_BYTES=0")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "scrapy robots: error: ROBOTS_MAX_BYTES must be" in done.stderr


def test_check_all_allowed_exits_0(site: dict[str, Server], tmp_path: Path) -> None:
    rules, missing = site["rules"], site["missing"]
    done = scrapy(tmp_path, "check", rules.url("/page"), missing.url("/"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(done.stdout.splitlines()) == 3


def test_check_agent(site: dict[str, Server], tmp_path: Path) -> None:
    rules = site["rules"]
    done = scrapy(
        tmp_path, "check", rules.url("/page"), "--agent", "ExampleBot/1.0", "--json"
    )
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["agent"] == "ExampleBot/1.0"
    assert document["product_token"] == "examplebot"
    (page,) = document["results"]
    assert page["allowed"] is False
    assert page["rule"]["line"] == 8
    assert page["rule"]["text"] == "Disallow: /"
    # The examplebot group has neither Crawl-delay nor Content-Signal.
    assert page["crawl_delay"] is None
    assert page["content_signals"] == {}


def test_check_profile_is_not_cprofile(site: dict[str, Server], tmp_path: Path) -> None:
    url = site["rules"].url("/~foo")
    rfc = json.loads(scrapy(tmp_path, "check", url, "--json").stdout)
    done = scrapy(tmp_path, "check", url, "--json", "--profile", "google")
    assert done.returncode == 0, done.stderr
    google = json.loads(done.stdout)
    # RFC 9309 decodes %7E in the pattern; Google's matcher does not.
    assert rfc["profile"] == "rfc9309"
    assert rfc["results"][0]["allowed"] is False
    assert google["profile"] == "google"
    assert google["results"][0]["allowed"] is True
    # Scrapy's own --profile (cProfile output to a file) is not run.
    assert "cProfile" not in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_check_in_a_project(site: dict[str, Server], tmp_path: Path) -> None:
    """The project's settings apply: its agent, its crawl purposes."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = botproject.settings\n")
    package = tmp_path / "botproject"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        'BOT_NAME = "botproject"\n'
        'USER_AGENT = "TrainBot/3.0 (+https://example.com)"\n'
        'ROBOTS_CONTENT_SIGNALS = {"ai-train": True}\n'
        'ADDONS = {"scrapy_rfc9309.Addon": 100}\n'
        "ROBOTSTXT_OBEY = True\n"
    )
    rules = site["rules"]
    done = scrapy(tmp_path, "check", rules.url("/page"), "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["agent"] == "TrainBot/3.0 (+https://example.com)"
    (page,) = document["results"]
    assert page["allowed"] is False
    assert page["reason"] == "content_signal"
    assert page["note"] == "Content-Signal ai-train=no"
    assert page["rule"] is None
    # The built-in RobotsTxtMiddleware (ROBOTSTXT_OBEY) did not fetch it again.
    assert rules.count("/robots.txt") == 1


SPIDERS = """\
import scrapy


class Attribute(scrapy.Spider):
    name = "attribute"
    robots_user_agent = "ExampleBot/2.0 (+https://example.com)"


class Custom(scrapy.Spider):
    name = "custom"
    custom_settings = {
        "USER_AGENT": "CustomBot/1.0",
        "ROBOTS_PROFILE": "google",
        "ROBOTSTXT_OBEY": False,
    }
"""


def _project_with_spiders(tmp_path: Path) -> Path:
    (tmp_path / "scrapy.cfg").write_text(
        "[settings]\ndefault = spiderproject.settings\n"
    )
    package = tmp_path / "spiderproject"
    (package / "spiders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        'BOT_NAME = "spiderproject"\n'
        'SPIDER_MODULES = ["spiderproject.spiders"]\n'
        'USER_AGENT = "ProjectBot/1.0"\n'
        'ADDONS = {"scrapy_rfc9309.Addon": 100}\n'
    )
    (package / "spiders" / "__init__.py").write_text(SPIDERS)
    return tmp_path


QUEUE = """\
from pathlib import Path

from scrapy.core.scheduler import Scheduler


class Queue(Scheduler):
    \"\"\"The project's scheduler, as one with a JOBDIR or scrapy-redis's:
    notes that a crawl opened it.\"\"\"

    def open(self, spider):
        Path("queue-opened").write_text(spider.name)
        return super().open(spider)
"""


@pytest.mark.parametrize("spider", [[], ["--spider", "attribute"]])
def test_the_commands_leave_the_projects_queue_alone(
    site: dict[str, Server], tmp_path: Path, spider: list[str]
) -> None:
    """The commands' crawl requests nothing: it must not open the project's
    queue, which would hand it a paused JOBDIR's requests (or a fleet's
    scrapy-redis queue), downloading or losing them."""
    project = _project_with_spiders(tmp_path)
    package = project / "spiderproject"
    (package / "queue.py").write_text(QUEUE)
    with (package / "settings.py").open("a") as settings:
        settings.write('SCHEDULER = "spiderproject.queue.Queue"\n')
    rules = site["rules"]
    checked = scrapy(project, "check", rules.url("/private/x"), *spider)
    assert checked.returncode == 1, checked.stderr
    linted = scrapy(project, "lint", rules.url("/robots.txt"))
    assert linted.returncode == 0, linted.stderr
    assert not (project / "queue-opened").exists()
    # The project's own crawls do open it.
    crawled = run(project, [sys.executable, "-m", "scrapy", "crawl", "attribute"])
    assert crawled.returncode == 0, crawled.stderr
    assert (project / "queue-opened").read_text() == "attribute"


def test_check_spider_attribute(site: dict[str, Server], tmp_path: Path) -> None:
    """The spider's robots_user_agent attribute is its agent."""
    project = _project_with_spiders(tmp_path)
    rules = site["rules"]
    done = scrapy(
        project, "check", rules.url("/page"), "--spider", "attribute", "--json"
    )
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["spider"] == "attribute"
    assert document["agent"] == "ExampleBot/2.0 (+https://example.com)"
    assert document["product_token"] == "examplebot"
    (page,) = document["results"]
    assert page["allowed"] is False
    assert page["rule"]["line"] == 8  # "User-agent: examplebot" / "Disallow: /"


def test_check_spider_custom_settings(site: dict[str, Server], tmp_path: Path) -> None:
    """custom_settings apply (agent, profile), robots.txt handling switched
    off there included: asking is the point."""
    project = _project_with_spiders(tmp_path)
    rules = site["rules"]
    urls = [rules.url("/page"), rules.url("/~foo")]
    done = scrapy(project, "check", *urls, "--spider", "custom")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "spider 'custom', agent 'CustomBot/1.0' (product token 'custombot'),"
        " profile google"
    )
    # Google's matcher compares "/%7Efoo" as written: "/~foo" is allowed.
    assert all(line.startswith("allowed") for line in lines[1:]), lines
    # Without the spider: the project's agent, the rfc9309 profile.
    done = scrapy(project, "check", rules.url("/~foo"), "--json")
    document = json.loads(done.stdout)
    assert (document["agent"], document["profile"]) == ("ProjectBot/1.0", "rfc9309")
    assert document["allowed"] is False


@pytest.mark.parametrize(("spider", "status"), [(None, 0), ("attribute", 1)])
def test_check_requests_nothing_but_robots_txt(
    site: dict[str, Server], tmp_path: Path, spider: str | None, status: int
) -> None:
    """In a project that follows robots.txt sitemaps and writes feeds, the
    check requests no sitemap and writes over no feed."""
    project = _project_with_spiders(tmp_path)
    settings = project / "spiderproject" / "settings.py"
    settings.write_text(
        settings.read_text()
        + "ROBOTS_SITEMAPS = True\n"
        + f"FEEDS = {{{str(project / '%(name)s.jsonl')!r}: "
        + '{"format": "jsonlines", "overwrite": True}}\n'
    )
    rules = site["rules"]
    rules.route("/robots.txt", f"Sitemap: {rules.url('/sitemap.xml')}\n{ROBOTS}")
    rules.route("/sitemap.xml", SITEMAP.format(page=rules.url("/listed")))
    feeds = [project / "attribute.jsonl", project / "scrapy_robots.jsonl"]
    for feed in feeds:
        feed.write_text('{"kept": true}\n')
    whose = ("--spider", spider) if spider else ()
    done = scrapy(project, "check", rules.url("/page"), *whose, "--json")
    assert done.returncode == status, done.stderr
    assert [hit.path for hit in rules.hits] == ["/robots.txt"]
    for feed in feeds:
        assert feed.read_text() == '{"kept": true}\n'
    done = scrapy(project, "lint", rules.url("/robots.txt"))
    assert done.returncode == 0, done.stderr
    assert [hit.path for hit in rules.hits] == ["/robots.txt"] * 2
    assert sorted(project.glob("*.jsonl")) == sorted(feeds)


def test_check_spider_and_profile(site: dict[str, Server], tmp_path: Path) -> None:
    project = _project_with_spiders(tmp_path)
    done = scrapy(
        project,
        "check",
        site["rules"].url("/~foo"),
        "--spider",
        "custom",
        "--profile",
        "rfc9309",
        "--json",
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["profile"] == "rfc9309"


def test_check_spider_and_agent_exclusive(tmp_path: Path) -> None:
    project = _project_with_spiders(tmp_path)
    done = scrapy(
        project, "check", f"{REFUSED}/", "--spider", "custom", "--agent", "Bot"
    )
    assert one_line_error(done) == (
        "scrapy robots: error: --agent and --spider cannot be given together"
        " (--spider answers for the spider's own agent)"
    )


def test_check_spider_attribute_without_product_token(tmp_path: Path) -> None:
    project = _project_with_spiders(tmp_path)
    spiders = project / "spiderproject" / "spiders" / "__init__.py"
    spiders.write_text(
        SPIDERS + '\n\nclass Numbered(scrapy.Spider):\n    name = "numbered"\n'
        '    robots_user_agent = "42"\n'
    )
    done = scrapy(project, "check", f"{REFUSED}/", "--spider", "numbered")
    assert one_line_error(done) == (
        "scrapy robots: error: the robots_user_agent attribute of spider"
        " 'numbered' must be a user agent starting with its product token"
        " (letters, '_' and '-', such as 'MyBot/1.0'), not '42'"
    )


def test_check_unknown_spider(tmp_path: Path) -> None:
    project = _project_with_spiders(tmp_path)
    done = scrapy(project, "check", f"{REFUSED}/", "--spider", "nope")
    assert "no spider named 'nope'" in one_line_error(done)
    done = scrapy(project, "lint", "x.txt", "--spider", "custom")
    assert "--spider" in one_line_error(done)


def test_check_spider_outside_a_project(tmp_path: Path) -> None:
    done = scrapy(tmp_path, "check", f"{REFUSED}/", "--spider", "site")
    assert one_line_error(done) == (
        "scrapy robots: error: --spider needs a Scrapy project: run the command"
        " in the project's directory (where its scrapy.cfg is)"
    )


def test_check_crawl_delay_over_max_skipped(
    site: dict[str, Server], tmp_path: Path
) -> None:
    done = scrapy(
        tmp_path,
        "check",
        site["rules"].url("/page"),
        "--json",
        "-s",
        "ROBOTS_CRAWL_DELAY_MAX=1",
        "-s",
        "ROBOTS_CRAWL_DELAY_OVER_MAX=skip",
    )
    assert done.returncode == 1, done.stderr
    (page,) = json.loads(done.stdout)["results"]
    assert page["allowed"] is False
    assert page["reason"] == "crawl_delay"
    assert page["note"] == "Crawl-delay 2 over ROBOTS_CRAWL_DELAY_MAX 1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "no subcommand"),
        (("frobnicate",), "unknown subcommand 'frobnicate'"),
        (("check",), "check needs at least one URL"),
        (("check", "example.com/page"), "not a URL: 'example.com/page'"),
        (("check", "localhost:8080/page"), "not a URL"),
        (("check", "http:///page"), "not a URL: 'http:///page' (no host)"),
        (
            ("check", "http://127.0.0.1:99999/"),
            "not a URL: 'http://127.0.0.1:99999/' (invalid port '99999': a whole"
            " number from 0 to 65535 is expected)",
        ),
        (("check", "http://127.0.0.1:abc/"), "(invalid port 'abc': a whole number"),
        (("check", "https://[::1]:65536/"), "(invalid port '65536': a whole number"),
        (("check", "http://[::1/page"), "not a URL"),
        (("check", "http://127.0.0.1:1/", "--profile", "strict"), "'strict'"),
        (("check", "http://127.0.0.1:1/", "--agent", ""), "--agent"),
        (
            ("check", "http://127.0.0.1:1/", "--agent", "42"),
            "--agent must start with its product token",
        ),
        (
            ("check", "http://127.0.0.1:1/", "-s", "ROBOTS_USER_AGENT=42"),
            "ROBOTS_USER_AGENT must be a user agent starting with its product token",
        ),
        # The agent refused is named where it came from, not as --agent.
        (
            ("check", "http://127.0.0.1:1/", "-s", "ROBOTSTXT_USER_AGENT=42"),
            "scrapy robots: error: ROBOTSTXT_USER_AGENT must be a user agent"
            " starting with its product token",
        ),
        (
            ("check", "http://127.0.0.1:1/", "-s", "USER_AGENT=(compatible)"),
            "scrapy robots: error: USER_AGENT must be a user agent starting with its"
            " product token",
        ),
        (
            ("check", "http://127.0.0.1:1/", "-s", "ROBOTS_PROFILE=yandex"),
            "scrapy robots: error: the project's agent 'Scrapy/",
        ),
        (
            ("check", "http://127.0.0.1:1/", "--profile", "bing"),
            " does not suit --profile 'bing': the bing profile answers for the"
            " group labels 'bingbot' or 'AdIdxBot' only, not 'scrapy'",
        ),
        (("check", "http://127.0.0.1:1/", "--frobnicate"), "'--frobnicate'"),
        (("check", "http://127.0.0.1:1/", "-x"), "'-x'"),
        (("lint",), "lint takes one FILE or URL"),
        (("lint", "a.txt", "b.txt"), "lint takes one FILE or URL"),
        (("lint", "no-such-file.txt"), "cannot read no-such-file.txt"),
        (("lint", "."), "cannot read ."),
        (("lint", "ftp://127.0.0.1/robots.txt"), "not an http:// or https:// URL"),
        (("lint", "x.txt", "--agent", "Bot"), "--agent"),
        (("lint", "x.txt", "--profile", "nope"), "'nope'"),
        (
            ("check", "http://127.0.0.1:1/", "-s", "ROBOTS_PROFILE=nope"),
            "ROBOTS_PROFILE must be one of 'rfc9309', 'google'",
        ),
    ],
)
def test_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    assert message in one_line_error(scrapy(tmp_path, *args))


def test_setting_refused_by_the_middleware(tmp_path: Path) -> None:
    """A setting the middleware refuses stops the crawl from starting."""
    done = scrapy(tmp_path, "check", f"{REFUSED}/", "-s", "ROBOTS_MAX_BYTES=lots")
    assert "ROBOTS_MAX_BYTES" in one_line_error(done)


# -- lint -----------------------------------------------------------------------

BROKEN = b"User-agent: *\nDisalow: /x\nCrawl-delay: soon\nAllow: public\n"


def test_lint_file_text(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(BROKEN)
    done = scrapy(tmp_path, "lint", "robots.txt")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "robots.txt:2: warning [typo-accepted] 'disalow' is read as 'disallow'",
        "robots.txt:3: error [invalid-crawl-delay] Crawl-delay 'soon' is not a"
        " number of seconds (finite, >= 0); ignored",
        "robots.txt:4: warning [pattern-not-rooted] 'public' does not start with"
        " '/' or '*', so it matches no URL; did you mean '/public'?",
        "robots.txt: 1 error, 2 warnings, 0 info",
    ]


def test_lint_file_json(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(BROKEN)
    done = scrapy(tmp_path, "lint", "robots.txt", "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["version"] == 1
    assert document["command"] == "lint"
    assert document["source"] == "robots.txt"
    assert document["profile"] == "rfc9309"
    assert document["counts"] == {"error": 1, "warning": 2, "info": 0}
    assert [(d["line"], d["severity"], d["code"]) for d in document["diagnostics"]] == [
        (2, "warning", "typo-accepted"),
        (3, "error", "invalid-crawl-delay"),
        (4, "warning", "pattern-not-rooted"),
    ]
    assert all(d["message"] for d in document["diagnostics"])


def test_lint_clean_from_stdin(tmp_path: Path) -> None:
    done = scrapy(tmp_path, "lint", "-", stdin="User-agent: *\nDisallow: /x\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "-: 0 errors, 0 warnings, 0 info\n"


def _feed(stream: IO[bytes], total: int) -> int:
    """Write up to ``total`` bytes of robots.txt lines to ``stream``, until
    its reader stops reading: how many were written."""
    chunk = b"Disallow: /" + b"x" * 52 + b"\n"
    chunk *= 1024  # 64 KiB
    written = 0
    with contextlib.suppress(BrokenPipeError):
        while written < total:
            stream.write(chunk)
            written += len(chunk)
    return written


@pytest.mark.parametrize("source", ["-", "fifo"])
def test_lint_reads_no_more_than_robots_max_bytes(tmp_path: Path, source: str) -> None:
    """A file or standard input of no end (a device, a pipe) is read up to
    ROBOTS_MAX_BYTES, one byte past it, not to its end."""
    fifo = tmp_path / "robots.txt"
    os.mkfifo(fifo)
    read = str(fifo) if source == "fifo" else "-"
    command = [sys.executable, "-m", "scrapy", "robots", "lint"]
    process = subprocess.Popen(
        [*command, "-s", "ROBOTS_MAX_BYTES=10000", read],
        cwd=tmp_path,
        env=command_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    with process:
        if source == "fifo":
            with fifo.open("wb", buffering=0) as stream:
                written = _feed(stream, 64 * 2**20)
        else:
            written = _feed(process.stdin, 64 * 2**20)
        out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err
    assert b"[body-too-large] the body is over 10,000 bytes" in out
    # What the pipe holds, beyond what was read: not the 64 MiB offered.
    assert written <= 2 * 2**20


def test_lint_with_standard_input_closed(tmp_path: Path) -> None:
    closed = f'exec "{sys.executable}" -m scrapy robots lint - <&-'
    done = run(tmp_path, ["sh", "-c", closed])
    assert "cannot read standard input: it is closed" in one_line_error(done)


def test_lint_profile_is_not_cprofile(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(ROBOTS.encode())
    done = scrapy(tmp_path, "lint", "robots.txt", "--profile", "google", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["profile"] == "google"
    # Google ignores Crawl-delay and Content-Signal, and says so.
    assert "unsupported-directive" in {d["code"] for d in document["diagnostics"]}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["robots.txt"]


def test_lint_url(site: dict[str, Server], tmp_path: Path) -> None:
    rules = site["rules"]
    rules.route("/staging-robots.txt", BROKEN)
    done = scrapy(tmp_path, "lint", rules.url("/staging-robots.txt"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith(f"{rules.url('/staging-robots.txt')}:3: error ")
    # The URL given, as is: not the origin's /robots.txt.
    assert rules.count("/staging-robots.txt") == 1
    assert rules.count("/robots.txt") == 0

    done = scrapy(tmp_path, "lint", rules.url("/robots.txt"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["error"] == 0


def test_lint_url_without_robots_txt(site: dict[str, Server], tmp_path: Path) -> None:
    done = scrapy(tmp_path, "lint", site["missing"].url("/robots.txt"))
    assert "answered HTTP 404" in one_line_error(done)


def test_lint_unreachable_url(tmp_path: Path) -> None:
    url = f"{REFUSED}/robots.txt"
    done = scrapy(tmp_path, "lint", url, "-s", "RETRY_ENABLED=False")
    assert f"cannot fetch {url}: " in one_line_error(done)


@pytest.mark.parametrize("runs", [1, 2])
def test_lint_url_cut_short_is_not_linted(
    site: dict[str, Server], tmp_path: Path, runs: int
) -> None:
    # With DOWNLOAD_FAIL_ON_DATALOSS off the download gives what came: the
    # lines lost would be missing from the lint, as they are from a crawl's
    # rules (check says unreachable).  Twice with Scrapy's HTTP cache, which
    # keeps no flags before Scrapy 2.19: the second run's replay is the cut
    # body alone, not to be linted as the whole file either.
    rules = site["rules"]
    rules.route("/robots.txt", handler=truncated(ROBOTS.encode()))
    url = rules.url("/robots.txt")
    settings = ["-s", "DOWNLOAD_FAIL_ON_DATALOSS=False"]
    if runs > 1:
        settings += ["-s", "HTTPCACHE_ENABLED=1"]
    for _ in range(runs):
        done = scrapy(tmp_path, "lint", url, *settings)
        assert f"{url} was cut short (truncated body)" in one_line_error(done)
    assert rules.count("/robots.txt") == 1


def _multi_member_bomb() -> bytes:
    """Rules in a small gzip member, then 4 members of 16 MiB of NULs each
    (64 MiB decoded from ~65 KB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    member = b"".join([*(compressor.compress(zeros) for _ in range(16))])
    member += compressor.flush()
    return gzip.compress(b"User-agent: *\nDisallow: /a\n") + member * 4


def test_lint_url_decodes_within_robots_max_bytes(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    server.route(
        "/robots.txt", _multi_member_bomb(), headers={"Content-Encoding": "gzip"}
    )
    done = scrapy(
        tmp_path,
        "lint",
        server.url("/robots.txt"),
        "--json",
        "-s",
        "ROBOTS_MAX_BYTES=1000",
    )
    assert done.returncode == 0, done.stderr
    (too_large,) = [
        d
        for d in json.loads(done.stdout)["diagnostics"]
        if d["code"] == "body-too-large"
    ]
    # One byte past the limit was decoded, not the 64 MiB.
    assert too_large["message"].startswith("the body is over 1,000 bytes;")


def test_lint_url_with_an_unknown_encoding(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    server.route("/robots.txt", ROBOTS, headers={"Content-Encoding": "compress"})
    url = server.url("/robots.txt")
    error = one_line_error(scrapy(tmp_path, "lint", url))
    assert f"cannot decode {url}: Content-Encoding 'compress' is not supported" in error


def test_check_with_an_unknown_encoding(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    # check fetches through the same bounded decoder as a crawl: a body it
    # cannot decode is an unreachable robots.txt, not garbage parsed.
    server = make_server()
    server.route("/robots.txt", ROBOTS, headers={"Content-Encoding": "compress"})
    done = scrapy(tmp_path, "check", server.url("/a"), "--json")
    assert done.returncode == 1, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert (result["allowed"], result["reason"]) == (False, "unreachable")
    assert result["outcome"]["detail"] == "Content-Encoding 'compress' is not supported"


def test_check_and_lint_url_on_stacked_empty_members(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    # 772 bytes of gzip, gzip, gzip unfolding into 4 million empty members
    # (issue 24, F1): both commands decoded them all (9-10 s); they stop at
    # the 256th member, which the outcome's detail says, and read the rules.
    body = (Path(__file__).parent / "data/hostile/gzip3-empty-members.gz").read_bytes()
    server = make_server()
    server.route("/robots.txt", body, headers={"Content-Encoding": "gzip, gzip, gzip"})
    done = scrapy(tmp_path, "check", server.url("/private"), "--json")
    (result,) = json.loads(done.stdout)["results"]
    assert result["allowed"] is False
    assert result["outcome"]["detail"] == (
        "HTTP 200, cut at 512000 bytes (more than 256 gzip members)"
    )
    done = scrapy(tmp_path, "lint", server.url("/robots.txt"), "--json")
    assert done.returncode == 0, done.stderr
    linted = json.loads(done.stdout)
    assert linted["counts"]["error"] == 0
    # The cut is said: the decoded body is far below the limit, so
    # body-too-large cannot say it.
    cut = linted["diagnostics"][0]
    assert (cut["line"], cut["code"]) == (0, "download-cut")
    assert cut["message"].endswith(
        "(more than 256 gzip members); only those are linted"
    )
    assert server.count("/robots.txt") == 2


# -- terminal safety --------------------------------------------------------------

#: Escape sequences that would recolour, retitle and clear the terminal, an
#: 8-bit CSI, a bidi override and an undecodable byte, in a rule pattern, a
#: Content-Signal value and lines lint complains about.
HOSTILE = (
    b"User-agent: *\n"
    b"Disallow: /red\x1b[31m\n"
    b"Content-Signal: ai-train=\x1b]0;pwned\x07, search=yes\n"
    b"Disallow: x\x1b[2J\n"
    b"Disalow\xc2\x9b2J\xe2\x80\xae: /y\n"
    b"Foo\xff: bar\n"
)
UNSAFE = ("\x1b", "\x07", "\x9b", "\u202e", "\udcff")


def assert_terminal_safe(text: str) -> None:
    assert not [char for char in UNSAFE if char in text], text
    assert "\\x1b" in text


def test_check_text_escapes_control_characters(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    server.route("/robots.txt", HOSTILE)
    url = server.url("/red%1B[31m")
    done = scrapy(tmp_path, "check", url)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert_terminal_safe(done.stdout)
    row = done.stdout.splitlines()[1]
    assert "rule_disallow (line 2: Disallow: /red\\x1b[31m)" in row
    assert "ai-train=\\x1b]0;pwned\\x07" in row

    # JSON escapes them already: the values are given as they are.
    done = scrapy(tmp_path, "check", url, "--json")
    result = json.loads(done.stdout)["results"][0]
    assert result["rule"]["pattern"] == "/red\x1b[31m"
    assert result["content_signals"]["ai-train"] == "\x1b]0;pwned\x07"


def test_lint_text_escapes_control_characters(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(HOSTILE)
    done = scrapy(tmp_path, "lint", "robots.txt")
    assert "Traceback" not in done.stderr
    assert_terminal_safe(done.stdout)
    assert "did you mean '/x\\x1b[2J'?" in done.stdout
    assert "'disalow\\x9b2j\\u202e'" in done.stdout

    done = scrapy(tmp_path, "lint", "robots.txt", "--json")
    messages = [d["message"] for d in json.loads(done.stdout)["diagnostics"]]
    assert any("'/x\x1b[2J'" in message for message in messages)


def test_undecodable_octets_are_shown_as_their_percent_escapes(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server()
    robots = b"User-agent: *\nContent-Signal: ai-train=\xe9\nDisallow: /\xe9t\xe9\n"
    server.route("/robots.txt", robots)
    url = server.url("/%E9t%E9")
    done = scrapy(tmp_path, "check", url)
    assert done.returncode == 1, done.stderr
    row = done.stdout.splitlines()[1]
    # As the log line, the report and the records show them.
    assert "rule_disallow (line 3: Disallow: /%E9t%E9)" in row
    assert "content-signal ai-train=%E9" in row

    done = scrapy(tmp_path, "check", url, "--json")
    result = json.loads(done.stdout)["results"][0]
    assert result["rule"]["pattern"] == "/%E9t%E9"
    assert result["rule"]["text"] == "Disallow: /%E9t%E9"
    assert result["content_signals"] == {"ai-train": "%E9"}
    # Text any JSON reader takes: no lone surrogate.
    json.dumps(result, ensure_ascii=False).encode("utf-8")

    signal = b"User-agent: *\nContent-Signal: ai-tr\xe9in=maybe\n"
    (tmp_path / "robots.txt").write_bytes(signal)
    said = "ai-tr%E9in='maybe' is neither yes nor no"
    done = scrapy(tmp_path, "lint", "robots.txt")
    assert said in done.stdout, done.stdout
    done = scrapy(tmp_path, "lint", "robots.txt", "--json")
    messages = [d["message"] for d in json.loads(done.stdout)["diagnostics"]]
    assert any(said in message for message in messages), messages


# -- profiles -------------------------------------------------------------------


def test_check_follows_the_profiles_status_policy(
    site: dict[str, Server], tmp_path: Path
) -> None:
    url = site["failing"].url("/page")
    rfc = scrapy(tmp_path, "check", url, "--agent", "Yandex", "--json")
    assert rfc.returncode == 1, rfc.stderr
    done = scrapy(
        tmp_path, "check", url, "--agent", "Yandex", "--profile", "yandex", "--json"
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["profile"] == "yandex"
    (page,) = document["results"]
    assert page["allowed"] is True
    assert page["outcome"]["kind"] == "unavailable"


def test_check_refuses_an_agent_the_profile_does_not_answer_for(
    tmp_path: Path,
) -> None:
    done = scrapy(
        tmp_path, "check", f"{REFUSED}/", "--agent", "YandexBot", "--profile", "yandex"
    )
    error = one_line_error(done)
    assert error.startswith(
        "scrapy robots: error: --agent 'YandexBot' does not suit --profile 'yandex':"
        " the yandex profile answers for the group labels 'Yandex' or"
        " 'YandexAdditionalBot' only, not 'yandexbot'"
    )
    assert error.endswith(
        "; name one of those labels with --agent, such as --agent Yandex"
    )


def test_check_refuses_the_project_agent_for_a_bounded_profile(
    tmp_path: Path,
) -> None:
    """Neither --agent nor ROBOTS_USER_AGENT given: the error says where the
    agent came from and names --agent, in the command's own words."""
    done = scrapy(tmp_path, "check", f"{REFUSED}/", "--profile", "yandex")
    error = one_line_error(done)
    assert error.startswith("scrapy robots: error: the project's agent 'Scrapy/"), error
    assert "does not suit --profile 'yandex'" in error
    assert "ROBOTS_USER_AGENT" not in error
    assert "ValueError" not in error
    assert error.endswith("such as --agent Yandex")


def test_check_spider_whose_agent_the_profile_refuses(tmp_path: Path) -> None:
    """With --spider the crawl's own message (it names the settings the
    crawl reads), as one line without the exception's class."""
    project = _project_with_spiders(tmp_path)
    done = scrapy(
        project, "check", f"{REFUSED}/", "--spider", "attribute", "--profile", "bing"
    )
    error = one_line_error(done)
    assert error.startswith(
        "scrapy robots: error: the robots_user_agent attribute of spider"
        " 'attribute', 'ExampleBot/2.0 (+https://example.com)', does not suit"
        " ROBOTS_PROFILE 'bing'"
    ), error


def test_lint_profile_yandex_flags_what_yandex_ignores(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(
        b"Disallow: /a\nUser-agent: Yandex\nDisalow: /x\nDisallow /y\nDisallow:\n"
    )
    done = scrapy(tmp_path, "lint", "robots.txt", "--profile", "yandex", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["profile"] == "yandex"
    assert [(d["line"], d["code"]) for d in document["diagnostics"]] == [
        (1, "rule-outside-group"),
        (3, "typo-ignored"),
        (4, "missing-colon-ignored"),
        (5, "empty-disallow-allows-all"),
    ]


USAGE_ROBOTS = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y, search=y
"""


@pytest.mark.parametrize("purposes", [(), ("-s", "ROBOTS_PURPOSES=train-ai")])
def test_check_shows_usage_preferences(
    make_server: Callable[..., Server], tmp_path: Path, purposes: tuple[str, ...]
) -> None:
    """Each URL's Content-Usage preferences and the lines that gave them; a
    crawl for train-ai is refused where they say train-ai=n."""
    server = make_server()
    server.route("/robots.txt", USAGE_ROBOTS)
    urls = [server.url("/test"), server.url("/never/test"), server.url("/ai-ok/x")]
    done = scrapy(tmp_path, "check", *urls, "--json", *purposes)
    # /never/ is disallowed either way.
    assert done.returncode == 1, done.stderr
    test, never, ai_ok = (by_url(json.loads(done.stdout))[url] for url in urls)
    assert test["usage"] == {"train-ai": False, "ai-use": None, "search": None}
    assert test["usage_rules"] == [
        {
            "line": 4,
            "path": None,
            "preference": "train-ai=n",
            "text": "Content-Usage: train-ai=n",
        }
    ]
    assert test["allowed"] is not bool(purposes)
    if purposes:
        assert test["reason"] == "content_usage"
        assert test["note"] == (
            "Content-Usage refuses train-ai (line 4: Content-Usage: train-ai=n)"
        )
    # Disallowed by robots.txt: no preferences at all.
    assert never["usage"] == {}
    assert never["usage_rules"] == []
    assert never["reason"] == "rule_disallow"
    assert ai_ok["allowed"] is True
    assert ai_ok["usage"] == {"train-ai": True, "ai-use": None, "search": True}
    assert [rule["line"] for rule in ai_ok["usage_rules"]] == [5]

    text = scrapy(tmp_path, "check", *urls, *purposes)
    _, test_row, never_row, ai_ok_row = text.stdout.splitlines()
    assert test_row.endswith("content-usage train-ai=n (line 4)")
    if purposes:
        assert test_row.startswith("DISALLOWED ")
        assert "content_usage (Content-Usage refuses train-ai (line 4: " in test_row
    assert "content-usage" not in never_row
    # (A training crawl's row then ends with what TDMRep says.)
    assert "  content-usage train-ai=y, search=y (line 5)" in ai_ok_row


def test_check_shows_the_hash_of_the_body_read(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """``sha256`` of the robots.txt read (``--json``: ``outcome.sha256``);
    for an unreachable one, the hash of the file kept from before."""
    server = make_server()
    server.route("/robots.txt", ROBOTS)
    digest = hashlib.sha256(ROBOTS.encode()).hexdigest()
    # A shared store keeps the outcome; lifetime 0: fetched again each time.
    store = (
        "-s",
        "ROBOTS_STORE=sqlite",
        "-s",
        f"ROBOTS_STORE_URL={tmp_path / 'robots.sqlite3'}",
        "-s",
        "ROBOTS_CACHE_LIFETIME=0",
        "-s",
        "RETRY_ENABLED=False",
    )
    url = server.url("/page")
    text = scrapy(tmp_path, "check", url, *store)
    assert text.returncode == 0, text.stderr
    row = text.stdout.splitlines()[1]
    assert f"parsed (HTTP 200) {server.url('/robots.txt')}  sha256 {digest}  " in row
    outcome = json.loads(scrapy(tmp_path, "check", url, "--json", *store).stdout)[
        "results"
    ][0]["outcome"]
    assert (outcome["sha256"], outcome["fallback_sha256"]) == (digest, None)

    server.route("/robots.txt", "", status=503)
    text = scrapy(tmp_path, "check", url, *store)
    assert text.returncode == 1, text.stderr
    row = text.stdout.splitlines()[1]
    assert row.endswith(
        f"unreachable (HTTP 503) {server.url('/robots.txt')}  fallback-sha256 {digest}"
    )
    outcome = json.loads(scrapy(tmp_path, "check", url, "--json", *store).stdout)[
        "results"
    ][0]["outcome"]
    assert (outcome["sha256"], outcome["fallback_sha256"]) == (None, digest)
