"""The house rules, enforced: which way imports go, and how big a room is.

The engine (parser, matcher, stringifier, linter, outcomes, directives,
usage, TDMRep) is pure Python: a library user who imports it must not load
Scrapy or Twisted.  The stores never import the Scrapy components above
them.  No module is over 700 lines and no function over 80, except the few
listed in ``OVERSIZED`` with the reason they are; that list may only shrink
(an entry that grows, or that is back under the bound, fails here).
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_rfc9309"

#: The engine: modules a library user imports without Scrapy.
ENGINE = (
    "_agents",
    "_bytes",
    "_caches",
    "_checks",
    "_decode",
    "_defaults",
    "_json",
    "_model",
    "_read",
    "_redact",
    "_retryafter",
    "_sizes",
    "_sitemap_read",
    "_ssrf",
    "_tables",
    "_usage_table",
    "directives",
    "licenses",
    "lint",
    "match",
    "outcome",
    "parse",
    "profiles",
    "reasons",
    "stringify",
    "tdmrep",
    "urls",
    "usage",
)

#: The Scrapy components: what a store must never import.
COMPONENTS = (
    "_coordination",
    "_sitemap_budget",
    "_store",
    "addon",
    "commands",
    "fetch",
    "licensemiddleware",
    "middleware",
    "politeness",
    "provenancemiddleware",
    "sitemaps",
    "spidermiddleware",
    "tdmmiddleware",
    "usagemiddleware",
)

STORES = (
    "stores.contract",
    "stores._codec",
    "stores.base",
    "stores.memory",
    "stores.redis",
    "stores.sqlite",
)

MODULE_LINES = 700
FUNCTION_LINES = 80

#: Rooms over the bound, with their size: each size is a ceiling that may
#: go down, never up.  None today: issue 25 split the last ones (the reader
#: out of parse.py, table building out of match.py).
OVERSIZED: dict[str, int] = {}


#: Public engine modules whose public names are not all in ``__all__`` yet,
#: or single names (``module.name``) that must keep their name for now,
#: with the reason.  None today; the list may only shrink: an entry no
#: longer needed fails here.
UNDECLARED: dict[str, str] = {}


def _loaded_after(statement: str) -> list[str]:
    """The top-level packages loaded by a fresh interpreter running
    ``statement``, with the package's own submodules by full name."""
    script = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    output = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    ).stdout
    return list(json.loads(output))


@pytest.mark.parametrize(
    "statement",
    [
        "import scrapy_rfc9309",
        "from scrapy_rfc9309 import parse, lint, stringify, is_allowed, explain",
        *(f"import scrapy_rfc9309.{name}" for name in ENGINE),
    ],
)
def test_the_engine_loads_neither_scrapy_nor_twisted(statement: str) -> None:
    loaded = _loaded_after(statement)
    framework = sorted(
        name for name in loaded if name.split(".")[0] in ("scrapy", "twisted")
    )
    assert framework == []


@pytest.mark.parametrize("store", STORES)
def test_a_store_loads_no_scrapy_component(store: str) -> None:
    loaded = set(_loaded_after(f"import scrapy_rfc9309.{store}"))
    assert sorted(loaded & {f"scrapy_rfc9309.{name}" for name in COMPONENTS}) == []


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, also under ``TYPE_CHECKING``
    (a type-only import up the layers is still a dependency up them)."""
    module = path.relative_to(PACKAGE).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(module[: len(module) - node.level])
            target = [*base, *(node.module.split(".") if node.module else [])]
            if node.module is None:
                found.update(".".join([*base, alias.name]) for alias in node.names)
            else:
                found.add(".".join(target))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "scrapy_rfc9309."
        ):
            found.add(node.module.removeprefix("scrapy_rfc9309."))
    return found


def test_imports_go_one_way() -> None:
    engine = set(ENGINE)
    upward = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        imported = _imports(path)
        if name in engine:
            wrong = imported - engine
        elif name in STORES:
            wrong = imported & set(COMPONENTS)
        else:
            continue
        if wrong:
            upward[name] = sorted(wrong)
    assert upward == {}


def test_no_module_imports_another_s_private_names() -> None:
    # A name one module uses from another is declared there (in __all__),
    # not reached into: the leading underscore says it may change at will.
    reached = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level and node.module:
                reached.extend(
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                )
    assert reached == []


def _sizes() -> dict[str, int]:
    sizes = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        sizes[name] = source.count("\n")
        tree = ast.parse(source)
        for scope in ast.walk(tree):
            body = getattr(scope, "body", [])
            prefix = f"{scope.name}." if isinstance(scope, ast.ClassDef) else ""
            for node in body if isinstance(body, list) else []:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    sizes[f"{name}:{prefix}{node.name}"] = lines
    return sizes


def test_no_room_is_over_its_bound() -> None:
    over = {}
    for name, lines in _sizes().items():
        bound = FUNCTION_LINES if ":" in name else MODULE_LINES
        if lines > OVERSIZED.get(name, bound):
            over[name] = lines
    assert over == {}


def test_the_oversized_list_only_shrinks() -> None:
    sizes = _sizes()
    stale = {}
    for name in OVERSIZED:
        bound = FUNCTION_LINES if ":" in name else MODULE_LINES
        if sizes.get(name, 0) <= bound:
            stale[name] = sizes.get(name)
    assert stale == {}, "back under the bound: remove it from OVERSIZED"


def test_the_causes_are_the_documented_stats() -> None:
    import re
    import typing

    from scrapy_rfc9309.reasons import Cause, Reason

    stats = (PACKAGE.parent / "docs" / "stats.md").read_text(encoding="utf-8")
    row = next(line for line in stats.splitlines() if "robots/forbidden/rule" in line)
    documented = re.findall(r"`robots/forbidden/([a-z_]+)`", row)
    assert sorted(documented) == sorted(typing.get_args(Cause))
    # Every cause but "rule" is also the reason of the decision it carries.
    assert set(typing.get_args(Cause)) - {"rule"} <= set(typing.get_args(Reason))


def _defined(body: list[ast.stmt]) -> list[str]:
    """The names a module's top level defines (functions, classes,
    constants, type aliases; not the names it imports), also under a
    top-level ``if`` or ``try``."""
    names: list[str] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.extend(
                    name.id for name in ast.walk(target) if isinstance(name, ast.Name)
                )
        elif type(node).__name__ == "TypeAlias":
            names.append(node.name.id)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.If, ast.Try)):
            for inner in (node.body, node.orelse, getattr(node, "finalbody", [])):
                names.extend(_defined(inner))
    return names


def _undeclared(module: str) -> tuple[list[str] | None, list[str]]:
    """``module``'s ``__all__`` (``None`` if it has none) and the public
    names it defines that ``__all__`` does not list."""
    path = PACKAGE / f"{module.replace('.', '/')}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__"
            for target in node.targets
        ):
            declared = list(ast.literal_eval(node.value))
    public = [name for name in _defined(tree.body) if not name.startswith("_")]
    return declared, sorted(set(public) - set(declared or []))


def test_every_public_engine_name_is_declared() -> None:
    """A public engine module lists its public names in ``__all__``; what it
    defines besides is internal, and its name starts with ``_``."""
    undeclared = {}
    for module in ENGINE:
        if module.startswith("_") or module in UNDECLARED:
            continue
        declared, extra = _undeclared(module)
        if declared is None:
            undeclared[module] = ["no __all__"]
            continue
        imported = importlib.import_module(f"scrapy_rfc9309.{module}")
        missing = [name for name in declared if not hasattr(imported, name)]
        extra = [name for name in extra if f"{module}.{name}" not in UNDECLARED]
        if extra or missing:
            undeclared[module] = extra + [
                f"{name} (in __all__, missing)" for name in missing
            ]
    assert undeclared == {}


def test_the_undeclared_list_only_shrinks() -> None:
    stale = []
    for entry in UNDECLARED:
        module, _, name = entry.partition(".")
        declared, extra = _undeclared(module)
        if (name not in extra) if name else (declared is not None and not extra):
            stale.append(entry)
    assert stale == [], "declared or gone: remove it from UNDECLARED"


#: The import paths users write in their settings (and the docs show), with
#: what each must still name, whatever room the code moved to.
USER_PATHS = {
    "scrapy_rfc9309.Addon": "Addon",
    "scrapy_rfc9309.RobotsMiddleware": "RobotsMiddleware",
    "scrapy_rfc9309.middleware.RobotsMiddleware": "RobotsMiddleware",
    "scrapy_rfc9309.middleware.RobotsDisallowed": "RobotsDisallowed",
    "scrapy_rfc9309.politeness.PacingMiddleware": "PacingMiddleware",
    "scrapy_rfc9309.spidermiddleware.DirectivesMiddleware": "DirectivesMiddleware",
    "scrapy_rfc9309.usagemiddleware.UsageMiddleware": "UsageMiddleware",
    "scrapy_rfc9309.tdmmiddleware.TdmMiddleware": "TdmMiddleware",
    "scrapy_rfc9309.sitemaps.SitemapsMiddleware": "SitemapsMiddleware",
    "scrapy_rfc9309.parser.RobotParser": "RobotParser",
    "scrapy_rfc9309.stores.base.OutcomeStore": "OutcomeStore",
    "scrapy_rfc9309.stores.memory.MemoryStore": "MemoryStore",
    "scrapy_rfc9309.stores.sqlite.SQLiteStore": "SQLiteStore",
    "scrapy_rfc9309.stores.redis.RedisStore": "RedisStore",
}


@pytest.mark.parametrize("path", sorted(USER_PATHS))
def test_the_paths_users_write_keep_working(path: str) -> None:
    from scrapy.utils.misc import load_object

    assert load_object(path).__name__ == USER_PATHS[path]


def test_the_scrapy_robots_command_is_registered() -> None:
    from importlib.metadata import entry_points

    from scrapy_rfc9309.commands import RobotsCommand
    from scrapy_rfc9309.stores import STORES

    (command,) = entry_points(group="scrapy.commands", name="robots")
    assert command.load() is RobotsCommand
    # The short store names resolve to the classes above.
    assert set(STORES.values()) <= set(USER_PATHS)


#: The robots.txt engine proper (issue 25): the reader, the model, agent
#: selection, the matcher, its tables and the URL rules.
CORE = (
    "_agents",
    "_bytes",
    "_model",
    "_read",
    "parse",
    "match",
    "_tables",
    "_sizes",
    "urls",
)
#: Its size in lines today, a ceiling that may only go down.  Issue 25 asks
#: for 2,000; the split into rooms of at most 700 lines added module
#: headers, imports and the reader's Handler (2,600 before in three
#: modules), and what is left over 2,000 is documentation and the fast
#: paths that hold the speed floors (docs/development.md, "The house").
#: (2,588 until Document.from_dict's checks moved to _checks.py, uncounted.)
CORE_LINES = 2545


def test_the_engine_does_not_grow() -> None:
    sizes = _sizes()
    total = sum(sizes[f"{name}.py"] for name in CORE)
    assert total <= CORE_LINES, f"{total} lines: more than {CORE_LINES}"


def test_every_middleware_takes_scrapy_2_13_spider_argument() -> None:
    """Scrapy 2.13 calls middleware methods with ``spider=``, which the
    package's do not take: a class with such a method wears
    ``_compat.spider_argument``."""
    from scrapy_rfc9309._compat import _HOOKS

    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            hooks = [
                item.name
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and item.name in _HOOKS
            ]
            decorators = [ast.unparse(decorator) for decorator in node.decorator_list]
            if hooks and "spider_argument" not in decorators:
                bare.append(f"{path.name}: {node.name}")
    assert bare == []
