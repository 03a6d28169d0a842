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
from ._checks import SOURCE, document_parts, expect
from ._model import (
    Group,
    Parts,
    Profile,
    Record,
    Rule,
    UsageRule,
    check_profile,
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
        """Read :meth:`to_dict`'s form back; ``ValueError`` if it is not one
        (a string where a list goes included: it is not read as letters)."""
        return cls(*document_parts(data))


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
    expect(source, SOURCE, "source", "str or bytes")
    check_profile(profile)
    max_bytes = effective_max_bytes(profile, max_bytes)
    if oversize_allows_all(source, max_bytes, profile):
        # Profile hook: Yandex reads a body over its limit as no robots.txt.
        return Document(profile=profile)
    renew()  # one robots.txt more: full caches are renewed now and then
    return Document._unread(body_text(source, max_bytes), profile)
