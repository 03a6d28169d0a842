"""What one origin costs in the memory store, typical and worst case.

    python -m benchmarks.memory [--agent AGENT]

Stores, one origin at a time, the parsed outcome of each of the 4,231 real
robots.txt files of Protego's test data, then of hostile bodies of
``ROBOTS_MAX_BYTES`` (512,000 bytes) in every shape that costs most (short,
long, wildcard and non-ASCII patterns, sitemaps), and prints for each what
tracemalloc measures the store to hold, what
:func:`~scrapy_rfc9309.stores.memory.entry_size` estimates (the figure
``ROBOTS_MEMORY_MAX_BYTES`` is counted in; the estimate must stay at or above
the measure), and, for the corpus, what a parsed Protego object of the same
file holds.  Not a test: figures depend on the Python build.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tracemalloc
from collections.abc import Callable

from protego import Protego

from benchmarks._corpus import corpus
from scrapy_rfc9309.outcome import Lifetimes, parsed
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.stores.memory import MemoryStore, entry_size

MAX_BYTES = 512_000
LIFETIMES = Lifetimes()

#: Hostile robots.txt bodies: one line shape repeated up to ROBOTS_MAX_BYTES.
SHAPES: dict[str, Callable[[int], str]] = {
    "short patterns": lambda i: f"Disallow: /{i}",
    "40-character patterns": lambda i: f"Disallow: /{i:040d}",
    "wildcard patterns": lambda i: f"Disallow: /*{i}*x",
    "end-anchored allows": lambda i: f"Allow: /a{i}$",
    "Cyrillic patterns": lambda i: f"Disallow: /{i}" + "ж" * 10,
    "emoji patterns": lambda i: f"Disallow: /{i}" + "\U0001f600" * 10,
    "sitemaps": lambda i: f"Sitemap: https://example.com/sitemap-{i}.xml",
}


def hostile_body(line: Callable[[int], str]) -> bytes:
    """``User-agent: *`` and ``line(0)``, ``line(1)``, ... up to MAX_BYTES."""
    lines = ["User-agent: *"]
    size = len(lines[0]) + 1
    index = 0
    while True:
        text = line(index)
        size += len(text.encode()) + 1
        if size > MAX_BYTES:
            break
        lines.append(text)
        index += 1
    return ("\n".join(lines) + "\n").encode()


def collected() -> int:
    """Bytes traced once the garbage is collected.  What survives is frozen,
    so that each collection only walks what was made since the last one."""
    gc.collect()
    gc.freeze()
    return tracemalloc.get_traced_memory()[0]


def held(store: MemoryStore, origin: str, body: bytes) -> tuple[int, int]:
    """``(measured, estimated)`` bytes the store holds for ``body``."""
    # Collected on both sides: parsing leaves cycles the collector frees.
    before = collected()
    entry = store.store(origin, parsed(parse(body), now=0, lifetimes=LIFETIMES))
    return collected() - before, entry_size(origin, entry)


def protego_held(body: bytes) -> int:
    before = collected()
    kept = Protego.parse(body.decode("utf-8", "replace"))
    measured = collected() - before
    del kept
    return measured


def percentile(values: list[int], fraction: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", default="ExampleBot/1.0")
    args = parser.parse_args()
    files = corpus()
    # The parser's process-wide caches (user-agent spellings, key spellings,
    # a few thousand entries at most) are filled first, so that they are
    # not counted against the first origins that fill them.
    warm = MemoryStore(user_agent=args.agent)
    for index, (_, body) in enumerate(files):
        warm.store(str(index), parsed(parse(body), now=0, lifetimes=LIFETIMES))
        Protego.parse(body.decode("utf-8", "replace"))
    del warm
    # Every entry stays (no bound is reached), so each delta is what its
    # origin adds.
    store = MemoryStore(max_origins=10**9, user_agent=args.agent, max_bytes=2**62)
    tracemalloc.start()
    measured, estimated, protego = [], [], []
    for index, (_, body) in enumerate(files):
        real, guess = held(store, f"https://host{index:06d}.example/robots.txt", body)
        measured.append(real)
        estimated.append(guess)
        protego.append(protego_held(body))
    ratios = [guess / real for guess, real in zip(estimated, measured, strict=True)]
    print(f"Memory store, one origin, agent {args.agent!r} (tracemalloc)")
    print(f"\nProtego corpus ({len(files):,} robots.txt files):")
    print(f"  {'':8} {'measured':>10} {'estimate':>10} {'Protego':>10}")
    for name, fraction in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
        print(
            f"  {name:8} {percentile(measured, fraction):>10,}"
            f" {percentile(estimated, fraction):>10,}"
            f" {percentile(protego, fraction):>10,}"
        )
    print(f"  {'max':8} {max(measured):>10,} {max(estimated):>10,} {max(protego):>10,}")
    print(
        f"  {'mean':8} {statistics.mean(measured):>10,.0f}"
        f" {statistics.mean(estimated):>10,.0f} {statistics.mean(protego):>10,.0f}"
    )
    print(
        f"  estimate / measured: all origins {sum(estimated) / sum(measured):.2f},"
        f" per origin p1 {percentile(ratios, 0.01):.2f},"
        f" median {statistics.median(ratios):.2f}"
    )
    print(
        "  (under 1.00 the bound would be exceeded; a single origin can measure"
        " more when the store's maps grow their tables as it is added)"
    )
    print(f"\nHostile robots.txt of {MAX_BYTES:,} bytes (ROBOTS_MAX_BYTES):")
    print(f"  {'shape':24} {'lines':>7} {'measured':>12} {'estimate':>12} {'ratio':>6}")
    for index, (name, line) in enumerate(SHAPES.items()):
        body = hostile_body(line)
        real, guess = held(store, f"https://hostile{index}.example/robots.txt", body)
        lines = len(body.splitlines()) - 1
        print(f"  {name:24} {lines:>7,} {real:>12,} {guess:>12,} {guess / real:>6.2f}")
    tracemalloc.stop()
    default = 268_435_456
    print(
        f"\nROBOTS_MEMORY_MAX_BYTES = {default:,} (the default) holds about"
        f" {default // statistics.mean(estimated):,.0f} origins of the corpus's"
        " mean, or 100,000 (ROBOTS_MEMORY_MAX_ORIGINS) of its median"
        f" ({100_000 * percentile(estimated, 0.5) / 2**20:,.0f} MiB)."
    )


if __name__ == "__main__":
    main()
