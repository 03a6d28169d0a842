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
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count, repeat
from operator import add, and_, is_not, lshift
from typing import TYPE_CHECKING, Any, NamedTuple

from .parse import (
    Document,
    Group,
    Profile,
    Rule,
    UsageRule,
    applicable_groups,
    merge_groups,
    product_token,
    rules_for,
)
from .profiles import RULES, Percent
from .reasons import Cause, Reason
from .urls import _normal, normalize_path, request_path

if TYPE_CHECKING:
    from ._usage_table import UsageTable

__all__ = [
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
]


class Decision(NamedTuple):
    """Whether a URL may be crawled, why (``reason``), and the deciding
    :class:`~scrapy_rfc9309.parse.Rule` (with its line), if a rule decided."""

    allowed: bool
    reason: Reason
    rule: Rule | None


DEFAULT_ALLOW = Decision(True, "default_allow", None)
#: Why a Yandex ``Disallow:`` without a value allowed a URL: Yandex reads
#: it as ``Allow: /`` (the decision's rule is the Disallow line as written).
EMPTY_DISALLOW: Reason = "empty_disallow"
ROBOTS_TXT = Decision(True, "robots_txt", None)
_NO_RULE = -1
_ROBOTS_TXT = -2
# A URL whose path needs neither the slow path extraction nor (for the
# rfc9309 profile) percent-encoding normalisation: a scheme and an authority
# of printable ASCII other than "/", "?", ";" and "#", or none, then a path
# without fragment.  Anything else takes the exact, slower route through
# request_path(); a leading "//" is an authority.  Positive classes: the
# regex engine goes through them quicker than a negated class.  Each repeat
# is followed by a character its class does not hold, so that a greedy
# repeat never backtracks into a match (Python 3.10 has no possessive ones).
_AUTHORITY = r'(?:[A-Za-z][A-Za-z0-9+.-]*://[!"$-.0-:<->@-~]*|(?!//))'
_PLAIN_PATH = re.compile(_AUTHORITY + r"(/[^#]*)").fullmatch
# /robots.txt itself takes the slow route too (it is always allowed there).
_NORMAL_PATH = re.compile(
    _AUTHORITY + r'(?!/robots\.txt(?:\?|\Z))(/[!"&-)+-~]*)'
).fullmatch
# A pattern that is not a plain prefix of printable ASCII without "%", "*"
# or "$" (which reads the same in both profiles).
_SPECIAL = re.compile(r"[^!-#&-)+-~]").search
# Whether normalising may change a pattern: in the rfc9309 profile, any
# octet but printable ASCII, "*" and a final "$" (see normalize_pattern());
# for Google's escaping, "%" or an octet outside ASCII.
_CHANGES = re.compile(r"[^!-$&-~]|\$.").search
_GOOGLE_CHANGES = re.compile(r"[^\x00-$&-\x7f]").search
_PLAIN_OCTETS = bytes(octet for octet in range(0x21, 0x7F) if octet not in b"$%*")
# The octets normalising leaves as they are in either profile (a "$" not
# at the end aside): deleting them leaves those to look at.
_UNCHANGED_OCTETS = bytes(
    octet for octet in b"\n" + bytes(range(0x21, 0x7F)) if octet != 0x25
)


# The shapes of a normalised pattern with a "*" (those without one are a
# plain prefix or "head$", told in Matcher._setup()): "/*text" (or "*text"),
# "/*text$", or another, filed by its head (the text before its first "*").
_CONTAINS, _ENDS, _HEADED = range(3)
# What follows the head of a pattern filed by its head: "*text" (or
# "*text*"), "*text$", more wildcards (anchored or not), only "*"s (the head
# is enough), or "$" (the head and nothing more).
_FIND, _FIND_STAR, _SUFFIX, _WILDCARDS, _WILDCARDS_END, _ANY, _END = range(7)
#: What matching an entry filed by its head needs (see _tail()).
_Piece = str | tuple[str, ...]


class _Texts(NamedTuple):
    """The "/*text" (or "/*text$") entries: the first text the path holds
    (or ends with) is the best of them."""

    #: The texts, highest rank first.
    texts: tuple[str, ...]
    #: Their negated ranks (see _rank()), ascending.
    ranks: array[int]
    #: The number of the first entry.
    base: int


class _Headed(NamedTuple):
    """The entries filed by their head (the text before the first "*"),
    which is among the plain prefixes: those of plain prefix ``i`` are
    ``starts[i]`` to ``starts[i + 1]``, highest rank first."""

    starts: array[int]
    #: For each entry, a text the path must hold somewhere ("" if none).
    needs: tuple[str, ...]
    #: What matching needs, by the kind of tail: a str or a tuple of them
    #: (see _tail()).
    pieces: tuple[Any, ...]
    #: Negated ranks (see _rank()).
    ranks: array[int]
    #: The kind of tail of each entry (_FIND ... _END), one octet each.
    tails: bytes
    #: The number of the first entry.
    base: int


class _Special(NamedTuple):
    """The entries that are not plain prefixes."""

    contains: _Texts | None
    ends: _Texts | None
    headed: _Headed | None
    #: The verdict all of them give (1 allow, 0 disallow), -1 if they differ.
    verdict: int


# An entry filed by head, while compiling: (head, negated rank, kind of
# tail, piece, needed text, meta, normalised, as written).
_Filed = tuple[str, int, int, _Piece, str, int, str, str]
# How a normalised pattern with a "*" matches: (shape, text or head, kind
# of tail, piece, needed text); see _any_shape().
_Shape = tuple[int, str, int, _Piece, str]

# The rank of an entry as one integer: pattern length, then Allow before
# Disallow, then the earlier line (RFC 9309 2.2.2, and which rule reports).
# Lines stay below 2 ** 40 (a terabyte of robots.txt).
_LINE_BITS = 40


def _rank(size: int, meta: int) -> int:
    """The rank of an entry of normalised length ``size`` and ``meta``
    (``line << 1 | allow``): the higher one wins."""
    return ((size << 1 | meta & 1) << _LINE_BITS) - (meta >> 1)


def _specificity(pattern: str) -> int:
    """How long a normalised ``pattern`` counts for Yandex: its octets
    other than ``*`` and a final ``$`` (``StrLenWithoutStars``); a lone
    ``*`` counts as the ``/*`` Yandex reads it as."""
    size = len(pattern) - pattern.count("*") - pattern.endswith("$")
    return size if size or not pattern.startswith("*") else 1


def _shape(pattern: str) -> tuple[int, str]:
    """How a normalised ``pattern`` holding a "*" matches, and the text it
    needs: the text after the "*" for "/*text" and "/*text$", else the
    pattern."""
    anchored = pattern.endswith("$")
    # A trailing "*" matches anything, even nothing: "/a*b*" is "/a*b".
    body = pattern[:-1] if anchored else pattern.rstrip("*")
    if "*" not in body:
        # Only trailing "*"s: "/a*" is the prefix "/a", which ranks as long
        # as "/a*" though: not with the plain prefixes (ranked by their own
        # length).
        return (_CONTAINS, "") if body in ("", "/") else (_HEADED, pattern)
    # Paths start with "/", so "*text" (text not starting with "/") matches
    # where "/*text" does.
    if body.startswith("/*"):
        text = body[2:]
    elif body.startswith("*") and body[1:2] != "/":
        text = body[1:]
    else:
        return _HEADED, pattern
    if "*" in text:
        return _HEADED, pattern
    return (_ENDS if anchored else _CONTAINS), text


def _tail(pattern: str, size: int) -> tuple[int, _Piece]:
    """What follows the head (``size`` characters) of ``pattern``: its kind
    and what matching needs: the text of "*text", "*text*" and "*text$", the
    texts after each "*" of more wildcards, else the pattern itself."""
    tail = pattern[size:]
    if tail == "$":
        return _END, pattern
    anchored = tail.endswith("$")
    body = tail[:-1] if anchored else tail.rstrip("*")
    if not body.strip("*"):
        return _ANY, pattern
    stars = len(tail) - len(body)
    if body.find("*", 1) == -1 and stars <= 1:
        return (_SUFFIX if anchored else (_FIND_STAR if stars else _FIND)), body[1:]
    parts = tuple((tail[:-1] if anchored else tail)[1:].split("*"))
    return (_WILDCARDS_END if anchored else _WILDCARDS), parts


def _untail(head: str, kind: int, piece: _Piece) -> str:
    """The normalised pattern of an entry filed under ``head``."""
    if isinstance(piece, tuple):
        return head + "*" + "*".join(piece) + ("$" if kind == _WILDCARDS_END else "")
    if kind == _FIND:
        return head + "*" + piece
    if kind == _FIND_STAR:
        return head + "*" + piece + "*"
    if kind == _SUFFIX:
        return head + "*" + piece + "$"
    return piece


# Most wildcard patterns are "head*text", then perhaps a "*" or a "$": one
# regex over the patterns of a file, a match a line, reads them (quicker
# than a match each); group 4 holds any other pattern.  Each match takes
# its line's "\n", so that the next one starts where it ended.
_ONE_STAR_LINES = re.compile(r"(?:([^*$\n]*)\*([^*$\n]*)([*$]?)|(.+))(?:\n|\Z)").findall


def _any_shape(pattern: str) -> _Shape:
    """:func:`_shape` of a normalised ``pattern`` holding a "*", and for
    one filed by its head, the head, :func:`_tail` and the text the path
    must hold."""
    shape, text = _shape(pattern)
    if shape == _HEADED:
        head = pattern[: pattern.find("*")]
        kind, piece = _tail(pattern, len(head))
        # A text the path must hold: the longest, which rules out the
        # most paths.
        needed = (
            max(piece, key=len)
            if isinstance(piece, tuple)
            else piece
            if kind <= _SUFFIX
            else ""
        )
        return (shape, head, kind, piece, needed)
    return (shape, text, 0, "", "")


def _wildcards_match(
    path: str, pos: int, parts: tuple[str, ...], anchored: bool
) -> bool:
    """Whether ``path`` from ``pos`` on matches ``*`` + ``"*".join(parts)``
    (then the end of the path, if ``anchored``)."""
    # Each "*" takes the leftmost occurrence of the literal after it, which
    # leaves the most room for the rest: linear scans, no backtracking.
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


def _indices(values: list[int]) -> array[int]:
    """Indices into a matcher's tables (-1: none): two octets each, unless
    a table is over 32,767 entries long (four)."""
    try:
        return array("h", values)
    except OverflowError:
        return array("i", values)


def _uints(values: list[int]) -> array[int]:
    # Two octets an entry (lines up to 32,767), unless a line number needs more.
    largest = max(values, default=0)
    typecode = "H" if largest < 1 << 16 else "I" if largest < 1 << 32 else "Q"
    return array(typecode, values)


def _parents(prefixes: Sequence[bytes]) -> array[int] | None:
    """For each of the sorted ``prefixes``, the index of the longest other
    one that it starts with (-1: none); ``None`` if none has one."""
    size = len(prefixes)
    if size < 2:
        return None
    # "" and "/" start every path: they are linked last, in bulk.
    empty = 0 if not prefixes[0] else -1
    slash = bisect_left(prefixes, b"/")
    if slash == size or prefixes[slash] != b"/":
        slash = -1
    # In sorted order, a string's prefixes come before it, and every string
    # between one of them and it starts with that prefix too: so a string
    # that does not start with the one before it has no prefix but among
    # the prefixes of that one.  Where no string starts with the one before
    # it (most of the table), nothing has a parent.  removeprefix() gives
    # back the very string when it does not start so (and, unlike
    # startswith(), takes its argument without a tuple built per call).
    tails = prefixes[1:]
    follows = list(map(is_not, map(bytes.removeprefix, tails, prefixes[:-1]), tails))
    for root in (empty, slash):
        if 0 <= root < size - 1:
            follows[root] = False
    if True not in follows and empty < 0 and slash < 0:
        return None
    parents = [-1] * size
    index = follows.index(True) + 1 if True in follows else size
    while index < size:
        if follows[index - 1]:
            parents[index] = index - 1
        else:
            parent = parents[index - 1]
            if parent < 0:
                try:
                    index = follows.index(True, index) + 1
                except ValueError:
                    break
                continue
            prefix = prefixes[index]
            while parent >= 0 and not prefix.startswith(prefixes[parent]):
                parent = parents[parent]
            parents[index] = parent
        index += 1
    if slash >= 0:
        # Every string from "/" to "0" (the character after "/") starts with "/".
        end = bisect_left(prefixes, b"0", slash)
        parents[slash + 1 : end] = [
            slash if parent < 0 else parent for parent in parents[slash + 1 : end]
        ]
        if empty >= 0:
            parents[slash] = empty
    if empty >= 0:
        parents[1:] = [empty if parent < 0 else parent for parent in parents[1:]]
        parents[0] = -1
        if slash >= 0:
            parents[slash] = empty
    return _indices(parents)


def _special_octets(joined: str) -> set[str]:
    """The ASCII octets of ``joined`` (patterns without separator) that
    make a pattern special, found at C speed (deleting the others is far
    quicker than a regex over the text)."""
    return set(joined.encode("ascii", "ignore").translate(None, _PLAIN_OCTETS).decode())


def _specials(
    patterns: Iterable[str], ascii_only: bool, found: set[str]
) -> list[str] | None:
    """Those of ``patterns`` (ASCII only or not, holding the special
    octets ``found``) that are not plain prefixes of printable ASCII without
    "%", "*" or "$"; ``None`` if none is."""
    # The cheapest test per pattern that tells ("in" is quicker than any
    # regex): nearly always a wildcard or an anchor.
    if ascii_only and not found:
        return None
    if not found <= _USUAL_SPECIAL:
        special = _SPECIAL
        return [pattern for pattern in patterns if special(pattern)]
    if not ascii_only:
        return [
            pattern
            for pattern in patterns
            if not pattern.isascii()
            or "*" in pattern
            or "$" in pattern
            or "%" in pattern
        ]
    if len(found) == 1:
        octet = next(iter(found))
        return [pattern for pattern in patterns if octet in pattern]
    if "%" not in found:
        return [pattern for pattern in patterns if "*" in pattern or "$" in pattern]
    return [
        pattern
        for pattern in patterns
        if "*" in pattern or "$" in pattern or "%" in pattern
    ]


# The octets that make most special patterns special.
_USUAL_SPECIAL = frozenset("*$%")
_WILDCARDS_AND_ANCHORS = frozenset("*$")


def _normalized(
    patterns: list[str], percent: Percent, ascii_only: bool, found: set[str]
) -> list[str]:
    """``patterns`` normalised as the profile's ``percent`` says (see
    scrapy_rfc9309.profiles), looking only at those it may change: the special
    octets ``found`` in them (and whether they are ASCII only) may tell
    that there is none."""
    if percent == "verbatim":
        # Only octets outside ASCII are encoded.
        if ascii_only:
            return patterns
        return [
            pattern if pattern.isascii() else _normal(pattern, percent)
            for pattern in patterns
        ]
    normalize = percent == "normalize"
    # Printable ASCII, "*" and "$" only: only a "$" may change (not the
    # last of a pattern, in the rfc9309 profile); no octet scan below.
    anchors_only = ascii_only and found <= _WILDCARDS_AND_ANCHORS
    if anchors_only and ("$" not in found or not normalize):
        return patterns
    joined = "\n".join(patterns)
    if anchors_only:
        octets = b""
    elif not joined.isascii():
        changes = _CHANGES if normalize else _GOOGLE_CHANGES
        return [
            _normal(pattern, percent) if changes(pattern) else pattern
            for pattern in patterns
        ]
    else:
        octets = joined.encode("ascii").translate(None, _UNCHANGED_OCTETS)
    if normalize:
        # Anything but printable ASCII and "*", or a "$" before the end.
        ends = joined.count("$\n") + joined.endswith("$")
        if joined.count("$") != ends or octets.strip(b"%"):
            return [
                _normal(pattern, percent) if _CHANGES(pattern) else pattern
                for pattern in patterns
            ]
    if b"%" not in octets:
        return patterns
    # Only escapes to normalise (most often): in the patterns that hold one.
    return [
        _normal(pattern, percent) if "%" in pattern else pattern for pattern in patterns
    ]


def _earliest(patterns: Sequence[str], metas: Sequence[int]) -> dict[str, int]:
    """Each of ``patterns`` -> its meta: of its earliest line, unless an
    Allow of the same pattern wins the tie."""
    # Nearly always each pattern once: then any order of building will do,
    # and in file order is quickest.
    earliest = dict(zip(patterns, metas))  # noqa: B905 (see _setup())
    if len(earliest) < len(patterns):
        # The last value given for a key stays, so in reverse...
        earliest = dict(zip(reversed(patterns), reversed(metas), strict=True))
        # ...then the Allows again, over the Disallows of the same pattern.
        allows = list(map(and_, metas, repeat(1)))
        earliest.update(
            zip(
                reversed(list(compress(patterns, allows))),
                reversed(list(compress(metas, allows))),
                strict=True,
            )
        )
    return earliest


def _encoded(strings: list[str]) -> tuple[bytes, ...]:
    """``strings`` (none holding a newline) encoded, in one call."""
    if not strings:
        return ()
    return tuple("\n".join(strings).encode("utf-8", "surrogatepass").split(b"\n"))


_EMPTY_GROUP = Group(())
# The metas of a matcher without entries (never written to, so shared).
_NO_METAS = array("I")
_new = tuple.__new__


class Matcher:
    """The rules of one robots.txt for one agent, ready to match URLs.

    Built by :func:`compile`.  ``crawl_delay`` and ``content_signals`` are
    those of the groups that apply to the agent.  Compact: a matcher keeps
    one string and a few integers per pattern; a rule's :class:`Decision`
    is made when that rule decides.

    The tables, for the rules (line numbers on the left)::

        2 Disallow: /a        4 Disallow: /*.pdf$     6 Allow: /*print
        3 Allow: /a/b         5 Disallow: /s*q=

    Entries are numbered.  First the plain prefixes, sorted, as bytes
    (bisection finds the longest one a path starts with), with the heads of
    the entries filed by head among them (``/s``); then the
    :class:`_Special` entries, ``/*text`` ones, ``/*text$`` ones, and those
    filed by head::

        entry             0      1       2      3        4       5
        _plain            b"/a"  b"/a/b" b"/s"
        _parent           -1     0       -1     (the longest other prefix
                                                 each starts with)
        _special                                 contains ends    headed
                                                 "print"  ".pdf"  "q=" under
                                                                  entry 2
        _meta             4      7       0      13       8       10

    ``_meta`` holds ``line << 1 | allow`` (0: a head that is no rule of its
    own).  The best entry is the one of highest rank (:func:`_rank`): the
    longest normalised pattern, then Allow, then the earlier line.
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
    _special: _Special | None
    # The Content-Usage rules that apply, in file order (see
    # scrapy_rfc9309.usage): few, and asked only by a crawl with purposes.
    _usage: tuple[UsageRule, ...]
    # Those rules compiled (scrapy_rfc9309._usage_table), when first asked;
    # unset until then.
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
    ) -> Matcher:
        """The matcher of the rules of one agent under ``profile``: their
        ``patterns`` in file order, with ``line << 1 | allow`` of each
        (``metas``), and what else applies to the agent.

        The one way a matcher is built: every profile rule (an empty
        Disallow, a limit on the number of rules, the ranking and
        percent-encoding of patterns) applies here.
        """
        matcher = cls.__new__(cls)
        matcher._build(
            profile, patterns, metas, crawl_delay, content_signals, content_usage
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
        if rules_of.max_rules is not None and len(patterns) > rules_of.max_rules:
            # Profile hook: past its limit, Yandex allows everything.
            patterns, metas, empties = (), [], []
        self._setup(profile, crawl_delay, content_signals or {}, patterns, metas)
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

    def _setup(
        self,
        profile: Profile,
        crawl_delay: float | None,
        content_signals: dict[str, bool | str],
        patterns: Sequence[str],
        metas: list[int],
    ) -> None:
        """The tables for the ``patterns`` (not empty, in file order) of the
        rules that apply, with ``line << 1 | allow`` of each (``metas``).

        The plain prefixes, and the heads of the entries filed by head, are
        one sorted table, numbered from 0; then come the "/*text" entries
        and the "/*text$" entries in rank order, and the entries filed by
        head.  ``_meta`` holds ``line << 1 | allow`` of each entry (0 for a
        head that is no plain prefix).

        Built for speed (parse() then compile() is timed against Protego): the
        zip() calls here go without ``strict=True``, which costs about
        0.15 us a call, on sequences equal in length by construction.
        """
        self.profile = profile
        self.crawl_delay = crawl_delay
        self._signals = tuple(content_signals.items()) if content_signals else ()
        rules_of = RULES[profile]
        self._normalize = rules_of.percent == "normalize"
        if not patterns:
            # No rule applies (no group names the agent or "*", or its
            # rules are empty): nothing to build.
            self._meta = _NO_METAS
            self._plain = ()
            self._parent = None
            self._originals = None
            self._special = None
            return
        joined = "".join(patterns)
        if "\n" in joined:
            # Only a hand-built Rule holds a line break: read as a URL
            # carries it (the tables are built from newline-joined text).
            patterns = [pattern.replace("\n", "%0A") for pattern in patterns]
            joined = "".join(patterns)
        index_html = rules_of.index_html and "/index.htm" in joined
        # Each pattern once, with the meta of the rule of it that would win.
        prefixes = _earliest(patterns, metas)
        # The patterns with a wildcard or octets to normalise.
        ascii_only = joined.isascii()
        found = _special_octets(joined)
        specials = _specials(prefixes, ascii_only, found)
        if specials is None and not index_html:
            # Only plain prefixes (most files): no pattern needs a closer look.
            plain = sorted(prefixes)
            self._meta = _uints(list(map(prefixes.__getitem__, plain)))
            self._plain = _encoded(plain)
            self._parent = _parents(self._plain)
            self._originals = None
            self._special = None
            return
        if specials is not None:
            special_metas = list(map(prefixes.pop, specials))
        else:
            specials = []
            special_metas = []
        if index_html:
            # Google: an Allow of ".../index.htm..." also allows ".../$",
            # an entry of its own even for a plain prefix.
            for pattern, meta in prefixes.items():
                if meta & 1 and "/index.htm" in pattern:
                    specials.append(pattern)
                    special_metas.append(meta)
        # Normalising seldom changes anything: only the patterns it may
        # change are looked at.
        normals = _normalized(specials, rules_of.percent, ascii_only, found)
        # Profile hook: Yandex ranks a pattern without its "*" and final "$".
        by_length = rules_of.rank == "length"
        # Prefixes only once normalised: normalised -> pattern as written.
        written: dict[str, str] = {}
        # "/*text" and "/*text$" entries: (negated rank, meta, text, pattern).
        texts: tuple[list[tuple[int, int, str, str]], ...] = ([], [])
        filed: list[_Filed] = []
        if index_html:
            # Google: an Allow of ".../index.htm..." also allows ".../$".
            normals = list(normals)
            for pattern, meta, normal in zip(
                specials[:], special_metas[:], normals[:], strict=True
            ):
                slash = normal.rfind("/")
                if meta & 1 and normal.startswith("/index.htm", slash):
                    specials.append(pattern)
                    special_metas.append(meta)
                    normals.append(normal[: slash + 1] + "$")
        # Hot loop, written for speed: the shape of most patterns is read
        # off one regex match a line (see _any_shape() for the others).
        for (head, tail, end, other), pattern, meta, entry in zip(  # noqa: B905
            _ONE_STAR_LINES("\n".join(normals)), specials, special_metas, normals
        ):
            size = len(entry) if by_length else _specificity(entry)
            rank = (meta >> 1) - ((size << 1 | meta & 1) << _LINE_BITS)
            if not other:
                # "head*tail", then perhaps a "*" or a "$" (end).
                if head == "/" or (not head and tail[:1] != "/"):
                    texts[end == "$"].append((rank, meta, tail, pattern))
                elif not tail:
                    filed.append((head, rank, _ANY, entry, "", meta, entry, pattern))
                else:
                    kind = _SUFFIX if end == "$" else _FIND_STAR if end else _FIND
                    filed.append((head, rank, kind, tail, tail, meta, entry, pattern))
                continue
            if "*" in other:
                # More wildcards.
                shape, text, kind, piece, needed = _any_shape(entry)
                if shape == _HEADED:
                    filed.append(
                        (text, rank, kind, piece, needed, meta, entry, pattern)
                    )
                else:
                    texts[shape - _CONTAINS].append((rank, meta, text, pattern))
            elif other[-1] == "$":
                # "head$": the head and nothing more.
                filed.append((other[:-1], rank, _END, entry, "", meta, entry, pattern))
            else:
                # A plain prefix once normalised.
                known = prefixes.get(entry)
                if known is None or _rank(0, meta) > _rank(0, known):
                    prefixes[entry] = meta
                    if entry == pattern:
                        written.pop(entry, None)
                    else:
                        written[entry] = pattern
        # Each head among the plain prefixes, 0 as its meta if it is no
        # plain prefix itself.
        for item in filed:
            prefixes.setdefault(item[0], 0)
        plain = sorted(prefixes)
        metas = list(map(prefixes.__getitem__, plain))
        originals = (
            {bisect_left(plain, prefix): pattern for prefix, pattern in written.items()}
            if written
            else {}
        )
        tables: list[_Texts | None] = []
        for items, suffix in zip(texts, ("", "$")):  # noqa: B905
            if not items:
                tables.append(None)
                continue
            # Highest rank first: the first text that matches is the best.
            items.sort()
            ranks, item_metas, item_texts, written_as = zip(*items)  # noqa: B905
            base = len(metas)
            metas.extend(item_metas)
            for offset, (text, pattern) in enumerate(
                zip(item_texts, written_as)  # noqa: B905
            ):
                if pattern != "/*" + text + suffix:
                    originals[base + offset] = pattern
            tables.append(_Texts(item_texts, array("q", ranks), base))
        self._plain = _encoded(plain)
        self._parent = _parents(self._plain)
        headed = self._headed(plain, filed, metas, originals) if filed else None
        # Only their verdicts: those of the plain prefixes were filed first.
        allows = sum(map(and_, metas[len(plain) :], repeat(1)))
        verdict = 1 if allows == len(metas) - len(plain) else 0 if not allows else -1
        self._special = _Special(tables[0], tables[1], headed, verdict)
        self._meta = _uints(metas)
        self._originals = originals or None

    @staticmethod
    def _headed(
        plain: list[str],
        filed: list[_Filed],
        metas: list[int],
        originals: dict[int, str],
    ) -> _Headed:
        """The table of the entries ``filed`` by head."""
        # By head, highest rank first within each.  Rules of a parsed file
        # never share both (a rank holds the line), so the rest of the
        # tuples decides nothing; a kind always has the same type of piece.
        filed.sort()
        columns = zip(*filed)  # noqa: B905
        heads, ranks, kinds, pieces, needs, filed_metas, normals, written_as = columns
        base = len(metas)
        metas.extend(filed_metas)
        if normals != written_as:
            for offset, normal, pattern in zip(count(), normals, written_as):
                if normal != pattern:
                    originals[base + offset] = pattern
        # Where the entries of each plain prefix start: all heads are plain
        # prefixes, so those of one end where those of the next start.
        ends = dict(zip(heads, range(1, len(heads) + 1)))  # noqa: B905
        sizes = [0] * (len(plain) + 1)
        start = 0
        for head, end in ends.items():
            sizes[bisect_left(plain, head) + 1] = end - start
            start = end
        starts = list(accumulate(sizes))
        return _Headed(
            _indices(starts), needs, pieces, array("q", ranks), bytes(kinds), base
        )

    def _find(self, url: str, verdict_only: bool = False) -> int:
        """The entry deciding for ``url``, or a negative code; with
        ``verdict_only``, perhaps another entry that gives the same verdict."""
        # Hot path, written for speed: one regex for the usual URL shape,
        # one bisection for the plain prefixes and heads, C-level string
        # tests for the rest, everything in local variables.
        # The plain prefixes are kept as bytes (smaller), the rest as str
        # (bytes substring tests are slower): the path is needed as both.
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
        # The greatest prefix not after the path: the longest one the path
        # starts with, or a string that one of those is a prefix of.
        node = bisect_right(plain, path) - 1
        if node >= 0 and not path.startswith(plain[node]):
            parents = self._parent
            if parents is None:
                node = _NO_RULE
            else:
                node = parents[node]
                while node >= 0 and not path.startswith(plain[node]):
                    node = parents[node]
        special = self._special
        if special is None:
            return node
        contains, ends, headed, verdict = special
        meta = self._meta
        parents = self._parent
        best = node
        if headed is not None:
            # The longest plain prefix is the first one from there on that
            # is not only a head.
            while best >= 0 and not meta[best]:
                best = _NO_RULE if parents is None else parents[best]
        if (
            verdict_only
            and verdict >= 0
            and (meta[best] & 1 == verdict if best >= 0 else verdict)
        ):
            # No other entry could give another verdict.
            return best
        # The best special entry that matches, found table by table: in
        # each, the first entry that matches is its best; ranks are negated,
        # lower is better (see _rank()).  The plain prefix is ranked only if
        # one matches.
        candidate = _NO_RULE
        bound = 0
        if contains is not None or ends is not None:
            rest = text[1:]
            if contains is not None:
                texts, ranks, base = contains
                for needle in texts:
                    if needle in rest:
                        index = texts.index(needle)
                        candidate = base + index
                        bound = ranks[index]
                        break
            if ends is not None:
                texts, ranks, base = ends
                if rest.endswith(texts):
                    for needle in texts:
                        if rest.endswith(needle):
                            index = texts.index(needle)
                            if ranks[index] < bound:
                                candidate = base + index
                                bound = ranks[index]
                            break
        if headed is not None:
            starts, needs, pieces, ranks, tails, base = headed
            # The entries filed under each head the path starts with: that
            # node and its parents.
            while node >= 0:
                start = starts[node]
                stop = starts[node + 1]
                if start < stop:
                    size = len(plain[node])
                    # A text each entry needs somewhere in the path rules
                    # out most of them in one test.
                    for index in range(start, stop):
                        needed = needs[index]
                        if needed not in text:
                            continue
                        rank = ranks[index]
                        if rank >= bound:
                            break
                        tail = tails[index]
                        if tail <= _FIND_STAR:
                            if text.find(needed, size) == -1:
                                continue
                        elif tail == _SUFFIX:
                            if len(text) - len(needed) < size or not text.endswith(
                                needed
                            ):
                                continue
                        elif tail == _END:
                            if len(text) != size:
                                continue
                        elif tail <= _WILDCARDS_END and not _wildcards_match(
                            text, size, pieces[index], tail == _WILDCARDS_END
                        ):
                            continue
                        candidate = base + index
                        bound = rank
                        break
                node = _NO_RULE if parents is None else parents[node]
        if candidate >= 0 and (
            best < 0 or bound < -_rank(len(plain[best]), meta[best])
        ):
            return candidate
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
        # Entries filed by head come last.
        headed = special.headed
        if headed is not None and entry >= headed.base:
            index = entry - headed.base
            head = self._plain[bisect_right(headed.starts, index) - 1]
            return _untail(head.decode(), headed.tails[index], headed.pieces[index])
        contains = special.contains
        if contains is not None and entry - contains.base < len(contains.texts):
            return "/*" + contains.texts[entry - contains.base]
        assert special.ends is not None
        return "/*" + special.ends.texts[entry - special.ends.base] + "$"

    def explain(self, url: str) -> Decision:
        """The decision for ``url`` (absolute, or a ``/``-rooted path)."""
        entry = self._find(url)
        if entry < 0:
            return ROBOTS_TXT if entry == _ROBOTS_TXT else DEFAULT_ALLOW
        # Made afresh: a crawl asks many origins in turn, so a cache of
        # decisions would mostly miss, and making one costs about as much.
        # Hot path: the pattern of a plain prefix without a spelling of its
        # own is read here, the rest by _pattern().
        plain = self._plain
        originals = self._originals
        if entry < len(plain) and (originals is None or entry not in originals):
            pattern = plain[entry].decode()
        else:
            pattern = self._pattern(entry)
        meta = self._meta[entry]
        if meta & 1:
            if not pattern:
                # An empty Disallow that the profile reads as Allow-all.
                rule = _new(Rule, (False, "", meta >> 1))
                return _new(Decision, (True, EMPTY_DISALLOW, rule))
            rule = _new(Rule, (True, pattern, meta >> 1))
            return _new(Decision, (True, "rule_allow", rule))
        rule = _new(Rule, (False, pattern, meta >> 1))
        return _new(Decision, (False, "rule_disallow", rule))

    def is_allowed(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a ``/``-rooted path) may be crawled."""
        entry = self._find(url, True)
        return entry < 0 or self._meta[entry] & 1 == 1

    @property
    def content_signals(self) -> dict[str, bool | str]:
        """The Content-Signal values that apply (a new dict each time)."""
        return dict(self._signals)

    @property
    def content_usage(self) -> tuple[UsageRule, ...]:
        """The Content-Usage rules that apply, in file order."""
        return self._usage

    def _written(self) -> tuple[bytes, list[str]]:
        """The patterns of the entries this matcher answers with, as
        written, without making a rule of each: the plain prefixes of ASCII
        kept as written, one a line in one string, and the other patterns.
        A rule is one entry, but for Google's reading of an Allow of
        ``.../index.html``, which also allows ``.../``: two, spelt alike.

        For the memory store's size estimate, which a robots.txt of tens of
        thousands of rules must not turn into tens of milliseconds.
        """
        plain = self._plain
        meta = self._meta
        size = len(plain)
        # The entries with a spelling of their own are among the others,
        # and a head that is no rule of its own has meta 0.
        spelt = [entry for entry in self._originals or () if entry < size]
        kept = list(meta[:size])
        for entry in spelt:
            kept[entry] = 0
        lines = list(compress(plain, kept))
        others = [self._pattern(entry) for entry in spelt if meta[entry]]
        others.extend(map(self._pattern, range(size, len(meta))))
        text = b"\n".join(lines)
        if not text.isascii():
            # A profile that keeps octets beyond ASCII as they are.
            others.extend(
                line.decode("utf-8", "surrogatepass")
                for line in lines
                if not line.isascii()
            )
            text = b"\n".join(line for line in lines if line.isascii())
        return text, others

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
                # 0: a head that is no rule of its own.
                if meta
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
            f"entries={len(self._meta) - self._meta.count(0)} "
            f"crawl_delay={self.crawl_delay!r}>"
        )


def compile(document: Document, user_agent: str) -> Matcher:
    """A :class:`Matcher` answering for ``user_agent`` (its product token).

    The document keeps it (for a few agents), so asking again costs a
    lookup: ``is_allowed(document, agent, url)`` in a loop compiles once.
    A document whose groups :func:`~scrapy_rfc9309.parse.parse` has not
    read yet is read only as far as the groups that apply.
    """
    matchers = document._matchers
    matcher = matchers.get(user_agent)
    if matcher is None:
        text = document._text
        if text is None or document.profile not in _FROM_TEXT:
            matcher = Matcher(document, user_agent)
        else:
            matcher = _compile_text(text, document.profile, user_agent)
        if len(matchers) >= _MATCHERS_PER_DOCUMENT:
            matchers.clear()
        matchers[user_agent] = matcher
    return matcher


# Agents a document keeps a matcher for: a crawler asks for one or two.
_MATCHERS_PER_DOCUMENT = 4
# The profiles whose rules for one agent parse.rules_for() reads in full
# from the text: it selects groups by product token (a bounded profile
# selects by its own rules, from the whole document) and leaves empty
# patterns out (which Yandex reads as "Allow: /").
_FROM_TEXT = frozenset(
    name
    for name, rules in RULES.items()
    if rules.selectors is None and rules.empty_disallow == "inert"
)


# The product tokens of the agents compiled for (a crawler has one or two).
_TOKENS: dict[str, str] = {}
_TOKENS_SIZE = 64


def _compile_text(text: str, profile: Profile, user_agent: str) -> Matcher:
    """The matcher of the robots.txt ``text`` (as ``body_text`` gives it),
    read only as far as the groups that apply to ``user_agent``."""
    token = _TOKENS.get(user_agent)
    if token is None:
        token = product_token(user_agent)
        if len(_TOKENS) < _TOKENS_SIZE:
            _TOKENS[user_agent] = token
    patterns, metas, delay, signals, usage = rules_for(text, profile, token)
    return Matcher.from_rules(profile, patterns, metas, delay, signals, usage)


def explain(document: Document, user_agent: str, url: str) -> Decision:
    """Why ``url`` may or may not be crawled by ``user_agent``."""
    # Called in loops: the document's matcher is looked up here first.
    matcher = document._matchers.get(user_agent) or compile(document, user_agent)
    return matcher.explain(url)


def is_allowed(document: Document, user_agent: str, url: str) -> bool:
    """Whether ``user_agent`` may crawl ``url`` (absolute, or ``/``-rooted)."""
    # Called in loops: the document's matcher is looked up here first.
    matcher = document._matchers.get(user_agent) or compile(document, user_agent)
    return matcher.is_allowed(url)


def crawl_delay(document: Document, user_agent: str) -> float | None:
    """The Crawl-delay of the groups that apply to ``user_agent`` (the
    largest, if several give one)."""
    return compile(document, user_agent).crawl_delay


def content_signals(document: Document, user_agent: str) -> dict[str, bool | str]:
    """The Content-Signal values of the groups that apply to ``user_agent``
    (``no`` wins when they differ)."""
    return compile(document, user_agent).content_signals
