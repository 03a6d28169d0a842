"""What the engine's caches keep after hostile origins (issue 24, F3), and
what Content-Usage matching costs per request (F4).

    python -m benchmarks.caches [--origins 150]

F3: each origin sends a robots.txt of about 500 KB made to fill the caches
keyed by site text (long escaped non-ASCII patterns, User-agent values,
unknown keys, Content-Usage paths and preferences) and links whose userinfo
holds 1.9 KB; each is parsed, compiled for one agent and asked about a few
URLs (Content-Usage included), as the middleware does, then dropped.
Prints what tracemalloc measures still held once every document is gone
(the caches), and the peak.

F4: 300 requests to an origin of 16,000 Content-Usage rules; prints the
matcher lookups (``Matcher._find`` calls) and the matchers built, counted by
wrapping them.

Runs on older versions of the package too (names looked up as they come).
Not a test: figures depend on the Python build.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

from scrapy_rfc9309.match import Matcher, compile
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.usage import matched_usage, usage_explained

AGENT = "examplebot"
# Non-BMP characters take 4 bytes in UTF-8 and in a str, and 12 once
# percent-encoded.
WIDE = "\U0001f600"


def hostile_body(origin: int, lines: int = 5, short: int = 50) -> str:
    """About 500 KB of lines made to fill every cache keyed by site text:
    ``lines`` sets of the longest lines, ``short`` of lines short enough to
    be kept."""
    out = ["User-agent: *"]
    for j in range(short):
        tag = f"{origin}y{j}"
        out.append(f"Disallow: /{tag}/" + WIDE * 100)
        out.append(f"Content-Usage: /{tag}/" + WIDE * 100 + " train-ai=n")
        out.append(f"Content-Usage: /v{tag} train-ai=n, a{tag}=" + "y" * 300)
        out.append(f"X{tag}" + "x" * 100 + ": x")
    for j in range(lines):
        tag = f"{origin}x{j}"
        out.append(f"Disallow: /{tag}/" + WIDE * 4100)
        out.append(f"Content-Usage: /{tag}/" + WIDE * 4100 + " train-ai=n")
        out.append(f"Content-Usage: /u{tag} train-ai=n, a{tag}=" + "y" * 16000)
        out.append(f"X{tag}" + WIDE * 4100 + ": x")
    for j in range(lines):
        out.append(f"User-agent: {origin}x{j}" + WIDE * 4100)
        out.append("Disallow: /z")
    for j in range(short):
        out.append(f"User-agent: {origin}y{j}" + "a" * 150)
        out.append("Disallow: /z")
    return "\n".join(out) + "\n"


def _origin_function() -> Any:
    """The function the middleware gets an origin with, in this version."""
    from scrapy_rfc9309 import urls

    found = getattr(urls, "origin_robots_url", None)
    if found is None:
        from scrapy_rfc9309 import middleware

        found = middleware._origin_of
    return found


def run_f3(origins: int) -> None:
    origin_of = _origin_function()
    userinfo = "u:" + "p" * 1900
    bodies = [hostile_body(i) for i in range(origins)]
    size = sum(len(body.encode()) for body in bodies) / origins
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i, body in enumerate(bodies):
        document = parse(body)
        matcher = compile(document, AGENT)
        for j in range(3):
            url = f"http://h{i}.test/u{i}x{j}/p"
            matcher.is_allowed(url)
            usage_explained(document, AGENT, url)
        for j in range(440):
            origin_of("http", f"{userinfo}{j}@h{i}.test")
        del document, matcher
    bodies.clear()
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    mib = 1 << 20
    print(f"F3: {origins} hostile origins, {size / 1000:,.0f} KB robots.txt each")
    print(f"  held by the caches afterwards: {(held - base) / mib:,.1f} MiB")
    print(f"  peak: {(peak - base) / mib:,.1f} MiB")
    try:
        from scrapy_rfc9309 import _caches
    except ImportError:
        return
    print(
        f"  estimated by the caches: {_caches.held_bytes() / mib:,.1f} MiB "
        f"of {_caches.max_bytes() / mib:,.1f} MiB allowed"
    )


def run_f4(rules: int = 16_000, requests: int = 300) -> None:
    lines = ["User-agent: *", "Disallow: /private"]
    lines += [f"Content-Usage: /section{i}/ train-ai=n" for i in range(rules)]
    lines.append("Content-Usage: search=y")
    document = parse("\n".join(lines) + "\n", max_bytes=4 << 20)
    matcher = compile(document, AGENT)
    counted = [0, 0]
    find, setup = Matcher._find, Matcher._build

    def counting_find(self: Matcher, url: str, verdict_only: bool = False) -> int:
        counted[0] += 1
        return find(self, url, verdict_only)

    def counting_setup(self: Matcher, *args: Any) -> None:
        counted[1] += 1
        setup(self, *args)

    Matcher._find = counting_find  # type: ignore[method-assign]
    Matcher._build = counting_setup  # type: ignore[method-assign]
    try:
        for i in range(requests):
            matched_usage(matcher, f"http://a.test/section{i * 50}/page")
    finally:
        Matcher._find = find  # type: ignore[method-assign]
        Matcher._build = setup  # type: ignore[method-assign]
    print(f"F4: {requests} requests, {rules:,} Content-Usage rules")
    print(f"  matcher lookups: {counted[0]:,}")
    print(f"  matchers built: {counted[1]:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=150)
    args = parser.parse_args()
    run_f3(args.origins)
    run_f4()


if __name__ == "__main__":
    main()
