"""The values a robots.txt is read into (rules, records, groups) and how
a line's value reads into one.

:mod:`scrapy_rfc9309.parse` exports them with the :class:`Document` that
holds them; they live here, below both, so that the reader
(:mod:`scrapy_rfc9309._read`) builds them and the document reads itself
with the reader without an import cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ._agents import merge_signals
from .profiles import PROFILES

#: A profile name: ``"rfc9309"``, ``"google"``, ``"yandex"`` or ``"bing"``
#: (see :func:`parse` and :mod:`scrapy_rfc9309.profiles`).
Profile = str


def check_profile(profile: Profile) -> None:
    """``ValueError`` unless ``profile`` is a profile name."""
    if profile not in PROFILES:
        raise ValueError(
            f"unknown robots.txt profile {profile!r}; use one of {PROFILES}"
        )


class Rule(NamedTuple):
    """An ``Allow`` / ``Disallow`` line: its pattern as written (whitespace
    and comment stripped) and its 1-based line number."""

    allow: bool
    pattern: str
    line: int


class UsageRule(NamedTuple):
    """A ``Content-Usage`` line (draft-ietf-aipref-attach): its path pattern
    (``""`` when the line gives none: it applies to every path), the usage
    preference as written (an RFC 9651 Dictionary, read by
    :mod:`scrapy_rfc9309.usage`) and its 1-based line number."""

    path: str
    preference: str
    line: int


class Record(NamedTuple):
    """A line that is neither a rule, a user-agent, a sitemap, a Crawl-delay,
    a Content-Signal nor a Content-Usage: ``name`` lower-cased, ``value`` as
    written."""

    name: str
    value: str
    line: int


@dataclass(frozen=True)
class Group:
    """One group: consecutive user-agent lines and the lines up to the next
    user-agent line that follows a rule (RFC 9309 section 2.1)."""

    #: The user-agent values as written; ``*`` for the wildcard.
    user_agents: tuple[str, ...]
    rules: tuple[Rule, ...] = ()
    crawl_delay: float | None = None
    content_signals: dict[str, bool | str] = field(default_factory=dict, hash=False)
    #: Line of the group's first user-agent line.
    line: int = 0
    #: Its ``Content-Usage`` rules, in file order.
    content_usage: tuple[UsageRule, ...] = ()


#: What a document holds: its groups, sitemaps and other records.
Parts = tuple[tuple[Group, ...], tuple[str, ...], tuple[Record, ...]]


def usage_rule(value: str, line: int) -> UsageRule:
    """The :class:`UsageRule` of a ``Content-Usage`` value (stripped): a
    value starting with ``/`` gives a path up to the first space or tab,
    any other value is all preference (attach-05 section 3.2)."""
    if value[:1] != "/":
        return UsageRule("", value, line)
    end = len(value)
    for blank in " \t":
        found = value.find(blank)
        if 0 <= found < end:
            end = found
    # The ABNF's 1*WS between them is no part of the Dictionary (a strict
    # RFC 9651 parser rejects a leading tab).
    return UsageRule(value[:end], value[end:].lstrip(" \t"), line)


def parse_crawl_delay(value: str) -> float | None:
    """Seconds, finite and >= 0, in ASCII digits (no "_"); else ``None``."""
    try:
        delay = float(value) if value.isascii() and "_" not in value else math.nan
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


def parse_content_signal(value: str) -> tuple[dict[str, bool | str], list[str]]:
    """``search=yes, ai-train=no`` as ``{"search": True, "ai-train": False}``.

    Keys lower-cased, ``yes``/``no`` as booleans, any other value kept as
    text.  Also returns the parts that are not ``key=value`` (ignored).
    """
    signals: dict[str, bool | str] = {}
    invalid: list[str] = []
    for part in value.split(","):
        key, equals, text = part.partition("=")
        key = key.strip().lower()
        if not equals or not key:
            if part.strip():
                invalid.append(part.strip())
            continue
        text = text.strip()
        lowered = text.lower()
        signal: bool | str = (
            True if lowered == "yes" else False if lowered == "no" else text
        )
        merge_signals(signals, {key: signal})
    return signals, invalid
