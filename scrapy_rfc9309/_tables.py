"""The lookup tables of a :class:`~scrapy_rfc9309.match.Matcher`, built from
the rules of one agent (:func:`build`): the plain prefixes, sorted, with the
longest other prefix each starts with, and the entries that are not plain
prefixes (wildcards, anchors) filed by shape.  The query is in
:mod:`scrapy_rfc9309.match`.  Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count, repeat
from operator import and_, is_not
from typing import Any, NamedTuple

from .profiles import Percent, ProfileRules
from .urls import SAFE_CLASS, SAFE_OCTETS, normal_pattern

# A pattern that is not a plain prefix of octets that stand for
# themselves (which reads the same in every profile).
_SPECIAL = re.compile(f"[^{SAFE_CLASS}]").search
# Whether normalising may change a pattern: in the rfc9309 profile, any
# octet but those, "*" and a final "$" (see normalize_pattern()); for
# Google's escaping, "%" or an octet outside ASCII.
_CHANGES = re.compile(f"[^{SAFE_CLASS}*$]|\\$.").search
_GOOGLE_CHANGES = re.compile(r"[^\x00-$&-\x7f]").search
# The octets normalising leaves as they are in either profile (a "$" not
# at the end aside): deleting them leaves those to look at.
_UNCHANGED_OCTETS = b"\n*$" + SAFE_OCTETS


# The shapes of a normalised pattern with a "*" (those without one are a
# plain prefix or "head$", told in build()): "/*text" (or "*text"),
# "/*text$", or another, filed by its head (the text before its first "*").
CONTAINS, ENDS, HEADED = range(3)
# What follows the head of a pattern filed by its head: "*text" (or
# "*text*"), "*text$", more wildcards (anchored or not), only "*"s (the head
# is enough), or "$" (the head and nothing more).
FIND, FIND_STAR, SUFFIX, WILDCARDS, WILDCARDS_END, ANY, END = range(7)
#: What matching an entry filed by its head needs (see _tail()).
_Piece = str | tuple[str, ...]


class Texts(NamedTuple):
    """The "/*text" (or "/*text$") entries: the first text the path holds
    (or ends with) is the best of them."""

    #: The texts, highest rank first.
    texts: tuple[str, ...]
    #: Their negated ranks (see rank_of()), ascending.
    ranks: array[int]
    #: The number of the first entry.
    base: int


class Headed(NamedTuple):
    """The entries filed by their head (the text before the first "*"),
    which is among the plain prefixes: those of plain prefix ``i`` are
    ``starts[i]`` to ``starts[i + 1]``, highest rank first."""

    starts: array[int]
    #: For each entry, a text the path must hold somewhere ("" if none).
    needs: tuple[str, ...]
    #: What matching needs, by the kind of tail: a str or a tuple of them
    #: (see _tail()).
    pieces: tuple[Any, ...]
    #: Negated ranks (see rank_of()).
    ranks: array[int]
    #: The kind of tail of each entry (FIND ... END), one octet each.
    tails: bytes
    #: The number of the first entry.
    base: int


class Special(NamedTuple):
    """The entries that are not plain prefixes."""

    contains: Texts | None
    ends: Texts | None
    headed: Headed | None
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


def rank_of(size: int, meta: int) -> int:
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
        return (CONTAINS, "") if body in ("", "/") else (HEADED, pattern)
    # Paths start with "/", so "*text" (text not starting with "/") matches
    # where "/*text" does.
    if body.startswith("/*"):
        text = body[2:]
    elif body.startswith("*") and body[1:2] != "/":
        text = body[1:]
    else:
        return HEADED, pattern
    if "*" in text:
        return HEADED, pattern
    return (ENDS if anchored else CONTAINS), text


def _tail(pattern: str, size: int) -> tuple[int, _Piece]:
    """What follows the head (``size`` characters) of ``pattern``: its kind
    and what matching needs: the text of "*text", "*text*" and "*text$", the
    texts after each "*" of more wildcards, else the pattern itself."""
    tail = pattern[size:]
    if tail == "$":
        return END, pattern
    anchored = tail.endswith("$")
    body = tail[:-1] if anchored else tail.rstrip("*")
    if not body.strip("*"):
        return ANY, pattern
    stars = len(tail) - len(body)
    if body.find("*", 1) == -1 and stars <= 1:
        return (SUFFIX if anchored else (FIND_STAR if stars else FIND)), body[1:]
    parts = tuple((tail[:-1] if anchored else tail)[1:].split("*"))
    return (WILDCARDS_END if anchored else WILDCARDS), parts


def untail(head: str, kind: int, piece: _Piece) -> str:
    """The normalised pattern of an entry filed under ``head``."""
    if isinstance(piece, tuple):
        return head + "*" + "*".join(piece) + ("$" if kind == WILDCARDS_END else "")
    if kind == FIND:
        return head + "*" + piece
    if kind == FIND_STAR:
        return head + "*" + piece + "*"
    if kind == SUFFIX:
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
    if shape == HEADED:
        head = pattern[: pattern.find("*")]
        kind, piece = _tail(pattern, len(head))
        # A text the path must hold: the longest, which rules out the
        # most paths.
        needed = (
            max(piece, key=len)
            if isinstance(piece, tuple)
            else piece
            if kind <= SUFFIX
            else ""
        )
        return (shape, head, kind, piece, needed)
    return (shape, text, 0, "", "")


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
    return set(joined.encode("ascii", "ignore").translate(None, SAFE_OCTETS).decode())


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
            pattern if pattern.isascii() else normal_pattern(pattern, percent)
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
            normal_pattern(pattern, percent) if changes(pattern) else pattern
            for pattern in patterns
        ]
    else:
        octets = joined.encode("ascii").translate(None, _UNCHANGED_OCTETS)
    if normalize:
        # Anything but printable ASCII and "*", or a "$" before the end.
        ends = joined.count("$\n") + joined.endswith("$")
        if joined.count("$") != ends or octets.strip(b"%"):
            return [
                normal_pattern(pattern, percent) if _CHANGES(pattern) else pattern
                for pattern in patterns
            ]
    if b"%" not in octets:
        return patterns
    # Only escapes to normalise (most often): in the patterns that hold one.
    return [
        normal_pattern(pattern, percent) if "%" in pattern else pattern
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

#: A matcher's tables: the metas (``line << 1 | allow`` of each entry, 0
#: for a head that is no rule of its own), the plain prefixes, the parent of
#: each, the patterns as written where they differ from what the tables
#: tell, and the entries that are not plain prefixes.
Tables = tuple[
    "array[int]",
    tuple[bytes, ...],
    "array[int] | None",
    "dict[int, str] | None",
    "Special | None",
]
_NO_TABLES: Tables = (_NO_METAS, (), None, None, None)
# A "/*text" (or "/*text$") entry while compiling: (negated rank, meta,
# text, pattern as written).
_TextItem = tuple[int, int, str, str]


def build(rules: ProfileRules, patterns: Sequence[str], metas: list[int]) -> Tables:
    """The tables for the ``patterns`` (not empty, in file order) of the
    rules that apply, with ``line << 1 | allow`` of each (``metas``), read
    as the profile's ``rules`` say.

    The plain prefixes, and the heads of the entries filed by head, are
    one sorted table, numbered from 0; then come the "/*text" entries
    and the "/*text$" entries in rank order, and the entries filed by
    head.

    Built for speed (parse() then compile() is timed against Protego): the
    zip() calls here go without ``strict=True``, which costs about
    0.15 us a call, on sequences equal in length by construction.
    """
    if not patterns:
        # No rule applies (no group names the agent or "*", or its rules
        # are empty): nothing to build.
        return _NO_TABLES
    joined = "".join(patterns)
    if "\n" in joined:
        # Only a hand-built Rule holds a line break: read as a URL carries
        # it (the tables are built from newline-joined text).
        patterns = [pattern.replace("\n", "%0A") for pattern in patterns]
        joined = "".join(patterns)
    index_html = rules.index_html and "/index.htm" in joined
    # Each pattern once, with the meta of the rule of it that would win.
    prefixes = _earliest(patterns, metas)
    # The patterns with a wildcard or octets to normalise.
    ascii_only = joined.isascii()
    found = _special_octets(joined)
    specials = _specials(prefixes, ascii_only, found) or []
    if not specials and not index_html:
        # Only plain prefixes (most files): no pattern needs a closer look.
        plain = sorted(prefixes)
        encoded = _encoded(plain)
        metas = list(map(prefixes.__getitem__, plain))
        return _uints(metas), encoded, _parents(encoded), None, None
    special_metas = list(map(prefixes.pop, specials))
    # Normalising seldom changes anything: only the patterns it may
    # change are looked at.
    normals = _normalized(specials, rules.percent, ascii_only, found)
    if index_html:
        normals = _index_html(prefixes, specials, special_metas, list(normals))
    # Prefixes only once normalised: normalised -> pattern as written.
    written: dict[str, str] = {}
    texts, filed = _filed(
        specials, special_metas, normals, rules.rank == "length", prefixes, written
    )
    # Each head among the plain prefixes, 0 as its meta if it is no plain
    # prefix itself.
    for item in filed:
        prefixes.setdefault(item[0], 0)
    plain = sorted(prefixes)
    metas = list(map(prefixes.__getitem__, plain))
    originals = {bisect_left(plain, prefix): spelt for prefix, spelt in written.items()}
    contains = _texts(texts[0], "", metas, originals)
    ends = _texts(texts[1], "$", metas, originals)
    encoded = _encoded(plain)
    headed = _headed(plain, filed, metas, originals) if filed else None
    # Only their verdicts: those of the plain prefixes were filed first.
    allows = sum(map(and_, metas[len(plain) :], repeat(1)))
    verdict = 1 if allows == len(metas) - len(plain) else 0 if not allows else -1
    special = Special(contains, ends, headed, verdict)
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
) -> tuple[tuple[list[_TextItem], list[_TextItem]], list[_Filed]]:
    """The ``specials`` (with their ``metas`` and ``normals``) by shape:
    the "/*text" and "/*text$" entries, and those filed by head; those that
    are plain prefixes once normalised go into ``prefixes`` (and their
    spelling into ``written``).  ``by_length``: ranked by normalised
    length, else as Yandex ranks them (without "*" and a final "$")."""
    texts: tuple[list[_TextItem], list[_TextItem]] = ([], [])
    filed: list[_Filed] = []
    # Hot loop, written for speed: the shape of most patterns is read off
    # one regex match a line (see _any_shape() for the others).
    for (head, tail, end, other), pattern, meta, entry in zip(  # noqa: B905
        _ONE_STAR_LINES("\n".join(normals)), specials, metas, normals
    ):
        size = len(entry) if by_length else _specificity(entry)
        rank = (meta >> 1) - ((size << 1 | meta & 1) << _LINE_BITS)
        if not other:
            # "head*tail", then perhaps a "*" or a "$" (end).
            if head == "/" or (not head and tail[:1] != "/"):
                texts[end == "$"].append((rank, meta, tail, pattern))
            elif not tail:
                filed.append((head, rank, ANY, entry, "", meta, entry, pattern))
            else:
                kind = SUFFIX if end == "$" else FIND_STAR if end else FIND
                filed.append((head, rank, kind, tail, tail, meta, entry, pattern))
        elif "*" in other:
            # More wildcards.
            shape, text, kind, piece, needed = _any_shape(entry)
            if shape == HEADED:
                filed.append((text, rank, kind, piece, needed, meta, entry, pattern))
            else:
                texts[shape - CONTAINS].append((rank, meta, text, pattern))
        elif other[-1] == "$":
            # "head$": the head and nothing more.
            filed.append((other[:-1], rank, END, entry, "", meta, entry, pattern))
        else:
            # A plain prefix once normalised.
            known = prefixes.get(entry)
            if known is None or rank_of(0, meta) > rank_of(0, known):
                prefixes[entry] = meta
                if entry == pattern:
                    written.pop(entry, None)
                else:
                    written[entry] = pattern
    return texts, filed


def _texts(
    items: list[_TextItem], suffix: str, metas: list[int], originals: dict[int, str]
) -> Texts | None:
    """The table of the "/*text" (``suffix`` "") or "/*text$" entries
    ``items``, numbered from ``len(metas)`` on (their metas appended)."""
    if not items:
        return None
    # Highest rank first: the first text that matches is the best.
    items.sort()
    ranks, item_metas, item_texts, written_as = zip(*items)  # noqa: B905
    base = len(metas)
    metas.extend(item_metas)
    for offset, (text, pattern) in enumerate(zip(item_texts, written_as)):  # noqa: B905
        if pattern != "/*" + text + suffix:
            originals[base + offset] = pattern
    return Texts(item_texts, array("q", ranks), base)


def _headed(
    plain: list[str], filed: list[_Filed], metas: list[int], originals: dict[int, str]
) -> Headed:
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
    return Headed(
        _indices(starts), needs, pieces, array("q", ranks), bytes(kinds), base
    )
