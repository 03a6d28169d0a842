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
from .._sizes import (
    LINE_BYTES,
    TEXT_CHAR,
    chars,
    extras_size,
    patterns_size,
    usage_table_size,
)
from ..licenses import robots_licenses
from ..match import MATCHERS_PER_DOCUMENT, compile
from ..outcome import PARSED
from ..parse import Document, Record
from .base import OutcomeStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from ..match import Matcher
    from ..outcome import Outcome
    from ..parse import Document

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
#: A rule of a kept document: the Rule tuple, its line and its pattern's
#: object (the matchers' share is counted apart).
_RULE_BYTES = 200
#: A matcher's fixed part: its object, arrays and tuples, its slot in the
#: document's dict.
_MATCHER_BYTES = 500
#: A string object beyond its text (CPython's header, rounded up).
_STRING_BYTES = 64
# Per character of a pattern as written: beyond ASCII a character takes up
# to four bytes.
_PATTERN_CHAR = (1, 4)


def _document_size(document: Document, matchers: int) -> int:
    """A kept document and the ``matchers`` compiled from it that may be
    held, each of at most every rule of the document (and its Content-Usage
    table)."""
    patterns = [rule.pattern for group in document.groups for rule in group.rules]
    size = sum(_RULE_BYTES + chars(pattern, _PATTERN_CHAR) for pattern in patterns)
    # What every matcher may hold, counted once (as Matcher.estimated_bytes
    # counts a matcher's patterns), then for as many matchers as it may keep.
    matched = patterns_size(patterns)
    for group in document.groups:
        size += _GROUP_BYTES + sum(
            LINE_BYTES + chars(agent, TEXT_CHAR) for agent in group.user_agents
        )
        # The document's Content-Signal values and Content-Usage rules; a
        # matcher's own are its copy of the values and its table of the rules.
        size += extras_size(group.content_signals, group.content_usage)
        matched += LINE_BYTES * len(group.content_signals) + sum(
            usage_table_size(rule.path) for rule in group.content_usage if rule.path
        )
    size += sum(LINE_BYTES + chars(url, TEXT_CHAR) for url in document.sitemaps)
    size += sum(
        LINE_BYTES + chars(record.name, TEXT_CHAR) + chars(record.value, TEXT_CHAR)
        for record in document.records
    )
    matched += _MATCHER_BYTES
    return size + matchers * matched


def entry_size(origin: str, entry: Entry) -> int:
    """The bytes the memory store holds for ``origin``'s ``entry``.

    An estimate from counts and lengths (groups, rules, pattern lengths,
    sitemaps, records), deterministic and of the cost of compiling the
    matcher (for a whole document, every matcher it may keep), set to stay
    above what tracemalloc measures; no object walk.
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
        + chars(outcome.detail, TEXT_CHAR)
    )
    for digest in (outcome.body_sha256, outcome.fallback_sha256):
        if digest is not None:
            size += _STRING_BYTES + len(digest)
    if entry.sitemaps:
        # One string, one a line: its text and its object's header.
        size += _STRING_BYTES + chars(entry.sitemaps, TEXT_CHAR)
    for url in entry.licenses:
        size += _STRING_BYTES + chars(url, TEXT_CHAR)
    if entry.matcher is not None and not documents:
        # Kept for one agent: the matcher alone holds the rules that apply.
        size += entry.matcher.estimated_bytes()
    for document in documents:
        # A document keeps a matcher per agent asked, up to
        # MATCHERS_PER_DOCUMENT; the entry's own may outlive them.
        matchers = MATCHERS_PER_DOCUMENT + (document is outcome.rules)
        size += _document_size(document, matchers)
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
