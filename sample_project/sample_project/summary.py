"""A short, human-readable summary of what robots.txt did to a crawl.

Enabled by ``SummaryAddon`` (see settings.py), which installs three small
components sharing one :class:`CrawlRecord`:

- ``SummaryExtension`` records the robots.txt outcome of each origin (the
  package's ``robots_outcome`` signal), every response and item, and writes
  the summary when the crawl ends;
- ``DropRecorder``, a downloader middleware, sees the requests that
  ``RobotsMiddleware`` drops: they raise ``RobotsDisallowed``, which every
  downloader middleware's ``process_exception`` receives;
- ``DirectivesRecorder``, a spider middleware placed after the package's
  ``DirectivesMiddleware`` (a higher number), sees what the spider yields
  for each page before noindex and nofollow drop any of it.

The summary goes to ``<SAMPLE_OUTPUT_DIR>/<spider>.summary.json`` and
``.summary.txt``, and is printed on stdout unless ``SAMPLE_SUMMARY_PRINT``
is False.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from scrapy_rfc9309 import RobotsDisallowed, content_signals, crawl_delay
from scrapy_rfc9309.middleware import META_KEY as ROBOTS_TXT_FOR
from scrapy_rfc9309.signals import robots_outcome

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import Settings
    from typing_extensions import Self

    from scrapy_rfc9309 import Outcome


@dataclass
class Drop:
    """A request that robots.txt kept from being sent."""

    path: str
    cause: str  # rule, unreachable, crawl_delay, content_signal
    line: int | None = None
    rule: str | None = None


@dataclass
class HostRecord:
    """Everything seen of one origin (scheme, host and port)."""

    origin: str
    name: str = ""
    robots: str | None = None  # parsed, unavailable or unreachable
    robots_status: int | None = None
    # Downloads of the last robots.txt response (Scrapy's RetryMiddleware
    # downloads a 5xx answer RETRY_TIMES more times before it gives up).
    robots_tries: int = 0
    crawl_delay: float | None = None
    content_signals: dict[str, bool | str] = field(default_factory=dict)
    crawled: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    items: int = 0
    dropped: list[Drop] = field(default_factory=list)
    noindex: dict[str, int] = field(default_factory=dict)  # path: items dropped
    nofollow: dict[str, int] = field(default_factory=dict)  # path: links dropped

    @property
    def gaps(self) -> list[float]:
        """Seconds between consecutive responses from this origin."""
        return [b - a for a, b in pairwise(self.times)]


@dataclass
class CrawlRecord:
    """What the summary of one crawl is built from."""

    hosts: dict[str, HostRecord] = field(default_factory=dict)
    sitemaps: list[str] = field(default_factory=list)
    feeds: list[dict[str, Any]] = field(default_factory=list)

    def host(self, url: str) -> HostRecord:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.hosts:
            self.hosts[origin] = HostRecord(origin)
        return self.hosts[origin]


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def agent_of(crawler: Crawler) -> str:
    """The agent whose robots.txt rules apply, as the package chooses it."""
    for value in (
        getattr(crawler.spider, "robots_user_agent", None),
        crawler.settings.get("ROBOTS_USER_AGENT"),
        crawler.settings.get("ROBOTSTXT_USER_AGENT"),
        crawler.settings.get("USER_AGENT"),
    ):
        if value:
            return str(value)
    return "*"


class SummaryExtension:
    """Collects the crawl's record and writes its summary at the end."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.record = CrawlRecord()
        self.output_dir = Path(crawler.settings.get("SAMPLE_OUTPUT_DIR") or "output")
        self.print = crawler.settings.getbool("SAMPLE_SUMMARY_PRINT", True)
        connect = crawler.signals.connect
        connect(self.outcome, signal=robots_outcome)
        connect(self.response_received, signal=signals.response_received)
        connect(self.item_scraped, signal=signals.item_scraped)
        connect(self.feed_slot_closed, signal=signals.feed_slot_closed)
        connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SummaryExtension:
        return cls(crawler)

    def outcome(
        self, origin: str, outcome: Outcome, request: Request, **_: Any
    ) -> None:
        host = self.record.host(origin)
        host.robots = outcome.kind
        host.robots_status = outcome.http_status
        document = outcome.document
        if document is not None:
            agent = agent_of(self.crawler)
            host.crawl_delay = crawl_delay(document, agent)
            host.content_signals = content_signals(document, agent)
            for sitemap in document.sitemaps:
                if sitemap not in self.record.sitemaps:
                    self.record.sitemaps.append(sitemap)

    def response_received(self, response: Response, request: Request, **_: Any) -> None:
        # The package's own robots.txt requests (each redirect hop too)
        # carry the robots.txt URL they are fetched for; a retried request
        # carries the retries before it.
        if ROBOTS_TXT_FOR in request.meta:
            host = self.record.host(str(request.meta[ROBOTS_TXT_FOR]))
            host.robots_tries = request.meta.get("retry_times", 0) + 1
            return
        host = self.record.host(response.url)
        host.crawled.append(_path(response.url))
        host.times.append(time.monotonic())

    def item_scraped(self, item: Any, response: Response, **_: Any) -> None:
        self.record.host(response.url).items += 1

    def feed_slot_closed(self, slot: Any, **_: Any) -> None:
        uri = str(slot.uri)
        if uri.startswith("file://"):
            uri = url2pathname(urlsplit(uri).path)
        self.record.feeds.append({"uri": uri, "items": slot.itemcount})

    def engine_stopped(self) -> None:
        spider = self.crawler.spider
        # Nothing to tell, e.g. for the spider of `scrapy robots check`.
        if spider is None or not any(
            host.crawled or host.dropped for host in self.record.hosts.values()
        ):
            return
        names: dict[str, str] = getattr(spider, "host_names", {})
        for origin, host in self.record.hosts.items():
            host.name = names.get(origin, "")
        summary = {
            "spider": spider.name,
            "agent": agent_of(self.crawler),
            "finish_reason": self.crawler.stats.get_value("finish_reason"),
            "elapsed": self.crawler.stats.get_value("elapsed_time_seconds"),
            "hosts": [_host_json(host) for host in self._ordered(names)],
            "sitemaps": self.record.sitemaps,
            "feeds": self.record.feeds,
            "stats": {
                key: value
                for key, value in sorted(self.crawler.stats.get_stats().items())
                if key.startswith("robots/") or key == "item_scraped_count"
            },
        }
        text = render(summary)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        base = self.output_dir / spider.name
        Path(f"{base}.summary.json").write_text(
            json.dumps(summary, indent=2) + "\n", encoding="utf-8"
        )
        Path(f"{base}.summary.txt").write_text(text, encoding="utf-8")
        if self.print:
            print(text, end="", flush=True)

    def _ordered(self, names: dict[str, str]) -> list[HostRecord]:
        # The demo hosts in the site's order, then any other origin.
        order = list(names)
        return sorted(
            self.record.hosts.values(),
            key=lambda h: (
                order.index(h.origin) if h.origin in names else len(order),
                h.origin,
            ),
        )


def _host_json(host: HostRecord) -> dict[str, Any]:
    data = asdict(host)
    del data["times"]
    gaps = host.gaps
    data["gaps"] = {
        "count": len(gaps),
        "min": round(min(gaps), 3) if gaps else None,
        "mean": round(fmean(gaps), 3) if gaps else None,
    }
    return data


def _drop(request: Request, error: RobotsDisallowed) -> Drop:
    rule = error.decision.rule
    if rule is None:
        return Drop(_path(request.url), error.cause)
    directive = "Allow" if rule.allow else "Disallow"
    return Drop(
        _path(request.url), error.cause, rule.line, f"{directive}: {rule.pattern}"
    )


class _Recorder:
    """A middleware writing into the summary extension's record."""

    def __init__(self, crawler: Crawler) -> None:
        extension = crawler.get_extension(SummaryExtension)
        if extension is None:
            raise NotConfigured("SummaryExtension is not enabled")
        self.record = extension.record

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)


# The middleware methods below take an optional spider, unused: Scrapy 2.13
# passes one (spider=...); from Scrapy 2.14 on, Scrapy passes none to a
# method where it is optional. On Scrapy 2.14 and newer, drop it.
class DropRecorder(_Recorder):
    """Downloader middleware: records each request that robots.txt drops."""

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        if isinstance(exception, RobotsDisallowed):
            self.record.host(request.url).dropped.append(_drop(request, exception))


class DirectivesRecorder(_Recorder):
    """Spider middleware: records what noindex and nofollow take away.

    It runs before ``DirectivesMiddleware`` on the spider's output, so it
    counts the items of noindex pages and the links of nofollow pages
    before they are dropped.
    """

    async def process_spider_output(
        self,
        response: Response | None,
        result: AsyncIterator[Any],
        spider: Spider | None = None,
    ) -> AsyncIterator[Any]:
        directives = response.meta.get("robots_directives") if response else None
        noindex = bool(directives and (directives.noindex or directives.is_expired()))
        nofollow = bool(directives and directives.nofollow)
        async for output in result:
            if response is not None:
                path = _path(response.url)
                host = self.record.host(response.url)
                if (
                    nofollow
                    and isinstance(output, Request)
                    and not output.meta.get("dont_obey_robotstxt")
                ):
                    host.nofollow[path] = host.nofollow.get(path, 0) + 1
                elif noindex and ItemAdapter.is_item(output):
                    host.noindex[path] = host.noindex.get(path, 0) + 1
            yield output


class SummaryAddon:
    """Installs the summary's extension and its two recorders."""

    def update_settings(self, settings: Settings) -> None:
        settings.set_in_component_priority_dict("EXTENSIONS", SummaryExtension, 500)
        settings.set_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", DropRecorder, 50
        )
        # Spider output flows from the highest number down: 950 sees it
        # before DirectivesMiddleware drops anything.
        settings.set_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", DirectivesRecorder, 950
        )


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def _robots_line(host: dict[str, Any]) -> str:
    if host["robots"] is None:
        return "robots.txt not fetched"
    text = f"robots.txt {host['robots']}"
    if host["robots_status"] is not None:
        text += f" (HTTP {host['robots_status']})"
    if host["crawl_delay"] is not None:
        text += f", Crawl-delay {host['crawl_delay']:g} s"
    if host["content_signals"]:
        signals_text = ", ".join(
            f"{key}={'yes' if value is True else 'no' if value is False else value}"
            for key, value in host["content_signals"].items()
        )
        text += f", Content-Signal {signals_text}"
    return text


def _drop_line(drop: dict[str, Any], host: dict[str, Any]) -> str:
    cause = drop["cause"]
    if cause == "rule":
        why = f"line {drop['line']}: {drop['rule']}"
    elif cause == "unreachable":
        status = host["robots_status"]
        why = "robots.txt unreachable" + (f" (HTTP {status})" if status else "")
    elif cause == "crawl_delay":
        why = "Crawl-delay over ROBOTS_CRAWL_DELAY_MAX"
    elif cause == "content_signal":
        refused = [
            key for key, value in host["content_signals"].items() if value is False
        ]
        why = "Content-Signal " + ", ".join(f"{key}=no" for key in refused)
    else:
        why = cause
    return f"dropped {drop['path']:<22} {why}"


# Stands for a space the summary's lines must not break at.
_KEEP = "\0"


def _unreachable_note(host: dict[str, Any], pad: str) -> str:
    """Why a whole origin was skipped, and the log's ERROR line that goes with it.

    Scrapy's RetryMiddleware retries a robots.txt answering 5xx like any
    request, then logs "Gave up retrying" at ERROR level: to a newcomer
    that line looks like a crash, while it is this outcome, as intended.
    """
    status = host["robots_status"]
    tries = host["robots_tries"]
    text = ""
    if status and tries > 1:
        quoted = f'"Gave up retrying <GET {host["origin"]}/robots.txt>"'
        text = (
            f"robots.txt answered {status} to all {tries} tries: the log's ERROR "
            f"{quoted.replace(' ', _KEEP)} is Scrapy's RetryMiddleware saying "
            "so, not a crash. "
        )
    text += (
        "While robots.txt is unreachable, every URL of the origin is disallowed "
        f"(RFC{_KEEP}9309, section{_KEEP}2.3.1.4); it is fetched again after "
        "ROBOTS_UNREACHABLE_LIFETIME."
    )
    wrapped = textwrap.fill(
        text,
        width=100,
        initial_indent=f"{pad}note: ",
        subsequent_indent=pad + " " * 6,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return wrapped.replace(_KEEP, " ")


def _by_path(drop: dict[str, Any]) -> str:
    return str(drop["path"])


def render(summary: dict[str, Any]) -> str:
    """The summary as a few lines of text."""
    stats = summary["stats"]
    lines = [
        f"== {summary['spider']} (agent {summary['agent']!r}): "
        f"{summary['finish_reason']} in {summary['elapsed'] or 0:.1f} s"
    ]
    for host in summary["hosts"]:
        label = host["name"] or "-"
        lines.append(f"  {label:<8} {host['origin']:<24} {_robots_line(host)}")
        pad = " " * 11
        crawled = sorted(host["crawled"])
        lines.append(
            f"{pad}crawled {len(crawled)}, items {host['items']}"
            + (": " + " ".join(crawled) if crawled else "")
        )
        gaps = host["gaps"]
        if host["crawl_delay"] is not None and gaps["count"]:
            lines.append(
                f"{pad}gaps between responses: min {_seconds(gaps['min'])}, "
                f"mean {_seconds(gaps['mean'])} ({gaps['count']} gaps)"
            )
        lines.extend(
            f"{pad}{_drop_line(drop, host)}"
            for drop in sorted(host["dropped"], key=_by_path)
        )
        if host["robots"] == "unreachable":
            lines.append(_unreachable_note(host, pad))
        lines.extend(
            f"{pad}noindex {path:<22} {count} item(s) dropped"
            for path, count in sorted(host["noindex"].items())
        )
        lines.extend(
            f"{pad}nofollow {path:<21} {count} link(s) not followed"
            for path, count in sorted(host["nofollow"].items())
        )
    if summary["sitemaps"]:
        lines.append(
            f"  sitemaps discovered in robots.txt: {', '.join(summary['sitemaps'])}"
        )
    lines.extend(
        f"  {feed['items']} items written to {feed['uri']}" for feed in summary["feeds"]
    )
    lines.append(
        textwrap.fill(
            ", ".join(f"{key} {value}" for key, value in stats.items()),
            width=100,
            initial_indent="  stats: ",
            subsequent_indent=" " * 9,
            break_on_hyphens=False,
        )
    )
    return "\n".join(lines) + "\n"
