"""``ROBOTS_STORE = "memory"``: outcomes in this process, least recently used
origins dropped first.

It is also the layer that answers every request of a crawl, whatever the
configured store: for each origin it holds only what answers and explains
for the crawl's agent: the outcome without its documents, the matcher
compiled from its rules (which keeps Crawl-delay, Content-Signal and the
lines ``explain`` reports), and the sitemaps.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from .._settings import positive_int, robots_user_agent
from ..match import compile
from ..outcome import PARSED
from .base import OutcomeStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from ..match import Matcher
    from ..outcome import Outcome

__all__ = ["Entry", "MemoryStore", "new_entry"]


class Entry(NamedTuple):
    """What the memory store keeps of an origin's outcome."""

    #: The outcome; without its documents when kept for one agent.
    outcome: Outcome
    #: Compiled from ``outcome.rules`` for the agent; ``None`` when there are none.
    matcher: Matcher | None
    #: The sitemaps of the document of ``outcome.rules``, one a line (one
    #: string takes far less memory than a tuple of them).
    sitemaps: str = ""

    def restored(self) -> Outcome:
        """The outcome with a document that answers for the agent as the
        original did: the matcher's rules, sitemaps included."""
        matcher = self.matcher
        outcome = self.outcome
        if matcher is None or outcome.rules is not None:
            return outcome
        sitemaps = self.sitemaps
        document = matcher.document(tuple(sitemaps.split("\n")) if sitemaps else ())
        if outcome.kind == PARSED:
            return replace(outcome, document=document)
        return replace(outcome, fallback=document)


def new_entry(outcome: Outcome, user_agent: str | None) -> Entry:
    """What the memory store keeps of ``outcome`` to answer for
    ``user_agent`` (``None``: the whole outcome, matched for ``*``)."""
    rules = outcome.rules
    matcher = None if rules is None else compile(rules, user_agent or "*")
    if user_agent is None:
        return Entry(outcome, matcher)
    sitemaps = "" if rules is None else "\n".join(rules.sitemaps)
    return Entry(replace(outcome, document=None, fallback=None), matcher, sitemaps)


class MemoryStore(OutcomeStore):
    """An LRU map of origin to :class:`Entry`, bounded by ``max_origins``.

    ``user_agent`` is the agent every answer is for; ``None`` keeps whole
    documents (and compiles matchers for the ``*`` group).
    """

    shared = False

    def __init__(
        self,
        max_origins: int = 100_000,
        user_agent: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_origins < 1:
            raise ValueError(
                f"ROBOTS_MEMORY_MAX_ORIGINS must be at least 1, not {max_origins}"
            )
        self.max_origins = max_origins
        self.user_agent = user_agent
        #: Seconds since the epoch; entries past ``retain_until`` are gone.
        self.clock = clock
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        # Leases only matter within this process; the middleware's own
        # single flight already covers it, so this is the plain semantics.
        self._leases: dict[str, float] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        max_origins = positive_int(
            crawler.settings, "ROBOTS_MEMORY_MAX_ORIGINS", minimum=1
        )
        return cls(max_origins, robots_user_agent(crawler.settings, crawler.spider))

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
        entries[origin] = entry
        entries.move_to_end(origin)
        while len(entries) > self.max_origins:
            entries.popitem(last=False)
        return entry

    async def get(self, origin: str) -> Outcome | None:
        entry = self._entries.get(origin)
        if entry is None:
            return None
        if entry.outcome.retain_until <= self.clock():
            del self._entries[origin]
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
