"""A broad crawl: how RobotsMiddleware's cost grows with the number of origins.

    .venv/bin/python benchmarks/broad_crawl.py [--origins 1000 10000] [--pages 3]

One twisted.web server in its own process listens on ``N`` loopback
addresses (127.20.0.2, 127.20.0.3, ...: one socket per address, so that every
origin is a distinct host and downloader slot), each origin with its own
robots.txt of a few dozen rules and ``--pages`` pages.  For each ``N`` the
same crawl runs in a fresh process three ways: with no robots.txt middleware
(``none``), with Scrapy's RobotsTxtMiddleware (``builtin``) and with
``scrapy_rfc9309.RobotsMiddleware`` enabled by hand (``ours``).

Printed for each crawl: robots.txt fetches per origin counted at the server
(must be exactly 1 for every origin), pages per second and CPU time per
page (engine start to spider close), and the crawling process's peak RSS.
Then, in this process, the memory one cached origin costs (an entry of
RobotsMiddleware's memory store: the matcher compiled for the crawl's agent,
the sitemaps and the outcome without its documents, measured with
tracemalloc over ``N`` origins), and how
each figure grows from the smallest ``N`` to the largest: memory should grow
linearly with the origins, the cost per page stay flat.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
import urllib.request
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a script (as documented, and as it runs its own child
    # processes): the repository root holds the benchmarks package.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import crawl_settings, timed_crawl

MODES = ("none", "builtin", "ours")
AGENT = "BenchBot/1.0 (+http://127.0.0.1/bot)"
PAGE = (
    b"<html><head><title>page</title></head><body>"
    + b"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>" * 15
    + b"</body></html>"
)
# 10,000 listening sockets, plus a connection per origin on each side.
FILES = 65_536


def robots(index: int) -> bytes:
    """Origin ``index``'s robots.txt: a realistic file, a little different
    for each origin so that no two parse alike.  No crawled page is
    disallowed."""
    return (
        "User-agent: *\n"
        + "".join(
            f"Disallow: /private{i}/\nAllow: /private{i}/public/\n" for i in range(12)
        )
        + f"Disallow: /origin{index}/\nDisallow: /*.pdf$\nDisallow: /search?\n"
        "Crawl-delay: 0\n"
        "\nUser-agent: OtherBot\nDisallow: /\n"
        f"\nSitemap: http://example.com/sitemap{index}.xml\n"
    ).encode()


def hosts(count: int) -> list[str]:
    return [
        f"127.{20 + i // 62_500}.{i // 250 % 250}.{i % 250 + 2}" for i in range(count)
    ]


def raise_file_limit() -> int:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILES if hard == resource.RLIM_INFINITY else max(hard, FILES)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
    except (ValueError, OSError):
        # Not root: as far as the hard limit goes.
        if hard != resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def serve(count: int) -> None:
    """Serve ``count`` origins until killed; ``/__stats`` (on any origin)
    answers how many times each origin's robots.txt was fetched, and
    ``/__reset`` forgets it."""
    raise_file_limit()
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import Site

    addresses = hosts(count)
    index_of = {address: i for i, address in enumerate(addresses)}
    bodies = [robots(i) for i in range(count)]
    fetches = [0] * count

    class Pages(Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> bytes:
            # One connection per request: with keep-alive, an idle connection
            # per origin would pile up on both sides, 10,000 of them.
            request.requestHeaders.setRawHeaders(b"Connection", [b"close"])
            path = request.path
            if path == b"/robots.txt":
                index = index_of[request.getHost().host]
                fetches[index] += 1
                request.setHeader(b"Content-Type", b"text/plain")
                return bodies[index]
            if path == b"/__stats":
                histogram: dict[int, int] = {}
                for n in fetches:
                    histogram[n] = histogram.get(n, 0) + 1
                return json.dumps(histogram).encode()
            if path == b"/__reset":
                fetches[:] = [0] * count
                return b"{}"
            request.setHeader(b"Content-Type", b"text/html")
            return PAGE

    # twisted.web and the global reactor are untyped.
    site: Any = Site(Pages())  # type: ignore[no-untyped-call]
    site.log = lambda request: None
    loop: Any = reactor
    ports = [
        loop.listenTCP(0, site, interface=address, backlog=128).getHost().port
        for address in addresses
    ]
    print(json.dumps(ports), flush=True)
    loop.run()


def crawl(mode: str, origins: list[str], pages: int) -> dict[str, Any]:
    """One crawl in this process; what it did, how fast, how big."""
    raise_file_limit()
    from scrapy import Request, Spider

    class Broad(Spider):
        name = "broad"
        crawled = 0

        async def start(self) -> Any:
            # Page after page over all the origins: each origin's first page
            # comes long before its last, as in a broad crawl.
            for page in range(pages):
                for origin in origins:
                    yield Request(f"{origin}/p/{page}", callback=self.parse)

        def parse(self, response: Any) -> None:
            Broad.crawled += 1

    # Scrapy's default queue, not DownloaderAwarePriorityQueue, which Scrapy
    # advises for broad crawls: it scans every slot with pending requests on
    # each pop, a cost that grows with the origins whatever the middleware.
    crawler, times = timed_crawl(
        crawl_settings(mode, per_domain=4, user_agent=AGENT), Broad
    )
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    elapsed = times.wall
    crawled = max(Broad.crawled, 1)
    return {
        "mode": mode,
        "pages": Broad.crawled,
        "seconds": elapsed,
        "pages_per_second": Broad.crawled / elapsed,
        "cpu_ms_per_page": times.cpu * 1000 / crawled,
        "user_ms_per_page": times.user * 1000 / crawled,
        "sys_ms_per_page": times.system * 1000 / crawled,
        # ru_maxrss is in KiB on Linux.
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "robots_fetch_count": stats.get("robots/fetch_count")
        or stats.get("robotstxt/request_count")
        or 0,
        "forbidden": stats.get("robots/forbidden")
        or stats.get("robotstxt/forbidden")
        or 0,
        "errors": stats.get("log_count/ERROR", 0),
    }


def memory_per_origin(count: int) -> float:
    """Bytes one cached origin costs RobotsMiddleware's memory store: its
    entry (the matcher compiled for the crawl's agent, the sitemaps, the
    outcome without its documents), as the middleware stores it, over
    ``count`` distinct origins."""
    from scrapy_rfc9309.outcome import Lifetimes, parsed
    from scrapy_rfc9309.parse import parse
    from scrapy_rfc9309.stores.memory import MemoryStore

    bodies = [robots(i) for i in range(count)]
    now = time.time()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = MemoryStore(max_origins=count, user_agent=AGENT)
    for i, body in enumerate(bodies):
        origin = f"http://o{i}.test/robots.txt"
        outcome = parsed(parse(body), now=now, lifetimes=Lifetimes())
        entry = store.store(origin, outcome)
        assert entry.matcher is not None
        # Used once, as the first request of the origin does.
        entry.matcher.is_allowed(f"http://o{i}.test/p/0")
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(store) == count
    return (after - before) / count


def run_crawl(
    here: Path, env: dict[str, str], mode: str, origins: list[str], pages: int
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(here), "--crawl", mode, "--pages", str(pages)],
        input=json.dumps(origins),
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # The crawl logs at ERROR level only: what went wrong, by exception.
    failures: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if _EXCEPTION_LINE(line):
            failures[line[:200]] = failures.get(line[:200], 0) + 1
    result["failures"] = failures
    return result


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Lost|Failed)\b.*").match


def server_call(origin: str, path: str) -> dict[int, int]:
    with urllib.request.urlopen(origin + path, timeout=30) as response:
        return {int(k): v for k, v in json.loads(response.read()).items()}


def measure(
    here: Path, env: dict[str, str], count: int, pages: int, rounds: int
) -> dict[str, dict[str, Any]]:
    """Crawl ``count`` origins ``rounds`` times each way; the medians."""
    server = subprocess.Popen(
        [sys.executable, str(here), "--serve", str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    try:
        assert server.stdout is not None
        ports = json.loads(server.stdout.readline())
        origins = [
            f"http://{host}:{port}"
            for host, port in zip(hosts(count), ports, strict=True)
        ]
        print(f"\n{count} origins, {count * pages} pages, {rounds} round(s)")
        for round_ in range(rounds):
            # Take turns, starting from another mode each round, so that a
            # machine getting busier or quieter does not favour one mode.
            shift = round_ % len(MODES)
            for mode in MODES[shift:] + MODES[:shift]:
                server_call(origins[0], "/__reset")
                result = run_crawl(here, env, mode, origins, pages)
                result["fetches_per_origin"] = server_call(origins[0], "/__stats")
                runs[mode].append(result)
                print(
                    f"  {mode:8} {result['pages']:6d} pages"
                    f" {result['seconds']:6.1f} s"
                    f" {result['pages_per_second']:7.1f} pages/s"
                    f" {result['cpu_ms_per_page']:6.3f} CPU ms/page"
                    f" ({result['user_ms_per_page']:.3f} user"
                    f" {result['sys_ms_per_page']:.3f} system)"
                    f" peak RSS {result['peak_rss_mib']:6.1f} MiB;"
                    f" robots.txt fetches per origin {result['fetches_per_origin']}"
                    f" ({result['robots_fetch_count']} counted by the crawler,"
                    f" {result['forbidden']} forbidden, {result['errors']} errors)"
                )
                for failure, times in result["failures"].items():
                    print(f"    {times} x {failure}")
    finally:
        server.kill()
        server.wait()
    summary = {}
    for mode, results in runs.items():
        summary[mode] = {
            key: statistics.median(result[key] for result in results)
            for key in (
                "pages_per_second",
                "cpu_ms_per_page",
                "user_ms_per_page",
                "sys_ms_per_page",
                "peak_rss_mib",
            )
        }
        summary[mode]["exactly_one"] = all(
            result["fetches_per_origin"] == {1: count} for result in results
        )
        summary[mode]["fetches_per_origin"] = results[-1]["fetches_per_origin"]
    return summary


def report(
    table: dict[int, dict[str, dict[str, Any]]], per_origin: dict[int, float]
) -> None:
    print("\nMemory store, per cached origin (tracemalloc):")
    for count, size in per_origin.items():
        print(
            f"  {count:6d} origins: {size / 1024:6.2f} KiB per origin,"
            f" {size * count / 2**20:7.1f} MiB in all"
        )
    print(
        "\n| origins | mode | pages/s | vs none | CPU ms/page | vs none"
        " | peak RSS MiB | RSS over none, KiB/origin | robots.txt fetches |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for count, results in table.items():
        none = results["none"]
        for mode, result in results.items():
            over = (result["peak_rss_mib"] - none["peak_rss_mib"]) * 1024 / count
            fetches = ", ".join(
                f"{n} per origin: {origins}"
                for n, origins in sorted(result["fetches_per_origin"].items())
            )
            print(
                f"| {count} | {mode} | {result['pages_per_second']:.0f}"
                f" | {result['pages_per_second'] / none['pages_per_second']:.2f}"
                f" | {result['cpu_ms_per_page']:.3f}"
                f" | {result['cpu_ms_per_page'] / none['cpu_ms_per_page']:.2f}"
                f" | {result['peak_rss_mib']:.0f} | {over:.1f} | {fetches} |"
            )
    if len(table) < 2:
        return
    small, large = min(table), max(table)
    print(f"\nGrowth from {small} to {large} origins (x{large / small:g}):")
    for mode in MODES:
        a, b = table[small][mode], table[large][mode]
        cpu = b["cpu_ms_per_page"] / a["cpu_ms_per_page"]
        rate = b["pages_per_second"] / a["pages_per_second"]
        rss = b["peak_rss_mib"] / a["peak_rss_mib"]
        print(
            f"  {mode:8} CPU ms/page x{cpu:.2f}, pages/s x{rate:.2f},"
            f" peak RSS x{rss:.2f}"
        )
    for mode in MODES[1:]:
        ratio_small = (
            table[small][mode]["cpu_ms_per_page"]
            / table[small]["none"]["cpu_ms_per_page"]
        )
        ratio_large = (
            table[large][mode]["cpu_ms_per_page"]
            / table[large]["none"]["cpu_ms_per_page"]
        )
        print(
            f"  {mode:8} CPU per page over none: x{ratio_small:.2f} at {small},"
            f" x{ratio_large:.2f} at {large}"
        )
    total = per_origin[large] * large / (per_origin[small] * small)
    print(
        f"  memory store: x{total:.2f} in all,"
        f" x{per_origin[large] / per_origin[small]:.2f} per origin"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--pages", type=int, default=3, help="pages per origin")
    parser.add_argument(
        "--rounds",
        type=int,
        nargs="+",
        default=[3, 1],
        help="rounds for each --origins (the last one for the rest)",
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--crawl", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.crawl:
        origins = json.loads(sys.stdin.read())
        print(json.dumps(crawl(args.crawl, origins, args.pages)), flush=True)
        return 0

    here = Path(__file__).resolve()
    env = {**os.environ, "PYTHONPATH": str(here.parent.parent)}
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" {args.pages} pages per origin, open files limit {raise_file_limit()}"
    )
    table = {}
    for index, count in enumerate(args.origins):
        rounds = args.rounds[min(index, len(args.rounds) - 1)]
        table[count] = measure(here, env, count, args.pages, rounds)
    per_origin = {count: memory_per_origin(count) for count in args.origins}
    report(table, per_origin)
    ok = all(
        result["exactly_one"]
        for results in table.values()
        for mode, result in results.items()
        if mode != "none"
    )
    print("\nexactly one robots.txt fetch per origin:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
