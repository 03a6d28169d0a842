"""The code examples of README.md and docs/ run, so that they cannot go stale.

Every fenced block marked ``python`` (or ``pycon``, or MyST's
``{code-block} python``) of README.md and docs/**/*.md is checked, in the
order of its page, one test per page:

- a block holding ``>>>`` lines is a doctest: each statement runs and its
  printed output is compared (``...`` matches anything, runs of whitespace
  compare equal);
- a block of ``NAME = value`` lines only is a ``settings.py`` fragment: it is
  run, every upper-case name it sets must be a setting of this package
  (``_defaults.DEFAULTS``), of Scrapy, or of a project it is shown with
  (scrapy-redis), every component path it names inside ``scrapy`` or
  ``scrapy_rfc9309`` must import, and the package's middlewares must accept
  its ``ROBOTS_*`` values (they refuse a bad value at start-up);
- any other block runs as a module (a page's blocks share one namespace, so a
  later block may use what an earlier one defined).

``json`` blocks must parse.  Blocks of other languages (``console``, ``text``,
unmarked) are not run, but for the ``scrapy robots lint`` examples (text and
``--json``) of the command line page and the sample's summary on the
getting-started page, which are run and compared (ports, times and paths
masked); the getting-started block enabling the middlewares by hand must be
what the add-on enables.  The settings page must
name every setting of ``_defaults.DEFAULTS``, the engine page every lint code,
and every test the pages name (``test_x.py``, ``test_name``) must exist.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import json
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.settings import default_settings
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from scrapy_rfc9309._defaults import DEFAULTS
from scrapy_rfc9309.lint import CODES
from scrapy_rfc9309.stores import STORES

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [page for page in PAGES if "_build" not in page.parts]

# Settings of projects the docs show beside this one (scrapy-redis's fleet
# example); they are not Scrapy's and not ours, but they are not typos either.
OTHER_PROJECTS_SETTINGS = {"REDIS_URL", "SCHEDULER_PERSIST"}

# Settings whose values name components, checked by importing them.
COMPONENT_SETTINGS = {
    "ADDONS",
    "DOWNLOADER_MIDDLEWARES",
    "SPIDER_MIDDLEWARES",
    "ITEM_PIPELINES",
    "EXTENSIONS",
}

TESTS = ROOT / "tests"
_TEST_DEF = re.compile(r"^\s*(?:async )?def (test_\w+)", re.MULTILINE)
_TEST_FILE = re.compile(r"(?<![\w.])(test_\w+)\.py\b")
_TEST_NAME = re.compile(r"(?<![\w./])(test_\w+)\b(?!\.py)")
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str

    @property
    def where(self) -> str:
        page = (
            self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        )
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, nested ones included."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        info = opening["info"].strip()
        language = info.split()[0].lower() if info else ""
        if language == "{code-block}":
            language = info.split()[1].lower() if len(info.split()) > 1 else ""
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = lines[end].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(
                fence[0]
            ):
                break
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            end += 1
        if language.startswith("{"):
            # A MyST directive (toctree, eval-rst): its body may hold blocks.
            language = "myst-directive"
        found.append(Block(page, index + 1, language, "\n".join(body) + "\n"))
        index = end + 1
    return found


def _is_settings_fragment(code: str) -> bool:
    tree = ast.parse(code)
    return bool(tree.body) and all(
        isinstance(node, ast.Assign)
        and all(
            isinstance(target, ast.Name) and target.id.isupper()
            for target in node.targets
        )
        for node in tree.body
    )


def _compile(block: Block) -> types.CodeType:
    # dont_inherit: the examples run as written, not under this module's
    # ``from __future__ import annotations``.
    return compile(block.code, block.where, "exec", dont_inherit=True)


def _check_settings(block: Block) -> None:
    values: dict[str, Any] = {}
    exec(_compile(block), {}, values)
    known = set(DEFAULTS) | set(dir(default_settings)) | OTHER_PROJECTS_SETTINGS
    unknown = sorted(name for name in values if name not in known)
    assert not unknown, f"{block.where}: unknown settings {unknown}"
    for name in COMPONENT_SETTINGS & set(values):
        for path in values[name]:
            if isinstance(path, str) and path.split(".")[0] in {
                "scrapy",
                "scrapy_rfc9309",
            }:
                load_object(path)  # raises when the example names a lost class
    # The package's components refuse bad values at start-up: build them with
    # the fragment's settings (a shared store is named, not opened, here).
    store = str(values.get("ROBOTS_STORE", "memory"))
    load_object(STORES.get(store.lower(), store))
    settings = {name: value for name, value in values.items() if name != "ADDONS"}
    settings["ROBOTS_STORE"] = "memory"
    crawler = get_crawler(Spider, settings_dict=settings)
    crawler.spider = crawler._create_spider("docs_example")
    for component in (
        "scrapy_rfc9309.RobotsMiddleware",
        "scrapy_rfc9309.DirectivesMiddleware",
        "scrapy_rfc9309.sitemaps.SitemapsMiddleware",
    ):
        with contextlib.suppress(NotConfigured):  # off by a valid setting
            load_object(component).from_crawler(crawler)


def _run_doctest(block: Block, namespace: dict[str, Any]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, namespace, block.where, block.where, 0)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    report: list[str] = []
    runner.run(test, out=report.append, clear_globs=False)
    namespace.update(test.globs)  # DocTest ran on a copy; later blocks see it
    assert runner.failures == 0, f"{block.where}: doctest failed\n" + "".join(report)


def check_page(page: Path) -> int:
    """Run the examples of ``page``; how many were run."""
    # A module of its own, as a file of the user's would be (dataclasses and
    # pickling look classes up through sys.modules).
    module = types.ModuleType(f"_docs_example_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    checked = 0
    for block in blocks(page):
        if block.language == "json":
            json.loads(block.code)
        elif block.language in {"python", "py", "pycon"}:
            if ">>>" in block.code:
                _run_doctest(block, namespace)
            elif _is_settings_fragment(block.code):
                _check_settings(block)
            else:
                exec(_compile(block), namespace)
        else:
            continue
        checked += 1
    return checked


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_examples_run(page: Path) -> None:
    check_page(page)


def test_examples_are_found() -> None:
    # The collection itself must not go quiet: the README's doctest and
    # settings, and the engine page's doctests, are examples it must see.
    assert check_page(ROOT / "README.md") >= 3
    kinds = {block.language for block in blocks(ROOT / "docs" / "engine.md")}
    assert "python" in kinds


def test_every_setting_is_documented() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = sorted(name for name in DEFAULTS if f"`{name}`" not in text)
    assert not missing, f"docs/settings.md does not describe {missing}"


def test_every_lint_code_is_documented() -> None:
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    missing = sorted(
        code
        for code, severity in CODES.items()
        if f"| `{code}` | {severity} |" not in text
    )
    assert not missing, f"docs/engine.md's lint table lacks {missing}"


def test_the_lint_example_prints_what_the_command_prints(tmp_path: Path) -> None:
    # docs/commands.md shows a robots.txt (a text block) and then what
    # `scrapy robots lint robots.txt` prints for it (a console block).
    page = blocks(ROOT / "docs" / "commands.md")
    shown = next(
        index
        for index, block in enumerate(page)
        if block.code.startswith("$ scrapy robots lint robots.txt\n")
    )
    body, console = page[shown - 1], page[shown]
    assert body.language == "text"
    (tmp_path / "robots.txt").write_text(body.code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", "lint", "robots.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.stdout == console.code.split("\n", 1)[1], run.stderr
    assert run.returncode == 1  # an error among the diagnostics


def test_the_tests_the_docs_name_exist() -> None:
    # The comparison with Scrapy's middleware (and other pages) name the test
    # behind each claim; a renamed or removed test must not leave it unbacked.
    sources = {path.name: path.read_text("utf-8") for path in TESTS.glob("*.py")}
    functions = {name for text in sources.values() for name in _TEST_DEF.findall(text)}
    missing = set()
    for page in PAGES:
        for code in re.findall(r"`([^`\n]+)`", page.read_text("utf-8")):
            missing.update(
                f"{page.name}: {name}.py"
                for name in _TEST_FILE.findall(code)
                if f"{name}.py" not in sources
            )
            missing.update(
                f"{page.name}: {name}"
                for name in _TEST_NAME.findall(code)
                if name not in functions
            )
    assert not missing, sorted(missing)


def _summary(text: str) -> list[str]:
    """The sample's printed summary, from its first spider on, without log
    lines, with what changes from run to run (ports, times, paths) masked.

    Each spider's stats are joined into one line without
    ``robots/crawl_delay/late*``: those count the requests a busy machine
    sent after their turn, which no transcript can predict."""
    lines = text[text.index("== ") :].splitlines()
    kept: list[str] = []
    for line in lines:
        if _LOG_LINE.match(line):
            continue
        line = re.sub(r"(127\.0\.0\.\d+):\d+", r"\1:PORT", line)
        line = re.sub(r"\d+\.\d+ s\b", "T s", line)
        line = re.sub(r"(written to )\S*/", r"\1OUT/", line)
        line = re.sub(r"(Items and summaries: )\S+", r"\1OUT", line)
        if line.startswith(" " * 9) and kept and kept[-1].startswith("  stats: "):
            kept[-1] += " " + line.strip()
            continue
        kept.append(line.rstrip())
    return [re.sub(r"robots/crawl_delay/late(_max)? [^,]+(, |$)", "", k) for k in kept]


def _log_lines(text: str) -> list[str]:
    """The log lines of a sample run (standard error) or of its transcript,
    without their time stamps, ports masked."""
    return [
        re.sub(r"(127\.0\.0\.\d+):\d+", r"\1:PORT", line.split(" ", 2)[2])
        for line in text.splitlines()
        if _LOG_LINE.match(line)
    ]


def test_the_sample_summary_is_what_the_sample_prints(tmp_path: Path) -> None:
    # The getting-started page shows what `bash scripts/sample.sh` prints;
    # a change to the sample or to the package must show there too.
    shown = next(
        block.code
        for block in blocks(ROOT / "docs" / "getting-started.md")
        if block.language == "text" and "== sample (agent " in block.code
    )
    script = ROOT / "sample_project" / "run_sample.py"
    run = subprocess.run(
        [sys.executable, str(script), "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert _summary(run.stdout) == _summary(shown)
    # And every line the log adds on the terminal (standard error).
    assert _log_lines(run.stderr) == _log_lines(shown)


def test_a_stale_example_fails(tmp_path: Path) -> None:
    # The checks above must catch an example gone stale: a wrong printed
    # answer, a setting that does not exist, a value the package refuses.
    stale = {
        "doctest": "```python\n>>> from scrapy_rfc9309 import product_token\n"
        '>>> product_token("ExampleBot/1.0")\n"examplebot/1.0"\n```\n',
        "setting": "```python\nROBOTS_CRAWL_DELAYS = 5\n```\n",
        "value": '```python\nROBOTS_CRAWL_DELAY_OVER_MAX = "wait"\n```\n',
        "boolean": '```python\nROBOTS_SITEMAPS = "maybe"\n```\n',
        "store": '```python\nROBOTS_STORE = "reddis"\n```\n',
        "component": '```python\nADDONS = {"scrapy_rfc9309.AddOn": 100}\n```\n',
        "code": "```python\nfrom scrapy_rfc9309 import parse_robots\n```\n",
        "json": '```json\n{"version": 1,}\n```\n',
    }
    for name, text in stale.items():
        page = tmp_path / f"{name}.md"
        page.write_text(text, encoding="utf-8")
        with pytest.raises((AssertionError, ValueError, ImportError, NameError)):
            check_page(page)


def _components(settings: dict[str, Any]) -> dict[str, dict[type, int | None]]:
    """The downloader and spider middlewares ``settings`` name, by class."""
    return {
        name: {
            load_object(key) if isinstance(key, str) else key: priority
            for key, priority in dict(settings.get(name, {})).items()
        }
        for name in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES")
    }


def test_the_components_enabled_by_hand_are_what_the_addon_enables() -> None:
    # getting-started's "enabled by hand" block lists every component the
    # add-on installs, at its priority: one left out does nothing quietly.
    from scrapy.settings import Settings

    from scrapy_rfc9309 import Addon

    page = ROOT / "docs" / "getting-started.md"
    shown = next(
        block.code
        for block in blocks(page)
        if block.language == "python" and "DOWNLOADER_MIDDLEWARES" in block.code
    )
    by_hand: dict[str, Any] = {}
    exec(compile(shown, str(page), "exec", dont_inherit=True), {}, by_hand)
    settings = Settings()
    Addon().update_settings(settings)
    added = {name: settings.getdict(name) for name in _components({})}
    assert _components(by_hand) == _components(added)
    assert by_hand["ROBOTSTXT_OBEY"] is False


def test_the_addon_goes_in_the_addons_dict_startproject_writes() -> None:
    # Scrapy's project template has an "ADDONS = {}" line: getting-started
    # says to fill it, as a line of one's own above it would be overwritten.
    import scrapy

    template = Path(scrapy.__file__).parent / "templates/project/module"
    lines = (template / "settings.py.tmpl").read_text("utf-8").splitlines()
    assert "ADDONS = {}" in lines
    text = (ROOT / "docs" / "getting-started.md").read_text("utf-8")
    assert "already has an `ADDONS = {}` line: put the add-on in that dict" in text


def test_the_lint_json_example_is_what_the_command_prints(tmp_path: Path) -> None:
    # docs/commands.md's `lint --json` example is the document the command
    # prints for the robots.txt shown above it (the text example's).
    page = blocks(ROOT / "docs" / "commands.md")
    shown = next(
        index
        for index, block in enumerate(page)
        if block.code.startswith("$ scrapy robots lint robots.txt\n")
    )
    body = page[shown - 1]
    document = next(
        block
        for block in page
        if block.language == "json" and '"command": "lint"' in block.code
    )
    (tmp_path / "robots.txt").write_text(body.code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", "lint", "robots.txt", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.stdout == document.code, run.stderr


def test_the_command_options_are_one_list() -> None:
    # A paragraph between two items would end the Options list there.
    text = (ROOT / "docs" / "commands.md").read_text("utf-8")
    options = text[text.index("Options:\n") : text.index("\nText output is safe")]
    items = [line for line in options.splitlines() if line.startswith("- ")]
    assert [item.split("`")[1].split()[0] for item in items] == [
        "--agent",
        "--spider",
        "--profile",
        "--json",
        "-s",
    ]
    assert all(
        not line or line.startswith(("- ", "  ", "Options:"))
        for line in options.splitlines()
    ), options
