"""The three outcome stores side by side: memory, SQLite and Redis.

    python -m benchmarks.stores [--origins 100000] [--lookups 20000]
                                [--concurrency 64] [--redis-url URL] [--small]

Fills each store with ``--origins`` parsed outcomes (the 4,231 real
robots.txt files of Protego's test data, cycled over distinct origins, or
with ``--small`` one short robots.txt of the common kind for all of them),
then prints, per store: puts per second, lookups per second one at a time
and with ``--concurrency`` lookups in flight (a lookup of a shared store
includes reading the outcome back from its entry), and the memory the
entries take per 100,000 origins: Python heap for the memory store
(tracemalloc), the database file for SQLite, Redis's ``used_memory`` for
Redis.  Without ``--redis-url`` a private ``redis-server`` is started on a
free loopback port.  Not a test: figures depend on the machine.

Then (or alone, with ``--entries``) what a shared store keeps per origin
over the corpus, one origin per robots.txt file, in the previous form of an
entry (the bare JSON) and in the compact one (issue 27): the entry's bytes,
Redis's ``used_memory`` and the SQLite file per origin.  These depend on
the corpus, not on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import redis

from benchmarks._corpus import corpus
from scrapy_rfc9309.outcome import Lifetimes, Outcome, parsed
from scrapy_rfc9309.parse import Document, parse
from scrapy_rfc9309.stores._codec import encode, legacy_encode
from scrapy_rfc9309.stores.base import OutcomeStore
from scrapy_rfc9309.stores.memory import MemoryStore
from scrapy_rfc9309.stores.redis import RedisStore
from scrapy_rfc9309.stores.sqlite import _SCHEMA, SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
PER = 100_000
AGENT = "ExampleBot/1.0"
#: ``max_entry_bytes`` of the shared stores: every file of the corpus kept
#: (docs.oracle.com's is over the default ROBOTS_STORE_MAX_ENTRY_BYTES), so
#: that every lookup finds its entry.
UNBOUNDED = 2**31


@dataclass
class Figures:
    store: str
    puts: float
    lookups: float
    concurrent_lookups: float
    bytes_per_100k: float
    memory_note: str


#: ``--small``: a robots.txt of the common, short kind.
SMALL = b"""User-agent: *
Disallow: /admin/
Disallow: /cart
Disallow: /*?sessionid=
Allow: /admin/public/

Sitemap: https://www.example.com/sitemap.xml
"""


def outcomes(small: bool) -> list[Outcome]:
    now = time.time()
    lifetimes = Lifetimes()
    bodies = [SMALL] if small else [body for _, body in corpus()]
    return [parsed(parse(body), now=now, lifetimes=lifetimes) for body in bodies]


def origin(i: int) -> str:
    return f"https://host-{i}.example/robots.txt"


async def timed(
    calls: Sequence[Callable[[], Awaitable[object]]], concurrency: int
) -> float:
    """Calls per second, ``concurrency`` of them in flight at a time."""
    start = time.perf_counter()
    if concurrency == 1:
        for call in calls:
            await call()
    else:
        for first in range(0, len(calls), concurrency):
            batch = calls[first : first + concurrency]
            await asyncio.gather(*(call() for call in batch))
    return len(calls) / (time.perf_counter() - start)


def own_document(outcome: Outcome) -> Outcome:
    """``outcome`` with a document of its own, as each origin of a crawl
    has: a document keeps the matchers compiled from it, so origins sharing
    one would share a matcher in the memory store."""
    document = outcome.document
    assert document is not None
    return replace(
        outcome,
        document=Document(
            document.groups, document.sitemaps, document.records, document.profile
        ),
    )


async def fill(
    store: OutcomeStore, values: list[Outcome], n: int, conc: int, own: bool = False
) -> float:
    def put(i: int) -> Awaitable[None]:
        value = values[i % len(values)]
        return store.put(origin(i), own_document(value) if own else value)

    return await timed([partial(put, i) for i in range(n)], conc)


async def lookups(
    store: OutcomeStore, n: int, count: int, concurrency: int
) -> tuple[float, float]:
    rng = random.Random(9309)
    picks = [origin(rng.randrange(n)) for _ in range(count)]

    async def hit(name: str) -> None:
        if await store.get(name) is None:
            raise RuntimeError(f"{name} missing from {type(store).__name__}")

    calls = [partial(hit, name) for name in picks]
    return await timed(calls, 1), await timed(calls, concurrency)


async def bench_memory(values: list[Outcome], args: argparse.Namespace) -> Figures:
    # The memory store slims each outcome to the crawl's agent and compiles
    # its matcher, as it does in a crawl: that is what it holds.
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    traced = MemoryStore(args.origins, AGENT)
    await fill(traced, values, args.origins, 1, own=True)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del traced
    gc.collect()
    store = MemoryStore(args.origins, AGENT)
    puts = await fill(store, values, args.origins, 1, own=True)
    seq, conc = await lookups(store, args.origins, args.lookups, args.concurrency)
    await store.close()
    return Figures("memory", puts, seq, conc, held * PER / args.origins, "Python heap")


async def bench_sqlite(values: list[Outcome], args: argparse.Namespace) -> Figures:
    with tempfile.TemporaryDirectory(prefix="robots-bench-") as tmp:
        path = Path(tmp, "robots.sqlite3")
        store = SQLiteStore(path, max_entry_bytes=UNBOUNDED)
        puts = await fill(store, values, args.origins, args.concurrency)
        seq, conc = await lookups(store, args.origins, args.lookups, args.concurrency)
        await store.close()
        # Closing the last connection checkpoints the WAL into the file.
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return Figures(
        "sqlite", puts, seq, conc, size * PER / args.origins, "database file"
    )


async def bench_redis(
    url: str, values: list[Outcome], args: argparse.Namespace
) -> Figures:
    client = redis.Redis.from_url(url)
    prefix = f"robots-bench-{time.time_ns()}:"
    before = int(client.info("memory")["used_memory"])
    store = RedisStore(url, prefix=prefix, max_entry_bytes=UNBOUNDED)
    puts = await fill(store, values, args.origins, args.concurrency)
    seq, conc = await lookups(store, args.origins, args.lookups, args.concurrency)
    used = int(client.info("memory")["used_memory"]) - before
    await store.close()
    keys = list(client.scan_iter(match=f"{prefix}*", count=10_000))
    for first in range(0, len(keys), 10_000):
        client.delete(*keys[first : first + 10_000])
    client.close()
    return Figures(
        "redis", puts, seq, conc, used * PER / args.origins, "Redis used_memory"
    )


def report(
    figures: list[Figures], values: list[Outcome], args: argparse.Namespace
) -> None:
    base = figures[0]
    stored = sum(len(encode(value)) for value in values) / len(values)
    print(
        f"{args.origins:,} origins ({len(values):,} robots.txt"
        f" file{'s' if len(values) > 1 else ''} cycled,"
        f" {stored:,.0f} bytes stored each on average), {args.lookups:,} lookups,"
        f" {args.concurrency} in flight for the concurrent column\n"
    )
    header = (
        f"{'store':8} {'puts/s':>10} {'lookups/s':>11} {'(vs memory)':>12}"
        f" {'concurrent/s':>13} {'MB per 100k origins':>20}  memory measured as"
    )
    print(header)
    print("-" * len(header))
    for f in figures:
        print(
            f"{f.store:8} {f.puts:>10,.0f} {f.lookups:>11,.0f}"
            f" {f.lookups / base.lookups:>11.4f}x {f.concurrent_lookups:>13,.0f}"
            f" {f.bytes_per_100k / 1e6:>20.1f}  {f.memory_note}"
        )


@dataclass
class Entries:
    form: str
    mean: float
    median: float
    largest: int
    redis_per_origin: float
    sqlite_per_origin: float


#: The two forms of an entry: what the previous version wrote, and what the
#: stores write now.
FORMS: dict[str, Callable[[Outcome], bytes]] = {
    "previous (JSON)": lambda outcome: legacy_encode(outcome).encode(),
    "compact": encode,
}


def entries_figures(url: str, values: list[Outcome]) -> list[Entries]:
    """What each form of entry takes per origin, one origin per value."""
    figures = []
    for form, encoder in FORMS.items():
        data = [encoder(value) for value in values]
        sizes = sorted(len(item) for item in data)
        figures.append(
            Entries(
                form,
                sum(sizes) / len(sizes),
                sizes[len(sizes) // 2],
                sizes[-1],
                _redis_bytes(url, data) / len(data),
                _sqlite_bytes(data) / len(data),
            )
        )
    return figures


def _redis_bytes(url: str, data: list[bytes]) -> int:
    """Redis's ``used_memory`` taken by ``data``, as the Redis store keys
    and expires them."""
    client = redis.Redis.from_url(url)
    prefix = f"robots-bench-{time.time_ns()}:outcome:"
    before = int(client.info("memory")["used_memory"])
    pipeline = client.pipeline(transaction=False)
    for i, item in enumerate(data):
        pipeline.set(prefix + origin(i), item, px=86_400_000)
    pipeline.execute()
    used = int(client.info("memory")["used_memory"]) - before
    keys = [prefix + origin(i) for i in range(len(data))]
    for first in range(0, len(keys), 10_000):
        client.delete(*keys[first : first + 10_000])
    client.close()
    return used


def _sqlite_bytes(data: list[bytes]) -> int:
    """The size of a SQLite store's file holding ``data``."""
    with tempfile.TemporaryDirectory(prefix="robots-bench-") as tmp:
        path = Path(tmp, "robots.sqlite3")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        for statement in _SCHEMA:
            db.execute(statement)
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO outcomes (origin, outcome, retain_until) VALUES (?, ?, ?)",
            ((origin(i), item, 1e10) for i, item in enumerate(data)),
        )
        db.execute("COMMIT")
        db.close()
        # Closing the last connection checkpoints the WAL into the file.
        return sum(p.stat().st_size for p in Path(tmp).iterdir())


def report_entries(figures: list[Entries], count: int) -> None:
    print(
        f"\nWhat a shared store keeps per origin over the corpus ({count:,}"
        " robots.txt files, one origin each), in bytes\n"
    )
    header = (
        f"{'entry form':16} {'mean':>8} {'median':>7} {'largest':>8}"
        f" {'Redis per origin':>17} {'SQLite per origin':>18}"
    )
    print(header)
    print("-" * len(header))
    for f in figures:
        print(
            f"{f.form:16} {f.mean:>8,.0f} {f.median:>7,.0f} {f.largest:>8,}"
            f" {f.redis_per_origin:>17,.0f} {f.sqlite_per_origin:>18,.0f}"
        )


BENCHES = {
    "memory": lambda values, args: bench_memory(values, args),
    "sqlite": lambda values, args: bench_sqlite(values, args),
    "redis": lambda values, args: bench_redis(args.redis_url, values, args),
}


def measure(store: str, args: argparse.Namespace) -> Figures:
    """Measure one store in a process of its own.

    What one store leaves behind in the heap (the memory store frees some
    hundreds of megabytes) slows the next one down, so each gets a fresh
    interpreter.
    """
    command = [sys.executable, "-m", "benchmarks.stores", "--store", store]
    for name in ("origins", "lookups", "concurrency", "redis_url"):
        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.small:
        command.append("--small")
    result = subprocess.run(
        command, cwd=ROOT, check=True, capture_output=True, text=True
    )
    return Figures(**json.loads(result.stdout.splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=PER)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--redis-url")
    parser.add_argument(
        "--small",
        action="store_true",
        help="one short robots.txt for every origin instead of the real files",
    )
    parser.add_argument(
        "--entries",
        action="store_true",
        help="only what a shared store keeps per origin over the corpus",
    )
    parser.add_argument("--store", choices=sorted(BENCHES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.store:
        one = asyncio.run(BENCHES[args.store](outcomes(args.small), args))
        print(json.dumps(asdict(one)))
        return 0
    with ExitStack() as stack:
        if args.redis_url is None:
            sys.path.insert(0, str(ROOT))
            from tests.support.redis_server import RedisServer

            args.redis_url = stack.enter_context(RedisServer()).url
        if not args.entries:
            figures = [measure(store, args) for store in BENCHES]
            report(figures, outcomes(args.small), args)
        values = outcomes(small=False)
        report_entries(entries_figures(args.redis_url, values), len(values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
