"""The engine against Protego 0.7.0, on Protego's own 4,231 real robots.txt files.

    python -m benchmarks.engine [--agent Googlebot] [--repeat 5]

Prints, side by side: the time to parse the whole corpus ready to answer for
one agent (``parse`` + ``compile`` against ``Protego.parse``), the time to
answer a fixed set of (file, URL) queries built from each file's own rule
paths, the memory held by all parsed files ready to answer (tracemalloc), and
how often the two agree, with the disagreements sorted by cause.  Timings are
the least CPU time (process time) of ``--repeat`` runs with the garbage
collector off, so that other processes on the machine disturb them as little
as possible.  Not a test.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from protego import Protego

from benchmarks._corpus import corpus
from scrapy_rfc9309.match import Decision, Matcher, compile
from scrapy_rfc9309.parse import Document, encode, parse, product_token

#: Queries built per file: "/" and variants of the file's own rule paths.
PER_FILE = 16


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """The least CPU time of ``repeat`` runs of ``run``."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return min(times)


def held(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still allocated once ``build`` returned, and what it returned."""
    gc.collect()
    tracemalloc.start()
    try:
        result = build()
        gc.collect()
        return tracemalloc.get_traced_memory()[0], result
    finally:
        tracemalloc.stop()


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


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--agent", default="Googlebot")
    options.add_argument("--repeat", type=int, default=5)
    args = options.parse_args(argv)
    agent: str = args.agent

    files = corpus()
    hosts = [host for host, _ in files]
    bodies = [body for _, body in files]
    # Protego takes text; decoding is not counted against it.
    texts = [body.decode("utf-8", "replace") for body in bodies]
    print(f"corpus: {len(files)} robots.txt files, {sum(map(len, bodies)):,} bytes")

    documents = [parse(body) for body in bodies]
    queries = build_queries(hosts, documents)
    print(f"queries: {len(queries):,} (file, URL) pairs, agent {agent!r}\n")

    def ours_parse() -> list[Matcher]:
        return [compile(parse(body), agent) for body in bodies]

    def protego_parse() -> list[Protego]:
        return [Protego.parse(text) for text in texts]

    parse_ours = best_of(args.repeat, ours_parse)
    parse_protego = best_of(args.repeat, protego_parse)
    parse_only = best_of(args.repeat, lambda: [parse(body) for body in bodies])

    matchers = ours_parse()
    protegos = protego_parse()
    # Both answer once per file first, so lazily built state is in place.
    for matcher, protego in zip(matchers, protegos, strict=True):
        matcher.is_allowed("/")
        protego.can_fetch("/", agent)

    def ours_match() -> None:
        for index, url in queries:
            matchers[index].is_allowed(url)

    def protego_match() -> None:
        for index, url in queries:
            protegos[index].can_fetch(url, agent)

    match_ours = best_of(args.repeat, ours_match)
    match_protego = best_of(args.repeat, protego_match)

    def ours_ready() -> list[Matcher]:
        ready = ours_parse()
        for matcher in ready:
            matcher.is_allowed("/")
        return ready

    def protego_ready() -> list[Protego]:
        ready = protego_parse()
        for protego in ready:
            protego.can_fetch("/", agent)
        return ready

    memory_ours, _ = held(ours_ready)
    memory_protego, _ = held(protego_ready)

    rows: list[tuple[str, float, float, str, float | None]] = [
        ("parse, ready for one agent", parse_ours, parse_protego, "s", 3),
        ("  of which parse() alone", parse_only, parse_protego, "s", None),
        (f"match {len(queries):,} queries", match_ours, match_protego, "s", 5),
        ("memory held", memory_ours / 2**20, memory_protego / 2**20, "MiB", 5),
    ]
    header = f"{'scrapy_rfc9309':>15} {'Protego 0.7.0':>15} {'ratio':>8} {'target':>8}"
    print(f"{'':32} {header}")
    for label, ours, theirs, unit, target in rows:
        ratio = theirs / ours
        line = f"{label:32} {ours:>11.3f} {unit:<3} {theirs:>11.3f} {unit:<3}"
        line += f" {ratio:>7.2f}x"
        if target is not None:
            verdict = "ok" if ratio >= target else "MISSED"
            line += f" {target:>6}x  {verdict}"
        print(line)
    print(
        f"\nper query: {match_ours / len(queries) * 1e9:,.0f} ns against "
        f"{match_protego / len(queries) * 1e9:,.0f} ns; per file parsed: "
        f"{parse_ours / len(files) * 1e6:,.0f} us against "
        f"{parse_protego / len(files) * 1e6:,.0f} us"
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
