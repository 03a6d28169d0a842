"""Which groups apply to an agent (RFC 9309 section 2.2.1), merged as one.

Pure: the product token of a user agent, the token a ``User-agent:`` value
names, the groups that apply to a token (the profiles' bounded selectors
included) and merging them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ._caches import BoundedCache
from .profiles import Selector, selector_for

if TYPE_CHECKING:
    from .parse import Document, Group, Rule, UsageRule

#: ASCII whitespace as Google strips it (``absl::StripAsciiWhitespace``).
WHITESPACE = " \t\n\v\f\r"

_TOKEN = re.compile("[A-Za-z_-]*")


def product_token(user_agent: str) -> str:
    """The lower-cased leading run of ``[A-Za-z_-]`` of ``user_agent``:
    ``"ExampleBot/1.0 (+https://x)"`` gives ``"examplebot"``."""
    if not isinstance(user_agent, str):
        raise TypeError(f"user_agent must be a str, not {type(user_agent).__name__}")
    match = _TOKEN.match(user_agent)
    return match[0].lower() if match else ""


# User-agent values as written -> the token they name; a few dozen
# spellings cover nearly every robots.txt.
AGENT_TOKENS: BoundedCache[str, str] = BoundedCache("agents.tokens", 1 << 20, 512)


def agent_token(value: str) -> str:
    """The token a ``User-agent:`` value names: ``*`` for the wildcard (also
    ``* anything``, as Google reads it), else its product token."""
    token = AGENT_TOKENS.data.get(value)
    if token is None:
        if value[:1] == "*" and (len(value) == 1 or value[1] in WHITESPACE):
            token = "*"
        else:
            token = product_token(value)
        if not AGENT_TOKENS.full:
            AGENT_TOKENS.put(value, token)
    return token


def applicable_groups(document: Document, token: str) -> list[Group]:
    """The groups that apply to the agent of product ``token``: those naming
    it (a bounded profile: best, see
    :meth:`~scrapy_rfc9309.profiles.Selector.rank`), else those naming
    ``*`` (RFC 9309 section 2.2.1) unless the profile says otherwise.  An
    empty token names no group."""
    selector = selector_for(document.profile, token)
    if selector is None:
        selector = Selector(token, True, tiers=((token,),) if token else ())
    best = 0
    chosen: list[Group] = []
    wildcard: list[Group] = []
    for group in document.groups:
        rank = 0
        for value in group.user_agents:
            named = agent_token(value)
            if named == "*":
                if not wildcard or wildcard[-1] is not group:
                    wildcard.append(group)
                continue
            rank = max(rank, selector.rank(value.strip(WHITESPACE).lower(), named))
        if rank > best:
            best, chosen = rank, [group]
        elif rank and rank == best:
            chosen.append(group)
    if chosen:
        return chosen
    return wildcard if selector.wildcard else []


def merge_groups(groups: Iterable[Group]) -> Group:
    """Groups that apply to one agent as one group: rules and Content-Usage
    rules in file order, the largest Crawl-delay, Content-Signal values
    merged (``no`` wins); the first group's line."""
    groups = list(groups)
    if len(groups) == 1:
        return groups[0]
    agents: dict[str, None] = {}
    rules: list[Rule] = []
    delays: list[float] = []
    signals: dict[str, bool | str] = {}
    usage: list[UsageRule] = []
    for group in groups:
        agents.update(dict.fromkeys(group.user_agents))
        rules.extend(group.rules)
        usage.extend(group.content_usage)
        if group.crawl_delay is not None:
            delays.append(group.crawl_delay)
        merge_signals(signals, group.content_signals)
    rules.sort(key=lambda rule: rule.line)
    usage.sort(key=lambda rule: rule.line)
    return replace(
        groups[0],
        user_agents=tuple(agents),
        rules=tuple(rules),
        crawl_delay=max(delays) if delays else None,
        content_signals=signals,
        content_usage=tuple(usage),
    )


def merge_signals(
    into: dict[str, bool | str], signals: Mapping[str, bool | str]
) -> None:
    """Add ``signals`` to ``into``: a ``no`` (False) always wins, otherwise
    the first value given for a key stays."""
    for key, value in signals.items():
        if value is False or key not in into:
            into[key] = value
