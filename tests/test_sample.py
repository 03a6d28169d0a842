"""The sample project, run end to end: the demo site and three spiders.

``sample_project/run_sample.py`` runs in a subprocess (its own reactor,
bounded in time) and writes each spider's summary as JSON; these tests read
the summaries: what was crawled and dropped on each demo host, and why.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider

from tests.support.utils import coroutine_test, usage_error

SAMPLE = Path(__file__).resolve().parent.parent / "sample_project"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    output = tmp_path_factory.mktemp("sample")
    done = subprocess.run(
        [sys.executable, str(SAMPLE / "run_sample.py"), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summaries = {
        name: json.loads((output / f"{name}.summary.json").read_text(encoding="utf-8"))
        for name in ("sample", "news", "trainer")
    }
    return {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "output": output,
        "summaries": summaries,
    }


def hosts(run: dict[str, Any], spider: str) -> dict[str, dict[str, Any]]:
    return {host["name"]: host for host in run["summaries"][spider]["hosts"]}


def drops(host: dict[str, Any]) -> list[tuple[str, str, int | None, str | None]]:
    return sorted(
        (drop["path"], drop["cause"], drop["line"], drop["rule"])
        for drop in host["dropped"]
    )


def test_every_crawl_finished(run: dict[str, Any]) -> None:
    for name, summary in run["summaries"].items():
        assert summary["finish_reason"] == "finished", name
    assert run["summaries"]["sample"]["agent"].startswith("SampleBot/")
    assert run["summaries"]["news"]["agent"] == "SampleNewsBot/1.0"


def test_summary_printed(run: dict[str, Any]) -> None:
    stdout = run["stdout"]
    for name in ("sample", "news", "trainer"):
        assert f"== {name} (agent " in stdout
    assert "line 3: Disallow: /private/" in stdout
    assert "robots.txt unreachable (HTTP 503)" in stdout


def test_every_error_in_the_log_is_explained_by_the_summary(
    run: dict[str, Any],
) -> None:
    # A newcomer running the sample sees one ERROR line: Scrapy's retry
    # middleware giving up on the demo host whose robots.txt answers 503.
    # The summary must place it; any other ERROR is a bug of the sample.
    down = hosts(run, "sample")["down"]["origin"]
    errors = [line for line in run["stderr"].splitlines() if " ERROR: " in line]
    assert errors
    for line in errors:
        message = line.split(" ERROR: ", 1)[1]
        assert message.startswith(f"Gave up retrying <GET {down}/robots.txt> "), line
    stdout = " ".join(run["stdout"].split())
    assert f'ERROR "Gave up retrying <GET {down}/robots.txt>"' in stdout
    assert "is Scrapy's RetryMiddleware saying so, not a crash" in stdout


def test_disallow_rules_with_their_lines(run: dict[str, Any]) -> None:
    rules = hosts(run, "sample")["rules"]
    assert rules["robots"] == "parsed"
    assert sorted(rules["crawled"]) == [
        "/",
        "/about",
        "/news/",
        "/news/archive",
        "/news/launch",
    ]
    assert drops(rules) == [
        ("/drafts/next", "rule", 4, "Disallow: /drafts/"),
        ("/private/", "rule", 3, "Disallow: /private/"),
        ("/private/salaries", "rule", 3, "Disallow: /private/"),
    ]
    assert rules["items"] == 5


def test_each_spider_gets_its_own_group(run: dict[str, Any]) -> None:
    assert list(hosts(run, "news")) == ["rules"]
    rules = hosts(run, "news")["rules"]
    assert sorted(rules["crawled"]) == ["/news/", "/news/archive", "/news/launch"]
    assert drops(rules) == [
        ("/", "rule", 8, "Disallow: /"),
        ("/about", "rule", 8, "Disallow: /"),
    ]


def test_crawl_delay(run: dict[str, Any]) -> None:
    slow = hosts(run, "sample")["slow"]
    assert slow["crawl_delay"] == 1
    assert sorted(slow["crawled"]) == ["/", "/a", "/b", "/c"]
    assert slow["items"] == 4
    # Measured gaps are reported (their size is a benchmark's business).
    assert slow["gaps"]["count"] == 3
    assert run["summaries"]["sample"]["stats"]["robots/crawl_delay/origins"] == 1


def test_unreachable_robots_txt_crawls_nothing(run: dict[str, Any]) -> None:
    down = hosts(run, "sample")["down"]
    assert (down["robots"], down["robots_status"]) == ("unreachable", 503)
    assert down["crawled"] == []
    assert drops(down) == [("/", "unreachable", None, None)]


def test_unavailable_robots_txt_crawls_everything(run: dict[str, Any]) -> None:
    gone = hosts(run, "sample")["gone"]
    assert (gone["robots"], gone["robots_status"]) == ("unavailable", 404)
    assert sorted(gone["crawled"]) == ["/", "/a", "/b"]
    assert gone["dropped"] == []
    assert gone["items"] == 3


def test_redirected_robots_txt_applies_to_the_original_host(
    run: dict[str, Any],
) -> None:
    moved = hosts(run, "sample")["moved"]
    assert moved["robots"] == "parsed"
    assert sorted(moved["crawled"]) == ["/", "/current"]
    assert drops(moved) == [
        ("/archive/2019", "rule", 4, "Disallow: /archive/"),
        ("/archive/2020", "rule", 4, "Disallow: /archive/"),
    ]
    assert moved["items"] == 2


def test_sitemaps_from_robots_txt(run: dict[str, Any]) -> None:
    summary = run["summaries"]["sample"]
    maps = hosts(run, "sample")["maps"]
    assert maps["robots"] == "parsed"
    assert summary["sitemaps"] == [maps["origin"] + "/sitemap_index.xml"]
    assert summary["stats"]["robots/sitemaps/discovered"] == 1
    # The pages are linked from nowhere: only the sitemaps lead to them.
    pages = {"/articles/1", "/articles/2", "/products/1", "/products/2"}
    sitemaps = {
        "/sitemap_index.xml",
        "/sitemaps/articles.xml.gz",
        "/sitemaps/products.xml.gz",
    }
    assert set(maps["crawled"]) == {"/"} | pages | sitemaps
    assert maps["items"] == 5
    assert (
        "sitemaps discovered in robots.txt: " + summary["sitemaps"][0] in run["stdout"]
    )


def test_page_directives(run: dict[str, Any]) -> None:
    tags = hosts(run, "sample")["tags"]
    assert sorted(tags["crawled"]) == [
        "/",
        "/header-noindex",
        "/meta-nofollow",
        "/meta-noindex",
        "/normal",
    ]
    assert tags["noindex"] == {"/header-noindex": 1, "/meta-noindex": 1}
    assert tags["nofollow"] == {"/meta-nofollow": 1}
    assert tags["items"] == 3
    stats = run["summaries"]["sample"]["stats"]
    assert stats["robots/directives/items_dropped"] == 2
    assert stats["robots/directives/requests_dropped"] == 1


def test_content_signal(run: dict[str, Any]) -> None:
    searcher = hosts(run, "sample")["signals"]
    assert searcher["content_signals"] == {"search": True, "ai-train": False}
    assert sorted(searcher["crawled"]) == ["/", "/recipes/1", "/recipes/2"]
    assert searcher["items"] == 3
    trainer = hosts(run, "trainer")
    assert trainer["signals"]["crawled"] == []
    assert drops(trainer["signals"]) == [("/", "content_signal", None, None)]
    assert sorted(trainer["gone"]["crawled"]) == ["/", "/a", "/b"]


def test_stats_add_up(run: dict[str, Any]) -> None:
    stats = run["summaries"]["sample"]["stats"]
    assert stats["robots/forbidden/rule"] == 5
    assert stats["robots/forbidden/unreachable"] == 1
    assert stats["robots/forbidden"] == 6
    assert stats["robots/outcome/parsed"] == 6
    assert stats["robots/outcome/unavailable"] == 1
    assert stats["robots/outcome/unreachable"] == 1
    assert stats["robots/fetch_count"] == 8
    assert run["summaries"]["news"]["stats"]["robots/forbidden/rule"] == 2
    assert run["summaries"]["trainer"]["stats"]["robots/forbidden/content_signal"] == 1


def test_items_written(run: dict[str, Any]) -> None:
    for name, summary in run["summaries"].items():
        lines = (
            (run["output"] / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        )
        items = [json.loads(line) for line in lines]
        assert all(item["spider"] == name and item["title"] for item in items)
        assert len({item["url"] for item in items}) == len(items)
        assert len(items) == sum(host["items"] for host in summary["hosts"])
        assert len(items) == summary["stats"]["item_scraped_count"]
        assert len(items) == {"sample": 25, "news": 3, "trainer": 3}[name]
        [feed] = summary["feeds"]
        assert feed["items"] == len(items)


# -- what users copy ----------------------------------------------------------------


def _module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what its dataclasses look themselves up in
    spec.loader.exec_module(module)
    return module


def test_the_sample_imports_only_public_names_of_the_package() -> None:
    # The sample is what users copy: a private name may change at will.
    private = []
    for path in sorted(SAMPLE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module, names = node.module or "", [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                module, names = "", [a.name for a in node.names]
            else:
                continue
            parts = ".".join([module, *names]).split(".")
            if "scrapy_rfc9309" in parts and any(p.startswith("_") for p in parts):
                private.append(f"{path.name}:{node.lineno}")
    assert private == []


@coroutine_test
async def test_the_recorders_run_as_every_scrapy_release_calls_them() -> None:
    # Scrapy 2.13 passes spider=... to every middleware method; 2.14 and
    # newer pass none to a method where it is optional (and warn where it
    # is required), whatever release runs these tests.
    summary = _module("sample_summary", SAMPLE / "sample_project" / "summary.py")
    drops = object.__new__(summary.DropRecorder)
    directives = object.__new__(summary.DirectivesRecorder)
    drops.record = directives.record = summary.CrawlRecord()
    request = Request("http://a.test/")

    async def output() -> AsyncIterator[Any]:
        yield {"item": 1}

    for spider in ({"spider": Spider("s")}, {}):
        drops.process_exception(request=request, exception=ValueError(), **spider)
        got = directives.process_spider_output(response=None, result=output(), **spider)
        assert [item async for item in got] == [{"item": 1}]
    for method in (drops.process_exception, directives.process_spider_output):
        assert inspect.signature(method).parameters["spider"].default is None


# -- its command line ---------------------------------------------------------------


def _run_sample() -> Any:
    return _module("run_sample", SAMPLE / "run_sample.py")


def test_log_level_in_any_case(tmp_path: Path) -> None:
    args = _run_sample().parse_args(["--log-level", "debug", "--output", str(tmp_path)])
    assert args.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--log-level", "loud"],
            "argument --log-level: invalid choice: 'LOUD' (choose from 'CRITICAL',"
            " 'ERROR', 'WARNING', 'INFO', 'DEBUG')",
        ),
        (
            ["--port", "99999"],
            "argument --port: '99999' is not a port: a whole number from 0 to 65535"
            " is expected",
        ),
        (
            ["--port", "abc"],
            "argument --port: 'abc' is not a port: a whole number from 0 to 65535"
            " is expected",
        ),
        (
            ["--first-address", "::1"],
            "argument --first-address: '::1' is not an IPv4 address with 7 more after"
            " it (such as 127.0.0.2)",
        ),
        (["--output", "{file}"], "argument --output: {file} is not a directory"),
        (
            ["--output", "{file}/below"],
            "argument --output: cannot write in {file}/below: Not a directory",
        ),
    ],
)
def test_a_bad_argument_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Exit status 2, one line on standard error, before the demo site
    starts: no traceback."""
    file = tmp_path / "a-file"
    file.write_text("")
    command = [sys.executable, str(SAMPLE / "run_sample.py")]
    assert usage_error([*command, *(arg.format(file=file) for arg in args)]) == [
        f"run_sample.py: error: {message.format(file=file)}"
    ]
