"""``RobotParser``: this package's rules behind Scrapy's parser interface.

Two uses.  As ``ROBOTSTXT_PARSER = "scrapy_rfc9309.RobotParser"``, Scrapy's
own ``RobotsTxtMiddleware`` judges requests by RFC 9309's matching (the
parser alone: that middleware keeps its own handling of fetch errors, status
codes, lifetimes and Crawl-delay).  And :class:`~scrapy_rfc9309.RobotsMiddleware`
sends one with Scrapy's ``robots_parsed`` signal, answering for the whole
outcome of the origin (unavailable: everything allowed; unreachable:
everything disallowed for now).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser as ScrapyRobotParser
from scrapy.utils.python import to_unicode

from ._settings import positive_int, robots_profile
from .match import Matcher, compile, crawl_delay
from .outcome import Lifetimes, Outcome, explain_compiled, parsed
from .parse import parse
from .profiles import MAX_BYTES, RFC9309

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["RobotParser"]

# Agents a parser compiles a matcher for; past that, the oldest is dropped.
_MAX_AGENTS = 64


class RobotParser(ScrapyRobotParser):
    """A ``scrapy.robotstxt.RobotParser`` answering by RFC 9309.

    ``outcome`` is what is judged by, ``clock`` (seconds since the epoch)
    the time an unreachable outcome is judged at.  The ``user_agent`` of
    :meth:`allowed` and :meth:`crawl_delay` may be a whole User-Agent
    string: its product token is what is matched, as everywhere in this
    package.
    """

    def __init__(
        self, outcome: Outcome, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.outcome = outcome
        self.clock = clock
        self._matchers: dict[str, Matcher | None] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes) -> Self:
        """The parser of ``robotstxt_body``, read with the crawl's
        ``ROBOTS_PROFILE`` and ``ROBOTS_MAX_BYTES`` (the defaults without a
        crawler)."""
        profile, max_bytes = RFC9309, MAX_BYTES
        if crawler is not None:
            settings = crawler.settings
            profile = robots_profile(settings)
            max_bytes = positive_int(settings, "ROBOTS_MAX_BYTES", minimum=1)
        document = parse(robotstxt_body, profile=profile, max_bytes=max_bytes)
        # Lifetimes are the calling middleware's business; a parsed outcome
        # answers by its rules whatever its expiry.
        return cls(parsed(document, now=time.time(), lifetimes=Lifetimes()))

    def _matcher(self, user_agent: str) -> Matcher | None:
        try:
            return self._matchers[user_agent]
        except KeyError:
            pass
        rules = self.outcome.rules
        matcher = None if rules is None else compile(rules, user_agent)
        if len(self._matchers) >= _MAX_AGENTS:
            del self._matchers[next(iter(self._matchers))]
        self._matchers[user_agent] = matcher
        return matcher

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        """Whether ``user_agent`` may fetch ``url``."""
        agent = to_unicode(user_agent)
        return explain_compiled(
            self.outcome, self._matcher(agent), to_unicode(url), self.clock()
        ).allowed

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        """The Crawl-delay for ``user_agent``, in seconds, or ``None``."""
        outcome = self.outcome
        rules = outcome.rules
        if rules is None or outcome.disallows_all(self.clock()):
            return None
        return crawl_delay(rules, to_unicode(user_agent))
