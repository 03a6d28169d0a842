"""Content-Usage rules compiled once per matcher (per origin), as
Allow/Disallow rules are.

A URL's deciding Content-Usage rules are those whose path is the longest
that matches it (attach-05 section 3.1: lengths counted as for
Allow/Disallow, in octets of the normalised pattern), all of them when
several paths of that length match, else the rules without a path.  The
plain walk (:func:`scrapy_rfc9309.usage.deciding_rules`) matches every
path for every request; the table here matches the paths as one matcher
does its rules.

The distinct paths (once normalised) are filed by length, longest first;
each length has a matcher of its plain paths (at most one of which can
match a URL: they are prefixes of the same length) and one of its paths with
a ``*`` or a ``$`` (one per group the matcher ranks alike: Yandex ranks
paths of one length apart), which gives the earliest that matches; the
others that match are found chunk by chunk (a matcher per chunk of 32),
then path by path in the chunks that match.  When
the matcher ranks patterns by the same length as Content-Usage does (every
profile but Yandex, patterns in ASCII), one matcher of all the paths finds
the longest length that matches in one lookup; otherwise the lengths are
tried longest first.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._bytes import encode
from .match import Matcher
from .parse import Profile, UsageRule
from .profiles import RULES
from .urls import normal_pattern

__all__ = ["UsageTable"]


def _matcher_of(profile: Profile, paths: Sequence[str], ids: Sequence[int]) -> Matcher:
    """A matcher of ``paths`` as Disallow rules, the rule of each on line
    ``id + 1``: a URL that a path matches is disallowed by it (or by a path
    ranked higher)."""
    metas = [(path_id + 1) << 1 for path_id in ids]
    return Matcher.from_rules(profile, paths, metas, limited=False)


def _matched(matcher: Matcher, url: str) -> int:
    """The id of the path deciding for ``url`` in ``matcher``, or -1."""
    rule = matcher.explain(url).rule
    return -1 if rule is None else rule.line - 1


# Paths with a "*" or a "$" of one length are matched in chunks of this
# many: a chunk's matcher rules out all of them in one lookup.
_CHUNK = 32


class _Length:
    """The paths of one length."""

    __slots__ = ("plain", "singles", "special")

    def __init__(
        self,
        profile: Profile,
        written: Sequence[str],
        ids: list[int],
        wild: frozenset[int],
    ) -> None:
        plain = [path_id for path_id in ids if path_id not in wild]
        self.plain = (
            _matcher_of(profile, [written[i] for i in plain], plain) if plain else None
        )
        # The paths with a "*" or a "$", in groups that the matcher ranks
        # alike, so that it gives the earliest of a group that matches: one
        # group, unless the profile ranks patterns by another length
        # (Yandex counts no "*" nor final "$").
        groups: dict[tuple[int, int], list[int]] = {}
        percent = RULES[profile].percent
        for path_id in ids:
            if path_id in wild:
                normal = normal_pattern(written[path_id], percent)
                key = (0, 0)
                if RULES[profile].rank != "length":
                    key = (len(normal), normal.count("*") + normal.endswith("$"))
                groups.setdefault(key, []).append(path_id)
        self.special = [_Special(profile, written, group) for group in groups.values()]
        # One matcher per special path, made when first needed.
        self.singles: dict[int, Matcher] = {}

    def matching(
        self, profile: Profile, written: Sequence[str], url: str, plain: int = -1
    ) -> list[int]:
        """The ids of this length's paths that match ``url``; ``plain`` is
        the plain path known to match, if any (none other can)."""
        found = []
        if plain >= 0:
            found.append(plain)
        elif self.plain is not None:
            path_id = _matched(self.plain, url)
            if path_id >= 0:
                found.append(path_id)
        for group in self.special:
            found.extend(group.matching(profile, written, url, self))
        return found

    def single(
        self, profile: Profile, written: Sequence[str], path_id: int, url: str
    ) -> bool:
        single = self.singles.get(path_id)
        if single is None:
            single = self.singles[path_id] = _matcher_of(
                profile, [written[path_id]], [path_id]
            )
        return not single.is_allowed(url)


class _Special:
    """Paths with a "*" or a "$" of one length that the matcher ranks
    alike: a URL's earliest match among them is what their matcher gives."""

    __slots__ = ("chunks", "matcher")

    def __init__(
        self, profile: Profile, written: Sequence[str], ids: list[int]
    ) -> None:
        self.matcher = _matcher_of(profile, [written[i] for i in ids], ids)
        # Each chunk of the paths, and its matcher once needed.
        self.chunks: list[tuple[list[int], Matcher | None]] = [
            (ids[start : start + _CHUNK], None) for start in range(0, len(ids), _CHUNK)
        ]

    def matching(
        self, profile: Profile, written: Sequence[str], url: str, length: _Length
    ) -> list[int]:
        """The ids of these paths that match ``url``."""
        first = _matched(self.matcher, url)
        if first < 0:
            return []
        chunks = self.chunks
        if len(chunks) == 1 and len(chunks[0][0]) == 1:
            return [first]
        found = []
        for number, (chunk, matcher) in enumerate(chunks):
            if chunk[-1] < first:
                continue
            if chunk[0] <= first:
                # The chunk of the earliest path that matches.
                least = first
            elif len(chunks) > 1:
                if matcher is None:
                    matcher = _matcher_of(profile, [written[i] for i in chunk], chunk)
                    chunks[number] = (chunk, matcher)
                # The earliest path of the chunk that matches (all ranked
                # alike, the earliest line wins).
                least = _matched(matcher, url)
                if least < 0:
                    continue
            found.append(least)
            found.extend(
                path_id
                for path_id in chunk
                if path_id > least and length.single(profile, written, path_id, url)
            )
        return found


class UsageTable:
    """The Content-Usage ``rules`` (in file order) of one matcher, compiled
    for ``profile``."""

    __slots__ = (
        "_all",
        "_by_length",
        "_lengths",
        "_pathless",
        "_paths",
        "_rules",
        "_wild",
    )

    def __init__(self, rules: Sequence[UsageRule], profile: Profile) -> None:
        self._rules = tuple(rules)
        percent = RULES[profile].percent
        ids: dict[str, int] = {}
        # Per path id: the positions of its rules in ``rules``, the path as
        # written (first spelling) and its length.
        paths: list[list[int]] = []
        written: list[str] = []
        lengths: list[int] = []
        pathless: list[int] = []
        for position, rule in enumerate(rules):
            path = rule.path
            if not path:
                pathless.append(position)
                continue
            normal = normal_pattern(path, percent)
            path_id = ids.get(normal)
            if path_id is None:
                path_id = ids[normal] = len(paths)
                paths.append([])
                written.append(path)
                lengths.append(len(encode(normal)))
            paths[path_id].append(position)
        self._paths = tuple(map(tuple, paths))
        self._pathless = tuple(pathless)
        self._lengths = lengths
        wild = self._wild = frozenset(
            path_id for normal, path_id in ids.items() if "*" in normal or "$" in normal
        )
        filed: dict[int, list[int]] = {}
        for path_id, length in enumerate(lengths):
            filed.setdefault(length, []).append(path_id)
        self._by_length = {
            length: (_Length(profile, written, filed[length], wild), written, profile)
            for length in sorted(filed, reverse=True)
        }
        # Lengths as the matcher ranks them, where they are Content-Usage's.
        ranked = RULES[profile].rank == "length" and all(
            normal.isascii() for normal in ids
        )
        self._all = (
            _matcher_of(profile, written, range(len(written)))
            if ranked and len(filed) > 1
            else None
        )

    def deciding(self, url: str) -> tuple[UsageRule, ...]:
        """The rules deciding for ``url``: those of the longest matching
        path (of every such path), else those without a path."""
        found: list[int] = []
        by_length = self._by_length
        every = self._all
        if every is not None:
            path_id = _matched(every, url)
            if path_id >= 0:
                length, written, profile = by_length[self._lengths[path_id]]
                if path_id in self._wild:
                    found = length.matching(profile, written, url)
                else:
                    # The one plain path of its length that matches.
                    found = length.matching(profile, written, url, path_id)
        else:
            for length, written, profile in by_length.values():
                found = length.matching(profile, written, url)
                if found:
                    break
        rules = self._rules
        if not found:
            return tuple(rules[position] for position in self._pathless)
        paths = self._paths
        if len(found) == 1:
            return tuple(rules[position] for position in paths[found[0]])
        return tuple(
            rules[position]
            for position in sorted(
                position for path_id in found for position in paths[path_id]
            )
        )
