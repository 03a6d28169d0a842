#!/usr/bin/env python3
"""Run the whole sample: start the demo site, crawl it, print the summary.

The demo site (sample_project/demo_site.py) is served from this process on
loopback addresses; the three sample spiders crawl it at the same time, each
with its own Scrapy crawler; the summary of each is printed at the end.
Exit status 0 when every crawl finished without errors.

    python run_sample.py [--output DIR] [--log-level INFO] [--port N]
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

HERE = Path(__file__).resolve().parent
SPIDERS = ("sample", "news", "trainer")


#: Scrapy's LOG_LEVEL names (any case here).
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
#: The demo site's hosts, on consecutive addresses from --first-address.
HOSTS = 8


class _Parser(argparse.ArgumentParser):
    """A bad argument is one line (``run_sample.py: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port: a whole number from 0 to 65535 is expected"
        )
    return port


def _address(text: str) -> str:
    try:
        # The last host's address must exist too.
        ipaddress.IPv4Address(text) + (HOSTS - 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IPv4 address with {HOSTS - 1} more after it"
            " (such as 127.0.0.2)"
        ) from None
    return text


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a bad value exits with status 2 and one
    line on standard error, before the demo site starts."""
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        type=Path,
        default=HERE / "output",
        help="where items and summaries go (default: output/ beside this script)",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default="WARNING",
        help="Scrapy's LOG_LEVEL, any case (default WARNING; DEBUG shows every"
        " dropped request)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=0,
        help="one port for every demo host (default: free ports)",
    )
    parser.add_argument(
        "--first-address",
        type=_address,
        default="127.0.0.2",
        help="address of the first demo host",
    )
    args = parser.parse_args(argv)
    output: Path = args.output.resolve()
    if output.exists() and not output.is_dir():
        parser.error(f"argument --output: {output} is not a directory")
    try:
        output.mkdir(parents=True, exist_ok=True)
        # Written to, as the crawls will: permissions alone do not tell
        # (root, /proc).
        with tempfile.TemporaryFile(dir=output):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        parser.error(f"argument --output: cannot write in {output}: {reason}")
    args.output = output
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # The project is importable from anywhere, as `scrapy crawl` would find it
    # from its directory.
    sys.path.insert(0, str(HERE))
    os.environ["SCRAPY_SETTINGS_MODULE"] = "sample_project.settings"
    from sample_project.demo_site import DemoSite, DemoSiteError, describe
    from scrapy.utils.project import get_project_settings

    try:
        from scrapy.crawler import AsyncCrawlerProcess
    except ImportError:  # Scrapy 2.13
        from scrapy.crawler import CrawlerProcess as AsyncCrawlerProcess

    output: Path = args.output
    settings = get_project_settings()
    feeds = {
        str(output / Path(str(uri)).name): options
        for uri, options in settings.getdict("FEEDS").items()
    }
    settings.set("FEEDS", feeds, "cmdline")
    settings.set("SAMPLE_OUTPUT_DIR", str(output), "cmdline")
    settings.set("SAMPLE_SUMMARY_PRINT", False, "cmdline")
    settings.set("LOG_LEVEL", args.log_level, "cmdline")

    site = DemoSite(args.first_address, args.port)
    try:
        site.start()
    except DemoSiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    site_file = output / "demo_site.json"
    site.write(site_file)
    print(f"Demo site:\n{describe(site.urls)}\n")
    print(f"Crawling it with the spiders {', '.join(SPIDERS)} ...\n", flush=True)

    started = time.monotonic()
    for name in SPIDERS:
        for extension in ("txt", "json"):
            summary_file(output, name, extension).unlink(missing_ok=True)
    try:
        process = AsyncCrawlerProcess(settings)
        crawlers = [process.create_crawler(name) for name in SPIDERS]
        for crawler in crawlers:
            process.crawl(crawler, site=str(site_file))
        process.start()
    finally:
        site.stop()
    elapsed = time.monotonic() - started

    failed: list[str] = []
    for name, crawler in zip(SPIDERS, crawlers, strict=True):
        path = summary_file(output, name, "txt")
        if path.exists():
            print(path.read_text(encoding="utf-8"))
        stats = crawler.stats.get_stats() if crawler.stats else {}
        reason = stats.get("finish_reason")
        # log_count/ERROR counts the whole process's log, all crawlers
        # together, and Scrapy logs a robots.txt that stays 503 as an error.
        errors = stats.get("spider_exceptions/count", 0)
        if reason != "finished" or errors or not path.exists():
            failed.append(f"{name} (finish reason {reason}, {errors} spider errors)")
    print(f"Done in {elapsed:.1f} s. Items and summaries: {output}")
    if failed:
        print(
            f"error: these crawls did not finish cleanly: {', '.join(failed)}",
            file=sys.stderr,
        )
        return 1
    return 0


def summary_file(output: Path, spider: str, extension: str) -> Path:
    """Where the summary extension writes a spider's summary."""
    return output / f"{spider}.summary.{extension}"


if __name__ == "__main__":
    sys.exit(main())
