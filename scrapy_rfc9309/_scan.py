"""Reading a robots.txt for one agent without splitting all of it into lines.

:func:`scan_for` gives exactly what the groups of ``read(lines_of(text))``
that apply to the agent give, merged (tests/test_scan.py holds it to that).
Regular expressions run over the whole text find the User-agent lines and,
between two of them, whether a rule ends a group; only the lines of the
groups that apply are read one by one, and even there the usual
``Disallow: ...`` lines are cut apart by one ``str.split``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain

from .parse import (
    _ALLOW,
    _CONTENT_SIGNAL,
    _CRAWL_DELAY,
    _IRRELEVANT_START,
    _KIND_CACHE,
    _SAFE_CHARS,
    _USER_AGENT,
    _WHITESPACE,
    MAX_LINE_BYTES,
    PROFILES,
    AgentRules,
    Profile,
    agent_token,
    cap_line,
    kind_and_value,
    merge_signals,
    parse_content_signal,
    parse_crawl_delay,
)

__all__ = ["scan_for"]

# A CR not before a LF ends a line as well (this finds all but one at the
# end of the text, quicker than a lookahead).
_LONE_CR = re.compile(r"\r[^\n]").search
# The rest of a line from a NUL, which ends its content; and from a "#".
_AFTER_NUL = re.compile("\0[^\n]*")
_COMMENTS = re.compile("#[^\n]*")
# A line that is surely a rule in either profile: a usual spelling of the
# key, then the colon, well within the line cap.
_SURE = (
    r"\n[ \t\v\f]{0,1000}+(?:Disallow|disallow|DISALLOW|Allow|allow|ALLOW)"
    r"[ \t\v\f]{0,1000}+:"
)
_SURE_RULE = re.compile(_SURE).search
# After any whitespace, the key of every User-agent line (misspellings and
# Google's prefix keys included) starts with "user" in some case, and that
# of every Allow or Disallow line with "al" or "di": no other character
# lower-cases to those letters.  Searching from a "\n" lets the regex engine
# skip ahead to each line start at C speed.  Group 2 tells a User-agent
# line followed by a rule.
_AGENT_LINE = r"([ \t\v\f]*+user[^\n]*+)(?=(?-i:(" + _SURE + "))|)"
_AGENT_LINES = re.compile(r"(?i)\n" + _AGENT_LINE).finditer
# The first line has no "\n" before it (adding one would copy the text).
_FIRST_AGENT_LINE = re.compile(r"(?i)" + _AGENT_LINE).match
_FIRST_AGENT_LINE_STARTS = frozenset(" \t\v\fuU")
_RULE_LINES = re.compile(r"(?i)\n([ \t\v\f]*+(?:al|di)[^\n]*+)").finditer
# How nearly every rule line starts: what follows it in a group is a
# Disallow pattern (and, if another line follows, that line).
_DISALLOW = "\nDisallow: "
# And how nearly every other rule line starts.
_ALLOW_KEY = "Allow: "
# Lines of a group that apply which no longer matter: its User-agent lines
# are known already.
_SKIP_IN_GROUP = _IRRELEVANT_START | frozenset("uU")
# Whether a line after the first may be a rule, a Crawl-delay or a
# Content-Signal line.
_RELEVANT = re.compile(r"\n[ \t\v\f]*+[aAdDcC]").search

# User-agent lines as written -> the token they name, or None for a line
# that is no User-agent line; per profile.  The same few lines come back
# again and again.
_AGENT_LINE_TOKENS: dict[Profile, dict[str, str | None]] = {
    profile: {} for profile in PROFILES
}
_AGENT_LINE_TOKENS_SIZE = 4096
_AGENT_LINE_CHARS = 200
# Told apart from any token by identity: no token holds a NUL.
_MISSING = "\0"


def scan_for(text: str, profile: Profile, token: str) -> AgentRules:
    """The rules for the agent of product ``token`` (see
    :data:`~scrapy_rfc9309.parse.AgentRules`) of ``text`` as
    :func:`~scrapy_rfc9309.parse.body_text` gives it."""
    if "\r" in text and (_LONE_CR(text) or text.endswith("\r")):
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Otherwise a CR can stay before its LF: every value is stripped of it,
    # and a line of it alone is blank, as lines_of() reads lines.  A NUL
    # is cut from the lines read only.
    matches: Iterator[re.Match[str]] = _AGENT_LINES(text)
    if text[:1] in _FIRST_AGENT_LINE_STARTS:
        first = _FIRST_AGENT_LINE(text)
        if first is not None:
            matches = chain((first,), matches)
    tokens = _AGENT_LINE_TOKENS[profile]
    # Where each group starts; where the last User-agent line ends, and
    # whether a rule surely follows it: a rule before the next one ends the
    # group (RFC 9309 section 2.2.4).
    starts: list[int] = []
    # The groups naming the token, and those naming "*", by number; each
    # once (the last number is the group being read).
    named: list[int] = []
    starred: list[int] = []
    end = -1
    ruled = False
    # Hot loop, written for speed: a cache lookup per User-agent line, and
    # seldom a regex search for a rule between two of them.
    for match in matches:
        agent = tokens.get(match[1], _MISSING)
        if agent is _MISSING:
            agent = _agent_of(match[1], profile)
        if agent is None:
            continue
        start, stop = match.span(1)
        if end < 0 or (
            end + 1 < start
            and (
                ruled
                or _SURE_RULE(text, end, start)
                or _has_rule(text, end, start, profile)
            )
        ):
            starts.append(start)
        if agent == token:
            if not named or named[-1] != len(starts) - 1:
                named.append(len(starts) - 1)
        elif agent == "*" and (not starred or starred[-1] != len(starts) - 1):
            starred.append(len(starts) - 1)
        end = stop
        ruled = match.lastindex == 2
    # The groups naming the token if any, else those naming "*" (RFC 9309
    # section 2.2.1).
    chosen = named if token and named else starred
    patterns: list[str] = []
    metas: list[int] = []
    delays: list[float] = []
    signals: dict[str, bool | str] = {}
    starts.append(len(text))
    position, number = 0, 1
    for index in chosen:
        start = starts[index]
        number += text.count("\n", position, start)
        position = start
        group_signals: dict[str, bool | str] = {}
        delay = _read_group(
            text[start : starts[index + 1]],
            number,
            profile,
            patterns,
            metas,
            group_signals,
        )
        if delay is not None:
            delays.append(delay)
        if group_signals:
            merge_signals(signals, group_signals)
    return patterns, metas, max(delays) if delays else None, signals


def _key_value(line: str, profile: Profile) -> tuple[int, str] | None:
    """A line's kind and value (not stripped) as read() reads them, or
    ``None`` for a line that says nothing."""
    if "\0" in line:
        line = line[: line.index("\0")]
    if len(line) > _SAFE_CHARS:
        line = cap_line(line)
    if "#" in line:
        line = line[: line.index("#")]
    return kind_and_value(line, _KIND_CACHE[profile], profile)


def _agent_of(line: str, profile: Profile) -> str | None:
    """The token a User-agent line names, ``None`` for another line; kept
    in the cache (which the caller looked in first)."""
    tokens = _AGENT_LINE_TOKENS[profile]
    key_value = _key_value(line, profile)
    agent = None
    if key_value is not None and key_value[0] == _USER_AGENT:
        agent = agent_token(key_value[1].strip(_WHITESPACE))
    if len(tokens) < _AGENT_LINE_TOKENS_SIZE and len(line) <= _AGENT_LINE_CHARS:
        tokens[line] = agent
    return agent


def _has_rule(text: str, start: int, end: int, profile: Profile) -> bool:
    """Whether an Allow or Disallow line, spelt as it may be, lies between
    ``start`` (a "\\n") and ``end``."""
    for match in _RULE_LINES(text, start, end):
        key_value = _key_value(match[1], profile)
        if key_value is not None and key_value[0] <= _ALLOW:
            return True
    return False


def _read_group(
    chunk: str,
    number: int,
    profile: Profile,
    patterns: list[str],
    metas: list[int],
    signals: dict[str, bool | str],
) -> float | None:
    """Add the rules of the group in ``chunk`` (its lines, the first of them
    numbered ``number``) to ``patterns`` and ``metas``, and its
    Content-Signal values to ``signals``; its Crawl-delay."""
    if "\0" in chunk:
        chunk = _AFTER_NUL.sub("", chunk)
    if "#" in chunk:
        # Cutting each line at "#" first reads the same: the comment goes
        # whatever the line cap leaves of it.
        chunk = _COMMENTS.sub("", chunk)
    pieces = chunk.split(_DISALLOW)
    # The line of a piece is "Disallow: " longer; no line of an ASCII text
    # has more octets than characters.
    longest = MAX_LINE_BYTES if chunk.isascii() else _SAFE_CHARS
    if len(chunk) > longest and max(map(len, pieces)) >= longest - len(_DISALLOW):
        lines = chunk.split("\n")
        if max(map(len, lines)) > longest:
            # A line over the cap: read them all, capped as lines_of() does.
            lines = [cap_line(line) for line in lines]
            return _read_lines(lines, number, profile, patterns, metas, None, signals)
    # The first piece holds the User-agent lines, each other piece starts
    # with the pattern of a "Disallow: " line, and any line after it in the
    # same piece is of another kind: read as lines, if any may matter.
    head = pieces[0]
    delay = None
    if "\n" in head and _RELEVANT(head):
        delay = _read_lines(
            head.split("\n"), number, profile, patterns, metas, delay, signals
        )
    meta = number + head.count("\n") << 1
    whitespace = _WHITESPACE
    add_pattern = patterns.append
    add_meta = metas.append
    # Hot loop, written for speed: a piece is nearly always one line.
    for piece in pieces[1:]:
        meta += 2
        if "\n" not in piece:
            pattern = piece.strip(whitespace)
            if pattern:
                add_pattern(pattern)
                add_meta(meta)
            continue
        # The pattern, then lines of other kinds.
        line, _, rest = piece.partition("\n")
        pattern = line.strip(whitespace)
        if pattern:
            add_pattern(pattern)
            add_meta(meta)
        if rest and _RELEVANT(piece, len(line)):
            delay = _read_lines(
                rest.split("\n"),
                (meta >> 1) + 1,
                profile,
                patterns,
                metas,
                delay,
                signals,
            )
        meta += rest.count("\n") + 1 << 1
    return delay


def _read_lines(
    lines: list[str],
    number: int,
    profile: Profile,
    patterns: list[str],
    metas: list[int],
    delay: float | None,
    signals: dict[str, bool | str],
) -> float | None:
    """Read ``lines`` of a group that applies (numbered from ``number``;
    without NULs and comments, within the line cap) as read() does:
    rules into ``patterns`` and ``metas``, Content-Signal values into
    ``signals``; the group's Crawl-delay, ``delay`` if set."""
    skip = _SKIP_IN_GROUP
    kinds = _KIND_CACHE[profile]
    # Lines that cannot matter are told by their first character, as in
    # scan_for(); the others are few.
    for line_number, line in enumerate(lines, number):
        if line[:1] in skip:
            continue
        if line.startswith(_ALLOW_KEY):
            # The usual spelling of most of the lines read here.
            value = line[len(_ALLOW_KEY) :].strip(_WHITESPACE)
            if value:
                patterns.append(value)
                metas.append(line_number << 1 | _ALLOW)
            continue
        kind_value = kind_and_value(line, kinds, profile)
        if kind_value is None:
            continue
        kind, value = kind_value
        if kind <= _ALLOW:
            value = value.strip(_WHITESPACE)
            if value:
                patterns.append(value)
                metas.append(line_number << 1 | kind)
        elif kind == _CRAWL_DELAY:
            if delay is None:
                delay = parse_crawl_delay(value.strip(_WHITESPACE))
        elif kind == _CONTENT_SIGNAL:
            merge_signals(signals, parse_content_signal(value.strip(_WHITESPACE))[0])
    return delay
