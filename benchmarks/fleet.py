"""A scrapy-redis fleet under Crawl-delay: 1, 2 and 4 workers.

    python -m benchmarks.fleet [--origins 4] [--pages 12] [--delay 0.25]
                               [--workers 1,2,4] [--store redis|sqlite]

Each run is a real fleet: worker processes of ``tests.support.redis_fleet`` (a
``RedisSpider`` on scrapy-redis's scheduler and dupefilter) sharing a private
``redis-server`` and the outcome store, over loopback origins whose pages
link to each other.  For the origins with ``Crawl-delay: DELAY`` it prints,
per fleet size: pages per second against the bound (origins / delay: what
one polite crawler may take), the smallest gap between two requests to one
origin, as the requests left the workers (the ``X-Sent-At`` stamp of
``tests.support.redis_fleet.SentAt``, on the host's monotonic clock) and as the
servers received them, the mean gap as a multiple of the delay (1.00: the
fleet runs at the bound), the turns taken per request and the other store
calls (robots.txt outcomes and leases) per request.  Then a crawl of
``--free-pages`` pages per origin over origins without a Crawl-delay, once
with ``ROBOTS_CRAWL_DELAY_SCOPE = "process"`` and once with ``"fleet"``:
the fleet mode takes no turns for them, so its pages per second are those
of the process mode, its store calls those and the reads of the fleet's
Retry-After pauses, one per worker per half second (the best of
``--repeat`` runs each).
Rates are measured from an origin's first request (its robots.txt) to its
last.  Gaps are taken when the
servers (threads of this process) read the requests: on a loaded machine a
stalled server makes some gaps look shorter or longer than they were sent.
Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import redis

from tests.support.fleet_crawl import spawn
from tests.support.redis_fleet import SENT_AT, SPIDER, START_URLS_KEY, STORE_METHODS
from tests.support.redis_server import RedisServer
from tests.support.server import Server

# Loopback hosts of their own (127.0.200.x), one per origin, so each origin
# has its own downloader slot.
_hosts = (f"127.0.200.{i}" for i in itertools.count(2))


@dataclass
class Run:
    workers: int
    pages: int
    requests: int
    #: Pages per second, summed over the origins.
    rate: float
    #: The smallest gap between two requests to each origin, as they arrived
    #: and as they left the workers.
    smallest_gaps: list[float]
    smallest_sent_gaps: list[float]
    #: The mean gap between two requests to each origin, as they arrived:
    #: how close the fleet runs to the bound of one request per delay.
    mean_gaps: list[float]
    store_calls: int
    turns: int


def site(pages: int, crawl_delay: float | None) -> Server:
    server = Server(next(_hosts))
    robots = "User-agent: *\n"
    if crawl_delay is not None:
        robots += f"Crawl-delay: {crawl_delay}\n"
    server.route("/robots.txt", robots)
    paths = [f"/p{i}" for i in range(1, pages)]
    links = "".join(f'<a href="{path}">.</a>' for path in paths)
    body = f"<html><body>{links}</body></html>"
    for path in ("/", *paths):
        server.route(path, body, headers={"Content-Type": "text/html"})
    return server


def crawl(
    args: argparse.Namespace,
    redis_server: RedisServer,
    folder: Path,
    workers: int,
    crawl_delay: float | None,
    scope: str,
) -> Run:
    sites = [site(args.pages, crawl_delay) for _ in range(args.origins)]
    warmup = Server(next(_hosts))
    prefix = f"bench-{next(_runs)}:"
    settings: dict[str, Any] = {
        "ROBOTS_CRAWL_DELAY_SCOPE": scope,
        "LOG_LEVEL": "WARNING",
        # Enough requests at once for one worker to keep every origin busy.
        "CONCURRENT_REQUESTS": 4 * args.origins,
    }
    if args.store == "redis":
        settings["ROBOTS_STORE_URL"] = redis_server.url
        settings["ROBOTS_STORE_PREFIX"] = prefix + "robots:"
    else:
        settings["ROBOTS_STORE_URL"] = str(folder / f"{prefix[:-1]}.sqlite3")
    try:
        client = redis.Redis.from_url(redis_server.url)
        client.rpush(
            prefix + START_URLS_KEY % {"name": SPIDER},
            *(json.dumps({"url": s.url("/")}) for s in sites),
        )
        client.close()
        procs = [
            spawn(
                "tests.support.redis_fleet",
                {
                    "redis_url": redis_server.url,
                    "prefix": prefix,
                    "worker": number,
                    "store": args.store,
                    "settings": settings,
                    "warmup": warmup.url("/"),
                    # Every start URL to whichever worker asks first.
                    "batch": args.origins,
                },
                folder,
                f"{prefix[:-1]}-{number}",
            )
            for number in range(workers)
        ]
        stats = [proc.wait(timeout=600) for proc in procs]
        rate = 0.0
        smallest_gaps: list[float] = []
        smallest_sent_gaps: list[float] = []
        mean_gaps: list[float] = []
        for server in sites:
            times = sorted(server.times())
            smallest_gaps.append(min(b - a for a, b in pairwise(times)))
            mean_gaps.append((times[-1] - times[0]) / (len(times) - 1))
            rate += (len(times) - 1) / (times[-1] - times[0])
            sent = sorted(float(hit.headers[SENT_AT]) for hit in server.hits)
            smallest_sent_gaps.append(min(b - a for a, b in pairwise(sent)))
        requests = sum(len(server.hits) for server in sites)
        return Run(
            workers=workers,
            pages=sum(len(server.times("/p")) + server.count("/") for server in sites),
            requests=requests,
            rate=rate,
            smallest_gaps=smallest_gaps,
            smallest_sent_gaps=smallest_sent_gaps,
            mean_gaps=mean_gaps,
            store_calls=sum(
                s.get(f"fleet/store/{method}", 0)
                for s in stats
                for method in STORE_METHODS
            ),
            turns=sum(s.get("fleet/store/reserve", 0) for s in stats),
        )
    finally:
        for server in (*sites, warmup):
            server.close()


_runs = itertools.count()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=4)
    parser.add_argument("--pages", type=int, default=12, help="pages per origin")
    parser.add_argument("--delay", type=float, default=0.25, help="Crawl-delay (s)")
    parser.add_argument(
        "--free-pages",
        type=int,
        default=300,
        help="pages per origin of the crawl without a Crawl-delay",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each crawl without a delay"
    )
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--store", choices=("redis", "sqlite"), default="redis")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.workers.split(",")]
    bound = args.origins / args.delay
    with ExitStack() as stack:
        redis_server = stack.enter_context(RedisServer())
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        print(
            f"{args.origins} origins x {args.pages} pages, Crawl-delay"
            f" {args.delay:g} s, store {args.store}: bound {bound:.1f} pages/s"
        )
        print(
            "workers  pages/s  of bound  turns/request  other store calls/request"
            "  smallest gap per origin (s): as sent | as received"
            "  mean gap (s) / delay"
        )
        for workers in sizes:
            run = crawl(args, redis_server, folder, workers, args.delay, "fleet")
            sent = " ".join(f"{gap:.3f}" for gap in run.smallest_sent_gaps)
            received = " ".join(f"{gap:.3f}" for gap in run.smallest_gaps)
            mean = " ".join(f"{gap / args.delay:.2f}" for gap in run.mean_gaps)
            print(
                f"{workers:7}  {run.rate:7.2f}  {run.rate / bound:8.2f}"
                f"  {run.turns / run.requests:13.2f}"
                f"  {(run.store_calls - run.turns) / run.requests:25.2f}"
                f"  {sent} | {received}  {mean}"
            )
        args.pages = args.free_pages
        print(f"\nNo Crawl-delay, {args.origins} origins x {args.pages} pages")
        print("workers  scope    pages/s  fleet/process  store calls/request  turns")
        for workers in sizes:
            # The best of a few runs: rates without a delay are short spans,
            # easily stretched by the rest of the machine.
            runs = {
                scope: max(
                    (
                        crawl(args, redis_server, folder, workers, None, scope)
                        for _ in range(args.repeat)
                    ),
                    key=lambda run: run.rate,
                )
                for scope in ("process", "fleet")
            }
            for scope, run in runs.items():
                ratio = run.rate / runs["process"].rate
                print(
                    f"{workers:7}  {scope:7}  {run.rate:7.1f}  {ratio:13.2f}"
                    f"  {run.store_calls / run.requests:19.2f}  {run.turns:5}"
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
