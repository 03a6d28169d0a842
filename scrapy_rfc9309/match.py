"""Deciding whether a URL may be crawled (RFC 9309 section 2.2.2).

:func:`compile` turns the groups of a :class:`~scrapy_rfc9309.parse.Document`
that apply to one agent into a :class:`Matcher`; :func:`explain`,
:func:`is_allowed`, :func:`crawl_delay` and :func:`content_signals` are the
one-off forms.  Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import compress, repeat
from operator import add, lshift
from typing import TYPE_CHECKING, NamedTuple

from ._agents import applicable_groups, merge_groups, product_token
from ._checks import DOCUMENT, expect
from ._read import rules_for
from ._sizes import MATCHER_RULE_BYTES, extras_size, patterns_size
from ._tables import LINE_BITS, Special, build, pattern_of
from .parse import Document, Group, Profile, Rule, UsageRule
from .profiles import RULES
from .reasons import Cause, Reason
from .urls import SAFE_CLASS, normalize_path, request_path

if TYPE_CHECKING:
    from ._usage_table import UsageTable

__all__ = [
    "DEFAULT_ALLOW",
    "MATCHERS_PER_DOCUMENT",
    "ROBOTS_TXT",
    "Cause",
    "Decision",
    "Matcher",
    "Reason",
    "compile",
    "content_signals",
    "crawl_delay",
    "explain",
    "is_allowed",
    "product_token",
    "wildcards_match",
]


class Decision(NamedTuple):
    """Whether a URL may be crawled, why (``reason``), and the deciding
    :class:`~scrapy_rfc9309.parse.Rule` (with its line), if a rule decided."""

    allowed: bool
    reason: Reason
    rule: Rule | None


#: The decision where no rule matches a URL.
DEFAULT_ALLOW = Decision(True, "default_allow", None)
#: Why a Yandex ``Disallow:`` without a value allowed a URL: Yandex reads
#: it as ``Allow: /`` (the decision's rule is the Disallow line as written).
_EMPTY_DISALLOW: Reason = "empty_disallow"
#: The decision for robots.txt itself, which is always allowed.
ROBOTS_TXT = Decision(True, "robots_txt", None)
_NO_RULE = -1
_ROBOTS_TXT = -2
# A URL whose path needs neither request_path() nor (rfc9309 profile)
# normalising: a scheme and an authority of printable ASCII but "/", "?",
# ";" and "#", or none (a leading "//" is an authority), then a path
# without fragment.  Positive classes (quicker than negated ones), each
# repeat followed by a character its class lacks (no backtracking).
_AUTHORITY = r'(?:[A-Za-z][A-Za-z0-9+.-]*://[!"$-.0-:<->@-~]*|(?!//))'
_PLAIN_PATH = re.compile(_AUTHORITY + r"(/[^#]*)").fullmatch
# /robots.txt itself (always allowed there) takes the slow route too; the
# path holds only octets that stand for themselves.
_NORMAL_PATH = re.compile(
    _AUTHORITY + r"(?!/robots\.txt(?:\?|\Z))(/[" + SAFE_CLASS.replace("\\#", "") + "]*)"
).fullmatch


def wildcards_match(
    path: str, pos: int, parts: tuple[str, ...], anchored: bool
) -> bool:
    """Whether ``path`` from ``pos`` on matches ``*`` + ``"*".join(parts)``
    (then the end of the path, if ``anchored``)."""
    # Each "*" takes the leftmost occurrence of the text after it, which
    # leaves the most room for the rest: no backtracking.
    find = path.find
    for part in parts[:-1]:
        pos = find(part, pos)
        if pos == -1:
            return False
        pos += len(part)
    last = parts[-1]
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return find(last, pos) != -1


def _matches(
    path: str, size: int, tail: str | tuple[str, ...] | None, anchored: int
) -> bool:
    """Whether ``path``, which starts with the ``size`` characters of an
    entry's head, matches the rest of it (see ``_tables.Special``)."""
    if tail is None:
        return len(path) == size
    if tail.__class__ is not str:
        return wildcards_match(path, size, tail, bool(anchored))  # type: ignore[arg-type]
    if anchored:
        return len(path) - len(tail) >= size and path.endswith(tail)
    return path.find(tail, size) != -1


_EMPTY_GROUP = Group(())
_new = tuple.__new__


class Matcher:
    """The rules of one robots.txt for one agent, ready to match URLs.

    Built by :func:`compile` (or :meth:`from_rules`, which every way of
    building one goes through).  ``crawl_delay`` and ``content_signals`` are
    those of the groups that apply to the agent.  Compact: one string and a
    few integers per pattern; a :class:`Decision` is made when asked.

    The tables, for the rules (line numbers on the left)::

        2 Disallow: /a        4 Disallow: /*.pdf$     6 Allow: /*print
        3 Allow: /a/b         5 Disallow: /s*q=

    Entries are numbered.  First the plain prefixes, sorted, as bytes
    (bisection finds the longest one a path starts with); then the
    :class:`~scrapy_rfc9309._tables.Special` entries, highest rank first::

        entry             0      1        2       3       4
        _plain            b"/a"  b"/a/b"
        _parent           -1     0        (the longest other prefix each
                                           starts with)
        _special heads                    "/"     "/"     "/s"
                 tails                    "print" ".pdf"  "q="
        _meta             4      7        13      8       10

    ``_meta`` holds ``line << 1 | allow``.  The best entry is the one of
    highest rank (``_tables.rank_of()``): the longest normalised pattern,
    then Allow, then the earlier line.
    """

    __slots__ = (
        "_meta",
        "_normalize",
        "_originals",
        "_parent",
        "_plain",
        "_signals",
        "_special",
        "_usage",
        "_usage_table",
        "crawl_delay",
        "profile",
    )
    _meta: array[int]
    _normalize: bool
    _originals: dict[int, str] | None
    _parent: array[int] | None
    _plain: tuple[bytes, ...]
    _signals: tuple[tuple[str, bool | str], ...]
    _special: Special | None
    # The Content-Usage rules that apply, in file order, and (set when
    # first asked) their table.
    _usage: tuple[UsageRule, ...]
    _usage_table: UsageTable
    crawl_delay: float | None
    profile: Profile

    def __init__(self, document: Document, user_agent: str) -> None:
        # The groups that apply to an agent act as one (RFC 9309 2.2.1).
        groups = applicable_groups(document, product_token(user_agent))
        group = merge_groups(groups) if groups else _EMPTY_GROUP
        # Per rule at C speed: the patterns, and line << 1 | allow.
        rules = group.rules
        allows, patterns, lines = zip(*rules, strict=True) if rules else ((), (), ())
        metas = list(map(add, map(lshift, lines, repeat(1)), allows))
        self._build(
            document.profile,
            patterns,
            metas,
            group.crawl_delay,
            group.content_signals,
            group.content_usage,
        )

    @classmethod
    def from_rules(
        cls,
        profile: Profile,
        patterns: Sequence[str],
        metas: list[int],
        crawl_delay: float | None = None,
        content_signals: dict[str, bool | str] | None = None,
        content_usage: Sequence[UsageRule] = (),
        *,
        limited: bool = True,
    ) -> Matcher:
        """The matcher of the rules of one agent under ``profile``: their
        ``patterns`` in file order, with ``line << 1 | allow`` of each
        (``metas``), and what else applies to the agent.

        The one way a matcher is built, where every profile rule applies
        (an empty Disallow, a limit on the number of rules, the ranking and
        percent-encoding of patterns).  ``limited=False`` leaves out
        Yandex's limit, for patterns that are no agent's rules (the
        Content-Usage paths of :mod:`scrapy_rfc9309._usage_table`).
        """
        matcher = cls.__new__(cls)
        matcher._build(
            profile,
            patterns,
            metas,
            crawl_delay,
            content_signals,
            content_usage,
            limited,
        )
        return matcher

    def _build(
        self,
        profile: Profile,
        patterns: Sequence[str],
        metas: list[int],
        crawl_delay: float | None,
        content_signals: dict[str, bool | str] | None,
        content_usage: Sequence[UsageRule],
        limited: bool = True,
    ) -> None:
        """See :meth:`from_rules`."""
        rules_of = RULES[profile]
        empties: list[int] = []
        if "" in patterns:
            if rules_of.empty_disallow == "allow_all":
                # Profile hook: Yandex reads "Disallow:" as "Allow: /".
                empties = [
                    meta | 1
                    for pattern, meta in zip(patterns, metas, strict=True)
                    if not pattern and not meta & 1
                ]
            # Priority 0: an empty pattern matches nothing (Google).
            keep = list(map(bool, patterns))
            patterns = tuple(compress(patterns, keep)) + ("/",) * len(empties)
            metas = list(compress(metas, keep)) + empties
        if (
            limited
            and rules_of.max_rules is not None
            and len(patterns) > rules_of.max_rules
        ):
            # Profile hook: past its limit, Yandex allows everything.
            patterns, metas, empties = (), [], []
        self.profile = profile
        self.crawl_delay = crawl_delay
        self._signals = tuple(content_signals.items()) if content_signals else ()
        self._normalize = rules_of.percent == "normalize"
        tables = build(rules_of, patterns, metas)
        self._meta, self._plain, self._parent, self._originals, self._special = tables
        self._usage = tuple(content_usage) if content_usage else ()
        if empties:
            self._mark_empty(empties)

    def _mark_empty(self, empties: list[int]) -> None:
        """Report the ``Allow: /`` entry an empty Disallow became (metas
        ``empties``) as that Disallow, if one of them is the entry's rule."""
        entry = bisect_left(self._plain, b"/")
        if self._meta[entry] in empties:
            originals = self._originals or {}
            originals[entry] = ""
            self._originals = originals

    def _find(self, url: str, verdict_only: bool = False) -> int:
        """The entry deciding for ``url``, or a negative code; with
        ``verdict_only``, perhaps another entry that gives the same verdict."""
        # Hot path: one regex for the usual URL shape, one bisection for the
        # plain prefixes (kept as bytes, smaller; the rest as str, quicker
        # to search: the path is needed as both).
        if self._normalize:
            found = _NORMAL_PATH(url)
            if found is None:
                text = normalize_path(request_path(url))
                if text == "/robots.txt" or text.startswith("/robots.txt?"):
                    return _ROBOTS_TXT
            else:
                text = found[1]
            # Printable ASCII either way.
            path = text.encode()
        else:
            found = _PLAIN_PATH(url)
            text = request_path(url) if found is None else found[1]
            path = text.encode("utf-8", "surrogatepass")
        plain = self._plain
        parents = self._parent
        # The greatest prefix not after the path: the longest one it starts
        # with, or one that starts with that one.
        best = bisect_right(plain, path) - 1
        if best >= 0 and not path.startswith(plain[best]):
            if parents is None:
                best = _NO_RULE
            else:
                best = parents[best]
                while best >= 0 and not path.startswith(plain[best]):
                    best = parents[best]
        special = self._special
        if special is None:
            return best
        verdict = special.verdict
        if (
            verdict_only
            and verdict >= 0
            and (self._meta[best] & 1 == verdict if best >= 0 else verdict)
        ):
            # No other entry could give another verdict.
            return best
        return self._find_special(special, text, best)

    def _find_special(self, special: Special, text: str, best: int) -> int:
        """:meth:`_find` among the other entries, for the path ``text``:
        ``best`` is the longest plain prefix it starts with."""
        heads, needs, tails, anchors, ranks, base, _ = special
        stop = len(needs)
        if best >= 0:
            # Only an entry of a lower negated rank beats best (-rank_of(),
            # inlined: the call cost 2.5 % of a request).
            meta = self._meta[best]
            size = len(self._plain[best])
            stop = bisect_left(
                ranks, (meta >> 1) - ((size << 1 | meta & 1) << LINE_BITS)
            )
        # The first entry that matches is the best; most lack their needed text.
        index = 0
        for needed in needs[:stop]:
            if needed in text:
                # The entry, as no earlier one since the last holds it.
                index = needs.index(needed, index, stop)
                head = heads[index]
                if text.startswith(head) and _matches(
                    text, len(head), tails[index], anchors[index]
                ):
                    return base + index
                index += 1
        return best

    def _pattern(self, entry: int) -> str:
        """The pattern, as written, of ``entry``."""
        if self._originals is not None:
            original = self._originals.get(entry)
            if original is not None:
                return original
        if entry < len(self._plain):
            return self._plain[entry].decode()
        special = self._special
        assert special is not None
        index = entry - special.base
        return pattern_of(
            special.heads[index], special.tails[index], special.anchored[index]
        )

    def explain(self, url: str) -> Decision:
        """The decision for ``url`` (absolute, or a ``/``-rooted path)."""
        # A url that is no str fails the first regex: told only then (free).
        try:
            entry = self._find(url)
        except TypeError:
            expect(url, str, "url", "a str")
            raise
        if entry < 0:
            return ROBOTS_TXT if entry == _ROBOTS_TXT else DEFAULT_ALLOW
        # Made afresh: a cache of decisions would mostly miss in a crawl.
        pattern = self._pattern(entry)
        meta = self._meta[entry]
        if meta & 1:
            if not pattern:
                # An empty Disallow that the profile reads as Allow-all.
                rule = _new(Rule, (False, "", meta >> 1))
                return _new(Decision, (True, _EMPTY_DISALLOW, rule))
            rule = _new(Rule, (True, pattern, meta >> 1))
            return _new(Decision, (True, "rule_allow", rule))
        rule = _new(Rule, (False, pattern, meta >> 1))
        return _new(Decision, (False, "rule_disallow", rule))

    def is_allowed(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a ``/``-rooted path) may be crawled."""
        try:
            entry = self._find(url, True)
        except TypeError:
            expect(url, str, "url", "a str")
            raise
        return entry < 0 or self._meta[entry] & 1 == 1

    @property
    def content_signals(self) -> dict[str, bool | str]:
        """The Content-Signal values that apply (a new dict each time)."""
        return dict(self._signals)

    @property
    def content_usage(self) -> tuple[UsageRule, ...]:
        """The Content-Usage rules that apply, in file order."""
        return self._usage

    def usage_table(self) -> UsageTable:
        """Those rules compiled for lookups by URL, built when first asked
        (a crawl with purposes asks; most never do) and kept."""
        try:
            return self._usage_table
        except AttributeError:
            # _usage_table builds its path matchers with this module.
            from ._usage_table import UsageTable

            table = self._usage_table = UsageTable(self._usage, self.profile)
            return table

    def estimated_bytes(self) -> int:
        """The bytes this matcher holds beyond its fixed part, estimated
        from counts and lengths (deterministic, above what tracemalloc
        measures, no object walk): what the memory store counts against
        ``ROBOTS_MEMORY_MAX_BYTES``.

        Counted on the patterns as written: the plain prefixes of ASCII
        kept as written together, the others one by one (an Allow of
        ``.../index.html`` is two entries under Google's reading, spelt
        alike); then Content-Signal values and Content-Usage rules.
        """
        plain = self._plain
        size = len(plain)
        # Entries spelt otherwise are among the others.
        spelt = [entry for entry in self._originals or () if entry < size]
        kept = [1] * size
        for entry in spelt:
            kept[entry] = 0
        lines = list(compress(plain, kept))
        others = list(map(self._pattern, spelt))
        others.extend(map(self._pattern, range(size, len(self._meta))))
        text = b"\n".join(lines)
        if not text.isascii():
            # A profile that keeps octets beyond ASCII as they are.
            others.extend(
                line.decode("utf-8", "surrogatepass")
                for line in lines
                if not line.isascii()
            )
            text = b"\n".join(line for line in lines if line.isascii())
        # The plain prefixes (most rules): counted together, one a line.
        rules = text.count(b"\n") + 1 if text else 0
        size = rules * MATCHER_RULE_BYTES + (len(text) - rules + 1 if text else 0)
        size += patterns_size(others)
        return size + extras_size(dict(self._signals), self._usage)

    def document(self, sitemaps: tuple[str, ...] = ()) -> Document:
        """A document that answers for any agent as this matcher answers:
        its rules (each pattern once, as written, with its line),
        Crawl-delay, Content-Signal values and Content-Usage rules as one
        ``*`` group, and ``sitemaps``."""
        rules = sorted(
            {
                # An empty pattern: an empty Disallow read as Allow-all.
                _new(Rule, (meta & 1 == 1 and bool(pattern), pattern, meta >> 1))
                for entry, meta in enumerate(self._meta)
                for pattern in (self._pattern(entry),)
            },
            key=lambda rule: (rule.line, rule.allow),
        )
        groups: tuple[Group, ...] = ()
        usage = self._usage
        if rules or self.crawl_delay is not None or self._signals or usage:
            line = rules[0].line if rules else 0
            signals = dict(self._signals)
            # A bounded profile answers for its labels only: the group
            # names them all.
            agents = ("*", *RULES[self.profile].labels)
            groups = (
                Group(agents, tuple(rules), self.crawl_delay, signals, line, usage),
            )
        return Document(groups, sitemaps, (), self.profile)

    def __repr__(self) -> str:
        return (
            f"<Matcher profile={self.profile!r} "
            f"entries={len(self._meta)} "
            f"crawl_delay={self.crawl_delay!r}>"
        )


def compile(document: Document, user_agent: str) -> Matcher:
    """A :class:`Matcher` answering for ``user_agent`` (its product token).

    The document keeps it (for a few agents): ``is_allowed(document,
    agent, url)`` in a loop compiles once.  A document not read yet is read
    only as far as the groups that apply.
    """
    expect(document, Document, "document", DOCUMENT)
    matchers = document._matchers
    matcher = matchers.get(user_agent)
    if matcher is None:
        text = document._text
        if text is None or document.profile not in _FROM_TEXT:
            matcher = Matcher(document, user_agent)
        else:
            matcher = _compile_text(text, document.profile, user_agent)
        if len(matchers) >= MATCHERS_PER_DOCUMENT:
            matchers.clear()
        matchers[user_agent] = matcher
    return matcher


#: Agents a document keeps a matcher for: a crawler asks for one or two.
MATCHERS_PER_DOCUMENT = 4
# The profiles whose rules for one agent _read.rules_for() reads in full:
# it selects by product token (not as a bounded profile does) and leaves
# empty patterns out (which Yandex reads as "Allow: /").
_FROM_TEXT = frozenset(
    name
    for name, rules in RULES.items()
    if rules.selectors is None and rules.empty_disallow == "inert"
)


def _compile_text(text: str, profile: Profile, user_agent: str) -> Matcher:
    """The matcher of the robots.txt ``text`` (as ``body_text`` gives it),
    read only as far as the groups that apply to ``user_agent``."""
    rules = rules_for(text, profile, product_token(user_agent))
    return Matcher.from_rules(profile, *rules)


def explain(document: Document, user_agent: str, url: str) -> Decision:
    """Why ``url`` may or may not be crawled by ``user_agent``."""
    # Called in loops: the document's matcher is looked up here first.
    try:
        matcher = document._matchers.get(user_agent) or compile(document, user_agent)
    except AttributeError:
        expect(document, Document, "document", DOCUMENT)
        raise
    return matcher.explain(url)


def is_allowed(document: Document, user_agent: str, url: str) -> bool:
    """Whether ``user_agent`` may crawl ``url`` (absolute, or ``/``-rooted)."""
    # Called in loops: the document's matcher is looked up, and asked, here.
    try:
        matcher = document._matchers.get(user_agent) or compile(document, user_agent)
        entry = matcher._find(url, True)
    except (AttributeError, TypeError):
        expect(document, Document, "document", DOCUMENT)
        expect(url, str, "url", "a str")
        raise
    return entry < 0 or matcher._meta[entry] & 1 == 1


def crawl_delay(document: Document, user_agent: str) -> float | None:
    """The Crawl-delay of the groups that apply to ``user_agent`` (the
    largest, if several give one)."""
    return compile(document, user_agent).crawl_delay


def content_signals(document: Document, user_agent: str) -> dict[str, bool | str]:
    """The Content-Signal values of the groups that apply to ``user_agent``
    (``no`` wins when they differ)."""
    return compile(document, user_agent).content_signals
