"""The robots.txt data model (:class:`Document`, its groups, rules and
records) and :func:`parse`, which reads a body into it with the reader of
:mod:`scrapy_rfc9309._read`.

Pure: no Scrapy, no Twisted, no I/O.  :func:`parse` never raises on content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import FrozenInstanceError, replace
from typing import Any

from ._agents import applicable_groups, merge_groups, product_token
from ._bytes import MAX_LINE_BYTES, body_text, oversize_allows_all
from ._caches import renew
from ._model import (
    Group,
    Parts,
    Profile,
    Record,
    Rule,
    UsageRule,
    check_profile,
    parse_crawl_delay,
)
from ._read import read_document
from .licenses import license_records
from .profiles import (
    BING,
    GOOGLE,
    MAX_BYTES,
    PROFILES,
    RFC9309,
    YANDEX,
    effective_max_bytes,
)

__all__ = [
    "BING",
    "GOOGLE",
    "MAX_LINE_BYTES",
    "PROFILES",
    "RFC9309",
    "YANDEX",
    "Document",
    "Group",
    "Profile",
    "Record",
    "Rule",
    "UsageRule",
    "parse",
    "product_token",
]

_set = object.__setattr__


class Document:
    """A parsed robots.txt.

    ``groups`` in file order (not merged), ``sitemaps`` (distinct, in file
    order), ``records`` (every other line read as ``name: value``), and the
    ``profile`` it was parsed with, which matching follows.

    Frozen, picklable and comparable by those four.  :func:`parse` reads
    them only when first asked for: answering for an agent reads only the
    groups that apply to it.  The document keeps the matchers it compiled
    (a few agents), which are no part of its value.
    """

    __slots__ = ("_matchers", "_parts", "_text", "profile")
    _parts: Parts | None
    #: The text not read yet (``None`` once read).
    _text: str | None
    _matchers: dict[str, Any]
    profile: Profile

    def __init__(
        self,
        groups: tuple[Group, ...] = (),
        sitemaps: tuple[str, ...] = (),
        records: tuple[Record, ...] = (),
        profile: Profile = RFC9309,
    ) -> None:
        _set(self, "_parts", (groups, sitemaps, records))
        _set(self, "_text", None)
        _set(self, "_matchers", {})
        _set(self, "profile", profile)

    @classmethod
    def _unread(cls, text: str, profile: Profile) -> Document:
        """The document of ``text`` (as :func:`body_text` gives it), read
        when first needed."""
        document = cls(profile=profile)
        _set(document, "_parts", None)
        _set(document, "_text", text)
        return document

    def _read(self) -> Parts:
        parts = self._parts
        if parts is None:
            text = self._text
            if text is None:
                # Another thread has just read it (parts set before text).
                return self._read()
            # Threads may both read it: the same value either way.
            parts = read_document(text, self.profile)
            _set(self, "_parts", parts)
            _set(self, "_text", None)
        return parts

    @property
    def groups(self) -> tuple[Group, ...]:
        """The groups, in file order (not merged)."""
        return self._read()[0]

    @property
    def sitemaps(self) -> tuple[str, ...]:
        """The sitemap URLs, distinct, in file order."""
        return self._read()[1]

    @property
    def records(self) -> tuple[Record, ...]:
        """Every other line read as ``name: value``."""
        return self._read()[2]

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Document)
        return self.profile == other.profile and self._read() == other._read()

    def __hash__(self) -> int:
        return hash((self._read(), self.profile))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Document, (*self._read(), self.profile))

    def __repr__(self) -> str:
        groups, sitemaps, records = self._read()
        return (
            f"Document(groups={groups!r}, sitemaps={sitemaps!r}, "
            f"records={records!r}, profile={self.profile!r})"
        )

    def for_agent(self, user_agent: str) -> Document:
        """Only what is needed to answer for ``user_agent``: the groups
        that apply to it merged into one (or none), the sitemaps and the
        ``License`` records that apply to it.  It gives the same decisions
        and line numbers for that agent as the whole document."""
        groups = applicable_groups(self, product_token(user_agent))
        merged = () if not groups else (merge_groups(groups),)
        licenses = license_records(self.records, self.groups, groups)
        return Document(merged, self.sitemaps, licenses, self.profile)

    def without_lines(self) -> Document:
        """This document with every line number set to 0, to compare content:
        ``parse(stringify(d)).without_lines() == d.without_lines()``."""
        return Document(
            tuple(
                replace(
                    group,
                    rules=tuple(rule._replace(line=0) for rule in group.rules),
                    line=0,
                    content_usage=tuple(
                        rule._replace(line=0) for rule in group.content_usage
                    ),
                )
                for group in self.groups
            ),
            self.sitemaps,
            tuple(record._replace(line=0) for record in self.records),
            self.profile,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form, read back by :meth:`from_dict`."""
        return {
            "profile": self.profile,
            "groups": [
                {
                    "user_agents": list(group.user_agents),
                    "rules": [
                        ["allow" if rule.allow else "disallow", rule.pattern, rule.line]
                        for rule in group.rules
                    ],
                    "crawl_delay": group.crawl_delay,
                    "content_signals": dict(group.content_signals),
                    "line": group.line,
                    "content_usage": [list(rule) for rule in group.content_usage],
                }
                for group in self.groups
            ],
            "sitemaps": list(self.sitemaps),
            "records": [list(record) for record in self.records],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Document:
        """Read :meth:`to_dict`'s form back; ``ValueError`` if it is not one."""
        try:
            profile = data["profile"]
            if profile not in PROFILES:
                raise ValueError(f"unknown profile {profile!r}")
            groups = tuple(_group_from_dict(item) for item in data["groups"])
            sitemaps = tuple(_str(url) for url in data["sitemaps"])
            records = tuple(
                Record(_str(name), _str(value), _int(line))
                for name, value, line in data.get("records", ())
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a robots.txt document: {exc!r}") from exc
        return cls(groups, sitemaps, records, profile)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


# Line numbers a stored document may hold: what a parse could give.
_MAX_LINE = 2**31 - 1


def _int(value: Any) -> int:
    """A stored line number (0: none)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    if not 0 <= value <= _MAX_LINE:
        raise ValueError(f"line number out of range: {value!r}")
    return value


def _group_from_dict(data: Mapping[str, Any]) -> Group:
    rules = []
    for kind, pattern, line in data["rules"]:
        if kind not in ("allow", "disallow"):
            raise ValueError(f"unknown rule kind {kind!r}")
        rules.append(Rule(kind == "allow", _str(pattern), _int(line)))
    delay = data.get("crawl_delay")
    if delay is not None:
        # What parse_crawl_delay would have kept: a finite number >= 0.
        if isinstance(delay, bool) or not isinstance(delay, (int, float)):
            raise TypeError(f"crawl_delay: {delay!r}")
        delay = parse_crawl_delay(str(delay))
        if delay is None:
            raise ValueError(f"crawl_delay out of range: {data['crawl_delay']!r}")
    signals = {}
    for key, value in dict(data.get("content_signals") or {}).items():
        if not isinstance(value, (bool, str)):
            raise TypeError(f"content signal {key!r}: {value!r}")
        signals[_str(key)] = value
    usage = tuple(
        UsageRule(_str(path), _str(preference), _int(line))
        for path, preference, line in data.get("content_usage") or ()
    )
    return Group(
        tuple(_str(agent) for agent in data["user_agents"]),
        tuple(rules),
        delay,
        signals,
        _int(data.get("line", 0)),
        usage,
    )


def parse(
    source: str | bytes, *, profile: Profile = RFC9309, max_bytes: int = MAX_BYTES
) -> Document:
    """Read ``source`` as a robots.txt; never raises on its content.

    ``profile`` is ``"rfc9309"`` (default), ``"google"``, ``"yandex"`` or
    ``"bing"`` (see :mod:`scrapy_rfc9309.profiles`): which keys are read
    (Google reads them by prefix) and how matching behaves.  Input past
    ``max_bytes`` octets is ignored, cut on the last whole line (Yandex:
    over 512,000 octets, everything is allowed).  BOM, CR / LF / CRLF, NUL,
    invalid UTF-8, HTML and binary junk are read as Google's parser reads
    them.
    """
    check_profile(profile)
    max_bytes = effective_max_bytes(profile, max_bytes)
    if oversize_allows_all(source, max_bytes, profile):
        # Profile hook: Yandex reads a body over its limit as no robots.txt.
        return Document(profile=profile)
    renew()  # one robots.txt more: full caches are renewed now and then
    return Document._unread(body_text(source, max_bytes), profile)
