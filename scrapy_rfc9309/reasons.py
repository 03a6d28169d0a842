"""Why a URL is allowed or not, and why a request was dropped: the
complete vocabularies, as types (an engine module: no Scrapy)."""

from __future__ import annotations

from typing import Literal

__all__ = ["Cause", "Reason"]

#: Every reason a :class:`~scrapy_rfc9309.Decision` gives: a rule decided
#: (``rule_allow``, ``rule_disallow``; Yandex's empty Disallow,
#: ``empty_disallow``), none did
#: (``default_allow``), ``/robots.txt`` itself (``robots_txt``), the outcome
#: decided (``unavailable``, ``unreachable``), or the crawl's policies did
#: (``content_signal``, ``content_usage``, ``crawl_delay``,
#: ``tdm_reservation``: a :class:`~scrapy_rfc9309.RobotsDisallowed`'s).
Reason = Literal[
    "rule_allow",
    "rule_disallow",
    "empty_disallow",
    "default_allow",
    "robots_txt",
    "unavailable",
    "unreachable",
    "content_signal",
    "content_usage",
    "crawl_delay",
    "tdm_reservation",
]
#: Why a :class:`~scrapy_rfc9309.RobotsDisallowed` dropped a request (the
#: ``robots/forbidden/<cause>`` stats).
Cause = Literal[
    "rule",
    "unreachable",
    "crawl_delay",
    "content_signal",
    "content_usage",
    "tdm_reservation",
]
