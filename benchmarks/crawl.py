"""How much RobotsMiddleware costs a crawl: pages per second, three ways.

    .venv/bin/python benchmarks/crawl.py [--hosts 20] [--pages 6000] [--rounds 3]

A twisted.web server in its own process serves ``--hosts`` loopback hosts
(127.0.1.2, 127.0.1.3, ...), each with a robots.txt of a few dozen rules
that all the crawled pages pass.  The same crawl of ``--pages`` pages, spread
evenly over the hosts, then runs in a fresh process for each of:

- ``none``: no robots.txt middleware at all;
- ``builtin``: Scrapy's RobotsTxtMiddleware (``ROBOTSTXT_OBEY = True``);
- ``ours``: scrapy_rfc9309.RobotsMiddleware, enabled by hand;
- ``addon``: the add-on, i.e. RobotsMiddleware plus DirectivesMiddleware
  (which reads every HTML page's robots meta tags), for information.

The modes take turns, ``--rounds`` times.  For each mode the median and
best pages per second are printed with their ratios to ``none``, and so is
the CPU time the crawling process spent per page (less sensitive to other
load on the machine; its best is the lowest).  Both are counted from the
engine start to the spider close, in the crawling process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

if not __package__:
    # Run as a script (as documented, and as it runs its own child
    # processes): the repository root holds the benchmarks package.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import crawl_settings, timed_crawl

MODES = ("none", "builtin", "ours", "addon")
AGENT = "BenchBot/1.0 (+http://127.0.0.1/bot)"

ROBOTS = (
    "User-agent: *\n"
    + "".join(
        f"Disallow: /private{i}/\nAllow: /private{i}/public/\n" for i in range(15)
    )
    + "Disallow: /*.pdf$\nDisallow: /search?\nDisallow: /cart\n"
    "\nUser-agent: OtherBot\nDisallow: /\n"
    "\nSitemap: http://example.com/sitemap.xml\n"
).encode()

PAGE = (
    b"<html><head><title>page</title></head><body>"
    + b"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>" * 15
    + b"</body></html>"
)


def serve(hosts: list[str]) -> None:
    """Serve the site on each host (port chosen by the OS) until killed."""
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import Request, Site

    class Pages(Resource):
        isLeaf = True

        def render_GET(self, request: Request) -> bytes:
            if request.path == b"/robots.txt":
                request.setHeader(b"Content-Type", b"text/plain")
                return ROBOTS
            request.setHeader(b"Content-Type", b"text/html")
            return PAGE

    site = Site(Pages())
    site.log = lambda request: None  # type: ignore[method-assign]
    ports = [
        reactor.listenTCP(0, site, interface=host, backlog=1024).getHost().port  # type: ignore[attr-defined]
        for host in hosts
    ]
    print(json.dumps(ports), flush=True)
    reactor.run()  # type: ignore[attr-defined]


def crawl(mode: str, origins: list[str], pages: int) -> dict[str, Any]:
    """One crawl in this process; what it did and how fast."""
    from scrapy import Request, Spider

    class Bench(Spider):
        name = "bench"
        crawled = 0

        async def start(self) -> Any:
            # Host after host, so that every host is busy all along.
            for n in range(pages):
                origin = origins[n % len(origins)]
                yield Request(f"{origin}/p/{n // len(origins)}", callback=self.parse)

        def parse(self, response: Any) -> None:
            Bench.crawled += 1

    crawler, times = timed_crawl(
        crawl_settings(mode, per_domain=8, user_agent=AGENT), Bench
    )
    assert crawler.stats is not None
    elapsed = times.wall
    return {
        "mode": mode,
        "pages": Bench.crawled,
        "seconds": elapsed,
        "pages_per_second": Bench.crawled / elapsed,
        "cpu_ms_per_page": times.cpu * 1000 / Bench.crawled,
        "robots_fetches": crawler.stats.get_value("robots/fetch_count")
        or crawler.stats.get_value("robotstxt/request_count")
        or 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--crawl", help=argparse.SUPPRESS)
    parser.add_argument("--origins", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.crawl:
        result = crawl(args.crawl, json.loads(args.origins), args.pages)
        print(json.dumps(result), flush=True)
        return 0

    hosts = [f"127.0.1.{i + 2}" for i in range(args.hosts)]
    here = Path(__file__).resolve()
    env = {**os.environ, "PYTHONPATH": str(here.parent.parent)}
    server = subprocess.Popen(
        [sys.executable, str(here), "--serve", *hosts],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        ports = json.loads(server.stdout.readline())
        origins = [
            f"http://{host}:{port}" for host, port in zip(hosts, ports, strict=True)
        ]
        print(
            f"{args.pages} pages over {len(origins)} hosts, {args.rounds} rounds,"
            f" Python {sys.version.split()[0]}"
        )
        results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
        for round_ in range(args.rounds):
            # Take turns, starting from another mode each round, so that a
            # machine getting busier or quieter does not favour one mode.
            order = MODES[round_ % len(MODES) :] + MODES[: round_ % len(MODES)]
            for mode in order:
                output = subprocess.run(
                    [
                        sys.executable,
                        str(here),
                        "--crawl",
                        mode,
                        "--origins",
                        json.dumps(origins),
                        "--pages",
                        str(args.pages),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                ).stdout
                result = json.loads(output.strip().splitlines()[-1])
                results[mode].append(result)
                print(
                    f"  round {round_ + 1} {mode:8} {result['pages']:6d} pages"
                    f" {result['pages_per_second']:8.1f} pages/s"
                    f" {result['cpu_ms_per_page']:6.3f} CPU ms/page"
                    f" ({result['robots_fetches']} robots.txt fetches)"
                )
    finally:
        server.kill()
        server.wait()

    def summary(key: str, best: Any) -> dict[str, tuple[float, float]]:
        values = {mode: [r[key] for r in results[mode]] for mode in MODES}
        return {
            mode: (statistics.median(values[mode]), best(values[mode]))
            for mode in MODES
        }

    rates = summary("pages_per_second", max)
    cpus = summary("cpu_ms_per_page", min)
    print()
    print("               pages/s            vs none       CPU ms/page        vs none")
    print("mode       median    best    median   best    median   best   median   best")
    for mode in MODES:
        (rate, top), (cpu, low) = rates[mode], cpus[mode]
        (rate0, top0), (cpu0, low0) = rates["none"], cpus["none"]
        print(
            f"{mode:8} {rate:8.1f} {top:7.1f} {rate / rate0:9.3f} {top / top0:6.3f}"
            f" {cpu:9.3f} {low:6.3f} {cpu / cpu0:8.3f} {low / low0:6.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
