"""What the evidence keeps of a hostile robots.txt stays small.

A ``robots_provenance`` record (copied into every request's meta and every
kept item) and each outcome of the ``ROBOTS_REPORT`` (kept for the whole
crawl, whatever ROBOTS_MEMORY_MAX_BYTES evicts) keep the first
Content-Signal keys and Content-Usage lines of a file, and say how many
they left out: the file's ``sha256`` names the rest.  Counts, not bytes of
RAM or time, are asserted.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from scrapy import Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import DirectivesMiddleware, directives_for, explain, parse
from scrapy_rfc9309 import signals as robots_signals
from scrapy_rfc9309.match import compile
from scrapy_rfc9309.outcome import Lifetimes, Outcome, parsed
from scrapy_rfc9309.provenance import (
    CONTENT_SIGNAL_KEPT,
    CONTENT_USAGE_KEPT,
    OUTCOMES_KEPT,
    TEXT_KEPT,
    Ledger,
    ledger_for,
    robots_facts,
    signal_facts,
    usage_facts,
)
from tests.support.crawl_helpers import crawl_items, make_crawler
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_docs import ROOT
from tests.test_provenance import LinkingSpider

AGENT = "TestBot"
KEYS = LINES = 10_000
#: 10,000 Content-Signal keys (100 lines of 100), then 10,000 Content-Usage
#: lines for every URL: about 360 KB, under the default ROBOTS_MAX_BYTES.
HOSTILE = (
    "User-agent: *\n"
    + "".join(
        "Content-Signal: "
        + ", ".join(f"k{n}=yes" for n in range(line * 100, line * 100 + 100))
        + "\n"
        for line in range(KEYS // 100)
    )
    + "Content-Usage: train-ai=n\n" * LINES
)
#: The 1-based line of the first Content-Usage line.
FIRST_USAGE = 2 + KEYS // 100


def outcome_of(text: str) -> Outcome:
    sha = hashlib.sha256(text.encode()).hexdigest()
    return parsed(parse(text), now=0, lifetimes=Lifetimes(), body_sha256=sha)


def assert_bounded(facts: dict[str, Any]) -> None:
    """The first keys and lines of HOSTILE, and the count of the others."""
    assert len(facts["content_signal"]) == CONTENT_SIGNAL_KEPT
    assert list(facts["content_signal"]) == [
        f"k{n}" for n in range(CONTENT_SIGNAL_KEPT)
    ]
    assert facts["content_signal_left_out"] == KEYS - CONTENT_SIGNAL_KEPT
    assert facts["content_usage_lines"] == [
        {"line": FIRST_USAGE + n, "text": "Content-Usage: train-ai=n"}
        for n in range(CONTENT_USAGE_KEPT)
    ]
    assert facts["content_usage_lines_left_out"] == LINES - CONTENT_USAGE_KEPT


def test_a_hostile_file_gives_a_bounded_record_that_says_what_was_cut() -> None:
    outcome = outcome_of(HOSTILE)
    matcher = compile(outcome.rules, AGENT)
    assert len(matcher.content_signals) == KEYS
    assert len(matcher.content_usage) == LINES
    url = "http://example.com/page"
    facts = robots_facts(
        "http://example.com/robots.txt",
        outcome,
        explain(parse(HOSTILE), AGENT, url),
        matcher,
        url,
        1,
    )
    assert_bounded(facts)
    # The preferences are still those of every line; the hash names the file.
    assert facts["content_usage_robots_txt"]["train-ai"] is False
    assert facts["sha256"] == hashlib.sha256(HOSTILE.encode()).hexdigest()


def ledger(tmp_path: Path) -> Ledger:
    crawler = get_crawler(
        Spider, {"ROBOTS_REPORT": str(tmp_path / "r.jsonl"), "USER_AGENT": AGENT}
    )
    return Ledger(crawler)


def test_the_report_keeps_a_bounded_outcome_known_by_a_digest(
    tmp_path: Path,
) -> None:
    found = ledger(tmp_path)
    origin = "http://example.com/robots.txt"
    outcome = outcome_of(HOSTILE)
    for _ in range(2):
        found.crawler.signals.send_catch_log(
            signal=robots_signals.robots_outcome, origin=origin, outcome=outcome
        )
    (line,) = found.lines()
    (reported,) = line["outcomes"]
    assert_bounded(reported)
    # Obtained twice, listed once.
    assert reported["obtained"] == 2
    # The outcomes are known by a digest, not by their JSON text.
    (key,) = found._origins[origin].outcomes
    assert len(key) == 64


def test_the_report_lists_the_first_outcomes_and_the_latest(tmp_path: Path) -> None:
    """A robots.txt changing at each fetch (a counter in a comment) added a
    whole outcome to the report at each one, for the whole crawl."""
    found = ledger(tmp_path)
    origin = "http://example.com/robots.txt"
    for fetch in range(20):
        found.crawler.signals.send_catch_log(
            signal=robots_signals.robots_outcome,
            origin=origin,
            outcome=outcome_of(f"# fetch {fetch}\nUser-agent: *\nDisallow: /a\n"),
        )
    (line,) = found.lines()
    listed = [each["sha256"] for each in line["outcomes"]]
    fetched = [
        hashlib.sha256(
            f"# fetch {n}\nUser-agent: *\nDisallow: /a\n".encode()
        ).hexdigest()
        for n in range(20)
    ]
    assert listed == fetched[: OUTCOMES_KEPT - 1] + fetched[-1:]
    assert line["outcomes_left_out"] == 20 - OUTCOMES_KEPT


def test_items_dropped_are_counted_by_reason_not_by_date(tmp_path: Path) -> None:
    """A past unavailable_after date of its own on each page was a key of
    the report's for each page dropped."""
    crawler = get_crawler(
        Spider, {"ROBOTS_REPORT": str(tmp_path / "r.jsonl"), "USER_AGENT": AGENT}
    )
    crawler.spider = Spider("x")
    found = ledger_for(crawler)
    assert found is not None
    middleware = DirectivesMiddleware.from_crawler(crawler)
    for second in range(5):
        page = Response(
            f"http://example.com/{second}",
            headers={"X-Robots-Tag": f"unavailable_after: 2000-01-01T00:00:0{second}Z"},
        )
        reason = middleware._item_refusal(directives_for(page, AGENT), (), {}, page)
        assert reason is not None
        middleware._dropped("items", {}, page, reason)
    (line,) = found.lines()
    assert line["items_dropped_because"] == [
        {"cause": "directives", "why": "unavailable_after", "items": 5}
    ]


def test_the_text_kept_is_bounded_too() -> None:
    long = "x" * 1_000
    rules = compile(
        parse("User-agent: *\n" + f"Content-Usage: /{long} train-ai=n\n" * 10), AGENT
    ).content_usage
    facts = usage_facts(rules)
    text = len(f"Content-Usage: /{long} train-ai=n")
    assert len(facts["content_usage_lines"]) == TEXT_KEPT // text
    assert facts["content_usage_lines_left_out"] == 10 - TEXT_KEPT // text
    # One value longer than the whole budget: none kept, one left out.
    facts = signal_facts({"ai-train": "y" * TEXT_KEPT})
    assert facts == {"content_signal": {}, "content_signal_left_out": 1}


def test_a_file_within_the_limits_is_kept_whole_with_no_count() -> None:
    signals = {f"k{n}": True for n in range(CONTENT_SIGNAL_KEPT)}
    assert signal_facts(signals) == {"content_signal": dict.fromkeys(signals, "yes")}
    rules = compile(
        parse("User-agent: *\n" + "Content-Usage: train-ai=n\n" * CONTENT_USAGE_KEPT),
        AGENT,
    ).content_usage
    facts = usage_facts(rules)
    assert list(facts) == ["content_usage_lines"]
    assert len(facts["content_usage_lines"]) == CONTENT_USAGE_KEPT


@coroutine_test
async def test_a_crawl_of_a_hostile_file_keeps_bounded_evidence(
    server: Server, tmp_path: Path
) -> None:
    server.route("/robots.txt", HOSTILE)
    crawler = make_crawler(
        {"ROBOTS_PROVENANCE": True, "ROBOTS_REPORT": str(tmp_path / "r.jsonl")},
        LinkingSpider,
    )
    urls = [server.url(f"/p{n}") for n in range(3)]
    items = await crawl_items(crawler, urls=urls)
    assert len(items) == 3
    for item in items:
        assert_bounded(item["robots_provenance"])
    (line,) = (tmp_path / "r.jsonl").read_text().splitlines()
    (reported,) = json.loads(line)["outcomes"]
    assert_bounded(reported)
    assert reported["sha256"] == hashlib.sha256(HOSTILE.encode()).hexdigest()


def test_the_limits_are_those_the_docs_give() -> None:
    page = (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8")
    assert f"first\n{CONTENT_SIGNAL_KEPT} keys of `content_signal`" in page
    assert f"the first {CONTENT_USAGE_KEPT} lines of `content_usage_lines`" in page
    assert f"no more than {TEXT_KEPT:,} characters" in page
    memory = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert (
        f"at most {CONTENT_SIGNAL_KEPT}\nContent-Signal keys and {CONTENT_USAGE_KEPT}"
        f" Content-Usage lines, of at most {TEXT_KEPT:,} characters" in memory
    )
