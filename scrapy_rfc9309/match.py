"""Deciding whether a URL may be crawled (RFC 9309 section 2.2.2).

:func:`compile` turns the groups of a :class:`~scrapy_rfc9309.parse.Document`
that apply to one agent into a :class:`Matcher`; :func:`explain`,
:func:`is_allowed`, :func:`crawl_delay` and :func:`content_signals` are the
one-off forms.  Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import contextlib
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Literal, NamedTuple

from .parse import (
    GOOGLE,
    Document,
    Group,
    Profile,
    Rule,
    applicable_groups,
    merge_groups,
    product_token,
)
from .urls import escape_pattern, normalize_path, normalize_pattern, request_path

__all__ = [
    "Decision",
    "Matcher",
    "Reason",
    "compile",
    "content_signals",
    "crawl_delay",
    "explain",
    "is_allowed",
    "product_token",
]

Reason = Literal["rule_allow", "rule_disallow", "default_allow", "robots_txt"]


class Decision(NamedTuple):
    """Whether a URL may be crawled, why (``reason``), and the deciding
    :class:`~scrapy_rfc9309.parse.Rule` (with its line), if a rule decided."""

    allowed: bool
    reason: str
    rule: Rule | None


DEFAULT_ALLOW = Decision(True, "default_allow", None)
ROBOTS_TXT = Decision(True, "robots_txt", None)
_NO_RULE = -1
_ROBOTS_TXT = -2

# A URL whose path needs neither the slow path extraction nor (for the
# rfc9309 profile) percent-encoding normalisation: a scheme and authority,
# or none, then a path without fragment.  Anything else takes the exact,
# slower route through request_path(); a leading "//" is an authority.
_AUTHORITY = r"(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?;#]*|(?!//))"
_PLAIN_PATH = re.compile(_AUTHORITY + r"(/[^#]*)").fullmatch
# /robots.txt itself takes the slow route too (it is always allowed there).
_NORMAL_PATH = re.compile(
    _AUTHORITY + r'(?!/robots\.txt(?:\?|\Z))(/[!"&-)+-~]*)'
).fullmatch
# A pattern of printable ASCII without "%", "*" or "$": a plain prefix that
# reads the same in both profiles.
_SPECIAL = re.compile(r"[^!-#&-)+-~]").search
# The same over patterns joined by newlines: the first one that is not such
# a prefix, and each of them (the rest of its line).
_SPECIAL_LINES = re.compile(r"[^\n!-#&-)+-~]").search
_SPECIAL_REST = re.compile(r"[^\n!-#&-)+-~][^\n]*")

# How a pattern with "*" or "$" (or percent-encoding to normalise)
# matches; a plain prefix needs nothing more than its own string.
_PREFIX, _EXACT, _CONTAINS, _ENDS, _WILDCARD, _WILDCARD_ENDS = range(6)
_Form = tuple[int, str, str, tuple[str, ...]]

# What a matcher looks entries up with (see _tables).
_Tables = tuple[
    int,
    tuple[tuple[str, ...], ...],
    "array[int] | None",
    "dict[str, int] | None",
    tuple[int, ...],
    "tuple[tuple[str, ...], array[int]] | None",
    "tuple[tuple[str, ...], array[int]] | None",
    tuple[tuple[int, _Form], ...],
]
# Plain prefixes are tried _CHUNK at a time; past _CHUNKED_MAX of them, a
# matcher looks them up by the path's prefixes instead.
_CHUNK = 8
_CHUNKED_MAX = 256


def _form(pattern: str) -> _Form:
    """How a normalised ``pattern`` (with ``*`` or ``$``) matches:
    ``(kind, head, last, middle)``, head being the text before its first
    ``*``, last the text after its last one."""
    anchored = pattern.endswith("$")
    # A trailing "*" matches anything, even nothing: "/a*b*" is "/a*b".
    body = pattern[:-1] if anchored else pattern.rstrip("*")
    star = body.find("*")
    if star == -1:
        if len(body) < len(pattern) - anchored:
            # "/a*": the prefix "/a", which ranks as long as "/a*" though, so
            # not with the plain prefixes (looked up by their length).
            return (_CONTAINS, body, "", ())
        return (_EXACT if anchored else _PREFIX, body, "", ())
    if body.find("*", star + 1) == -1:
        # One "*", the usual case.
        return (_ENDS if anchored else _CONTAINS, body[:star], body[star + 1 :], ())
    head, *middle, last = body.split("*")
    middle = [part for part in middle if part]
    if middle:
        return (_WILDCARD_ENDS if anchored else _WILDCARD, head, last, tuple(middle))
    return (_ENDS if anchored else _CONTAINS, head, last, ())


def _wildcard_matches(
    path: str, pos: int, middle: tuple[str, ...], last: str, anchored: bool
) -> bool:
    # Each "*" takes the leftmost occurrence of the literal after it, which
    # leaves the most room for the rest: linear scans, no backtracking.
    find = path.find
    for part in middle:
        pos = find(part, pos)
        if pos == -1:
            return False
        pos += len(part)
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return find(last, pos) != -1


def _with_index_html(
    patterns: list[str],
    sizes: list[int],
    rules: list[Rule],
    forms: dict[int, _Form],
    normalize: Callable[[str], str],
) -> tuple[list[str], list[int], list[Rule], dict[int, _Form]]:
    """The entries with, after each allowed ".../index.htm[l]", one more
    for the rule that allows ".../" (Google)."""
    entries: tuple[list[str], list[int], list[Rule], dict[int, _Form]] = (
        [],
        [],
        [],
        {},
    )
    for position, rule in enumerate(rules):
        form = forms.get(position)
        if form is not None:
            entries[3][len(entries[0])] = form
        entries[0].append(patterns[position])
        entries[1].append(sizes[position])
        entries[2].append(rule)
        pattern = rule.pattern if form is None else normalize(rule.pattern)
        slash = pattern.rfind("/")
        if rule.allow and pattern.startswith("/index.htm", slash):
            entries[3][len(entries[0])] = (_EXACT, pattern[: slash + 1], "", ())
            entries[0].append(rule.pattern)
            entries[1].append(slash + 2)
            entries[2].append(rule)
    return entries


def _tables(patterns: tuple[str, ...], forms: list[_Form | None] | None) -> _Tables:
    """The lookup tables of a matcher's entries (in rank order).

    Plain prefixes (most entries) apart from the others: in chunks that one
    startswith() call rules out at once, or, for the few matchers with very
    many of them, by pattern in a dict probed with the path's own prefixes,
    longest first.  The usual wildcard shapes, "/*text" and "/*text$" (or
    "*text", "*text$"), as texts and their entries' indices; any other as
    (index, form).
    """
    plain_only = forms is None
    if forms is None:
        # Only plain prefixes.
        forms = []
        heads: list[str] = list(patterns)
        where: list[int] = []
    else:
        heads = []
        where = []
    contains: list[tuple[str, int]] = []
    ends: list[tuple[str, int]] = []
    other: list[tuple[int, _Form]] = []
    for index, form in enumerate(forms):
        if form is None:
            heads.append(patterns[index])
            where.append(index)
            continue
        kind, head, last, _ = form
        # Paths start with "/", so "*text" (text not starting with "/")
        # matches where "/*text" does.
        rooted = head == "/" or (not head and last[:1] != "/")
        if kind == _PREFIX:
            heads.append(head)
            where.append(index)
        elif rooted and kind == _CONTAINS:
            contains.append((last, index))
        elif rooted and kind == _ENDS:
            ends.append((last, index))
        else:
            other.append((index, form))
    chunks: tuple[tuple[str, ...], ...] = ()
    lookup: dict[str, int] | None = None
    lengths: tuple[int, ...] = ()
    if plain_only and len(patterns) <= _CHUNK:
        # A handful of plain prefixes: one chunk, the patterns themselves.
        chunks = (patterns,) if patterns else ()
    elif len(heads) <= _CHUNKED_MAX:
        chunks = tuple(
            tuple(heads[start : start + _CHUNK])
            for start in range(0, len(heads), _CHUNK)
        )
    else:
        lookup = {}
        for head, index in zip(heads, where or range(len(heads)), strict=True):
            lookup.setdefault(head, index)
        lengths = tuple(sorted({len(head) for head in lookup}, reverse=True))
    return (
        len(patterns),
        chunks,
        array("i", where) if chunks and where and len(where) < len(patterns) else None,
        lookup,
        lengths,
        _texts(contains),
        _texts(ends),
        tuple(other),
    )


def _texts(pairs: list[tuple[str, int]]) -> tuple[tuple[str, ...], array[int]] | None:
    if not pairs:
        return None
    texts, indices = zip(*pairs, strict=True)
    return texts, array("i", indices)


class Matcher:
    """The rules of one robots.txt for one agent, ready to match URLs.

    Built by :func:`compile`.  ``crawl_delay`` and ``content_signals`` are
    those of the groups that apply to the agent.  Compact: a matcher keeps
    the patterns and a few integers per rule, and makes the
    :class:`Decision` of a rule the first time that rule decides.
    """

    __slots__ = (
        "_decisions",
        "_meta",
        "_normalize",
        "_patterns",
        "_signals",
        "_tables",
        "crawl_delay",
        "profile",
    )

    def __init__(self, document: Document, user_agent: str) -> None:
        # The groups that apply to an agent act as one (RFC 9309 2.2.1).
        groups = applicable_groups(document, product_token(user_agent))
        group = merge_groups(groups) if groups else Group(())
        self.profile: Profile = document.profile
        self.crawl_delay: float | None = group.crawl_delay
        self._signals = tuple(group.content_signals.items())
        self._normalize = document.profile != GOOGLE
        # The decisions made so far, by entry (made when first needed).
        self._decisions: dict[int, Decision] | None = None
        # Priority 0: an empty pattern matches nothing (Google).
        rules = [rule for rule in group.rules if rule[1]]
        patterns = [rule[1] for rule in rules]
        sizes = list(map(len, patterns))
        # The rules whose pattern has a wildcard or needs normalising, found
        # with one regex over all of them (most rules are plain prefixes).
        forms: dict[int, _Form] = {}
        joined = "\n".join(patterns)
        found = _SPECIAL_LINES(joined)
        if found is not None:
            normalize = normalize_pattern if self._normalize else escape_pattern
            starts = [0, *accumulate(size + 1 for size in sizes)]
            for special in _SPECIAL_REST.finditer(joined, found.start()):
                position = bisect_right(starts, special.start()) - 1
                pattern = normalize(patterns[position])
                sizes[position] = len(pattern)
                forms[position] = _form(pattern)
        if "/index.htm" in joined:
            patterns, sizes, rules, forms = _with_index_html(
                patterns,
                sizes,
                rules,
                forms,
                normalize_pattern if self._normalize else escape_pattern,
            )
        # Longest pattern first, Allow first among equals, then file order
        # (the sort is stable, rules are in file order): the first entry in
        # this order that matches decides.
        ranks = [size << 1 | rule[0] for size, rule in zip(sizes, rules, strict=True)]
        order = sorted(range(len(ranks)), key=ranks.__getitem__, reverse=True)
        self._patterns = tuple([patterns[i] for i in order])
        self._meta = array("i", [rules[i][2] << 1 | rules[i][0] for i in order])
        self._tables = _tables(
            self._patterns, [forms.get(i) for i in order] if forms else None
        )

    def _find(self, url: str) -> int:
        """The index of the entry deciding for ``url``, or a negative code."""
        # Hot path, written for speed: one regex for the usual URL shape,
        # one startswith() call per chunk of plain prefixes, a few
        # operations per wildcard pattern, everything in local variables.
        if self._normalize:
            found = _NORMAL_PATH(url)
            if found is None:
                path = normalize_path(request_path(url))
                if path == "/robots.txt" or path.startswith("/robots.txt?"):
                    return _ROBOTS_TXT
            else:
                path = found[1]
        else:
            found = _PLAIN_PATH(url)
            path = request_path(url) if found is None else found[1]
        count, chunks, plain_at, lookup, lengths, contains, ends, special = self._tables
        best = count
        startswith = path.startswith
        if chunks:
            offset = 0
            for chunk in chunks:
                if startswith(chunk):
                    for head in chunk:
                        if startswith(head):
                            best = offset + chunk.index(head)
                            break
                    if plain_at is not None:
                        best = plain_at[best]
                    break
                offset += _CHUNK
        elif lookup is not None:
            size = len(path)
            for length in lengths:
                if length <= size:
                    index = lookup.get(path[:length])
                    if index is not None:
                        best = index
                        break
        if contains is not None or ends is not None:
            # After the leading "/": "/*text" matches when text is in there.
            rest = path[1:]
            if contains is not None:
                texts, indices = contains
                if best < count:
                    texts = texts[: bisect_left(indices, best)]
                for text in texts:
                    if text in rest:
                        best = indices[texts.index(text)]
                        break
            if ends is not None:
                texts, indices = ends
                if best < count:
                    texts = texts[: bisect_left(indices, best)]
                if rest.endswith(texts):
                    for text in texts:
                        if rest.endswith(text):
                            best = indices[texts.index(text)]
                            break
        for index, (kind, head, last, middle) in special:
            if index >= best:
                break
            # What every kind needs: the head, and the text after the last "*".
            if last not in path or not startswith(head):
                continue
            if kind == _CONTAINS:
                if path.find(last, len(head)) != -1:
                    best = index
                    break
            elif kind == _ENDS:
                if path.endswith(last) and len(path) - len(last) >= len(head):
                    best = index
                    break
            elif kind == _EXACT:
                if path == head:
                    best = index
                    break
            elif _wildcard_matches(
                path, len(head), middle, last, kind == _WILDCARD_ENDS
            ):
                best = index
                break
        return best if best < count else _NO_RULE

    def explain(self, url: str) -> Decision:
        """The decision for ``url`` (absolute, or a ``/``-rooted path)."""
        index = self._find(url)
        if index < 0:
            return ROBOTS_TXT if index == _ROBOTS_TXT else DEFAULT_ALLOW
        decisions = self._decisions
        if decisions is None:
            decisions = self._decisions = {}
        decision = decisions.get(index)
        if decision is None:
            meta = self._meta[index]
            allow = bool(meta & 1)
            rule = Rule(allow, self._patterns[index], meta >> 1)
            decision = Decision(allow, "rule_allow" if allow else "rule_disallow", rule)
            decisions[index] = decision
        return decision

    def is_allowed(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a ``/``-rooted path) may be crawled."""
        index = self._find(url)
        return index < 0 or self._meta[index] & 1 == 1

    @property
    def content_signals(self) -> dict[str, bool | str]:
        """The Content-Signal values that apply (a new dict each time)."""
        return dict(self._signals)

    def __repr__(self) -> str:
        return (
            f"<Matcher profile={self.profile!r} entries={len(self._patterns)} "
            f"crawl_delay={self.crawl_delay!r}>"
        )


def compile(document: Document, user_agent: str) -> Matcher:
    """A :class:`Matcher` answering for ``user_agent`` (its product token)."""
    return Matcher(document, user_agent)


# Compiled matchers of the documents asked about most recently, so that the
# one-off functions below stay cheap when called in a loop.  Keyed by
# identity; the entry keeps its document, so an id is never reused while
# cached.
_CACHE: dict[tuple[int, str], tuple[Document, Matcher]] = {}
_CACHE_SIZE = 32


def _matcher(document: Document, user_agent: str) -> Matcher:
    key = (id(document), user_agent)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is document:
        return cached[1]
    matcher = Matcher(document, user_agent)
    if len(_CACHE) >= _CACHE_SIZE:
        # Threads may race here; losing an eviction only costs memory.
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            del _CACHE[next(iter(_CACHE))]
    _CACHE[key] = (document, matcher)
    return matcher


def explain(document: Document, user_agent: str, url: str) -> Decision:
    """Why ``url`` may or may not be crawled by ``user_agent``."""
    return _matcher(document, user_agent).explain(url)


def is_allowed(document: Document, user_agent: str, url: str) -> bool:
    """Whether ``user_agent`` may crawl ``url`` (absolute, or ``/``-rooted)."""
    return _matcher(document, user_agent).is_allowed(url)


def crawl_delay(document: Document, user_agent: str) -> float | None:
    """The Crawl-delay of the groups that apply to ``user_agent`` (the
    largest, if several give one)."""
    return _matcher(document, user_agent).crawl_delay


def content_signals(document: Document, user_agent: str) -> dict[str, bool | str]:
    """The Content-Signal values of the groups that apply to ``user_agent``
    (``no`` wins when they differ)."""
    return _matcher(document, user_agent).content_signals
