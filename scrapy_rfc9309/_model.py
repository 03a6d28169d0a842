"""The values a robots.txt is read into: rules, records and groups.

:mod:`scrapy_rfc9309.parse` exports them with the :class:`Document` that
holds them; they live here, below both, so that the reader
(:mod:`scrapy_rfc9309._read`) builds them and the document reads itself
with the reader without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

#: A profile name: ``"rfc9309"``, ``"google"``, ``"yandex"`` or ``"bing"``
#: (see :func:`parse` and :mod:`scrapy_rfc9309.profiles`).
Profile = str


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
