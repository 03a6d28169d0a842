"""The lookup tables of a :class:`~scrapy_rfc9309.match.Matcher`, built from
the rules of one agent (:func:`build`): the plain prefixes, sorted, with the
longest other prefix each starts with, and the entries that are not plain
prefixes (wildcards, anchors), best first.  The query is in
:mod:`scrapy_rfc9309.match`.  Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import and_, is_not
from typing import NamedTuple

from .profiles import Percent, ProfileRules
from .urls import SAFE_CLASS, SAFE_OCTETS, normal_pattern

# A pattern that is not a plain prefix of octets that stand for
# themselves (which reads the same in every profile).
_SPECIAL = re.compile(f"[^{SAFE_CLASS}]").search
# Whether normalising may change a pattern, per way of normalising (see
# scrapy_rfc9309.profiles.Percent): any octet but those, "*" and a final
# "$" (see normalize_pattern()); "%" or an octet outside ASCII (Google's
# escaping); an octet outside ASCII.
_CHANGES = {
    "normalize": re.compile(f"[^{SAFE_CLASS}*$\n]|\\$[^\n]").search,
    "escape": re.compile(r"[^\x00-$&-\x7f]").search,
    "verbatim": re.compile(r"[^\x00-\x7f]").search,
}


class Special(NamedTuple):
    """The entries that are not plain prefixes (wildcards, anchors), best
    first: by rank, then in file order."""

    #: The text before each one's first "*" (before the final "$" of a
    #: pattern without one): a path must start with it.
    heads: tuple[str, ...]
    #: For each entry, a text the path must hold ("" if none).
    needs: tuple[str, ...]
    #: What follows each head: the text after its one "*" (a str), the
    #: texts after each of its "*"s (a tuple), or ``None`` (no "*": "head$").
    tails: tuple[str | tuple[str, ...] | None, ...]
    #: Whether each ends with "$", one octet each.
    anchored: bytes
    #: Negated ranks (see rank_of()), ascending: lower is better.
    ranks: array[int]
    #: The number of the first entry.
    base: int
    #: The verdict all of them give (1 allow, 0 disallow), -1 if they differ.
    verdict: int


# An entry while compiling: (negated rank, number, head, needed text, tail,
# anchored, meta, pattern as written, or "" if it is the normalised
# pattern).
_Filed = tuple[int, int, str, str, "str | tuple[str, ...] | None", bool, int, str]

# The rank of an entry as one integer: pattern length, then Allow before
# Disallow, then the earlier line (RFC 9309 2.2.2, and which rule reports).
# Lines stay below 2 ** 40 (a terabyte of robots.txt).
LINE_BITS = 40


def rank_of(size: int, meta: int) -> int:
    """The rank of an entry of normalised length ``size`` and ``meta``
    (``line << 1 | allow``): the higher one wins."""
    return ((size << 1 | meta & 1) << LINE_BITS) - (meta >> 1)


def _specificity(pattern: str) -> int:
    """How long a normalised ``pattern`` counts for Yandex: its octets
    other than ``*`` and a final ``$`` (``StrLenWithoutStars``); a lone
    ``*`` counts as the ``/*`` Yandex reads it as."""
    size = len(pattern) - pattern.count("*") - pattern.endswith("$")
    return size if size or not pattern.startswith("*") else 1


def pattern_of(head: str, tail: str | tuple[str, ...] | None, anchored: int) -> str:
    """The normalised pattern of an entry of ``head``."""
    if tail is not None:
        head += "*" + (tail if tail.__class__ is str else "*".join(tail))
    return head + "$" if anchored else head


def _indices(values: list[int]) -> array[int]:
    """Indices into a matcher's tables (-1: none): two octets each, unless
    a table is over 32,767 entries long (four)."""
    try:
        return array("h", values)
    except OverflowError:
        return array("i", values)


def _uints(values: list[int]) -> array[int]:
    # Two octets an entry (lines up to 32,767), unless a line number needs more.
    largest = max(values) if values else 0
    typecode = "H" if largest < 1 << 16 else "I" if largest < 1 << 32 else "Q"
    return array(typecode, values)


def _parents(prefixes: tuple[bytes, ...]) -> array[int] | None:
    """For each of the sorted ``prefixes``, the index of the longest other
    one that it starts with (-1: none); ``None`` if none has one."""
    # In sorted order a string's prefixes come before it, and every string
    # between one of them and it starts with that prefix too.  So only in a
    # run of prefixes starting with the one before (in few tables) has one a
    # parent but "" or "/": walked, the one before's prefixes on a stack.
    size = len(prefixes)
    if size < 2:
        return None
    empty = 0 if not prefixes[0] else -1
    slash = bisect_left(prefixes, b"/")
    if slash == size or prefixes[slash] != b"/":
        slash = size
    parents = [empty] * size
    # Every string from "/" to "0" (the octet after "/") starts with "/".
    end = bisect_left(prefixes, b"0", slash)
    parents[slash + 1 : end] = [slash] * (end - slash - 1)
    parents[0] = -1
    # Those starting with the one before ("/" aside), at C speed.
    tails = prefixes[1:]
    nested = list(map(is_not, map(bytes.removeprefix, tails, prefixes[:-1]), tails))
    if slash < size - 1:
        nested[slash] = False
    walked = 0
    for index in compress(range(1, size), nested):
        if index < walked:
            continue
        stack = [index - 1]
        while index < size:
            prefix = prefixes[index]
            while stack and not prefix.startswith(prefixes[stack[-1]]):
                stack.pop()
            if not stack:
                break
            parents[index] = stack[-1]
            stack.append(index)
            index += 1
        walked = index
    return _indices(parents) if max(parents) >= 0 else None


def _specials(patterns: Iterable[str], found: set[str], ascii_only: bool) -> list[str]:
    """Those of ``patterns`` (holding the special ASCII octets ``found``,
    and only ASCII or not) that are not plain prefixes of octets that
    stand for themselves, found with the cheapest test per pattern that
    tells ("in" is quicker than any regex)."""
    if not found and ascii_only:
        return []
    if not found <= _USUAL_SPECIAL or not ascii_only:
        return [pattern for pattern in patterns if _SPECIAL(pattern)]
    if len(found) == 1:
        octet = next(iter(found))
        return [pattern for pattern in patterns if octet in pattern]
    return [
        pattern
        for pattern in patterns
        if "*" in pattern or "$" in pattern or "%" in pattern
    ]


# The octets that make most special patterns special.
_USUAL_SPECIAL = frozenset("*$%")
_WILDCARDS = frozenset("*$")


def _normalized(
    patterns: list[str], percent: Percent, found: set[str], ascii_only: bool
) -> list[str]:
    """``patterns`` (holding the special ASCII octets ``found``, and only
    ASCII or not) normalised as the profile's ``percent`` says (see
    scrapy_rfc9309.profiles), looking only at those it may change."""
    if (
        ascii_only
        and found <= _WILDCARDS
        and ("$" not in found or percent != "normalize")
    ):
        # Wildcards, and anchors but in the rfc9309 profile (a "$" before
        # the end): nothing to normalise.
        return patterns
    changes = _CHANGES[percent]
    if changes("\n".join(patterns)) is None:
        # Nearly always: one search of their text tells.
        return patterns
    return [
        normal_pattern(pattern, percent) if changes(pattern) else pattern
        for pattern in patterns
    ]


def _earliest(patterns: Sequence[str], metas: Sequence[int]) -> dict[str, int]:
    """Each of ``patterns`` -> its meta: of its earliest line, unless an
    Allow of the same pattern wins the tie."""
    # Nearly always each pattern once: then any order of building will do,
    # and in file order is quickest.
    earliest = dict(zip(patterns, metas))  # noqa: B905 (see build())
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


# The metas of a matcher without entries (never written to, so shared).
_NO_METAS = array("I")

#: A matcher's tables: the metas (``line << 1 | allow`` of each entry),
#: the plain prefixes, the parent of each, the patterns as written where
#: they differ from what the tables tell, and the entries that are not
#: plain prefixes.
Tables = tuple[
    "array[int]",
    tuple[bytes, ...],
    "array[int] | None",
    "dict[int, str] | None",
    Special | None,
]
_NO_TABLES: Tables = (_NO_METAS, (), None, None, None)


def build(rules: ProfileRules, patterns: Sequence[str], metas: list[int]) -> Tables:
    """The tables for the ``patterns`` (not empty, in file order) of the
    rules that apply, with ``line << 1 | allow`` of each (``metas``), read
    as the profile's ``rules`` say.

    The plain prefixes are one sorted table, numbered from 0; the other
    entries follow, best first.

    Its zip() calls go without ``strict=True`` (0.15 us a call), on
    sequences equal in length by construction.
    """
    if not patterns:
        return _NO_TABLES
    joined = "".join(patterns)
    if "\n" in joined:
        # Only a hand-built Rule holds a line break: read as a URL carries
        # it (the tables are built from newline-joined text).
        patterns = [pattern.replace("\n", "%0A") for pattern in patterns]
        joined = "".join(patterns)
    index_html = rules.index_html and ("/index.htm" in joined or "%" in joined)
    # Each pattern once, with the meta of the rule of it that would win.
    prefixes = _earliest(patterns, metas)
    # The patterns with a wildcard or octets to normalise, told by the
    # special ASCII octets there are, found at C speed (deleting the others
    # is far quicker than a regex over the text).
    found = set(joined.encode("ascii", "ignore").translate(None, SAFE_OCTETS).decode())
    ascii_only = joined.isascii()
    specials = _specials(prefixes, found, ascii_only)
    if not specials and not index_html:
        # Only plain prefixes (most files): no pattern needs a closer look.
        plain = sorted(prefixes)
        encoded = _encoded(plain)
        metas = list(map(prefixes.__getitem__, plain))
        return _uints(metas), encoded, _parents(encoded), None, None
    special_metas = list(map(prefixes.pop, specials))
    normals = _normalized(specials, rules.percent, found, ascii_only)
    if index_html:
        normals = _index_html(prefixes, specials, special_metas, list(normals))
    # Prefixes only once normalised: normalised -> as written ("" if alike).
    written: dict[str, str] = {}
    filed = _filed(
        specials, special_metas, normals, rules.rank == "length", prefixes, written
    )
    plain = sorted(prefixes)
    metas = list(map(prefixes.__getitem__, plain))
    originals = {
        bisect_left(plain, prefix): spelt for prefix, spelt in written.items() if spelt
    }
    encoded = _encoded(plain)
    special = _special(filed, metas, originals) if filed else None
    return _uints(metas), encoded, _parents(encoded), originals or None, special


def _index_html(
    prefixes: dict[str, int], specials: list[str], metas: list[int], normals: list[str]
) -> list[str]:
    """Google: an Allow of ".../index.htm..." also allows ".../$", an entry
    of its own (also for a plain prefix, normal as written): appended to
    the ``specials``, their ``metas`` and ``normals`` (returned)."""
    plain = [
        (pattern, meta, pattern)
        for pattern, meta in prefixes.items()
        if meta & 1 and "/index.htm" in pattern
    ]
    for pattern, meta, normal in [*zip(specials, metas, normals), *plain]:  # noqa: B905
        slash = normal.rfind("/")
        if meta & 1 and normal.startswith("/index.htm", slash):
            specials.append(pattern)
            metas.append(meta)
            normals.append(normal[: slash + 1] + "$")
    return normals


def _filed(
    specials: list[str],
    metas: list[int],
    normals: list[str],
    by_length: bool,
    prefixes: dict[str, int],
    written: dict[str, str],
) -> list[_Filed]:
    """The ``specials`` (with their ``metas`` and ``normals``) as entries;
    those that are plain prefixes once normalised go into ``prefixes``
    (their spelling, "" if alike, into ``written``).  ``by_length``: ranked
    by normalised length, else as Yandex ranks them (without "*" and a
    final "$")."""
    filed: list[_Filed] = []
    heads: dict[str, str] = {}
    tail: str | tuple[str, ...] | None
    sizes = map(len if by_length else _specificity, normals)
    for pattern, meta, normal, size in zip(specials, metas, normals, sizes):  # noqa: B905
        anchored = normal[-1:] == "$"
        head, star, rest = (normal[:-1] if anchored else normal).partition("*")
        spelt = "" if normal == pattern else pattern
        if star:
            if not anchored and rest[-1:] == "*":
                # A trailing "*" matches anything, even nothing: "/a*b*" is
                # "/a*b" (the entry answers with the pattern as written).
                rest, spelt = rest.rstrip("*"), pattern
            tail = needed = rest
            if "*" in rest:
                tail = tuple(rest.split("*"))
                needed = max(tail, key=len)
        elif anchored:
            tail, needed = None, head
        else:
            # A plain prefix once normalised.
            known = prefixes.get(normal)
            if known is None or rank_of(0, meta) > rank_of(0, known):
                prefixes[normal] = meta
                written[normal] = spelt
            continue
        # Entries of one head share its string (each is cut out on its own).
        head = heads.setdefault(head, head)
        if len(head) > len(needed):
            # The longest text, which rules out the most paths.
            needed = head
        rank = (meta >> 1) - ((size << 1 | meta & 1) << LINE_BITS)  # -rank_of()
        filed.append((rank, len(filed), head, needed, tail, anchored, meta, spelt))
    return filed


def _special(
    filed: list[_Filed], metas: list[int], originals: dict[int, str]
) -> Special:
    """The table of the entries ``filed``, numbered from ``len(metas)`` on
    (their metas appended, their spellings where they differ from the
    normalised pattern put in ``originals``)."""
    # Best first, then in file order: the tuples compare no further.
    filed.sort()
    ranks, _, heads, needs, tails, anchored, filed_metas, spelt = zip(*filed)  # noqa: B905
    base = len(metas)
    metas.extend(filed_metas)
    if any(spelt):
        originals.update(compress(enumerate(spelt, base), spelt))
    # Only their verdicts: those of the plain prefixes were filed first.
    allows = sum(map(and_, filed_metas, repeat(1)))
    verdict = 1 if allows == len(filed) else 0 if not allows else -1
    return Special(
        heads, needs, tails, bytes(anchored), array("q", ranks), base, verdict
    )
