"""Checking a robots.txt: what a crawler reads differently from what its
author probably meant.

Every :class:`Diagnostic` has a stable ``code`` (docs/engine.md lists them all);
``message`` is for people and may change.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

from ._agents import agent_token, product_token
from ._bytes import MAX_LINE_BYTES, UTF8_BOM, body_text, encode, oversize_allows_all
from ._checks import SOURCE, expect
from ._model import check_profile, parse_content_signal, usage_rule
from ._read import Handler, key_kind, read_document
from .licenses import is_license_url
from .parse import RFC9309, Group, Profile, Rule
from .profiles import GOOGLE, MAX_BYTES, RULES, effective_max_bytes
from .usage import preference_problems

__all__ = ["CODES", "Diagnostic", "Severity", "lint"]

Severity = Literal["error", "warning", "info"]


class Diagnostic(NamedTuple):
    """One finding: its 1-based ``line`` (0 for the whole file), ``severity``,
    stable ``code`` and a human ``message``."""

    line: int
    severity: Severity
    code: str
    message: str


#: Every code, with its severity: the stable part of a diagnostic.
CODES: dict[str, Severity] = {
    "html-body": "error",
    "invalid-crawl-delay": "error",
    "body-too-large": "warning",
    "download-cut": "warning",
    "broken-byte-order-mark": "warning",
    "conflicting-rules": "warning",
    "directive-outside-group": "warning",
    "duplicate-crawl-delay": "warning",
    "empty-disallow-allows-all": "warning",
    "body-over-vendor-limit": "warning",
    "missing-colon-ignored": "warning",
    "typo-ignored": "warning",
    "user-agent-not-selected": "warning",
    "empty-user-agent": "warning",
    "content-usage-not-rooted": "warning",
    "content-usage-value": "warning",
    "invalid-content-signal": "warning",
    "invalid-content-usage": "warning",
    "invalid-utf8": "warning",
    "license-not-absolute": "warning",
    "line-too-long": "warning",
    "missing-colon": "warning",
    "nul-byte": "warning",
    "pattern-not-rooted": "warning",
    "rule-outside-group": "warning",
    "sitemap-not-absolute": "warning",
    "typo-accepted": "warning",
    "unknown-directive": "warning",
    "unparsable-line": "warning",
    "user-agent-not-token": "warning",
    "byte-order-mark": "info",
    "content-signal-value": "info",
    "duplicate-rule": "info",
    "duplicate-sitemap": "info",
    "group-without-rules": "info",
    "no-groups": "info",
    "unsupported-directive": "info",
}

# Records other crawlers know, that matching here does not use.
_UNSUPPORTED = {
    "host",
    "request-rate",
    "visit-time",
    "clean-param",
    "noindex",
    "nofollow",
    "noarchive",
}
_HTML = re.compile(rb"<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>]|title>)", re.I)
_TOKEN = re.compile("[A-Za-z_-]+")


class _Linter(Handler):
    """What the reader tells, as diagnostics."""

    def __init__(self, profile: Profile, max_bytes: int) -> None:
        self.profile = profile
        self.max_bytes = max_bytes
        self.rules_of = RULES[profile]
        # Keys read exactly (Yandex, Bing): a spelling another profile reads
        # is worth a warning of its own.
        self.strict_keys = self.rules_of.keys != RULES[RFC9309].keys
        self.diagnostics: list[Diagnostic] = []
        self.sitemaps: set[str] = set()
        # How many octets of a byte-order mark start the body.
        self.bom = 0

    def add(self, line: int, code: str, message: str) -> None:
        self.diagnostics.append(Diagnostic(line, CODES[code], code, message))

    def body_cut(self, line: int, size: int, kept: int) -> None:
        self.add(
            line,
            "body-too-large",
            f"the body is {_size(size, self.max_bytes)}; everything after the "
            f"first {kept:,} (the last whole line within {self.max_bytes:,}) "
            "is ignored",
        )

    def byte_order_mark(self, line: int, skipped: int) -> None:
        self.bom = skipped
        if skipped == 3:
            self.add(
                line,
                "byte-order-mark",
                "a UTF-8 byte-order mark starts the file; it is skipped",
            )
        else:
            self.add(
                line,
                "broken-byte-order-mark",
                "the file starts with a truncated or broken byte-order mark; "
                "its first bytes are skipped and the rest of the line may not read",
            )

    def invalid_utf8(self, line: int) -> None:
        self.add(
            line,
            "invalid-utf8",
            "not valid UTF-8; each invalid byte is read as that octet (%XX in a URL)",
        )

    def html(self, text: str) -> None:
        """An HTML tag in the first 4,096 octets of the body (``text`` as
        :func:`body_text` gives it, the byte-order mark skipped)."""
        head = UTF8_BOM[: self.bom] + encode(text[:4096])
        html = _HTML.search(head, 0, 4096)
        if html is not None:
            self.add(
                _line_at(head, html.start()),
                "html-body",
                "this looks like an HTML page, not a robots.txt; its lines are "
                "read as robots.txt lines, which is rarely what was meant",
            )

    def nul_byte(self, line: int) -> None:
        self.add(line, "nul-byte", "a NUL byte ends the line; the rest is ignored")

    def line_too_long(self, line: int, size: int) -> None:
        self.add(
            line,
            "line-too-long",
            f"the line is {size:,} bytes; only the first {MAX_LINE_BYTES:,} are read",
        )

    def unparsable_line(self, line: int, text: str) -> None:
        self.add(
            line, "unparsable-line", f"not a 'key: value' line, ignored: {text[:60]!r}"
        )

    def missing_colon(self, line: int, key: str) -> None:
        self.add(line, "missing-colon", f"no ':' after {key!r}; read as '{key}: ...'")

    def missing_colon_ignored(self, line: int, key: str) -> None:
        self.add(
            line,
            "missing-colon-ignored",
            f"no ':' after {key!r}; {self.rules_of.vendor} ignores the line",
        )

    def typo_accepted(self, line: int, name: str, canonical: str) -> None:
        self.add(line, "typo-accepted", f"{name!r} is read as {canonical!r}")

    def rule_outside_group(self, line: int, pattern: str) -> None:
        self.add(
            line,
            "rule-outside-group",
            "a rule before any User-agent line applies to no one and is ignored",
        )

    def directive_outside_group(self, line: int, name: str) -> None:
        self.add(
            line,
            "directive-outside-group",
            f"{name!r} before any User-agent line applies to no one and is ignored",
        )

    def user_agent(self, line: int, value: str) -> None:
        name = value.strip().lower()
        if self.rules_of.selectors is not None and value and agent_token(value) != "*":
            # Whether any of the profile's agents can read the group.
            if not any(
                selector.rank(name, product_token(name))
                for selector in self.rules_of.selectors.values()
            ):
                labels = ", ".join(self.rules_of.labels)
                self.add(
                    line,
                    "user-agent-not-selected",
                    f"{value!r} names none of the agents of the {self.profile}"
                    f" profile ({labels})",
                )
            return
        if not value:
            self.add(line, "empty-user-agent", "an empty User-agent names no crawler")
        elif value != "*" and not _TOKEN.fullmatch(value):
            token = product_token(value)
            if value[:1] == "*":
                meaning = "is read as '*'"
            elif token:
                meaning = f"is read as the product token {token!r}"
            else:
                meaning = "names no crawler"
            self.add(
                line,
                "user-agent-not-token",
                f"{value!r} is not a product token ([A-Za-z_-]+) and {meaning}",
            )

    def record(self, line: int, name: str, value: str) -> None:
        if self.strict_keys and (
            key_kind(name, RFC9309) is not None or key_kind(name, GOOGLE) is not None
        ):
            # A key other profiles read (a typo, a prefix) that this one
            # does not: the line does nothing here.
            self.add(
                line,
                "typo-ignored",
                f"{self.rules_of.vendor} reads no key {name!r}; the line is ignored",
            )
        elif name in _UNSUPPORTED:
            self.add(line, "unsupported-directive", f"{name!r} has no effect here")
        elif name == "license":
            # RSL 1.0: read (docs/rights.md), if an absolute URL.
            if not is_license_url(value):
                self.add(
                    line,
                    "license-not-absolute",
                    f"License {value!r} is not an absolute URL; the line is left out",
                )
        else:
            self.add(line, "unknown-directive", f"unknown directive {name!r}, ignored")

    def sitemap(self, line: int, url: str) -> None:
        value = url
        try:
            parts = urlsplit(value)
            absolute = parts.scheme in ("http", "https") and bool(parts.netloc)
        except ValueError:
            absolute = False
        if not absolute:
            self.add(
                line,
                "sitemap-not-absolute",
                f"Sitemap {value!r} is not an absolute http(s) URL",
            )
        elif value in self.sitemaps:
            self.add(line, "duplicate-sitemap", f"Sitemap {value!r} is listed again")
        self.sitemaps.add(value)

    def invalid_crawl_delay(self, line: int, value: str) -> None:
        self.add(
            line,
            "invalid-crawl-delay",
            f"Crawl-delay {value!r} is not a number of seconds (finite, >= 0); ignored",
        )

    def duplicate_crawl_delay(self, line: int, value: str) -> None:
        self.add(
            line,
            "duplicate-crawl-delay",
            "the group already has a Crawl-delay; this one is ignored",
        )

    def content_signal(self, line: int, value: str) -> None:
        signals, invalid = parse_content_signal(value)
        for part in invalid:
            self.add(
                line,
                "invalid-content-signal",
                f"{part!r} is not 'key=value'; ignored",
            )
        for key, signal in signals.items():
            if isinstance(signal, str):
                self.add(
                    line,
                    "content-signal-value",
                    f"{key}={signal!r} is neither yes nor no; kept as text",
                )

    def content_usage(self, line: int, value: str) -> None:
        for code, message in preference_problems(usage_rule(value, line)):
            self.add(line, code, message)

    def _slash_escaped(self, pattern: str) -> bool:
        """Whether ``pattern`` starts with ``%2F``, read as ``/`` where the
        profile decodes escapes to compare."""
        return self.rules_of.percent == "normalize" and pattern[:3].upper() == "%2F"

    def rules(self, rules: tuple[Rule, ...]) -> None:
        seen: dict[tuple[bool, str], Rule] = {}
        for rule in rules:
            pattern = rule.pattern
            if pattern and pattern[0] not in "/*" and not self._slash_escaped(pattern):
                hint = (
                    "; write the path alone"
                    if pattern.startswith(("http://", "https://"))
                    else f"; did you mean '/{pattern}'?"
                )
                self.add(
                    rule.line,
                    "pattern-not-rooted",
                    f"{pattern!r} does not start with '/' or '*', so it matches "
                    f"no URL{hint}",
                )
            if (
                not pattern
                and not rule.allow
                and self.rules_of.empty_disallow == ("allow_all")
            ):
                self.add(
                    rule.line,
                    "empty-disallow-allows-all",
                    f"{self.rules_of.vendor} reads an empty Disallow as 'Allow: /',"
                    " which wins over 'Disallow: /' of the same group",
                )
            same = seen.setdefault((rule.allow, pattern), rule)
            other = seen.get((not rule.allow, pattern))
            if same is not rule:
                self.add(
                    rule.line, "duplicate-rule", f"the same rule is on line {same.line}"
                )
            elif other is not None and pattern:
                self.add(
                    rule.line,
                    "conflicting-rules",
                    f"line {other.line} has the same pattern with the opposite "
                    "verdict; Allow wins",
                )


def _size(size: int, max_bytes: int) -> str:
    # A download stops one byte past the limit: "over" is all that is known.
    if size == max_bytes + 1:
        return f"over {max_bytes:,} bytes"
    return f"{size:,} bytes"


def _line_at(data: bytes, offset: int) -> int:
    """The 1-based line of the byte at ``offset``."""
    return data[:offset].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1


def lint(
    source: str | bytes, *, profile: Profile = RFC9309, max_bytes: int = MAX_BYTES
) -> list[Diagnostic]:
    """The diagnostics of a robots.txt body, by line.

    Reads ``source`` exactly as :func:`~scrapy_rfc9309.parse.parse` does
    with the same ``profile`` and ``max_bytes``, and reports every line it
    reads leniently, ignores or cannot use, and rules that cannot do what
    they seem to.  Never raises on content.
    """
    expect(source, SOURCE, "source", "str or bytes")
    check_profile(profile)
    max_bytes = effective_max_bytes(profile, max_bytes)
    linter = _Linter(profile, max_bytes)
    if oversize_allows_all(source, max_bytes, profile):
        size = len(encode(source) if isinstance(source, str) else source)
        over = _size(size, max_bytes)
        if size != max_bytes + 1:
            over += f", over {max_bytes:,}"
        linter.add(
            0,
            "body-over-vendor-limit",
            f"the body is {over}: {linter.rules_of.vendor} then allows everything",
        )
        return linter.diagnostics
    # One read: the reader tells the linter what it finds in the bytes and
    # the lines as it reads them.
    text = body_text(source, max_bytes, linter)
    linter.html(text)
    groups = read_document(text, profile, linter)[0]
    for group in groups:
        linter.rules(group.rules)
    if not groups:
        linter.add(
            0, "no-groups", "no User-agent group: every crawler may fetch everything"
        )
    elif not groups[-1].rules and not _ruled_elsewhere(groups):
        group = groups[-1]
        linter.add(
            group.line,
            "group-without-rules",
            f"the group of {', '.join(map(repr, group.user_agents))} has no rules: "
            "they may fetch everything",
        )
    if linter.rules_of.ignores_delay:
        for group in groups:
            if group.crawl_delay is not None or group.content_signals:
                linter.add(
                    group.line,
                    "unsupported-directive",
                    f"{linter.rules_of.vendor} ignores Crawl-delay and Content-Signal",
                )
    return sorted(linter.diagnostics, key=lambda diagnostic: diagnostic.line)


def _ruled_elsewhere(groups: tuple[Group, ...]) -> bool:
    """Whether an agent of the last group has rules in another group (the
    groups naming it are merged, RFC 9309 2.2.1)."""
    tokens = {product_token(agent) for agent in groups[-1].user_agents}
    return any(
        group.rules and tokens & {product_token(agent) for agent in group.user_agents}
        for group in groups[:-1]
    )
