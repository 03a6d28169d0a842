"""Evidence of a crawl: the ``robots_provenance`` record of each kept item
(``ROBOTS_PROVENANCE``) and the JSON Lines report of each origin
(``ROBOTS_REPORT``).

A record says which robots.txt was read (its URL, when it was fetched, what
came of it, the SHA-256 of the body read), which of its lines decided, and
the preferences that applied (Content-Signal, Content-Usage, the page
directives, TDMRep).  It is what the crawl saw and did, for whoever must
show it later: a record, not legal advice (docs/rights.md).

:class:`Ledger` is the crawl's one keeper of that evidence:
:class:`~scrapy_rfc9309.RobotsMiddleware` tells it what it decided for each
request and why it dropped any, and
:class:`~scrapy_rfc9309.provenancemiddleware.ProvenanceMiddleware` which
items left the page; at spider close it writes the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals

from . import signals as robots_signals
from ._config import RobotsConfig
from ._settings import SettingError
from .match import compile
from .outcome import UNREACHABLE
from .stringify import readable, rule_line, signal_text, usage_line
from .urls import robots_url
from .usage import matched_usage

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from scrapy import Request
    from scrapy.crawler import Crawler

    from .match import Decision, Matcher
    from .outcome import Outcome
    from .parse import UsageRule

__all__ = ["EVIDENCE_KEY", "FIELD", "Ledger", "ledger_for"]

logger = logging.getLogger(__name__)

#: The item field (and the name of the record).
FIELD = "robots_provenance"
#: Request meta key of what RobotsMiddleware decided for the request: the
#: robots.txt part of its record, plain data (requests are pickled to disk).
EVIDENCE_KEY = "_robots_evidence"
#: Why an item's request was not judged by a robots.txt: its meta said
#: so; its URL has none; it never went through RobotsMiddleware (left out
#: of the chain, or answered before it).
NOT_CHECKED = "dont_obey_robotstxt"
NO_ROBOTS_TXT = "no_robots_txt"
UNJUDGED = "not_judged"
#: What a record, and each outcome of the report, keeps of a robots.txt's
#: Content-Signal keys and Content-Usage lines: the first ones in the
#: file's order, at most this many of each, their text (keys and values,
#: lines) at most :data:`TEXT_KEPT` characters in all per kind.  The rest
#: are counted (``content_signal_left_out``, ``content_usage_lines_left_out``):
#: the ``sha256`` names the whole file.  A hostile file of 500 KB of keys or
#: lines is thus a few KB of evidence, not megabytes kept for the whole crawl
#: and copied into every request and item (docs/evidence.md).
CONTENT_SIGNAL_KEPT = 32
CONTENT_USAGE_KEPT = 32
TEXT_KEPT = 4096
#: The distinct outcomes the report lists for one origin: the first ones
#: obtained and the latest; the others are counted (``outcomes_left_out``),
#: as a robots.txt changing at each fetch (every 10 minutes, or each time
#: memory let the origin go) would add one for the whole crawl.
OUTCOMES_KEPT = 8


def iso_time(seconds: float | None) -> str | None:
    """Seconds since the epoch as ISO 8601 UTC."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def usage_lines(rules: Iterable[UsageRule]) -> list[dict[str, Any]]:
    """Content-Usage rules as the lines they were read from."""
    return [{"line": rule.line, "text": usage_line(rule)} for rule in rules]


def signal_facts(content_signals: Mapping[str, bool | str]) -> dict[str, Any]:
    """``content_signal``: the first Content-Signal keys and their values
    (:data:`CONTENT_SIGNAL_KEPT`, :data:`TEXT_KEPT`), and
    ``content_signal_left_out`` when there were more."""
    kept: dict[str, str] = {}
    budget = TEXT_KEPT
    for key, value in content_signals.items():
        text = signal_text(value)
        budget -= len(key) + len(text)
        if len(kept) == CONTENT_SIGNAL_KEPT or budget < 0:
            break
        kept[key] = text
    facts: dict[str, Any] = {"content_signal": kept}
    if len(kept) < len(content_signals):
        facts["content_signal_left_out"] = len(content_signals) - len(kept)
    return facts


def usage_facts(rules: Sequence[UsageRule]) -> dict[str, Any]:
    """``content_usage_lines``: the first of ``rules`` as their lines
    (:data:`CONTENT_USAGE_KEPT`, :data:`TEXT_KEPT`), and
    ``content_usage_lines_left_out`` when there were more."""
    kept: list[dict[str, Any]] = []
    budget = TEXT_KEPT
    for rule in rules:
        text = usage_line(rule)
        budget -= len(text)
        if len(kept) == CONTENT_USAGE_KEPT or budget < 0:
            break
        kept.append({"line": rule.line, "text": text})
    facts: dict[str, Any] = {"content_usage_lines": kept}
    if len(kept) < len(rules):
        facts["content_usage_lines_left_out"] = len(rules) - len(kept)
    return facts


def outcome_facts(outcome: Outcome) -> dict[str, Any]:
    """What an item's record and the report say of an outcome."""
    return {
        "outcome": outcome.kind,
        "http_status": outcome.http_status,
        "detail": outcome.detail,
        "fetched_at": iso_time(outcome.fetched_at),
        "sha256": outcome.body_sha256,
        "fallback_sha256": outcome.fallback_sha256,
    }


def robots_facts(
    origin: str,
    outcome: Outcome,
    decision: Decision,
    matcher: Matcher | None,
    url: str,
    now: float,
) -> dict[str, Any]:
    """The robots.txt part of the record of a request ``decision`` allowed:
    the outcome, the deciding line, Content-Signal and Content-Usage (the
    first keys and lines, :func:`signal_facts`, :func:`usage_facts`)."""
    rule = decision.rule
    signals: dict[str, Any] = {"content_signal": {}}
    preferences: dict[str, bool | None] = {}
    usage: dict[str, Any] = {"content_usage_lines": []}
    if matcher is not None and not outcome.disallows_all(now):
        signals = signal_facts(matcher.content_signals)
        preferences, rules = matched_usage(matcher, url)
        usage = usage_facts(rules)
    return {
        "robots_txt": origin,
        **outcome_facts(outcome),
        "reason": decision.reason,
        "line": None if rule is None else rule.line,
        "rule": None if rule is None else rule_line(rule),
        **signals,
        "content_usage_robots_txt": preferences,
        **usage,
    }


def unchecked_facts(origin: str | None, reason: str) -> dict[str, Any]:
    """The robots.txt part of the record of a request no robots.txt judged."""
    return {
        "robots_txt": origin,
        **dict.fromkeys(
            ("outcome", "http_status", "detail", "fetched_at", "sha256"), None
        ),
        "fallback_sha256": None,
        "reason": reason,
        "line": None,
        "rule": None,
        "content_signal": {},
        "content_usage_robots_txt": {},
        "content_usage_lines": [],
    }


def plain(value: Any) -> Any:
    """``value`` as JSON data (what another component left in meta), its
    strings :func:`~scrapy_rfc9309.stringify.readable`: a record or a report
    line that any UTF-8 writer (a feed, the report file) can write."""
    if isinstance(value, str):
        return readable(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, dict):
        return {readable(str(key)): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item) for item in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return plain(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


# -- the report's path -------------------------------------------------------

_PATH_ACCEPTED = (
    "the path of a file to write, in an existing, writable folder"
    " (%(name)s, %(time)s, %(pid)s and the spider's other attributes are"
    " replaced; %% for a literal %)"
)


def report_path(crawler: Crawler) -> Path | None:
    """``ROBOTS_REPORT``, placeholders replaced, checked writable now rather
    than found unwritable when the crawl ends."""
    value = RobotsConfig.for_crawler(crawler).report
    if value is None or value == "":
        return None

    def refused(why: str) -> SettingError:
        return SettingError(
            f"ROBOTS_REPORT must be {_PATH_ACCEPTED}, not {value!r}: {why}"
        )

    if not isinstance(value, (str, os.PathLike)):
        raise refused("not a path")
    spider = crawler.spider
    # The placeholders of Scrapy's FEEDS URIs, and the process: each worker
    # of a fleet can write its own file.
    params = {key: getattr(spider, key, None) for key in dir(spider)}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    params.update(time=now.isoformat().replace(":", "-"), pid=os.getpid())
    try:
        path = Path(os.fspath(value) % params)
    except (KeyError, ValueError, TypeError) as exc:
        raise refused(f"bad placeholder ({type(exc).__name__}: {exc})") from None
    folder = path.parent
    if path.is_dir():
        raise refused(f"{path} is a folder")
    if not folder.is_dir():
        raise refused(f"folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        raise refused(f"{path} cannot be written")
    return path


# -- the ledger --------------------------------------------------------------


class _Origin:
    """What the report keeps of one origin."""

    __slots__ = (
        "allowed_by",
        "dropped",
        "items_dropped",
        "items_kept",
        "left_out",
        "outcomes",
    )

    def __init__(self) -> None:
        #: Digest of an outcome's facts -> (its facts, times obtained), in
        #: the order first obtained (:data:`OUTCOMES_KEPT`).
        self.outcomes: dict[str, tuple[dict[str, Any], int]] = {}
        #: Times an outcome was obtained that is no longer listed.
        self.left_out = 0
        #: (cause, why) -> requests dropped.
        self.dropped: Counter[tuple[str, str]] = Counter()
        #: (reason, line, rule) -> items kept.
        self.allowed_by: Counter[tuple[str, int | None, str | None]] = Counter()
        self.items_kept = 0
        #: (cause, why) -> items dropped.
        self.items_dropped: Counter[tuple[str, str]] = Counter()


class Ledger:
    """The evidence of one crawl, shared by the components that gather it
    (:func:`ledger_for`)."""

    def __init__(self, crawler: Crawler) -> None:
        config = RobotsConfig.for_crawler(crawler)
        self.crawler = crawler
        #: ``ROBOTS_PROVENANCE``: items get a record.
        self.provenance = config.provenance
        #: ``ROBOTS_REPORT``: where the report goes (``None``: no report).
        self.path = report_path(crawler)
        self.user_agent = config.user_agent
        self.profile = config.profile
        self.purposes = list(config.usage_purposes)
        self._origins: dict[str, _Origin] = {}
        if self.path is not None:
            crawler.signals.connect(self._outcome, signal=robots_signals.robots_outcome)
            crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    def decided(
        self,
        request: Request,
        origin: str,
        outcome: Outcome,
        matcher: Matcher | None,
        decision: Decision,
        now: float,
    ) -> None:
        """Keep what allowed ``request`` in its meta, for its items."""
        request.meta[EVIDENCE_KEY] = robots_facts(
            origin, outcome, decision, matcher, request.url, now
        )

    def dropped(self, origin: str, cause: str, why: str) -> None:
        """Count a request dropped for ``origin``'s robots.txt."""
        if self.path is not None:
            self._origin(origin).dropped[cause, why] += 1

    def item_dropped(self, url: str, cause: str, why: str) -> None:
        """Count an item of the page at ``url`` dropped by ``cause``: the
        component whose stat ``robots/<cause>/items_dropped`` counts it
        (``directives``, ``usage``, ``tdm``)."""
        if self.path is None:
            return
        origin = robots_url(url)
        if origin is not None:
            self._origin(origin).items_dropped[cause, why] += 1

    def kept(self, record: dict[str, Any]) -> None:
        """Count an item kept, by the robots.txt line that allowed it."""
        origin = record.get("robots_txt")
        if self.path is None or origin is None:
            return
        facts = self._origin(origin)
        facts.items_kept += 1
        facts.allowed_by[record["reason"], record["line"], record["rule"]] += 1

    def _origin(self, origin: str) -> _Origin:
        found = self._origins.get(origin)
        if found is None:
            found = self._origins[origin] = _Origin()
        return found

    def _outcome(self, origin: str, outcome: Outcome) -> None:
        facts = outcome_facts(outcome)
        rules = outcome.rules
        matcher = None if rules is None else compile(rules, self.user_agent)
        if matcher is not None and not (
            outcome.kind == UNREACHABLE and outcome.disallows_all(outcome.fetched_at)
        ):
            # The first keys and lines, counting the others: what the report
            # keeps of an origin for the whole crawl stays small.
            facts.update(signal_facts(matcher.content_signals))
            facts.update(usage_facts(matcher.content_usage))
        else:
            facts.update(content_signal={}, content_usage_lines=[])
        # Obtained again with the same facts (the same file fetched again,
        # or read from a shared store): counted, not listed again.  Known by
        # a digest of the facts, not by their whole text kept a second time.
        text = json.dumps({**facts, "fetched_at": None}, sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()
        kept = self._origin(origin)
        outcomes = kept.outcomes
        first, times = outcomes.get(key, (facts, 0))
        if times:
            first["last_fetched_at"] = facts["fetched_at"]
        elif len(outcomes) >= OUTCOMES_KEPT:
            # The latest but one gives way: the first ones and the latest stay.
            kept.left_out += outcomes.pop(next(reversed(outcomes)))[1]
        outcomes[key] = (first, times + 1)

    def lines(self) -> list[dict[str, Any]]:
        """The report: one JSON object per origin, by robots.txt URL, its
        text :func:`~scrapy_rfc9309.stringify.readable` (:func:`plain`)."""
        spider = self.crawler.spider
        report = []
        for origin, facts in sorted(self._origins.items()):
            report.append(
                {
                    "robots_txt": origin,
                    "spider": getattr(spider, "name", None),
                    "user_agent": self.user_agent,
                    "profile": self.profile,
                    "purposes": self.purposes,
                    "outcomes": [
                        {**first, "obtained": times}
                        for first, times in facts.outcomes.values()
                    ],
                    **({"outcomes_left_out": facts.left_out} if facts.left_out else {}),
                    "requests_dropped": _by_cause(facts.dropped),
                    "dropped_because": [
                        {"cause": cause, "why": why, "requests": count}
                        for (cause, why), count in sorted(facts.dropped.items())
                    ],
                    "items_kept": facts.items_kept,
                    "items_allowed_by": [
                        {"reason": reason, "line": line, "rule": rule, "items": count}
                        for (reason, line, rule), count in facts.allowed_by.items()
                    ],
                    "items_dropped": _by_cause(facts.items_dropped),
                    "items_dropped_because": [
                        {"cause": cause, "why": why, "items": count}
                        for (cause, why), count in sorted(facts.items_dropped.items())
                    ],
                }
            )
        return [plain(line) for line in report]

    def write(self) -> None:
        """Write the report, whole or not at all (a temporary file renamed)."""
        path = self.path
        if path is None:
            return
        lines = self.lines()
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with temporary.open("w", encoding="utf-8") as file:
                for line in lines:
                    file.write(json.dumps(line, ensure_ascii=False) + "\n")
            os.replace(temporary, path)
        except (OSError, ValueError, TypeError) as exc:
            # The folder or the disk (OSError), or a value that JSON or
            # UTF-8 cannot write (a TypeError, a UnicodeEncodeError): one
            # line at close, never a traceback, no temporary file left.
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("robots/report/errors")
            error = exc if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            logger.error(
                "ROBOTS_REPORT %(path)s could not be written: %(error)s",
                {"path": str(path), "error": error},
                extra={"spider": self.crawler.spider},
            )
            return
        logger.info(
            "ROBOTS_REPORT: %(origins)s origin%(s)s written to %(path)s",
            {"origins": len(lines), "s": "s" * (len(lines) != 1), "path": str(path)},
            extra={"spider": self.crawler.spider},
        )

    def _spider_closed(self) -> None:
        self.write()


def _by_cause(counts: Counter[tuple[str, str]]) -> dict[str, int]:
    """``(cause, why)`` counts summed by cause, in the causes' order."""
    causes: Counter[str] = Counter()
    for (cause, _), count in counts.items():
        causes[cause] += count
    return dict(sorted(causes.items()))


# One per crawl, whichever of its components asks first; kept on the
# crawler, as a WeakKeyDictionary value referring to its key
# (Ledger.crawler) would keep every crawl alive.
_ATTRIBUTE = "_scrapy_rfc9309_ledger"


def ledger_for(crawler: Crawler) -> Ledger | None:
    """The crawl's ledger; ``None`` when neither ``ROBOTS_PROVENANCE`` nor
    ``ROBOTS_REPORT`` asks for evidence."""
    ledger: Ledger | None = getattr(crawler, _ATTRIBUTE, None)
    if ledger is None:
        config = RobotsConfig.for_crawler(crawler)
        if not config.provenance and config.report in (None, ""):
            return None
        ledger = Ledger(crawler)
        setattr(crawler, _ATTRIBUTE, ledger)
    return ledger
