"""What the engine's objects hold, estimated in bytes: the figures the
memory store counts against ``ROBOTS_MEMORY_MAX_BYTES`` (see
:meth:`scrapy_rfc9309.match.Matcher.estimated_bytes` and
:func:`scrapy_rfc9309.stores.memory.entry_size`).

Measured with tracemalloc by ``python -m benchmarks.memory`` (CPython 3.11,
64-bit) on hostile bodies of every shape, and rounded up so that the
estimate stays above what is really held.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parse import UsageRule

#: Each ``*`` of a pattern: the pieces the matcher splits it into.
WILDCARD_BYTES = 12
#: A rule as a matcher keeps it (each pattern once): its table slots and the
#: pattern's object; a pattern with a ``*`` or a ``$`` costs more (a text
#: table entry, and its spelling as written when that differs).
MATCHER_RULE_BYTES = 64
MATCHER_SPECIAL_BYTES = 100
#: The tables of those patterns, once per matcher that has any.
MATCHER_SPECIAL_TABLES_BYTES = 600
#: A sitemap URL, other record or Content-Signal pair.
LINE_BYTES = 100
#: A Content-Usage rule: its UsageRule tuple, line, path and preference
#: strings (text counted apart).
USAGE_RULE_BYTES = 260
#: A Content-Usage rule with a path, in the table its matcher compiles when
#: first asked (the path normalised, in two matchers); one with a ``*`` or a
#: ``$`` also gets a matcher of its own and one of its chunk (up to 1,500
#: bytes in all: tests/test_usage_table.py).  Per character: twice a rule's.
USAGE_TABLE_BYTES = 320
USAGE_TABLE_SPECIAL_BYTES = 1400
USAGE_TABLE_CHAR = (2, 40)
# Per character of a pattern as a matcher alone keeps it.
MATCHER_CHAR = (1, 28)
# Per character of other text (sitemaps, records, Content-Signal values).
TEXT_CHAR = (1, 4)


def chars(text: str, costs: tuple[int, int]) -> int:
    # isascii() is a flag read, not a scan.
    return len(text) * costs[0 if text.isascii() else 1]


def patterns_size(patterns: Iterable[str]) -> int:
    """What a matcher holds for ``patterns`` (as written), one by one, and
    the tables of those with a ``*`` or a ``$``, if any."""
    size = 0
    specials = False
    for pattern in patterns:
        size += MATCHER_RULE_BYTES + chars(pattern, MATCHER_CHAR)
        stars = pattern.count("*")
        if stars or pattern.endswith("$"):
            specials = True
            size += MATCHER_SPECIAL_BYTES + WILDCARD_BYTES * stars
    return size + (MATCHER_SPECIAL_TABLES_BYTES if specials else 0)


def extras_size(signals: dict[str, bool | str], usage: tuple[UsageRule, ...]) -> int:
    """Content-Signal values and Content-Usage rules."""
    return sum(
        LINE_BYTES + chars(f"{key}{value}", TEXT_CHAR) for key, value in signals.items()
    ) + sum(
        USAGE_RULE_BYTES
        + chars(rule.path + rule.preference, TEXT_CHAR)
        + (usage_table_size(rule.path) if rule.path else 0)
        for rule in usage
    )


def usage_table_size(path: str) -> int:
    """What a Content-Usage rule's path costs in its matcher's table."""
    size = USAGE_TABLE_BYTES + chars(path, USAGE_TABLE_CHAR)
    if "*" in path or "$" in path:
        size += USAGE_TABLE_SPECIAL_BYTES
    return size
