"""``ROBOTS_STORE = "memory"``: outcomes in this process, least recently used
origins dropped first, within a number of origins and a number of bytes.

It is also the layer that answers every request of a crawl, whatever the
configured store: for each origin it holds only what answers and explains
for the crawl's agent: the outcome without its documents, the matcher
compiled from its rules (which keeps Crawl-delay, Content-Signal, the
Content-Usage rules and the lines ``explain`` reports), and the sitemaps.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from .._config import RobotsConfig
from ..licenses import robots_licenses
from ..match import compile
from ..outcome import PARSED
from ..parse import Document, Record
from .base import OutcomeStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from ..match import Matcher
    from ..outcome import Outcome
    from ..parse import Document, UsageRule

__all__ = ["Entry", "MemoryStore", "entry_size", "new_entry"]

logger = logging.getLogger(__name__)


class Entry(NamedTuple):
    """What the memory store keeps of an origin's outcome."""

    #: The outcome; without its documents when kept for one agent.
    outcome: Outcome
    #: Compiled from ``outcome.rules`` for the agent; ``None`` when there are none.
    matcher: Matcher | None
    #: The sitemaps of the document of ``outcome.rules``, one a line (one
    #: string takes far less memory than a tuple of them).
    sitemaps: str = ""
    #: The RSL License URLs of that document for the agent.
    licenses: tuple[str, ...] = ()

    def restored(self) -> Outcome:
        """The outcome with a document that answers for the agent as the
        original did: the matcher's rules, sitemaps included."""
        matcher = self.matcher
        outcome = self.outcome
        if matcher is None or outcome.rules is not None:
            return outcome
        sitemaps = self.sitemaps
        document = matcher.document(tuple(sitemaps.split("\n")) if sitemaps else ())
        if self.licenses:
            records = tuple(Record("license", url, 0) for url in self.licenses)
            document = Document(
                document.groups, document.sitemaps, records, document.profile
            )
        if outcome.kind == PARSED:
            return replace(outcome, document=document)
        return replace(outcome, fallback=document)


def new_entry(outcome: Outcome, user_agent: str | None) -> Entry:
    """What the memory store keeps of ``outcome`` to answer for
    ``user_agent`` (``None``: the whole outcome, matched for ``*``)."""
    rules = outcome.rules
    matcher = None if rules is None else compile(rules, user_agent or "*")
    licenses = () if rules is None else robots_licenses(rules, user_agent or "*")
    if user_agent is None:
        return Entry(outcome, matcher, "", licenses)
    sitemaps = "" if rules is None else "\n".join(rules.sitemaps)
    return Entry(
        replace(outcome, document=None, fallback=None), matcher, sitemaps, licenses
    )


# What an entry costs beyond its text, in bytes: measured with tracemalloc by
# ``python -m benchmarks.memory`` (CPython 3.11, 64-bit) on hostile bodies
# of every shape (short, long, wildcard, non-ASCII patterns, sitemaps), and
# rounded up so that the estimate stays above what is really held.
#: An entry that keeps documents (the whole outcome): the Outcome, its
#: Document, the Matcher, the LRU slots and the origin key.
_ENTRY_BYTES = 850
#: An entry kept for one agent, which keeps no document: the Outcome, the
#: Matcher's fixed part, the LRU slots and the origin key.
_LEAN_ENTRY_BYTES = 700
#: A group of a kept document: its tuple, user-agent strings, Content-Signal
#: dict.
_GROUP_BYTES = 400
#: A rule of a kept document: the Rule tuple and its line, the matcher's
#: table slots.
_RULE_BYTES = 320
#: Each ``*`` of a pattern: the pieces the matcher splits it into.
_WILDCARD_BYTES = 12
#: A rule as a matcher keeps it (each pattern once): its table slots and the
#: pattern's object; a pattern with a ``*`` or a ``$`` costs more (a text
#: table entry, and its spelling as written when that differs).
_MATCHER_RULE_BYTES = 64
_MATCHER_SPECIAL_BYTES = 100
#: The tables of those patterns, once per matcher that has any.
_MATCHER_SPECIAL_TABLES_BYTES = 600
#: A sitemap URL, other record or Content-Signal pair.
_LINE_BYTES = 100
#: A Content-Usage rule: its UsageRule tuple, line, path and preference
#: strings (text counted apart).
_USAGE_RULE_BYTES = 260
#: A Content-Usage rule with a path, in the table its matcher compiles when
#: first asked (scrapy_rfc9309._usage_table: the path normalised, in two
#: matchers); a path with a ``*`` or a ``$`` also gets a matcher of its own
#: and one of its chunk.  Per character: as for a matcher's pattern, twice.
_USAGE_TABLE_BYTES = 320
_USAGE_TABLE_SPECIAL_BYTES = 900
_USAGE_TABLE_CHAR = (2, 40)
#: A string object beyond its text (CPython's header, rounded up).
_STRING_BYTES = 64
# Per character of a pattern: the pattern as written and the matcher's
# percent-encoded copies.  Beyond ASCII a character takes up to four bytes
# as text and twelve percent-encoded.
_PATTERN_CHAR = (3, 20)
# Per character of a pattern as a matcher alone keeps it.
_MATCHER_CHAR = (1, 28)
# Per character of other text (sitemaps, records, Content-Signal values).
_TEXT_CHAR = (1, 4)


def _chars(text: str, costs: tuple[int, int]) -> int:
    # isascii() is a flag read, not a scan.
    return len(text) * costs[0 if text.isascii() else 1]


def _document_size(document: Document) -> int:
    size = 0
    for group in document.groups:
        size += _GROUP_BYTES + sum(
            _LINE_BYTES + _chars(agent, _TEXT_CHAR) for agent in group.user_agents
        )
        size += sum(
            _RULE_BYTES
            + _chars(rule.pattern, _PATTERN_CHAR)
            + _WILDCARD_BYTES * rule.pattern.count("*")
            for rule in group.rules
        )
        size += _extras_size(group.content_signals, group.content_usage)
    size += sum(_LINE_BYTES + _chars(url, _TEXT_CHAR) for url in document.sitemaps)
    size += sum(
        _LINE_BYTES + _chars(record.name, _TEXT_CHAR) + _chars(record.value, _TEXT_CHAR)
        for record in document.records
    )
    return size


def _matcher_size(matcher: Matcher) -> int:
    """What ``matcher`` holds, counted on the rules it answers with."""
    text, others = matcher._written()
    # The plain prefixes (most rules): counted together, one a line.
    rules = text.count(b"\n") + 1 if text else 0
    size = rules * _MATCHER_RULE_BYTES + (len(text) - rules + 1 if text else 0)
    specials = 0
    for pattern in others:
        size += _MATCHER_RULE_BYTES + _chars(pattern, _MATCHER_CHAR)
        stars = pattern.count("*")
        if stars or pattern.endswith("$"):
            specials += 1
            size += _MATCHER_SPECIAL_BYTES + _WILDCARD_BYTES * stars
    size += _extras_size(matcher.content_signals, matcher.content_usage)
    return size + (_MATCHER_SPECIAL_TABLES_BYTES if specials else 0)


def _extras_size(signals: dict[str, bool | str], usage: tuple[UsageRule, ...]) -> int:
    """Content-Signal values and Content-Usage rules."""
    return sum(
        _LINE_BYTES + _chars(f"{key}{value}", _TEXT_CHAR)
        for key, value in signals.items()
    ) + sum(
        _USAGE_RULE_BYTES
        + _chars(rule.path + rule.preference, _TEXT_CHAR)
        + (_usage_table_size(rule.path) if rule.path else 0)
        for rule in usage
    )


def _usage_table_size(path: str) -> int:
    """What a Content-Usage rule's path costs in its matcher's table."""
    size = _USAGE_TABLE_BYTES + _chars(path, _USAGE_TABLE_CHAR)
    if "*" in path or "$" in path:
        size += _USAGE_TABLE_SPECIAL_BYTES
    return size


def entry_size(origin: str, entry: Entry) -> int:
    """The bytes the memory store holds for ``origin``'s ``entry``.

    An estimate from counts and lengths (groups, rules, pattern lengths,
    sitemaps, records), deterministic and of the cost of compiling the
    matcher, set to stay above what tracemalloc measures; no object walk.
    """
    outcome = entry.outcome
    documents = [
        document
        for document in (outcome.document, outcome.fallback)
        if document is not None
    ]
    size = (
        (_ENTRY_BYTES if documents else _LEAN_ENTRY_BYTES)
        + len(origin)
        + _chars(outcome.detail, _TEXT_CHAR)
    )
    for digest in (outcome.body_sha256, outcome.fallback_sha256):
        if digest is not None:
            size += _STRING_BYTES + len(digest)
    if entry.sitemaps:
        # One string, one a line: its text and its object's header.
        size += _STRING_BYTES + _chars(entry.sitemaps, _TEXT_CHAR)
    for url in entry.licenses:
        size += _STRING_BYTES + _chars(url, _TEXT_CHAR)
    if entry.matcher is not None and not documents:
        # Kept for one agent: the matcher alone holds the rules that apply.
        size += _matcher_size(entry.matcher)
    for document in documents:
        size += _document_size(document)
    return size


class MemoryStore(OutcomeStore):
    """An LRU map of origin to :class:`Entry`, bounded by ``max_origins``
    and by ``max_bytes`` (as :func:`entry_size` counts them).

    ``user_agent`` is the agent every answer is for; ``None`` keeps whole
    documents (and compiles matchers for the ``*`` group).  An entry larger
    than ``max_bytes`` on its own is kept as the only entry: the origin is
    answered without fetching its robots.txt again for every request.
    """

    shared = False

    def __init__(
        self,
        max_origins: int = 100_000,
        user_agent: str | None = None,
        clock: Callable[[], float] = time.time,
        max_bytes: int = 268_435_456,
    ) -> None:
        if max_origins < 1:
            raise ValueError(
                f"ROBOTS_MEMORY_MAX_ORIGINS must be at least 1, not {max_origins}"
            )
        if max_bytes < 1:
            raise ValueError(
                f"ROBOTS_MEMORY_MAX_BYTES must be at least 1, not {max_bytes}"
            )
        self.max_origins = max_origins
        self.max_bytes = max_bytes
        #: What the entries take, as :func:`entry_size` counts it.
        self.size = 0
        #: Entries dropped to stay within the bounds.
        self.evictions = 0
        self.user_agent = user_agent
        #: Seconds since the epoch; entries past ``retain_until`` are gone.
        self.clock = clock
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._sizes: dict[str, int] = {}
        # Leases only matter within this process; the middleware's own
        # single flight already covers it, so this is the plain semantics.
        self._leases: dict[str, float] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = RobotsConfig.for_crawler(crawler)
        return cls(
            config.memory_max_origins,
            config.user_agent,
            max_bytes=config.memory_max_bytes,
        )

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, origin: object) -> bool:
        return origin in self._entries

    def entry(self, origin: str) -> Entry | None:
        """The entry of ``origin``, fresh or stale, marking it recently used.

        Synchronous: this is the per-request path.
        """
        entry = self._entries.get(origin)
        if entry is not None:
            self._entries.move_to_end(origin)
        return entry

    def store(self, origin: str, outcome: Outcome) -> Entry:
        """Keep ``outcome`` for ``origin`` (slimmed to the agent); its entry."""
        entry = new_entry(outcome, self.user_agent)
        entries = self._entries
        self._forget(origin)
        size = entry_size(origin, entry)
        entries[origin] = entry
        self._sizes[origin] = size
        self.size += size
        while len(entries) > self.max_origins or (
            self.size > self.max_bytes and len(entries) > 1
        ):
            self._forget(next(iter(entries)))
            self.evictions += 1
        if size > self.max_bytes:
            logger.warning(
                "The robots.txt outcome of %(origin)s takes about %(size)s bytes,"
                " over ROBOTS_MEMORY_MAX_BYTES (%(max)s): it is the only one kept",
                {"origin": origin, "size": size, "max": self.max_bytes},
            )
        return entry

    def _forget(self, origin: str) -> None:
        if self._entries.pop(origin, None) is not None:
            self.size -= self._sizes.pop(origin)

    async def get(self, origin: str) -> Outcome | None:
        entry = self._entries.get(origin)
        if entry is None:
            return None
        if entry.outcome.retain_until <= self.clock():
            self._forget(origin)
            return None
        self._entries.move_to_end(origin)
        return entry.restored()

    async def put(self, origin: str, outcome: Outcome) -> None:
        self.store(origin, outcome)

    async def acquire(self, origin: str, ttl: float) -> bool:
        now = time.monotonic()
        if self._leases.get(origin, 0.0) > now:
            return False
        self._leases[origin] = now + ttl
        return True

    async def release(self, origin: str) -> None:
        self._leases.pop(origin, None)
