"""The engine against Protego 0.7.0, on Protego's own 4,231 real robots.txt files.

    python -m benchmarks.engine [--agent Googlebot] [--repeat 5]

Prints, side by side, for one agent:

* the time to get from each body to an answer for the agent: ours
  ``compile_source(body, agent)`` (and ``compile(parse(body), agent)``,
  and that through ``Document.for_agent`` as the memory store does) then
  one ``is_allowed("/")``, against ``Protego.parse(text)`` (the body
  decoded as Scrapy's ``ProtegoRobotParser`` decodes it, as ours decodes
  it too) then one ``can_fetch("/", agent)`` (Protego picks the agent's
  rule set and builds its index on the first answer, so both sides do the
  same work); the 3x target is on ``compile_source``, the engine's way
  from a body to ready to answer for one agent;
* the time to answer a fixed set of (file, URL) queries built from each
  file's own rule paths: ``Matcher.is_allowed(url)`` (and ``explain``, what
  the middleware calls) against ``Protego.can_fetch(url, agent)``;
* the memory held by everything ready to answer for the agent, measured in
  a fresh process with tracemalloc once every query has been answered: our
  matchers (what answering needs; also with ``Document.for_agent`` beside
  each, what the memory store keeps today) against the Protego objects;
* how often the two agree, with the disagreements sorted by cause.

Timings are the least CPU time (process time) of ``--repeat`` runs with the
garbage collector off, ours and Protego's taking turns, so that other
processes on the machine disturb them as little and as evenly as possible;
the engine's caches (of keys, lines and patterns seen before) are emptied
before each run, so every run reads the corpus as new.  Not a test.
"""

from __future__ import annotations

import argparse
import gc
import random
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from protego import Protego

from benchmarks._corpus import corpus
from scrapy_rfc9309.match import Decision, compile, compile_source
from scrapy_rfc9309.parse import Document, encode, parse, product_token

#: Queries built per file: "/" and variants of the file's own rule paths.
PER_FILE = 16


def clear_caches() -> None:
    """Empty the engine's caches of what it has read before."""
    parse_module = sys.modules["scrapy_rfc9309.parse"]
    match_module = sys.modules["scrapy_rfc9309.match"]
    for cache in parse_module._KIND_CACHE.values():
        cache.clear()
    parse_module._AGENT_TOKENS.clear()
    parse_module._NO_COLON.clear()
    for normals in match_module._NORMALS.values():
        normals.clear()
    match_module._CACHE.clear()
    match_module._TOKENS.clear()
    for cache in sys.modules["scrapy_rfc9309._scan"]._AGENT_LINE_TOKENS.values():
        cache.clear()


def best_of(repeat: int, *runs: Callable[[], object]) -> list[float]:
    """The least CPU time of ``repeat`` runs of each of ``runs``, caches
    emptied before each.  The runs take turns, so that a slow spell of the
    machine falls on all of them alike rather than on one."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, taken in zip(runs, times, strict=True):
            clear_caches()
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                run()
                taken.append(time.process_time() - start)
            finally:
                gc.enable()
    return [min(taken) for taken in times]


def _url_path(pattern: str) -> str:
    # A rule pattern turned into a URL path that it (or a neighbour) matches:
    # wildcards filled, the anchor dropped, octets outside printable ASCII
    # percent-encoded as a crawler would send them.
    path = pattern.replace("*", "x").rstrip("$")
    if not path.startswith("/"):
        path = "/" + path
    return "".join(
        chr(octet) if 0x21 <= octet < 0x7F and octet != 0x23 else f"%{octet:02X}"
        for octet in encode(path)
    )


def build_queries(
    hosts: Sequence[str], documents: Sequence[Document]
) -> list[tuple[int, str]]:
    """(file index, URL) pairs from each file's own rule paths: each path,
    the path with more after it, its first half, and ``/``."""
    rng = random.Random(9309)
    queries: list[tuple[int, str]] = []
    for index, (host, document) in enumerate(zip(hosts, documents, strict=True)):
        patterns = sorted(
            {
                rule.pattern
                for group in document.groups
                for rule in group.rules
                if rule.pattern
            }
        )
        paths = {"/"}
        for pattern in patterns:
            path = _url_path(pattern)
            paths.update(
                (path, path + "extra/page.html?id=1", path[: max(1, len(path) // 2)])
            )
        chosen = sorted(paths)
        rng.shuffle(chosen)
        queries.extend((index, f"https://{host}{path}") for path in chosen[:PER_FILE])
    return queries


_GROUP_SELECTION = (
    "group selection: a user-agent value is read as its product token (RFC 9309 2.2.1)"
)
_GROUP_BOUNDARIES = (
    "group boundaries: lines other than rules never end a group (RFC 9309 2.2.4)"
)
_ABSOLUTE = (
    "pattern written as an absolute URL: Protego prefixes '/', RFC 9309 2.2.2 "
    "matches from the path's first octet"
)
_ENCODING = "percent-encoding normalisation (RFC 9309 2.2.2)"
_BOM = "byte-order mark: skipped here (Google), part of the first key for Protego"
_PRIORITY = "rule priority: Protego counts a '?' in a pattern as its escape %3F"


def _protego_rule_count(rules: Sequence[tuple[bool, str]]) -> int:
    # Protego adds a rule per pattern with "$" in it, and one per allowed
    # ".../index.html".
    return sum(
        1 + ("$" in pattern) + (allow and pattern.endswith("/index.html"))
        for allow, pattern in rules
    )


def classify(
    body: bytes,
    document: Document,
    protego: Protego,
    agent: str,
    url: str,
    ours: Decision,
) -> str:
    """Why Protego and this engine disagree about ``url``."""
    if body.startswith(b"\xef\xbb\xbf"):
        return _BOM
    token = product_token(agent)
    rule_set = protego._get_matching_rule_set(agent)
    mine = document.for_agent(agent).groups
    names = {product_token(value) for group in mine for value in group.user_agents}
    if rule_set is None or (rule_set.user_agent == "*") == (token in names):
        return _GROUP_SELECTION
    rules = [(rule.allow, rule.pattern) for group in mine for rule in group.rules]
    if _protego_rule_count([rule for rule in rules if rule[1]]) != len(rule_set._rules):
        return _GROUP_BOUNDARIES
    path = url.partition("://")[2].partition("/")[2]
    if path.startswith("http") and any(p.startswith("http") for _, p in rules):
        return _ABSOLUTE
    pattern = ours.rule.pattern if ours.rule is not None else ""
    if "%" in url or "%" in pattern or not pattern.isascii():
        return _ENCODING
    return _PRIORITY


def _ready(kind: str, agent: str, bodies: list[bytes]) -> tuple[list[Any], list[Any]]:
    """The ``bodies`` ready to answer for ``agent``, as ``kind`` keeps them:
    what answers, and what is kept beside (documents beside matchers)."""
    if kind == "protego":
        # Decoded as Scrapy's ProtegoRobotParser decodes the body.
        return [Protego.parse(body.decode("utf-8", "ignore")) for body in bodies], []
    if kind == "matcher":
        return [compile_source(body, agent) for body in bodies], []
    documents = [parse(body).for_agent(agent) for body in bodies]
    return [compile(document, agent) for document in documents], documents


def measure_memory(kind: str, agent: str) -> int:
    """Bytes held (tracemalloc) by the corpus ready to answer for ``agent``
    once every benchmark query has been answered; run in a fresh process."""
    files = corpus()
    bodies = [body for _, body in files]
    queries = build_queries(
        [host for host, _ in files], [parse(body) for body in bodies]
    )
    clear_caches()
    gc.collect()
    tracemalloc.start()
    try:
        answerers, kept = _ready(kind, agent, bodies)
        for index, url in queries:
            if kind == "protego":
                answerers[index].can_fetch(url, agent)
            else:
                answerers[index].explain(url)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del answerers, kept
    return held


def _memory(kind: str, agent: str) -> float:
    # A fresh process: nothing read before (strings, caches) is shared with
    # what is measured.
    output = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine", "--memory", kind, "--agent", agent],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(output) / 2**20


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--agent", default="Googlebot")
    options.add_argument("--repeat", type=int, default=5)
    options.add_argument(
        "--memory", choices=["matcher", "document", "protego"], help=argparse.SUPPRESS
    )
    args = options.parse_args(argv)
    agent: str = args.agent
    if args.memory:
        print(measure_memory(args.memory, agent))
        return

    files = corpus()
    hosts = [host for host, _ in files]
    bodies = [body for _, body in files]
    # Protego takes text: the body decoded as Scrapy's ProtegoRobotParser
    # decodes it (part of getting ready, so timed as such below).
    texts = [body.decode("utf-8", "ignore") for body in bodies]
    print(f"corpus: {len(files)} robots.txt files, {sum(map(len, bodies)):,} bytes")

    documents = [parse(body) for body in bodies]
    queries = build_queries(hosts, documents)
    print(f"queries: {len(queries):,} (file, URL) pairs, agent {agent!r}\n")

    def ours_source() -> None:
        for body in bodies:
            compile_source(body, agent).is_allowed("/")

    def ours_parse() -> None:
        for body in bodies:
            compile(parse(body), agent).is_allowed("/")

    def ours_store() -> None:
        for body in bodies:
            compile(parse(body).for_agent(agent), agent).is_allowed("/")

    def protego_parse() -> None:
        for body in bodies:
            Protego.parse(body.decode("utf-8", "ignore")).can_fetch("/", agent)

    ready_source, ready_parse, ready_store, ready_protego, parse_only = best_of(
        args.repeat,
        ours_source,
        ours_parse,
        ours_store,
        protego_parse,
        lambda: [parse(body) for body in bodies],
    )

    matchers = [compile_source(body, agent) for body in bodies]
    protegos = [Protego.parse(text) for text in texts]
    # Both answer once per file first, so lazily built state is in place.
    for matcher, protego in zip(matchers, protegos, strict=True):
        matcher.is_allowed("/")
        protego.can_fetch("/", agent)

    def ours_match() -> None:
        for index, url in queries:
            matchers[index].is_allowed(url)

    def ours_explain() -> None:
        for index, url in queries:
            matchers[index].explain(url)

    def protego_match() -> None:
        for index, url in queries:
            protegos[index].can_fetch(url, agent)

    match_ours, explain_ours, match_protego = best_of(
        args.repeat, ours_match, ours_explain, protego_match
    )

    memory_matcher = _memory("matcher", agent)
    memory_document = _memory("document", agent)
    memory_protego = _memory("protego", agent)

    rows: list[tuple[str, float, float, str, float | None]] = [
        # The parse target: from the body to ready to answer for one agent,
        # which compile_source() is for.  The whole Document (every group,
        # sitemaps, other records: what lint, stringify and the stores use)
        # is slower to build, and shown beside it.
        ("ready: compile_source + 1 answer", ready_source, ready_protego, "s", 3),
        (
            "  whole Document: compile(parse())",
            ready_parse,
            ready_protego,
            "s",
            None,
        ),
        ("  the same through for_agent()", ready_store, ready_protego, "s", None),
        ("  parse() alone, whole document", parse_only, ready_protego, "s", None),
        (f"match {len(queries):,}: is_allowed", match_ours, match_protego, "s", 5),
        (f"match {len(queries):,}: explain", explain_ours, match_protego, "s", None),
        ("memory: matchers", memory_matcher, memory_protego, "MiB", 5),
        (
            "memory: for_agent docs + matchers",
            memory_document,
            memory_protego,
            "MiB",
            None,
        ),
    ]
    header = f"{'scrapy_rfc9309':>15} {'Protego 0.7.0':>15} {'ratio':>8} {'target':>8}"
    print(f"{'':36} {header}")
    for label, ours, theirs, unit, target in rows:
        ratio = theirs / ours
        line = f"{label:36} {ours:>11.3f} {unit:<3} {theirs:>11.3f} {unit:<3}"
        line += f" {ratio:>7.2f}x"
        if target is not None:
            verdict = "ok" if ratio >= target else "MISSED"
            line += f" {target:>6}x  {verdict}"
        print(line)
    print(
        f"\nper query: {match_ours / len(queries) * 1e9:,.0f} ns "
        f"({explain_ours / len(queries) * 1e9:,.0f} ns with explain) against "
        f"{match_protego / len(queries) * 1e9:,.0f} ns; per file made ready: "
        f"{ready_source / len(files) * 1e6:,.0f} us "
        f"({ready_parse / len(files) * 1e6:,.0f} us through parse) against "
        f"{ready_protego / len(files) * 1e6:,.0f} us"
    )

    causes: Counter[str] = Counter()
    examples: dict[str, tuple[str, str, Decision]] = {}
    for index, url in queries:
        decision = matchers[index].explain(url)
        if decision.allowed != protegos[index].can_fetch(url, agent):
            cause = classify(
                bodies[index], documents[index], protegos[index], agent, url, decision
            )
            causes[cause] += 1
            examples.setdefault(cause, (hosts[index], url, decision))
    agreed = len(queries) - sum(causes.values())
    print(f"\nagreement: {agreed:,} of {len(queries):,} ({agreed / len(queries):.2%})")
    for cause, count in causes.most_common():
        _, url, decision = examples[cause]
        rule = decision.rule
        where = f"line {rule.line} {rule.pattern!r}" if rule else decision.reason
        print(f"  {count:>6}  {cause}")
        print(f"          e.g. {url} (ours: {decision.allowed}, {where})")


if __name__ == "__main__":
    main()
