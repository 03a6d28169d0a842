"""The engine of this checkout against another revision's: the same answers,
and what each costs, for a change meant to keep both (a refactor).

    python -m benchmarks.compare REV --same [--quick]
    python -m benchmarks.compare REV --cost library [--step 8]
    python -m benchmarks.compare REV --time library [--rounds 15]

``REV`` (a commit, branch or tag) has its ``scrapy_rfc9309`` unpacked with
``git archive`` into ``.cache/compare/`` as the package ``base_rfc9309``,
imported beside this checkout's.

* ``--same`` asks both the same questions on Protego's 4,231 robots.txt
  files under every profile and on generated bodies of every shape (keys
  misspelt or without a colon, wildcards, escapes, byte-order marks, NUL,
  CR line ends, over-long lines), and prints the first answers that
  differ: decisions with their reason and line (from the text and from the
  read document), Crawl-delay, Content-Signal, Content-Usage, the
  document, its dict form, ``for_agent``, ``Matcher.document()``,
  ``estimated_bytes()``, ``stringify`` and ``lint``.  Exit status 1 if any
  differ.
* ``--cost ROUTE`` counts the instructions one run of a route takes, each
  package in a process of its own under valgrind (``apt-get install
  valgrind``), every ``--step``-th corpus file: deterministic to about
  0.5 %, where timing on a shared 2-core machine moves by 10 % from run to
  run.
* ``--time ROUTE`` times both, taking turns, and prints the median of the
  per-round ratios.

The routes: ``library`` (``parse`` then ``is_allowed`` for each URL, as
``benchmarks.engine`` times it), ``request`` (``explain_compiled`` on what
the memory store keeps), ``rules`` (the reader, one agent), ``document``
(the reader, whole documents) and ``build`` (the matcher's tables).  Not a
test.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks._corpus import ROOT, corpus
from benchmarks.engine import build_queries, clear_caches, interleaved

BASE = "base_rfc9309"
NEW = "scrapy_rfc9309"
PROFILES = ("rfc9309", "google", "yandex", "bing")
ROUTES = ("library", "request", "rules", "document", "build")
_MODULES = ("parse", "match", "lint", "stringify", "outcome", "_read", "_agents")
_MODULES += ("urls", "_bytes", "_tables", "profiles", "stores.memory")


def unpack(revision: str) -> Path:
    """``revision``'s package as ``base_rfc9309`` in a folder of its own
    (made once per commit); the folder to put on ``sys.path``."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    folder = ROOT / ".cache" / "compare" / commit
    package = folder / BASE
    if not package.is_dir():
        archive = subprocess.run(
            ["git", "archive", commit, NEW],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            with tarfile.open(fileobj=BytesIO(archive)) as tar:
                # Python >= 3.10.12 checks what it extracts (trusted here).
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(scratch, **safe)
            # The few absolute imports of the package name itself.
            for path in Path(scratch, NEW).rglob("*.py"):
                text = path.read_text()
                path.write_text(re.sub(rf"\b{NEW}\.", f"{BASE}.", text))
            try:
                Path(scratch, NEW).rename(package)
            except OSError:
                # Another process unpacked it meanwhile.
                if not package.is_dir():
                    raise
    return folder


def modules(name: str) -> dict[str, ModuleType]:
    return {module: importlib.import_module(f"{name}.{module}") for module in _MODULES}


# Generated bodies: the pieces lines are made of.
_KEYS = (
    "User-agent",
    "user-agent",
    "USER-AGENT",
    "useragent",
    "user agent",
    " user-agent",
    "Disallow",
    "disallow",
    "dissallow",
    "Allow",
    "allow",
    "Crawl-delay",
    "Sitemap",
    "Content-Signal",
    "Content-Usage",
    "Host",
    "disallowed",
    "al",
    "",
)
_PATTERNS = (
    "/",
    "",
    "/a",
    "/a/b",
    "/*",
    "/*.pdf$",
    "/a*b",
    "/a*b*c$",
    "*",
    "*x",
    "/x$",
    "$",
    "/%7e",
    "/%7E",
    "/~",
    "/\u30c4",
    "/%E3%83%84",
    "/a%2a",
    "/%",
    "/%zz",
    "/index.html",
    "/b/index.htm",
    "/**",
    "/a**",
    "/s*q=",
    "/a/*/c",
    "/*print",
    "http://x/a",
    "/a b",
    "/*/*/*$",
)
_VALUES = (
    "Googlebot",
    "*",
    "* x",
    "Bingbot",
    "Yandex",
    "ExampleBot",
    "examplebot/2",
    "0.5",
    "abc",
    "search=yes, ai-train=no",
    "/a train-ai=n",
    "http://x/s.xml",
)
_AGENTS = ("Googlebot", "ExampleBot/1.0", "Yandex", "bingbot", "")


def generated(rng: random.Random) -> bytes:
    """A robots.txt body of every shape the reader must get right."""
    lines = []
    for _ in range(rng.randint(0, 25)):
        key = rng.choice(_KEYS)
        rule = key.strip().lower() in ("disallow", "allow", "dissallow", "al")
        value = rng.choice(_PATTERNS if rule or rng.random() < 0.3 else _VALUES)
        line = key + rng.choice((": ", ":", " : ", " ", ":\t", "")) + value
        if rng.random() < 0.1:
            line += " # comment"
        if rng.random() < 0.03:
            line += "\0junk"
        if rng.random() < 0.03:
            line = "x" * rng.choice((5000, 17000)) + line
        lines.append(line)
    data = rng.choice(("\n", "\r\n", "\r")).join(lines).encode()
    if rng.random() < 0.05:
        data = b"\xef\xbb\xbf"[: rng.randint(1, 3)] + data
    return data + (b"\xff" if rng.random() < 0.05 else b"")


def _urls(rng: random.Random, rules: Sequence[str]) -> list[str]:
    urls = ["/", "/robots.txt", "https://h/a/b?c#d", "//h/x", "/%7e", "/\u30c4"]
    for pattern in rules[:20]:
        path = pattern.replace("*", rng.choice(("", "x", "/y/"))).rstrip("$") or "/"
        path = path if path.startswith("/") else "/" + path
        urls += [f"https://h{path}", f"https://h{path}z", path[: len(path) // 2 + 1]]
    return urls


def answers(
    engine: dict[str, ModuleType], body: bytes, profile: str, urls: Sequence[str]
) -> Iterator[object]:
    """Everything the engine answers about ``body``, as comparable values."""
    parse, match = engine["parse"].parse, engine["match"]
    for read_first in (False, True):
        document = parse(body, profile=profile)
        if read_first:
            yield (
                repr(document),
                document.to_dict(),
                engine["stringify"].stringify(document),
            )
        for agent in _AGENTS:
            try:
                matcher = match.compile(document, agent)
            except ValueError as exc:  # an agent a bounded profile refuses
                yield repr(exc)
                continue
            yield matcher.crawl_delay, matcher.content_signals, matcher.content_usage
            yield matcher.estimated_bytes(), repr(matcher.document(("s",)))
            yield [(url, matcher.explain(url), matcher.is_allowed(url)) for url in urls]
            if read_first:
                yield repr(document.for_agent(agent))
    yield [tuple(item) for item in engine["lint"].lint(body, profile=profile)]


def same(quick: bool) -> int:
    """The number of cases the two engines answer differently."""
    new, base = modules(NEW), modules(BASE)
    rng = random.Random(25)
    if quick:
        files = corpus()[::7]
        cases = [(body, PROFILES[n % 4]) for n, (_, body) in enumerate(files)]
    else:
        cases = [(body, profile) for _, body in corpus() for profile in PROFILES]
    bodies = 1500 if quick else 6000
    cases += [(generated(rng), PROFILES[n % 4]) for n in range(bodies)]
    differ = 0
    for body, profile in cases:
        rules = sorted(
            {r.pattern for g in base["parse"].parse(body).groups for r in g.rules}
        )
        urls = _urls(rng, rules)
        for ours, theirs in zip(
            answers(new, body, profile, urls),
            answers(base, body, profile, urls),
            strict=True,
        ):
            if repr(ours) != repr(theirs):
                differ += 1
                if differ <= 3:
                    ours, theirs = _first_difference(ours, theirs)
                    print(f"{profile} {body[:200]!r}\n  new:  {ours:.400}")
                    print(f"  base: {theirs:.400}")
                break
    print(f"{len(cases):,} cases, {differ} answered differently")
    return differ


def _first_difference(ours: object, theirs: object) -> tuple[str, str]:
    if isinstance(ours, list) and isinstance(theirs, list):
        for ours_item, theirs_item in zip(ours, theirs, strict=False):
            if repr(ours_item) != repr(theirs_item):
                return repr(ours_item), repr(theirs_item)
    return repr(ours), repr(theirs)


def routes(name: str, step: int) -> dict[str, Callable[[], None]]:
    """The routes of package ``name`` over every ``step``-th corpus file,
    each emptying the engine's caches first."""
    engine = modules(name)
    bodies = [body for _, body in corpus()[::step]]
    parse, is_allowed = engine["parse"].parse, engine["match"].is_allowed
    queries = build_queries(
        [str(n) for n in range(len(bodies))], list(map(parse, bodies))
    )
    texts = [engine["_bytes"].body_text(body, 512_000) for body in bodies]
    read = engine["_read"]
    outcome = engine["outcome"]
    now = time.time()
    entries = [
        engine["stores.memory"].new_entry(
            outcome.parsed(parse(body), now=now, lifetimes=outcome.Lifetimes()),
            "Googlebot",
        )
        for body in bodies
    ]
    pairs = interleaved(queries)
    rulesets = [read.rules_for(text, "rfc9309", "googlebot")[:2] for text in texts]
    tables, rfc9309 = engine["_tables"], engine["profiles"].RULES["rfc9309"]
    explain = outcome.explain_compiled
    for entry in entries:
        explain(entry.outcome, entry.matcher, "/", now)

    def library() -> None:
        for body, urls in zip(bodies, queries, strict=True):
            document = parse(body)
            for url in urls:
                is_allowed(document, "Googlebot", url)

    def request() -> None:
        for index, url in pairs:
            entry = entries[index]
            explain(entry.outcome, entry.matcher, url, now)

    def rules() -> None:
        for text in texts:
            read.rules_for(text, "rfc9309", "googlebot")

    def document() -> None:
        for text in texts:
            read.read_document(text, "rfc9309")

    def build() -> None:
        for patterns, metas in rulesets:
            if patterns:
                tables.build(rfc9309, patterns, metas)

    runs = {"library": library, "request": request, "rules": rules}
    runs.update(document=document, build=build)

    def emptied(run: Callable[[], None]) -> Callable[[], None]:
        def first_emptied() -> None:
            clear_caches(name)
            run()

        return first_emptied

    return {route: emptied(run) for route, run in runs.items()}


def _instructions(revision: str, name: str, runs: int, route: str, step: int) -> int:
    command = [sys.executable, "-m", "benchmarks.compare", revision, "--run", route]
    command += ["--package", name, "--step", str(step), "--runs", str(runs)]
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
    output = subprocess.run(
        [*valgrind, "--cachegrind-out-file=/dev/null", *command],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    ).stderr
    found = re.search(r"I\s+refs:\s+([\d,]+)", output)
    if found is None:
        raise SystemExit(f"valgrind gave no instruction count:\n{output[-2000:]}")
    return int(found[1].replace(",", ""))


def cost(revision: str, route: str, step: int) -> None:
    """Instructions of one run of ``route``: three runs less one, halved,
    so that what comes before the runs cancels out."""
    jobs = [(name, runs) for name in (NEW, BASE) for runs in (1, 3)]
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        found = pool.map(lambda job: _instructions(revision, *job, route, step), jobs)
        total = dict(zip(jobs, found, strict=True))
    counts = {name: (total[name, 3] - total[name, 1]) / 2 for name in (NEW, BASE)}
    ratio = counts[NEW] / counts[BASE]
    print(
        f"{route}: {counts[NEW] / 1e6:,.1f} M instructions, base "
        f"{counts[BASE] / 1e6:,.1f} M: new/base {ratio:.4f}"
    )


def paired_time(route: str, step: int, rounds: int) -> None:
    """The median of the per-round time ratios, the two taking turns."""
    new, base = routes(NEW, step)[route], routes(BASE, step)[route]
    ratios = []
    for turn in range(rounds):
        taken: dict[str, float] = {}
        order = [(NEW, new), (BASE, base)]
        for name, run in order if turn % 2 else order[::-1]:
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                run()
                taken[name] = time.process_time() - start
            finally:
                gc.enable()
        ratios.append(taken[NEW] / taken[BASE])
    low, _, high = statistics.quantiles(ratios, n=4)
    print(
        f"{route}: new/base {statistics.median(ratios):.3f} "
        f"(half the rounds between {low:.3f} and {high:.3f})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("revision")
    what = options.add_mutually_exclusive_group(required=True)
    what.add_argument("--same", action="store_true")
    what.add_argument("--cost", choices=ROUTES)
    what.add_argument("--time", choices=ROUTES)
    what.add_argument("--run", choices=ROUTES, help=argparse.SUPPRESS)
    options.add_argument("--quick", action="store_true")
    options.add_argument("--step", type=int, default=8)
    options.add_argument("--rounds", type=int, default=15)
    options.add_argument("--runs", type=int, default=1, help=argparse.SUPPRESS)
    options.add_argument("--package", default=NEW, help=argparse.SUPPRESS)
    args: Any = options.parse_args(argv)
    sys.path.insert(0, str(unpack(args.revision)))
    if args.same:
        sys.exit(1 if same(args.quick) else 0)
    if args.cost:
        cost(args.revision, args.cost, args.step)
    elif args.time:
        paired_time(args.time, args.step, args.rounds)
    else:
        run = routes(args.package, args.step)[args.run]
        for _ in range(args.runs):
            run()


if __name__ == "__main__":
    main()
