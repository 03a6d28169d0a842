"""The reader: robots.txt text -> lines -> groups (RFC 9309 sections 2.1-2.2).

Byte preparation (:func:`body_text`: the byte limit, the byte-order mark,
invalid UTF-8), the key tables of each profile, the value parsers and the
tokenizer (:func:`read_chunk`), which reads lines into the model of
:mod:`scrapy_rfc9309.parse`: a whole document (:func:`read_document`), or
only the groups for one agent (:func:`rules_for`).  Pure: no Scrapy, no
Twisted, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from itertools import compress

from ._agents import WHITESPACE, agent_token, merge_signals
from ._caches import BoundedCache
from ._model import Group, Profile, Record, Rule, UsageRule
from .profiles import PROFILES, RULES

#: Google's ``kMaxLineLen`` (2083 * 8) less its terminating NUL: the octets
#: of a line kept; the rest of a longer line is ignored.
MAX_LINE_BYTES = 2083 * 8 - 1


def usage_rule(value: str, line: int) -> UsageRule:
    """The :class:`UsageRule` of a ``Content-Usage`` value (stripped): a
    value starting with ``/`` gives a path up to the first space or tab,
    any other value is all preference (attach-05 section 3.2)."""
    if value[:1] != "/":
        return UsageRule("", value, line)
    end = len(value)
    for blank in " \t":
        found = value.find(blank)
        if 0 <= found < end:
            end = found
    # The ABNF's 1*WS between them is no part of the Dictionary (a strict
    # RFC 9651 parser rejects a leading tab).
    return UsageRule(value[:end], value[end:].lstrip(" \t"), line)


# Kinds of line; Disallow and Allow first, so that "kind <= _ALLOW" tells
# a rule and "kind == _ALLOW" its verdict.
_DISALLOW, _ALLOW, _USER_AGENT, _SITEMAP, _CRAWL_DELAY, _CONTENT_SIGNAL = range(6)
_NO_KEY, _RECORD = 6, 7
# A Content-Usage line: a rule of the group (attach-05 section 3), which
# ends it as Allow and Disallow do unless the profile says otherwise.
_CONTENT_USAGE = 8
# What the keys of a profile's table (scrapy_rfc9309.profiles) are read as.
_KIND_OF_KEY = {
    "user-agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "sitemap": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "content-signal": _CONTENT_SIGNAL,
    "content-usage": _CONTENT_USAGE,
}
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


_UTF8_BOM = b"\xef\xbb\xbf"
_WHITESPACE = WHITESPACE
# Google accepts a missing colon only between exactly two tokens.
_TWO_TOKENS = re.compile(r"([^ \t]+)[ \t]+([^ \t]+)").fullmatch
# No line of a shorter text can exceed the cap, whatever its characters.
_SAFE_CHARS = MAX_LINE_BYTES // 4


def body_text(source: str | bytes, max_bytes: int) -> str:
    """A robots.txt body as text, as Google's parser reads it.

    Cut at ``max_bytes`` octets on the last whole line, a (possibly
    truncated) UTF-8 byte-order mark skipped, invalid UTF-8 kept as
    surrogate escapes (see :func:`encode`).
    """
    if isinstance(source, str) and len(source) <= max_bytes and source.isascii():
        return source
    data = encode(source) if isinstance(source, str) else bytes(source)
    if len(data) > max_bytes:
        data = cut(data, max_bytes)
    skip = 0
    if data[:1] == b"\xef":
        while skip < 3 and data[skip : skip + 1] == _UTF8_BOM[skip : skip + 1]:
            skip += 1
    return data[skip:].decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """``text`` as UTF-8, surrogate escapes (invalid UTF-8 read with
    ``surrogateescape``) back to their octets; never raises."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def cut(data: bytes, max_bytes: int) -> bytes:
    """``data`` cut to at most ``max_bytes``, on the last whole line."""
    if len(data) <= max_bytes:
        return data
    if data[max_bytes : max_bytes + 1] in (b"\n", b"\r"):
        return data[:max_bytes]
    end = max(data.rfind(b"\n", 0, max_bytes), data.rfind(b"\r", 0, max_bytes))
    return data[: end + 1]


def cap_line(line: str) -> str:
    """``line`` cut to :data:`MAX_LINE_BYTES` octets of UTF-8."""
    if len(line) <= _SAFE_CHARS:
        return line
    data = encode(line)
    if len(data) <= MAX_LINE_BYTES:
        return line
    return data[:MAX_LINE_BYTES].decode("utf-8", "surrogateescape")


def parse_crawl_delay(value: str) -> float | None:
    """A Crawl-delay value in seconds; ``None`` unless finite and >= 0."""
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


def parse_content_signal(value: str) -> tuple[dict[str, bool | str], list[str]]:
    """``search=yes, ai-train=no`` as ``{"search": True, "ai-train": False}``.

    Keys lower-cased, ``yes``/``no`` as booleans, any other value kept as
    text.  Also returns the parts that are not ``key=value`` (ignored).
    """
    signals: dict[str, bool | str] = {}
    invalid: list[str] = []
    for part in value.split(","):
        key, equals, text = part.partition("=")
        key = key.strip().lower()
        if not equals or not key:
            if part.strip():
                invalid.append(part.strip())
            continue
        text = text.strip()
        lowered = text.lower()
        signal: bool | str = (
            True if lowered == "yes" else False if lowered == "no" else text
        )
        merge_signals(signals, {key: signal})
    return signals, invalid


# What each kind of key is called: a key read as one of them but written
# otherwise is a misspelling (lint reports it).
_CANONICAL = {
    _USER_AGENT: "user-agent",
    _ALLOW: "allow",
    _DISALLOW: "disallow",
    _SITEMAP: "sitemap",
    _CRAWL_DELAY: "crawl-delay",
    _CONTENT_SIGNAL: "content-signal",
    _CONTENT_USAGE: "content-usage",
}
# Keys as written -> their kind, per profile: robots.txt files use a
# handful of spellings, so this skips strip(), lower() and the lookups for
# nearly every line.
_KIND_CACHE: dict[str, BoundedCache[str, int]] = {
    p: BoundedCache(f"parse.kinds.{p}", 512 << 10, 128) for p in PROFILES
}

#: Called by the reader for what :func:`~scrapy_rfc9309.lint.lint` reports:
#: ``(line, event, detail)``.
Reporter = Callable[[int, str, str], None]

_new = tuple.__new__
_set = object.__setattr__
_object_new = object.__new__

# Lines without a colon as written -> what they say, (key, value) or None:
# the same few lines (blank ones, HTML tags) come back again and again.
# Longer lines (junk, mostly) are not worth keeping.
_NO_COLON: BoundedCache[str, tuple[str, str] | None] = BoundedCache(
    "parse.no_colon", 512 << 10, 100
)
# Told apart by identity: no line reads as it.
_UNKNOWN = ("", "")
# Profile hook: Yandex and Bing need the colon.
_COLON_NEEDED = {profile: not rules.missing_colon for profile, rules in RULES.items()}

# The reader: read_chunk() reads lines (which end at CR, LF and CRLF; a NUL
# ends a line's content, a "#" starts a comment and a line keeps
# MAX_LINE_BYTES octets) into groups.  A whole Document is the whole text
# read (read_document), lint the same with a reporter; the rules for one
# agent are the groups that apply read (rules_for), which regular
# expressions find without reading the others.

# A CR not before a LF ends a line as well (this finds all but one at the
# end of the text, quicker than a lookahead).
_LONE_CR = re.compile(r"\r[^\n]").search
# The rest of a line from a "#", and from a NUL (a literal first is what
# the regex engine searches quickest).
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
# Google's prefix keys included) starts with "user" in some case, and that
# of every Allow or Disallow line with "al" or "di": no other character
# lower-cases to those letters.  Searching from a "\n" lets the regex engine
# skip ahead to each line start at C speed.  Group 2 tells a User-agent
# line followed by a rule.
_AGENT_LINE = r"([ \t\v\f]*user[^\n]*)(?=(?-i:(" + _SURE + "))|)"
# Searched for one after another: a finditer() call can leave a small
# allocation of CPython's behind (its attribute cache keeping a name it
# made), which the memory store's tests would count as held.
_AGENT_LINE_AFTER = re.compile(r"(?i)\n" + _AGENT_LINE).search
# The first line has no "\n" before it (adding one would copy the text).
_FIRST_AGENT_LINE = re.compile(r"(?i)" + _AGENT_LINE).match
_RULE_LINES = re.compile(r"(?i)\n([ \t\v\f]*(?:al|di)[^\n]*)").finditer
# The same with Content-Usage lines (every spelling starts with "co").
_USAGE_RULE_LINES = re.compile(r"(?i)\n([ \t\v\f]*(?:al|di|co)[^\n]*)").finditer
# Per profile: which of the two finds the lines that end a group.
_ENDING_LINES = {
    profile: _USAGE_RULE_LINES if rules.usage_ends_group else _RULE_LINES
    for profile, rules in RULES.items()
}
# How nearly every rule line starts: what follows it is a Disallow pattern
# (and, if another line follows, that line).
_DISALLOW_LINE = "\nDisallow: "
# Reading the rules of one agent, only a rule, Crawl-delay, Content-Signal
# or Content-Usage line matters, whose key (or a misspelling of it, in
# every profile) starts with "a", "d" or "c" in either case, after any
# whitespace: whether a piece of text may hold one after its first line
# (the first line of a group read is a User-agent line).
_RELEVANT = re.compile(r"\n[ \t\v\f]*[aAdDcC]").search
# And whether a line may be one (the others are passed over at C speed).
_MATTERS = re.compile(r"[ \t\v\f]*[aAdDcC]").match
# User-agent lines as written -> the token they name, or None for a line
# that is no User-agent line; per profile.  The same few lines come back
# again and again.
_AGENT_LINE_TOKENS: dict[Profile, BoundedCache[str, str | None]] = {
    p: BoundedCache(f"parse.agent_lines.{p}", 1 << 20, 200) for p in PROFILES
}
# Told apart from any token by identity: no token holds a NUL.
_MISSING = "\0"

#: What matching for one agent needs from a robots.txt: the patterns (none
#: empty) of the rules of the groups that apply to it (merged, as
#: :func:`applicable_groups` and :func:`merge_groups` give them), in file
#: order, their ``line << 1 | allow``, the Crawl-delay, the
#: Content-Signal values and the Content-Usage rules (in file order).
AgentRules = tuple[
    list[str], list[int], float | None, dict[str, bool | str], list[UsageRule]
]


def _line_ends(text: str) -> str:
    """``text`` with every line ended by a LF; a CR may stay before it,
    which saves a copy: every value is stripped of it, and a line of it
    alone is blank."""
    if "\r" in text and (_LONE_CR(text) or text.endswith("\r")):
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _agent_of(line: str, profile: Profile) -> str | None:
    """The token a User-agent line names, ``None`` for another line; kept
    in the cache (which the caller looked in first)."""
    key, colon, value = line.partition(":")
    if (
        colon
        and _KIND_CACHE[profile].data.get(key) == _USER_AGENT
        and "#" not in value
        and "\0" not in value
        and len(line) <= _SAFE_CHARS
    ):
        # How read_chunk() reads the usual ones, without its setting up.
        agent: str | None = agent_token(value.strip(_WHITESPACE))
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


def _read_alone(text: str, profile: Profile) -> Group:
    """The lines of ``text`` read by :func:`read_chunk` as one group."""
    reading = _Reading(line=1)
    read_chunk(text, 1, profile, reading)
    assert reading.groups
    return reading.groups[0]


# Reading the rules of one agent, no line starts a group.
_NO_STARTS: frozenset[int] = frozenset()


class _Reading:
    """What :func:`read_chunk` reads into: the groups (reading the rules of
    ``one_agent``, groups are not told apart: ``None``), the sitemaps and
    other records, and the numbers of the User-agent lines that start a
    group (see :func:`group_starts`; for one agent, none).  Reading the
    rules of one agent, a chunk at a time: the first line of its group, the
    patterns of its rules and their ``line << 1 | allow``, its Crawl-delay
    (the first valid one), and the Content-Signal values and Content-Usage
    rules of the groups read."""

    __slots__ = (
        "delay",
        "groups",
        "line",
        "metas",
        "patterns",
        "records",
        "signals",
        "sitemaps",
        "starts",
        "usage",
    )

    def __init__(self, one_agent: bool = False, line: int = 0) -> None:
        self.groups: list[Group] | None = None if one_agent else []
        self.patterns: list[str] = []
        self.metas: list[int] = []
        self.sitemaps: dict[str, None] = {}
        self.records: list[Record] = []
        self.delay: float | None = None
        self.signals: dict[str, bool | str] = {}
        self.usage: list[UsageRule] = []
        self.line = line
        self.starts: AbstractSet[int] = _NO_STARTS


def _group(
    agents: list[str],
    rules: list[Rule],
    delay: float | None,
    signals: dict[str, bool | str],
    line: int,
    usage: list[UsageRule],
) -> Group:
    # Group(...) without its dataclass __init__ (six object.__setattr__
    # calls), which costs four times as much: parse() makes thousands.
    group = _object_new(Group)
    fields = group.__dict__
    fields["user_agents"] = tuple(agents)
    fields["rules"] = tuple(rules)
    fields["crawl_delay"] = delay
    fields["content_signals"] = signals
    fields["line"] = line
    fields["content_usage"] = tuple(usage)
    return group


def read_document(
    text: str, profile: Profile, report: Reporter | None = None
) -> tuple[tuple[Group, ...], tuple[str, ...], tuple[Record, ...]]:
    """The groups, sitemaps and records of ``text`` (as :func:`body_text`
    gives it).  ``report``, if given, hears about every user-agent and
    sitemap line and every line read leniently or ignored (what
    :func:`~scrapy_rfc9309.lint.lint` reports)."""
    text = _line_ends(text)
    reading = _Reading()
    # The whole text in one read, told which User-agent lines start a
    # group (one call: a call per group would cost more than reading most
    # groups).
    reading.starts = set(group_starts(text, profile)[1])
    read_chunk(text, 1, profile, reading, report)
    assert reading.groups is not None
    return tuple(reading.groups), tuple(reading.sitemaps), tuple(reading.records)


def group_starts(
    text: str, profile: Profile, token: str = ""
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Where the groups of ``text`` (its line ends as :func:`_line_ends`
    leaves them) start, the User-agent lines that start them (by number
    among the User-agent lines, from 0), and the groups naming ``token``
    and those naming ``*``, by number, each once: the one place that
    decides where a group starts.  A User-agent line starts one unless the
    group being read has no rule yet (RFC 9309 section 2.2.4).

    Regular expressions over the whole text find the lines that may be
    User-agent lines (each read by :func:`read_chunk`, or a cache of what
    it read) and, between two of them, whether a rule ends the group.
    """
    match = _FIRST_AGENT_LINE(text) if text[:1] in " \t\v\fuU" else None
    if match is None:
        match = _AGENT_LINE_AFTER(text)
    tokens = _AGENT_LINE_TOKENS[profile].data
    starts: list[int] = []
    openers: list[int] = []
    named: list[int] = []
    starred: list[int] = []
    # The number of the User-agent line, from 0.
    ordinal = 0
    # Where the last User-agent line ends, and whether a rule surely follows
    # it: a rule before the next one ends the group.
    end = -1
    ruled = False
    # Hot loop, written for speed: a cache lookup per User-agent line, and
    # seldom a regex search for a rule between two of them.
    while match is not None:
        start, stop = match.span(1)
        agent = tokens.get(match[1], _MISSING)
        if agent is _MISSING:
            agent = _agent_of(match[1], profile)
        if agent is None:
            match = _AGENT_LINE_AFTER(text, stop)
            continue
        if (
            end < 0
            or (
                end + 1 < start
                # Seldom searched: most User-agent lines are followed by
                # another or by a rule.  The gap is cut out so that what is
                # read is plainly linear in the text.
                and (ruled or _has_rule(text[end:start], profile))
            )
        ):
            starts.append(start)
            openers.append(ordinal)
        ordinal += 1
        if agent == token:
            if not named or named[-1] != len(starts) - 1:
                named.append(len(starts) - 1)
        elif agent == "*" and (not starred or starred[-1] != len(starts) - 1):
            starred.append(len(starts) - 1)
        end = stop
        ruled = match.lastindex == 2
        match = _AGENT_LINE_AFTER(text, stop)
    return starts, openers, named, starred


def rules_for(text: str, profile: Profile, token: str) -> AgentRules:
    """The rules for the agent of product ``token`` of ``text`` (as
    :func:`body_text` gives it): those of the groups naming the token if
    any, else of those naming ``*`` (RFC 9309 section 2.2.1), merged.

    Only those groups are read: :func:`group_starts` tells where they are.
    """
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
    report: Reporter | None = None,
) -> None:
    """Read the lines of ``chunk`` (its line ends as :func:`_line_ends`
    leaves them, its first line numbered ``number``) into ``reading``,
    telling ``report`` about them.

    The text is cut at each ``\\nDisallow: `` first, so that most rule
    lines cost a strip and two appends; the other lines are read one by
    one.  A User-agent line starts a group if its number (among the
    User-agent lines of ``chunk``, from 0) is in ``reading.starts`` (see
    :func:`group_starts`).
    """
    # Each line cut at a "#" (a comment) and at a NUL (which ends its
    # content), before the cap: the rest goes whatever the cap leaves of it.
    if "#" in chunk:
        chunk = _COMMENT("", chunk)
    if "\0" in chunk:
        chunk = _AFTER_NUL("", chunk)
    # The first piece is read line by line; each other piece starts with
    # the pattern of a "Disallow: " line, and any line after it in the same
    # piece is of another kind.  Rules read before the first group are
    # dropped when it starts (reported: line by line).
    pieces = chunk.split(_DISALLOW_LINE) if report is None else [chunk]
    # No line of a text this short in characters can be over the cap, nor
    # one of more characters if it is ASCII; a piece's line is "Disallow: "
    # longer.
    if len(chunk) > _SAFE_CHARS:
        longest = MAX_LINE_BYTES if chunk.isascii() else _SAFE_CHARS
        if len(chunk) > longest and max(map(len, pieces)) >= longest - 11:
            lines = chunk.split("\n")
            if max(map(len, lines)) > longest:
                chunk = "\n".join(map(cap_line, lines))
                pieces = chunk.split(_DISALLOW_LINE) if report is None else [chunk]
    groups = reading.groups
    one_agent = groups is None
    # The User-agent lines read, by number from 0: reading.starts holds
    # those that start a group.
    starts = reading.starts
    agent_number = -1
    # Reading the rules of one agent: a piece whose lines cannot matter is
    # not split into lines.
    relevant = _RELEVANT if one_agent else None
    sitemaps = reading.sitemaps
    add_record = reading.records.append
    # The group being read (reading the rules of one agent, the group whose
    # first line is reading.line).
    first = reading.line
    agents: list[str] = []
    rules: list[Rule] = []
    add_rule = rules.append
    patterns = reading.patterns
    metas = reading.metas
    delay = reading.delay
    signals = reading.signals
    usage = reading.usage
    add_pattern = patterns.append
    add_meta = metas.append
    kinds = _KIND_CACHE[profile].data
    no_colon = _NO_COLON.data
    colon_needed = _COLON_NEEDED[profile]
    whitespace = _WHITESPACE
    # The head (before the first "Disallow: " line) is read line by line,
    # unless nothing in it can matter; then the other pieces, each the
    # pattern of a "Disallow: " line and, if other lines follow it, those
    # lines, read line by line.
    pieces_left = iter(pieces)
    head = next(pieces_left)
    if relevant is not None and ("\n" not in head or not relevant(head)):
        number += head.count("\n")
        lines = []
    else:
        lines = head.split("\n")
        number -= 1
    # Hot loops, written for speed: a piece is nearly always one line, and
    # the branches go in the order of how common they are, reporting only
    # where there is something to report.  ``number`` is that of the line
    # before ``lines``.
    while True:
        numbered: Iterable[tuple[int, str]] = enumerate(lines, number + 1)
        if one_agent:
            numbered = compress(numbered, map(_MATTERS, lines))
        for line_number, line in numbered:
            key, colon, value = line.partition(":")
            if colon:
                value = value.strip(whitespace)
            elif not line:
                continue
            else:
                # Google's GetKeyAndValueFrom when a line has no colon:
                # whitespace may stand for it between exactly two tokens.
                found = no_colon.get(line, _UNKNOWN)
                if found is _UNKNOWN:
                    found = _without_colon(line)
                if found is None:
                    if report is not None and line.strip(whitespace):
                        report(line_number, "unparsable-line", line.strip(whitespace))
                    continue
                if colon_needed:
                    if report is not None:
                        report(line_number, "missing-colon-ignored", found[0])
                    continue
                key, value = found
            kind = kinds.get(key)
            if kind is None:
                kind = _kind(key, profile)
            if report is not None:
                _report_key(report, line_number, colon, kind, key)
            if kind <= _ALLOW:
                if not first:
                    if report is not None:
                        report(line_number, "rule-outside-group", value)
                elif one_agent:
                    if value:
                        add_pattern(value)
                        add_meta(line_number << 1 | kind)
                else:
                    add_rule(_new(Rule, (kind == _ALLOW, value, line_number)))
            elif kind == _USER_AGENT:
                agent_number += 1
                if agent_number in starts:
                    # A new group (group_starts() says where): the one being
                    # read (if any) is done.
                    if first and groups is not None:
                        groups.append(
                            _group(agents, rules, delay, signals, first, usage)
                        )
                    agents, rules, usage = [], [], []
                    delay, signals, first = None, {}, line_number
                    add_rule = rules.append
                agents.append(value)
                if report is not None:
                    report(line_number, "user-agent", value)
            elif kind == _RECORD:
                name = key.strip(whitespace).lower()
                add_record(_new(Record, (name, value, line_number)))
                if report is not None:
                    report(line_number, "record", name)
            elif kind == _SITEMAP:
                if value:
                    sitemaps[value] = None
                if report is not None:
                    report(line_number, "sitemap", value)
            elif kind == _NO_KEY:
                if report is not None:
                    report(line_number, "unparsable-line", line.strip(whitespace))
            elif not first:
                if report is not None:
                    name = key.strip(whitespace).lower()
                    report(line_number, "directive-outside-group", name)
            elif kind == _CRAWL_DELAY:
                seconds = parse_crawl_delay(value)
                if report is not None:
                    event = (
                        "invalid-crawl-delay"
                        if seconds is None
                        else "duplicate-crawl-delay"
                        if delay is not None
                        else "crawl-delay"
                    )
                    report(line_number, event, value)
                if delay is None:
                    delay = seconds
            elif kind == _CONTENT_USAGE:
                usage.append(usage_rule(value, line_number))
                if report is not None:
                    report(line_number, "content-usage", value)
            else:
                merge_signals(signals, parse_content_signal(value)[0])
                if report is not None:
                    report(line_number, "content-signal", value)
        # The pieces, counted in metas: ``line << 1`` of a "Disallow: " line.
        meta = number + len(lines) << 1
        for piece in pieces_left:
            meta += 2
            if "\n" not in piece:
                if one_agent:
                    # For one agent, an empty pattern (which matches
                    # nothing) is left out.
                    pattern = piece.strip(whitespace)
                    if pattern:
                        add_pattern(pattern)
                        add_meta(meta)
                else:
                    add_rule(_new(Rule, (False, piece.strip(whitespace), meta >> 1)))
                continue
            # The pattern's line, then the others.
            after = piece.index("\n")
            pattern = piece[:after].strip(whitespace)
            if not one_agent:
                add_rule(_new(Rule, (False, pattern, meta >> 1)))
            elif pattern:
                add_pattern(pattern)
                add_meta(meta)
            if after + 1 == len(piece) or (
                relevant is not None and not relevant(piece, after)
            ):
                # Nothing after the pattern's line, or nothing that matters.
                meta += piece.count("\n") << 1
                continue
            lines = piece[after + 1 :].split("\n")
            number = meta >> 1
            break
        else:
            break
    reading.delay = delay
    if first and groups is not None:
        groups.append(_group(agents, rules, delay, signals, first, usage))


def _report_key(report: Reporter, number: int, colon: str, kind: int, key: str) -> None:
    """Report a key read leniently: without a colon, or misspelt."""
    if not colon and kind != _RECORD:
        report(number, "missing-colon", key)
    name = key.strip(_WHITESPACE).lower()
    canonical = _CANONICAL.get(kind)
    if canonical not in (None, name):
        report(number, "typo-accepted", f"{name}\0{canonical}")


def _without_colon(line: str) -> tuple[str, str] | None:
    """``(key, value)`` of a line without a colon, or ``None``; kept in the
    cache."""
    stripped = line.strip(_WHITESPACE)
    # One token (most junk: "}", "</div>") needs no regex to tell.
    two = _TWO_TOKENS(stripped) if " " in stripped or "\t" in stripped else None
    found = None if two is None else (two[1], two[2].strip(_WHITESPACE))
    if not _NO_COLON.full:
        _NO_COLON.put(line, found)
    return found


def _kind(key: str, profile: Profile) -> int:
    """What ``key`` (as written) is in ``profile``; kept in the cache."""
    name = key.strip(_WHITESPACE).lower()
    found = key_kind(name, profile) if name else _NO_KEY
    kind = _RECORD if found is None else found
    kinds = _KIND_CACHE[profile]
    if not kinds.full:
        kinds.put(key, kind)
    return kind


def oversize_allows_all(source: str | bytes, max_bytes: int, profile: Profile) -> bool:
    """Whether ``profile`` reads ``source`` as allowing everything because
    it is over ``max_bytes`` octets (its status policy's ``oversize``)."""
    if RULES[profile].status["oversize"] == "parsed":
        return False
    if isinstance(source, str):
        size = len(source) if source.isascii() else len(encode(source))
    else:
        size = len(source)
    return size > max_bytes
