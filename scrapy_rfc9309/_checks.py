"""What comes from outside, checked: the arguments of the public entry
points, and the dict form of a document (:meth:`Document.from_dict`, what
stores read back from other processes and versions).  Pure.

A wrong argument gets an error naming it and what it should be, rather than
one from deep inside (``'str' object has no attribute '_matchers'``) or a
silent answer (``parse(5)``: five NUL octets).  The per-URL paths check
nothing up front: they call :func:`expect` only once something has failed,
to tell why, and re-raise what failed if the arguments were right.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._model import Group, Profile, Record, Rule, UsageRule, parse_crawl_delay
from .profiles import PROFILES

__all__ = ["DOCUMENT", "SOURCE", "document_parts", "expect"]

#: What a document argument must be.
DOCUMENT = "a Document (from parse() or Document.from_dict())"
#: What ``parse()`` and ``lint()`` read (``bytearray`` and ``memoryview``
#: too, read as bytes).
SOURCE = (str, bytes, bytearray, memoryview)


def expect(value: object, kind: type | tuple[type, ...], name: str, what: str) -> None:
    """``TypeError`` (``"<name> must be <what>, not ..."``) unless
    ``value`` is a ``kind``."""
    if not isinstance(value, kind):
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise TypeError(f"{name} must be {what}, not {type(value).__name__} {shown}")


def document_parts(
    data: Mapping[str, Any],
) -> tuple[tuple[Group, ...], tuple[str, ...], tuple[Record, ...], Profile]:
    """The groups, sitemaps, records and profile of a document's dict form
    (:meth:`~scrapy_rfc9309.parse.Document.to_dict`); ``ValueError`` if it
    is not one."""
    try:
        profile = data["profile"]
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}")
        groups = tuple(map(_group, _list(data["groups"], "groups")))
        sitemaps = tuple(map(_str, _list(data["sitemaps"], "sitemaps")))
        records = tuple(
            Record(_str(name), _str(value), _int(line))
            for name, value, line in _list(data.get("records", ()), "records")
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a robots.txt document: {exc!r}") from exc
    return groups, sitemaps, records, profile


def _list(value: Any, key: str) -> list[Any] | tuple[Any, ...]:
    """``value``, the list at ``key``: a string would read as its letters."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{key}: expected a list, got {value!r:.60}")
    return value


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


def _group(data: Mapping[str, Any]) -> Group:
    """A group of the dict form."""
    rules = []
    for kind, pattern, line in _list(data["rules"], "rules"):
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
        for path, preference, line in _list(
            data.get("content_usage") or (), "content_usage"
        )
    )
    return Group(
        tuple(map(_str, _list(data["user_agents"], "user_agents"))),
        tuple(rules),
        delay,
        signals,
        _int(data.get("line", 0)),
        usage,
    )
