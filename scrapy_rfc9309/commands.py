"""``scrapy robots``: may my bot fetch this URL, and why; what is wrong with
this robots.txt.

``scrapy robots check URL...`` asks :class:`~scrapy_rfc9309.RobotsMiddleware`
itself, inside a small crawl with the project's settings, so the answer is
the one a crawl of the project would get: same downloader middlewares
(proxy, auth, retries, cache), same store, same outcome rules.
``scrapy robots lint FILE|URL`` prints :func:`~scrapy_rfc9309.lint`'s
diagnostics.  Exit status: 0 all allowed / no errors, 1 otherwise, 2 on a
usage error.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.commands import ScrapyCommand
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.project import inside_project
from twisted.internet.defer import DeferredList

from ._crawljob import (
    CommandFailure,
    JobSpider,
    NoQueue,
    describe,
    job_spider,
    run_in_crawl,
)
from ._settings import (
    positive_int,
    robots_profile,
    robots_user_agent,
)
from .addon import Addon
from .fetch import RobotsFetcher
from .lint import CODES, Diagnostic, lint
from .match import Decision, content_signals, crawl_delay, product_token
from .middleware import LICENSES_META_KEY, RobotsDisallowed, RobotsMiddleware
from .outcome import Lifetimes, Outcome, explain_by
from .parse import PROFILES, Rule, UsageRule
from .profiles import RULES, selector_for
from .provenance import plain
from .stringify import readable, rule_line, signal_text, usage_line
from .tdmmiddleware import META_KEY as TDM_META_KEY
from .tdmmiddleware import TdmMiddleware
from .urls import robots_url
from .usage import usage_explained

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import Settings

__all__ = ["JSON_VERSION", "RobotsCommand"]

logger = logging.getLogger(__name__)


#: The ``version`` of the ``--json`` documents; bumped only when a key
#: changes meaning or goes away (new keys may appear within a version).
JSON_VERSION = 1

_SUBCOMMANDS = ("check", "lint")
_SEVERITIES = ("error", "warning", "info")
#: The reason of URLs that have no robots.txt (``data:``, ``file:``, ...).
_NO_ROBOTS_TXT = "no_robots_txt"


def _ensure_suits(agent: str, profile: str, opts: argparse.Namespace) -> None:
    """A usage error naming ``--agent`` unless ``profile`` answers for
    ``agent``: yandex and bing answer for their vendor's labels only."""
    try:
        selector_for(profile, product_token(agent))
    except ValueError as exc:
        whose = "--agent" if opts.agent is not None else "the project's agent"
        which = "--profile" if opts.robots_profile else "ROBOTS_PROFILE"
        raise UsageError(
            f"{whose} {agent!r} does not suit {which} {profile!r}: {exc}; name one"
            f" of those labels with --agent, such as --agent {RULES[profile].labels[0]}"
        ) from None


# -- check ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """The answer for one URL of ``scrapy robots check``."""

    url: str
    allowed: bool
    #: A reason of :func:`~scrapy_rfc9309.explain_by`, ``content_signal``,
    #: ``content_usage`` or ``crawl_delay`` (the crawl's policies), or
    #: ``no_robots_txt``.
    reason: str
    robots_txt: str | None
    outcome: Outcome | None
    rule: Rule | None = None
    #: Why, beyond the rule: the Content-Signal, Content-Usage or
    #: Crawl-delay that drops it.
    note: str = ""
    crawl_delay: float | None = None
    content_signals: dict[str, bool | str] = field(default_factory=dict)
    #: The usage preferences of robots.txt's Content-Usage rules for the URL
    #: (empty when robots.txt disallows it), and the rules that gave them.
    usage: dict[str, bool | None] = field(default_factory=dict)
    usage_rules: tuple[UsageRule, ...] = ()
    #: robots.txt's RSL License URLs for the agent (recorded, not obeyed).
    licenses: tuple[str, ...] = ()
    #: What the origin's TDMRep file says of the URL (``robots_tdm``), for
    #: a text and data mining crawl that robots.txt lets fetch it.
    tdm: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        rule = self.rule
        outcome = self.outcome
        return {
            "url": self.url,
            "allowed": self.allowed,
            "reason": self.reason,
            "rule": None
            if rule is None
            else {
                "line": rule.line,
                "allow": rule.allow,
                "pattern": rule.pattern,
                "text": rule_line(rule),
            },
            "note": self.note or None,
            "robots_txt": self.robots_txt,
            "outcome": None
            if outcome is None
            else {
                "kind": outcome.kind,
                "http_status": outcome.http_status,
                "detail": outcome.detail,
                "fetched_at": outcome.fetched_at,
                "expires_at": outcome.expires_at,
                "sha256": outcome.body_sha256,
                "fallback_sha256": outcome.fallback_sha256,
            },
            "crawl_delay": self.crawl_delay,
            "content_signals": self.content_signals,
            "usage": self.usage,
            "usage_rules": [
                {
                    "line": rule.line,
                    "path": rule.path or None,
                    "preference": rule.preference,
                    "text": usage_line(rule),
                }
                for rule in self.usage_rules
            ],
            "licenses": list(self.licenses),
            "tdm": self.tdm,
        }

    def to_text(self) -> str:
        parts = ["allowed   " if self.allowed else "DISALLOWED", self.url]
        why = self.reason
        if self.rule is not None:
            why += f" (line {self.rule.line}: {rule_line(self.rule)})"
        elif self.note:
            why += f" ({self.note})"
        parts.append(why)
        outcome = self.outcome
        if outcome is None:
            parts.append("no robots.txt for this scheme")
        else:
            detail = f" ({outcome.detail})" if outcome.detail else ""
            parts.append(f"{outcome.kind}{detail} {self.robots_txt}")
            if outcome.body_sha256 is not None:
                parts.append(f"sha256 {outcome.body_sha256}")
            if outcome.fallback_sha256 is not None:
                parts.append(f"fallback-sha256 {outcome.fallback_sha256}")
        if self.crawl_delay is not None:
            parts.append(f"crawl-delay {self.crawl_delay:g}s")
        if self.content_signals:
            parts.append(
                "content-signal "
                + ", ".join(
                    f"{key}={signal_text(value)}"
                    for key, value in self.content_signals.items()
                )
            )
        known = {key: value for key, value in self.usage.items() if value is not None}
        if known:
            lines = ", ".join(str(rule.line) for rule in self.usage_rules)
            values = ", ".join(
                f"{key}={'y' if value else 'n'}" for key, value in known.items()
            )
            parts.append(f"content-usage {values} (line {lines})")
        if self.licenses:
            parts.append("license " + " ".join(self.licenses))
        if self.tdm is not None:
            parts.append(_tdm_text(self.tdm))
        return "  ".join(parts)


def _tdm_text(tdm: dict[str, Any]) -> str:
    """A row's TDMRep part: the reservation, and the file's rule behind it."""
    reservation = tdm["reservation"]
    text = f"tdm-reservation {'unset' if reservation is None else reservation}"
    rule = tdm["rule"]
    if rule is not None:
        text += f" (rule {rule['index'] + 1}: {rule['location']} {tdm['file']})"
    elif tdm["file_status"] == "parsed":
        text += f" (no rule in {tdm['file']})"
    else:
        text += f" (tdmrep.json {tdm['file_status']}: {tdm['file']})"
    if tdm["policy"]:
        text += f" policy {tdm['policy']}"
    return text


@dataclass(frozen=True)
class _Checked:
    """What ``check`` found, and for whom (as the middleware reads it)."""

    agent: str
    profile: str
    rows: list[_Row]


async def _check(crawler: Crawler, urls: list[str]) -> _Checked:
    middleware = crawler.get_downloader_middleware(RobotsMiddleware)
    if middleware is None:
        raise CommandFailure(
            "RobotsMiddleware is disabled in this project's DOWNLOADER_MIDDLEWARES"
        )
    requests = [Request(url, callback=NO_CALLBACK, dont_filter=True) for url in urls]
    # Every origin asked for at once, each fetched once: the rows below then
    # find their outcome in the middleware's memory, in the order given.
    first_of_origin = {robots_url(request.url): request for request in requests[::-1]}
    await maybe_deferred_to_future(
        DeferredList(
            [
                deferred_from_coro(middleware.outcome_for(request.url, request))
                for request in first_of_origin.values()
            ],
            consumeErrors=True,
        )
    )
    rows = [
        await _check_one(middleware, url, request)
        for url, request in zip(urls, requests, strict=True)
    ]
    config = middleware.config
    return _Checked(config.user_agent, config.profile, rows)


async def _check_one(middleware: RobotsMiddleware, url: str, request: Request) -> _Row:
    """The row of ``url``, judged as ``request.url``: the URL as a crawl
    requests it (escaped, IDN host encoded)."""
    outcome = await middleware.outcome_for(request.url, request)
    if outcome is None:
        return _Row(url, True, _NO_ROBOTS_TXT, None, None)
    agent = middleware.config.user_agent
    now = middleware.clock()
    # The middleware's own verdict, so the crawl's policies (Content-Signal
    # purposes, a Crawl-delay over the cap set to skip) count as they would.
    note = ""
    try:
        await middleware.process_request(request)
    except RobotsDisallowed as exc:
        decision: Decision = exc.decision
        if decision.rule is None and exc.cause != "unreachable":
            # What refused, as the crawl's log line says it.
            note = exc.why
    else:
        decision = explain_by(outcome, agent, request.url, now=now)
    rules = None if outcome.disallows_all(now) else outcome.rules
    delay = None if rules is None else crawl_delay(rules, agent)
    signals = {} if rules is None else content_signals(rules, agent)
    # Empty when robots.txt's rules disallow the URL.
    usage, usage_rules = (
        ({}, ()) if rules is None else usage_explained(rules, agent, request.url)
    )
    licenses = tuple(entry["url"] for entry in request.meta.get(LICENSES_META_KEY, ()))
    tdm_middleware = middleware.crawler.get_downloader_middleware(TdmMiddleware)
    if decision.allowed and tdm_middleware is not None:
        try:
            await tdm_middleware.process_request(request)
        except RobotsDisallowed as exc:
            decision = exc.decision
            note = exc.why
    return _Row(
        url,
        decision.allowed,
        decision.reason,
        robots_url(request.url),
        outcome,
        decision.rule,
        note,
        delay,
        signals,
        usage,
        usage_rules,
        licenses,
        request.meta.get(TDM_META_KEY),
    )


# -- lint -----------------------------------------------------------------------


async def _download(crawler: Crawler, url: str) -> tuple[bytes, str | None]:
    # The crawl's own robots.txt download: ROBOTS_MAX_BYTES bounds the
    # decoded body and the transfer, whatever the encoding.  Redirects are
    # followed by RedirectMiddleware, as for any URL.  Also returned: why the
    # decoder cut the body before its decoded size passed the limit (a stage
    # read too far, too many members), which the body alone cannot show.
    fetcher = RobotsFetcher(crawler, lifetimes=Lifetimes(), clock=time.time)
    try:
        response, decoded = await fetcher.download(url, url, redirects=True)
    except Exception as exc:
        raise CommandFailure(f"cannot fetch {url}: {describe(exc)}") from exc
    fetcher.mark_truncation(response)
    if not 200 <= response.status < 300:
        raise CommandFailure(
            f"{url} answered HTTP {response.status}: there is no robots.txt body"
            " to lint"
        )
    if decoded.error is not None:
        raise CommandFailure(f"cannot decode {url}: {decoded.error}")
    if "dataloss" in response.flags:
        # DOWNLOAD_FAIL_ON_DATALOSS off: a crawl finds such a file
        # unreachable, its rules cut short.
        raise CommandFailure(f"{url} was cut short (truncated body): not linted")
    return decoded.body, decoded.overrun


# -- the command ----------------------------------------------------------------


class RobotsCommand(ScrapyCommand):
    """``scrapy robots check URL...`` and ``scrapy robots lint FILE|URL``."""

    requires_project = False
    # Command priority: a project's own settings still win.  A one-shot
    # question needs no console to attach to the crawl.
    default_settings: ClassVar[dict[str, Any]] = {
        "LOG_LEVEL": "WARNING",
        "REMOTE_CONTROL_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
    }

    def syntax(self) -> str:
        return (
            "check URL... [--agent AGENT | --spider NAME] [--profile P] [--json]"
            " | lint FILE|URL [--profile P] [--json]"
        )

    def short_desc(self) -> str:
        return "Check URLs against robots.txt (RFC 9309), or lint a robots.txt"

    def long_desc(self) -> str:
        return (
            "check: fetch the robots.txt of each URL's origin through Scrapy's"
            " downloader, with the project's settings, and print one row per URL:"
            " allowed or not, the reason, the deciding line and rule, the fetch"
            " outcome, Crawl-delay and Content-Signal; exit status 0 when every"
            " URL is allowed, 1 otherwise. lint: print the diagnostics of a"
            " robots.txt file ('-' for standard input) or URL; exit status 1"
            " when there is an error. Exit status 2 on a usage error."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group(title="Robots Options")
        # Not an argparse mutually exclusive group: both at once are refused
        # by _check, in one line, where argparse would print its usage too.
        group.add_argument(
            "--agent",
            metavar="AGENT",
            help="check: the user agent whose rules apply (default: the"
            " project's ROBOTS_USER_AGENT, ROBOTSTXT_USER_AGENT or USER_AGENT)",
        )
        group.add_argument(
            "--spider",
            metavar="NAME",
            help="check: answer as the project's spider NAME would be answered:"
            " its agent (robots_user_agent attribute, ROBOTS_USER_AGENT,"
            " ROBOTSTXT_USER_AGENT or USER_AGENT), profile and custom_settings",
        )
        # Replaces the global --profile (cProfile output) for this command;
        # _run_command() still reads opts.profile, which must stay None.
        group.add_argument(
            "--profile",
            dest="robots_profile",
            metavar="P",
            help=f"matching profile: {', '.join(PROFILES)} (default: the"
            " ROBOTS_PROFILE setting)",
        )
        group.add_argument(
            "--json", action="store_true", help="print one JSON document"
        )
        parser.set_defaults(profile=None)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            self.exitcode = self._run(args, opts)
        except (UsageError, CommandFailure) as exc:
            sys.stderr.write(f"scrapy robots: error: {_terminal_safe(str(exc))}\n")
            self.exitcode = 2

    def _run(self, args: list[str], opts: argparse.Namespace) -> int:
        unknown = [arg for arg in args if arg.startswith("-") and arg != "-"]
        if unknown:
            raise UsageError(f"unknown option {unknown[0]!r}")
        if not args:
            raise UsageError(
                "no subcommand: use 'scrapy robots check URL...' or"
                " 'scrapy robots lint FILE|URL' (see scrapy robots -h)"
            )
        subcommand, operands = args[0], args[1:]
        # The command's crawl downloads what the answer needs and nothing
        # more: no robots.txt sitemap and its pages are requested, the
        # project's queue is left alone, and the project's feeds (the
        # spider's own name with --spider) are not written over.
        self._settings.set("SCHEDULER", NoQueue, "cmdline")
        self._settings.set("FEEDS", {}, "cmdline")
        self._settings.set("ROBOTS_SITEMAPS", False, "cmdline")
        if subcommand == "check":
            return self._check(operands, opts)
        if subcommand == "lint":
            return self._lint(operands, opts)
        raise UsageError(
            f"unknown subcommand {subcommand!r}: use {' or '.join(_SUBCOMMANDS)}"
        )

    @property
    def _settings(self) -> Settings:
        assert self.settings is not None
        return self.settings

    def _profile(self, opts: argparse.Namespace) -> str:
        try:
            return robots_profile(self._settings, opts.robots_profile)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    # -- check --

    def _check(self, operands: list[str], opts: argparse.Namespace) -> int:
        if opts.agent is not None and opts.spider is not None:
            raise UsageError(
                "--agent and --spider cannot be given together (--spider answers"
                " for the spider's own agent)"
            )
        if not operands:
            raise UsageError("check needs at least one URL")
        urls = [self._check_url(operand) for operand in operands]
        settings = self._settings
        spidercls: type[Spider] = JobSpider
        if opts.spider is not None:
            # The spider's agent and profile are what its crawl reads: its
            # attribute and custom_settings (spider priority) included.
            spidercls = job_spider(self._spider_class(opts.spider))
            if opts.robots_profile is not None:
                settings.set("ROBOTS_PROFILE", self._profile(opts), "cmdline")
        else:
            agent = self._agent(opts)
            profile = self._profile(opts)
            _ensure_suits(agent, profile, opts)
            # Cmdline priority: the add-on writes the package defaults at
            # addon priority, and the middleware keeps in memory only what
            # answers for the crawl's agent.
            if opts.agent is not None:
                settings.set("ROBOTS_USER_AGENT", agent, "cmdline")
            settings.set("ROBOTS_PROFILE", profile, "cmdline")
        # Asking about robots.txt is the point, even where a project or a
        # spider turns robots.txt handling off.
        settings.set("ROBOTS_ENABLED", True, "cmdline")
        settings.set("ROBOTSTXT_OBEY", True, "cmdline")
        settings.setdefault_in_component_priority_dict("ADDONS", Addon, 100)
        assert self.crawler_process is not None
        checked = run_in_crawl(
            self.crawler_process, lambda crawler: _check(crawler, urls), spidercls
        )
        agent, profile, rows = checked.agent, checked.profile, checked.rows
        allowed = all(row.allowed for row in rows)
        if opts.json:
            document = {
                "version": JSON_VERSION,
                "command": "check",
                "agent": agent,
                "product_token": product_token(agent),
                "profile": profile,
                "spider": opts.spider,
                "allowed": allowed,
                "results": [row.to_dict() for row in rows],
            }
            print(json.dumps(plain(document), indent=2))
        else:
            whose = "" if opts.spider is None else f"spider {opts.spider!r}, "
            _print(
                f"{whose}agent {agent!r} (product token {product_token(agent)!r}),"
                f" profile {profile}"
            )
            for row in rows:
                _print(row.to_text())
        return 0 if allowed else 1

    def _agent(self, opts: argparse.Namespace) -> str:
        """``--agent``, else the project's agent (the setting it came from
        named when it is refused)."""
        agent: str | None = opts.agent
        if agent is None:
            try:
                return robots_user_agent(self._settings)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        if not agent.strip():
            raise UsageError("--agent must not be empty")
        if not product_token(agent):
            raise UsageError(
                "--agent must start with its product token (letters, '_' and"
                f" '-', such as 'MyBot/1.0'), not {agent!r}"
            )
        return agent

    def _spider_class(self, name: str) -> type[Spider]:
        if not inside_project():
            raise UsageError(
                "--spider needs a Scrapy project: run the command in the"
                " project's directory (where its scrapy.cfg is)"
            )
        assert self.crawler_process is not None
        try:
            spidercls: type[Spider] = self.crawler_process.spider_loader.load(name)
        except KeyError:
            raise UsageError(f"no spider named {name!r} in this project") from None
        return spidercls

    def _check_url(self, operand: str) -> str:
        if robots_url(operand) is not None:
            return operand
        try:
            parts = urlsplit(operand)
        except ValueError as exc:
            raise UsageError(f"not a URL: {operand!r} ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme in ("http", "https"):
            try:
                parts.port  # noqa: B018 - read for the ValueError it raises
            except ValueError:
                port = parts.netloc.rpartition("]")[2].rpartition(":")[2]
                raise UsageError(
                    f"not a URL: {operand!r} (invalid port {port!r}: a whole"
                    " number from 0 to 65535 is expected)"
                ) from None
            raise UsageError(f"not a URL: {operand!r} (no host)")
        # Other schemes Scrapy downloads (file:, data:, ftp:, s3:) have no
        # robots.txt; anything else, "example.com/page" included, is a typo.
        if scheme and scheme in self._settings.getwithbase("DOWNLOAD_HANDLERS"):
            return operand
        raise UsageError(
            f"not a URL: {operand!r} (an absolute http:// or https:// URL is expected)"
        )

    # -- lint --

    def _lint(self, operands: list[str], opts: argparse.Namespace) -> int:
        if len(operands) != 1:
            raise UsageError("lint takes one FILE or URL")
        if opts.agent is not None:
            raise UsageError("--agent is an option of check, not lint")
        if opts.spider is not None:
            raise UsageError("--spider is an option of check, not lint")
        source = operands[0]
        profile = self._profile(opts)
        max_bytes = self._max_bytes()
        # One byte past the limit tells lint the body is over it.
        body, overrun = self._read(source, max_bytes + 1)
        diagnostics = lint(body, profile=profile, max_bytes=max_bytes)
        if overrun is not None:
            message = f"the download was cut after {len(body):,} bytes ({overrun})"
            diagnostics.insert(
                0,
                Diagnostic(
                    0,
                    CODES["download-cut"],
                    "download-cut",
                    f"{message}; only those are linted",
                ),
            )
        counts = {
            severity: sum(1 for d in diagnostics if d.severity == severity)
            for severity in _SEVERITIES
        }
        if opts.json:
            document = {
                "version": JSON_VERSION,
                "command": "lint",
                "source": source,
                "profile": profile,
                "counts": counts,
                "diagnostics": [d._asdict() for d in diagnostics],
            }
            print(json.dumps(plain(document), indent=2))
        else:
            for diagnostic in diagnostics:
                _print(_diagnostic_text(source, diagnostic))
            _print(_summary(source, counts))
        return 1 if counts["error"] else 0

    def _max_bytes(self) -> int:
        try:
            return positive_int(self._settings, "ROBOTS_MAX_BYTES", minimum=1)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def _read(self, source: str, limit: int) -> tuple[bytes, str | None]:
        """The body of ``source`` (at most ``limit`` bytes of a file), and
        why its download was cut short."""
        if source == "-":
            if sys.stdin is None:
                raise CommandFailure("cannot read standard input: it is closed")
            return sys.stdin.buffer.read(limit), None
        if "://" in source:
            if robots_url(source) is None:
                raise UsageError(f"not an http:// or https:// URL: {source!r}")
            assert self.crawler_process is not None
            return run_in_crawl(
                self.crawler_process, lambda crawler: _download(crawler, source)
            )
        try:
            with Path(source).open("rb") as file:
                return file.read(limit), None
        except OSError as exc:
            raise CommandFailure(
                f"cannot read {source}: {exc.strerror or describe(exc)}"
            ) from None


# Whatever a terminal could act on rather than show: C0 and C1 controls (ESC
# and the 8-bit CSI start escape sequences that recolour, retitle or clear the
# terminal) and the bidi overrides that reorder what is shown.  Lone
# surrogates (undecodable robots.txt bytes), which a UTF-8 stdout cannot even
# encode, are made readable() first.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on written as a
    Python escape (``\\x1b``, ``\\u202e``): robots.txt, its URLs and what the
    server says are untrusted, and text output goes to a terminal; an
    undecodable octet as its percent escape (``%FF``, :func:`readable`)."""
    return _UNSAFE.sub(_escape, readable(text))


def _print(line: str) -> None:
    print(_terminal_safe(line))


def _diagnostic_text(source: str, diagnostic: Diagnostic) -> str:
    line, severity, code, message = diagnostic
    return f"{source}:{line}: {severity} [{code}] {message}"


def _summary(source: str, counts: dict[str, int]) -> str:
    # "info" is a mass noun: "2 info", as "2 errors".
    return f"{source}: " + ", ".join(
        f"{count} {severity}{'s' if count != 1 and severity != 'info' else ''}"
        for severity, count in counts.items()
    )
