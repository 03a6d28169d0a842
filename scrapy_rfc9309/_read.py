"""The reader: robots.txt text -> lines -> the model (RFC 9309 2.1-2.2).

The key tables of each profile and the tokenizer (:func:`read_chunk`),
which reads the text :func:`~scrapy_rfc9309._bytes.body_text` gives into
a whole document (:func:`read_document`) or the rules of one agent
(:func:`rules_for`), telling a :class:`Handler` (lint) what else it finds.
Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from itertools import compress

from ._agents import WHITESPACE, agent_token, merge_signals
from ._bytes import MAX_LINE_BYTES, SAFE_CHARS, cap_line, encode
from ._caches import BoundedCache
from ._model import (
    Group,
    Parts,
    Profile,
    Record,
    Rule,
    UsageRule,
    parse_content_signal,
    parse_crawl_delay,
    usage_rule,
)
from .profiles import PROFILES, RULES


class Handler:
    """What the reader tells besides what it reads, as google/robotstxt's
    ``RobotsParseHandler``: one no-op method per event, given the 1-based
    line it is about (a handler overrides those it wants).

    First the facts of the bytes and lines as written: the body cut from
    ``size`` octets to ``kept``; the first ``skipped`` octets of a
    byte-order mark (fewer than 3: a broken one); the first octet that is
    not UTF-8; a NUL; a line over :data:`MAX_LINE_BYTES`.  Then the lines
    read (``record``: another key; a group's first valid Crawl-delay), read
    leniently (two tokens without a colon, a misspelt key) or ignored (no
    ``key: value``, no colon where the profile needs it, a rule or a
    group's key before any User-agent line).
    """

    def body_cut(self, line: int, size: int, kept: int) -> None: ...
    def byte_order_mark(self, line: int, skipped: int) -> None: ...
    def invalid_utf8(self, line: int) -> None: ...
    def nul_byte(self, line: int) -> None: ...
    def line_too_long(self, line: int, size: int) -> None: ...

    def user_agent(self, line: int, value: str) -> None: ...
    def sitemap(self, line: int, url: str) -> None: ...
    def record(self, line: int, name: str, value: str) -> None: ...
    def crawl_delay(self, line: int, seconds: float) -> None: ...
    def invalid_crawl_delay(self, line: int, value: str) -> None: ...
    def duplicate_crawl_delay(self, line: int, value: str) -> None: ...
    def content_signal(self, line: int, value: str) -> None: ...
    def content_usage(self, line: int, value: str) -> None: ...

    def unparsable_line(self, line: int, text: str) -> None: ...
    def missing_colon(self, line: int, key: str) -> None: ...
    def missing_colon_ignored(self, line: int, key: str) -> None: ...
    def typo_accepted(self, line: int, name: str, canonical: str) -> None: ...
    def rule_outside_group(self, line: int, pattern: str) -> None: ...
    def directive_outside_group(self, line: int, name: str) -> None: ...


# Kinds of line; Disallow and Allow first: "kind <= _ALLOW" tells a rule,
# "kind == _ALLOW" its verdict.
_DISALLOW, _ALLOW, _USER_AGENT, _SITEMAP, _CRAWL_DELAY, _CONTENT_SIGNAL = range(6)
_NO_KEY, _RECORD, _CONTENT_USAGE = 6, 7, 8
# What each kind's key is called: one read as a kind but written otherwise
# is a misspelling.
_CANONICAL = {
    _USER_AGENT: "user-agent",
    _ALLOW: "allow",
    _DISALLOW: "disallow",
    _SITEMAP: "sitemap",
    _CRAWL_DELAY: "crawl-delay",
    _CONTENT_SIGNAL: "content-signal",
    _CONTENT_USAGE: "content-usage",
}
_KIND_OF_KEY = {name: kind for kind, name in _CANONICAL.items()}
# Key spellings (lower-cased) -> their kind, per profile.
_KEYS: dict[Profile, dict[str, int]] = {
    profile: {name: _KIND_OF_KEY[key] for name, key in rules.keys.items()}
    for profile, rules in RULES.items()
}
# A profile reading keys by prefix (Google) tries them in this order.
_PREFIX_ORDER = (_USER_AGENT, _ALLOW, _DISALLOW, _SITEMAP)
_PREFIXES: dict[Profile, tuple[tuple[tuple[str, ...], int], ...]] = {
    profile: tuple(
        (tuple(name for name, kind in _KEYS[profile].items() if kind == wanted), wanted)
        for wanted in _PREFIX_ORDER
    )
    for profile, rules in RULES.items()
    if rules.prefix_keys
}


def key_kind(key: str, profile: Profile) -> int | None:
    """What a lower-cased key is in ``profile``; ``None`` for another record."""
    prefixes = _PREFIXES.get(profile)
    if prefixes is not None:
        for names, kind in prefixes:
            if key.startswith(names):
                return kind
    return _KEYS[profile].get(key)


_new = tuple.__new__
_object_new = object.__new__

# Caches of what the same few lines, written alike in file after file,
# read as.  Keys as written -> their kind, per profile.
_KIND_CACHE: dict[str, BoundedCache[str, int]] = {
    p: BoundedCache(f"read.kinds.{p}", 512 << 10, 128) for p in PROFILES
}
# Lines without a colon -> (key, value), or None (blank lines, HTML tags).
_NO_COLON: BoundedCache[str, tuple[str, str] | None] = BoundedCache(
    "read.no_colon", 512 << 10, 100
)
# User-agent lines -> the token they name, or None for a line that is no
# User-agent line; per profile.
_AGENT_LINE_TOKENS: dict[Profile, BoundedCache[str, str | None]] = {
    p: BoundedCache(f"read.agent_lines.{p}", 1 << 20, 200) for p in PROFILES
}
# Told apart by identity: no line reads as it, no token holds a NUL.
_UNKNOWN = ("", "")
_MISSING = "\0"
# Google accepts a missing colon only between exactly two tokens (profile
# hook: Yandex and Bing need the colon).
_TWO_TOKENS = re.compile(r"([^ \t]+)[ \t]+([^ \t]+)").fullmatch
_COLON_NEEDED = {profile: not rules.missing_colon for profile, rules in RULES.items()}

# Lines end at CR, LF and CRLF; a NUL ends a line's content, a "#" starts
# a comment, a line keeps MAX_LINE_BYTES octets.  Regular expressions find
# the groups that apply to one agent without reading the others.

# A CR not before a LF (all but one at the end of the text).
_LONE_CR = re.compile(r"\r[^\n]").search
# The rest of a line from a "#", and from a NUL.
_COMMENT = re.compile("#.*").sub
_AFTER_NUL = re.compile("\0.*").sub
# A line that is surely a rule in every profile: a usual spelling of the
# key, then the colon, well within the line cap.
_SURE = (
    r"\n[ \t\v\f]{0,1000}(?:Disallow|disallow|DISALLOW|Allow|allow|ALLOW)"
    r"[ \t\v\f]{0,1000}:"
)
_SURE_RULE = re.compile(_SURE).search
# After any whitespace, the key of every User-agent line (misspellings and
# Google's prefix keys included) starts with "user" in some case, that of
# every Allow or Disallow line with "al" or "di" (Content-Usage: "co").
# Searching from a "\n" skips to each line start at C speed.  Group 2
# tells a User-agent line followed by a rule.
_AGENT_LINE = r"([ \t\v\f]*user[^\n]*)(?=(?-i:(" + _SURE + "))|)"
# Searched one after another: finditer() can leave a small allocation
# behind that the memory store's tests would count.
_AGENT_LINE_AFTER = re.compile(r"(?i)\n" + _AGENT_LINE).search
# The first line has no "\n" before it (adding one would copy the text).
_FIRST_AGENT_LINE = re.compile(r"(?i)" + _AGENT_LINE).match
# Per profile: what finds the lines that end a group.
_ENDING_LINES = {
    profile: re.compile(
        r"(?i)\n([ \t\v\f]*(?:al|di" + ("|co" if rules.usage_ends_group else "") + r")"
        r"[^\n]*)"
    ).finditer
    for profile, rules in RULES.items()
}
# How nearly every rule line starts: what follows is a Disallow pattern.
_DISALLOW_LINE = "\nDisallow: "
# For one agent only a rule, Crawl-delay, Content-Signal or Content-Usage
# line matters: its key starts with "a", "d" or "c" after any whitespace.
_RELEVANT = re.compile(r"\n[ \t\v\f]*[aAdDcC]").search
_MATTERS = re.compile(r"[ \t\v\f]*[aAdDcC]").match

#: What matching for one agent needs from a robots.txt: the patterns (none
#: empty) of the rules of the groups that apply to it (merged, as
#: :func:`~scrapy_rfc9309._agents.merge_groups` does), in file order,
#: their ``line << 1 | allow``, the Crawl-delay, the Content-Signal values
#: and the Content-Usage rules (in file order).
AgentRules = tuple[
    list[str], list[int], float | None, dict[str, bool | str], list[UsageRule]
]


def _line_ends(text: str) -> str:
    """``text`` with every line ended by a LF (a CR may stay before it:
    every value is stripped of it)."""
    if "\r" in text and (_LONE_CR(text) or text.endswith("\r")):
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _agent_of(line: str, profile: Profile) -> str | None:
    """The token a User-agent line names, ``None`` for another line; kept
    in the cache."""
    key, colon, value = line.partition(":")
    if (
        colon
        and _KIND_CACHE[profile].data.get(key) == _USER_AGENT
        and "#" not in value
        and "\0" not in value
        and len(line) <= SAFE_CHARS
    ):
        # How read_chunk() reads the usual ones, without its setting up.
        agent: str | None = agent_token(value.strip(WHITESPACE))
    else:
        agents = _read_alone(line, profile).user_agents
        agent = agent_token(agents[0]) if agents else None
    tokens = _AGENT_LINE_TOKENS[profile]
    if not tokens.full:
        tokens.put(line, agent)
    return agent


def _has_rule(gap: str, profile: Profile) -> bool:
    """Whether an Allow or Disallow line, spelt as it may be, is in ``gap``
    (text from a "\\n" to a line start), or a Content-Usage line where the
    profile makes it end a group."""
    if _SURE_RULE(gap):
        return True
    lines = "\n".join(match[1] for match in _ENDING_LINES[profile](gap))
    group = _read_alone(lines, profile)
    return bool(group.rules or group.content_usage)


# Per profile (``group_ends``): whether a gap, as _has_rule() takes it, ends the
# group: a rule, or (Yandex) any line with a colon (before "#", NUL) or blank.
_ANY_LINE = re.compile(r"\n(?:[^#\0\n:]*:|[ \t\v\f\r]*[#\0\n])").search
_GAP_ENDS: dict[Profile, Callable[[str, Profile], object]] = {
    p: _has_rule if r.group_ends == "rule" else lambda gap, _: _ANY_LINE(gap)
    for p, r in RULES.items()
}


def _read_alone(text: str, profile: Profile) -> Group:
    """The lines of ``text`` read by :func:`read_chunk` as one group."""
    reading = _Reading(line=1)
    read_chunk(text, 1, profile, reading)
    reading.end_group()
    assert reading.groups
    return reading.groups[0]


# Reading the rules of one agent, no line starts a group.
_NO_STARTS: frozenset[int] = frozenset()


class _Reading:
    """What :func:`read_chunk` reads into: the groups, sitemaps and records
    read, and the group being read (``line``: its first, 0 before any).
    ``starts``: the User-agent lines (numbered from 0, ``agents_read`` so
    far) that start a group.  For one agent (``groups`` is ``None``) the
    rules of every group read go into ``patterns`` and ``metas``
    (``line << 1 | allow``), and no line starts a group."""

    def __init__(self, one_agent: bool = False, line: int = 0) -> None:
        self.groups: list[Group] | None = None if one_agent else []
        self.patterns: list[str] = []
        self.metas: list[int] = []
        self.sitemaps: dict[str, None] = {}
        self.records: list[Record] = []
        self.agents: list[str] = []
        self.rules: list[Rule] = []
        self.delay: float | None = None
        self.signals: dict[str, bool | str] = {}
        self.usage: list[UsageRule] = []
        self.line, self.agents_read = line, 0
        self.starts: AbstractSet[int] = _NO_STARTS

    def end_group(self) -> None:
        """The group being read is done (if any): a new one starts."""
        if self.line and self.groups is not None:
            # Without the dataclass __init__, which costs four times as much.
            group = _object_new(Group)
            fields = group.__dict__
            fields["user_agents"] = tuple(self.agents)
            fields["rules"] = tuple(self.rules)
            fields["crawl_delay"] = self.delay
            fields["content_signals"] = self.signals
            fields["line"] = self.line
            fields["content_usage"] = tuple(self.usage)
            self.groups.append(group)
        self.agents, self.rules, self.usage = [], [], []
        self.delay, self.signals = None, {}


def read_document(text: str, profile: Profile, handler: Handler | None = None) -> Parts:
    """The groups, sitemaps and records of ``text`` (as :func:`body_text`
    gives it), telling ``handler`` about its lines."""
    text = _line_ends(text)
    reading = _Reading()
    # The whole text in one read (a call per group costs more).
    reading.starts = set(group_starts(text, profile)[1])
    read_chunk(text, 1, profile, reading, handler)
    reading.end_group()
    assert reading.groups is not None
    return tuple(reading.groups), tuple(reading.sitemaps), tuple(reading.records)


def group_starts(
    text: str, profile: Profile, token: str = ""
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Where the groups of ``text`` (its line ends as :func:`_line_ends`
    leaves them) start, the User-agent lines that start them (numbered
    among the User-agent lines from 0), and the groups naming ``token``
    and those naming ``*``, by number: the one place that decides where a
    group starts.  A User-agent line starts one unless the group being read
    has no rule yet (RFC 9309 section 2.2.4), or no other line yet (Yandex:
    ``group_ends``).  Regular expressions find the User-agent lines and,
    between two of them, what ends a group.
    """
    match = _FIRST_AGENT_LINE(text) if text[:1] in " \t\v\fuU" else None
    if match is None:
        match = _AGENT_LINE_AFTER(text)
    tokens = _AGENT_LINE_TOKENS[profile].data
    ends = _GAP_ENDS[profile]
    starts, openers = [], []
    named: list[int] = []
    starred: list[int] = []
    # The number of the User-agent line; where the last one ends, and
    # whether a rule surely follows it.
    ordinal, end, ruled = 0, -1, False
    # Hot loop: a cache lookup per User-agent line, seldom a regex search.
    while match is not None:
        start, stop = match.span(1)
        agent = tokens.get(match[1], _MISSING)
        if agent is _MISSING:
            agent = _agent_of(match[1], profile)
        if agent is None:
            match = _AGENT_LINE_AFTER(text, stop)
            continue
        # The gap is cut out, so what is read is linear in the text.
        if end < 0 or (end + 1 < start and (ruled or ends(text[end:start], profile))):
            starts.append(start)
            openers.append(ordinal)
        ordinal += 1
        if agent == token:
            if not named or named[-1] != len(starts) - 1:
                named.append(len(starts) - 1)
        elif agent == "*" and (not starred or starred[-1] != len(starts) - 1):
            starred.append(len(starts) - 1)
        end, ruled = stop, match.lastindex == 2
        match = _AGENT_LINE_AFTER(text, stop)
    return starts, openers, named, starred


def rules_for(text: str, profile: Profile, token: str) -> AgentRules:
    """The rules for the agent of product ``token`` of ``text`` (as
    :func:`body_text` gives it): those of the groups naming the token if
    any, else of those naming ``*`` (RFC 9309 section 2.2.1), merged.  Only
    those groups are read."""
    if "\r" in text:
        text = _line_ends(text)
    starts, _, named, starred = group_starts(text, profile, token)
    starts.append(len(text))
    reading = _Reading(True)
    delays: list[float] = []
    position, number = 0, 1
    for index in named if token and named else starred:
        start = starts[index]
        number += text.count("\n", position, start)
        position = start
        reading.line = number
        read_chunk(text[start : starts[index + 1]], number, profile, reading)
        if reading.delay is not None:
            delays.append(reading.delay)
            reading.delay = None
    delay = max(delays) if delays else None
    return reading.patterns, reading.metas, delay, reading.signals, reading.usage


def read_chunk(
    chunk: str,
    number: int,
    profile: Profile,
    reading: _Reading,
    handler: Handler | None = None,
) -> None:
    """Read the lines of ``chunk`` (its line ends as :func:`_line_ends`
    leaves them, its first line numbered ``number``) into ``reading``,
    telling ``handler`` about them; the group being read is left open.

    Without a handler the text is cut at each ``\\nDisallow: `` first, so
    that most rule lines cost a strip and two appends; the other lines are
    read one by one.  A User-agent line starts a group if its number (among
    the User-agent lines read, from 0) is in ``reading.starts``.
    """
    # Each piece after the first starts with a "Disallow: " line's pattern;
    # with a handler, the lines are read one by one, as written.
    pieces = iter(_pieces(chunk) if handler is None else [chunk])
    one_agent = reading.groups is None
    lines: list[str] | None
    lines, number = _head(next(pieces), number, one_agent)
    first = reading.line  # the group being read, 0 before the first
    add_rule = reading.rules.append
    add_pattern = reading.patterns.append
    add_meta = reading.metas.append
    kinds = _KIND_CACHE[profile].data
    no_colon = _NO_COLON.data
    colon_needed = _COLON_NEEDED[profile]
    whitespace = WHITESPACE
    # Hot loop, written for speed: the common lines cost no call, the rare
    # ones are read by helpers, a handler is told only where one is given.
    # ``number`` is that of the line before ``lines``.
    while lines is not None:
        numbered: Iterable[tuple[int, str]] = enumerate(lines, number + 1)
        if one_agent:
            numbered = compress(numbered, map(_MATTERS, lines))
        elif handler is not None:
            numbered = _as_written(numbered, handler)
        for line_number, line in numbered:
            key, colon, value = line.partition(":")
            if colon:
                value = value.strip(whitespace)
            elif not line:
                continue
            else:
                found = no_colon.get(line, _UNKNOWN)
                if found is _UNKNOWN:
                    found = _without_colon(line)
                if found is None or colon_needed:
                    if handler is not None:
                        _ignored(handler, line_number, line, found)
                    continue
                key, value = found
            kind = kinds.get(key)
            if kind is None:
                kind = _kind(key, profile)
            if handler is not None:
                _lenient_key(handler, line_number, colon, kind, key)
            if kind > _ALLOW:
                _other_line(reading, kind, key, value, line_number, line, handler)
                if kind == _USER_AGENT:
                    first, add_rule = reading.line, reading.rules.append
            elif not first:
                if handler is not None:
                    handler.rule_outside_group(line_number, value)
            elif one_agent:
                if value:
                    add_pattern(value)
                    add_meta(line_number << 1 | kind)
            else:
                add_rule(_new(Rule, (kind == _ALLOW, value, line_number)))
        # The "Disallow: " pieces, counted in metas: ``line << 1``.
        meta = number + len(lines) << 1
        lines, number = _disallow_pieces(
            pieces, meta, one_agent, add_rule, add_pattern, add_meta
        )


def _head(head: str, number: int, one_agent: bool) -> tuple[list[str], int]:
    """The lines of ``head`` (the text before the first "Disallow: " piece,
    its first line numbered ``number``) to read, and the number of the line
    before them; for one agent, none if none may matter."""
    if one_agent and ("\n" not in head or not _RELEVANT(head)):
        return [], number + head.count("\n")
    return head.split("\n"), number - 1


def _disallow_pieces(
    pieces: Iterator[str],
    meta: int,
    one_agent: bool,
    add_rule: Callable[[Rule], None],
    add_pattern: Callable[[str], None],
    add_meta: Callable[[int], None],
) -> tuple[list[str] | None, int]:
    """Read ``pieces`` (each the pattern of a "Disallow: " line, ``meta``
    that of the line before the first) up to one followed by other lines
    that may matter: those lines and the number of the line before them
    (``None`` when no piece is left)."""
    whitespace = WHITESPACE
    for piece in pieces:
        meta += 2
        if "\n" not in piece:
            if not one_agent:
                add_rule(_new(Rule, (False, piece.strip(whitespace), meta >> 1)))
            else:
                # For one agent, an empty pattern (it matches nothing) is
                # left out.
                pattern = piece.strip(whitespace)
                if pattern:
                    add_pattern(pattern)
                    add_meta(meta)
            continue
        after = piece.index("\n")
        pattern = piece[:after].strip(whitespace)
        if not one_agent:
            add_rule(_new(Rule, (False, pattern, meta >> 1)))
        elif pattern:
            add_pattern(pattern)
            add_meta(meta)
        if after + 1 == len(piece) or (one_agent and not _RELEVANT(piece, after)):
            # Nothing after the pattern's line, or nothing that matters.
            meta += piece.count("\n") << 1
            continue
        return piece[after + 1 :].split("\n"), meta >> 1
    return None, 0


def _pieces(chunk: str) -> list[str]:
    """``chunk`` without comments and what follows a NUL, each line capped,
    cut at each ``\\nDisallow: ``."""
    if "#" in chunk:
        chunk = _COMMENT("", chunk)
    if "\0" in chunk:
        chunk = _AFTER_NUL("", chunk)
    pieces = chunk.split(_DISALLOW_LINE)
    # No line of a text this short in characters can be over the cap, nor
    # one of more characters if it is ASCII; a piece's line is "Disallow: "
    # longer.
    if len(chunk) > SAFE_CHARS:
        longest = MAX_LINE_BYTES if chunk.isascii() else SAFE_CHARS
        if len(chunk) > longest and max(map(len, pieces)) >= longest - 11:
            lines = chunk.split("\n")
            if max(map(len, lines)) > longest:
                pieces = "\n".join(map(cap_line, lines)).split(_DISALLOW_LINE)
    return pieces


def _as_written(
    numbered: Iterable[tuple[int, str]], handler: Handler
) -> Iterator[tuple[int, str]]:
    """The lines of ``numbered`` as :func:`_pieces` leaves them, telling
    ``handler`` of their NUL bytes and over-long lines as written."""
    for number, line in numbered:
        content = line
        if "\0" in line:
            handler.nul_byte(number)
            content = line.partition("\0")[0]
        written = content[:-1] if content.endswith("\r") else content
        if len(written) > SAFE_CHARS:
            size = len(encode(written))
            if size > MAX_LINE_BYTES:
                handler.line_too_long(number, size)
        yield number, cap_line(content.partition("#")[0])


def _other_line(
    reading: _Reading,
    kind: int,
    key: str,
    value: str,
    number: int,
    line: str,
    handler: Handler | None,
) -> None:
    """Read a line other than a rule (of ``kind``) into ``reading``."""
    if kind == _USER_AGENT:
        if reading.agents_read in reading.starts:
            # A new group (group_starts() says where).
            reading.end_group()
            reading.line = number
        reading.agents_read += 1
        reading.agents.append(value)
        if handler is not None:
            handler.user_agent(number, value)
    elif kind == _RECORD:
        name = key.strip(WHITESPACE).lower()
        reading.records.append(_new(Record, (name, value, number)))
        if handler is not None:
            handler.record(number, name, value)
    elif kind == _SITEMAP:
        if value:
            reading.sitemaps[value] = None
        if handler is not None:
            handler.sitemap(number, value)
    elif kind == _NO_KEY:
        if handler is not None:
            handler.unparsable_line(number, line.strip(WHITESPACE))
    elif not reading.line:
        if handler is not None:
            handler.directive_outside_group(number, key.strip(WHITESPACE).lower())
    elif kind == _CRAWL_DELAY:
        seconds = parse_crawl_delay(value)
        if handler is not None:
            if seconds is None:
                handler.invalid_crawl_delay(number, value)
            elif reading.delay is not None:
                handler.duplicate_crawl_delay(number, value)
            else:
                handler.crawl_delay(number, seconds)
        if reading.delay is None:
            reading.delay = seconds
    elif kind == _CONTENT_USAGE:
        reading.usage.append(usage_rule(value, number))
        if handler is not None:
            handler.content_usage(number, value)
    else:
        merge_signals(reading.signals, parse_content_signal(value)[0])
        if handler is not None:
            handler.content_signal(number, value)


def _ignored(
    handler: Handler, number: int, line: str, found: tuple[str, str] | None
) -> None:
    """Tell ``handler`` of a line without a colon that is not read."""
    if found is not None:
        handler.missing_colon_ignored(number, found[0])
    elif line.strip(WHITESPACE):
        handler.unparsable_line(number, line.strip(WHITESPACE))


def _lenient_key(
    handler: Handler, number: int, colon: str, kind: int, key: str
) -> None:
    """Tell ``handler`` of a key read leniently: without a colon, or misspelt."""
    if not colon and kind != _RECORD:
        handler.missing_colon(number, key)
    name = key.strip(WHITESPACE).lower()
    canonical = _CANONICAL.get(kind)
    if canonical not in (None, name):
        handler.typo_accepted(number, name, canonical)


def _without_colon(line: str) -> tuple[str, str] | None:
    """``(key, value)`` of a line without a colon, or ``None``; kept in the
    cache."""
    stripped = line.strip(WHITESPACE)
    # One token (most junk: "}", "</div>") needs no regex to tell.
    two = _TWO_TOKENS(stripped) if " " in stripped or "\t" in stripped else None
    found = None if two is None else (two[1], two[2].strip(WHITESPACE))
    if not _NO_COLON.full:
        _NO_COLON.put(line, found)
    return found


def _kind(key: str, profile: Profile) -> int:
    """What ``key`` (as written) is in ``profile``; kept in the cache."""
    name = key.strip(WHITESPACE).lower()
    found = key_kind(name, profile) if name else _NO_KEY
    kind = _RECORD if found is None else found
    kinds = _KIND_CACHE[profile]
    if not kinds.full:
        kinds.put(key, kind)
    return kind
