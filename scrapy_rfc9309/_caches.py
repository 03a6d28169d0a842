"""Caches keyed by what sites send, bounded in bytes.

The parser and matcher keep small caches of text they have seen before
(spellings of keys, User-agent values, escaped patterns, hosts), shared by
every origin of a crawl: a handful of spellings cover nearly every file.
The text comes from the sites, so each cache is bounded in bytes, not in
entries: a key longer than the cache's ``max_key`` is never kept (its answer
is computed each time), and a cache that an entry would take past its
``max_bytes`` is full: it takes nothing more until it is renewed.  Every
:data:`RENEW_EVERY` robots.txt files parsed (:func:`renew`), each full
cache is emptied and a new generation starts, so a cache never holds more
than its budget, and keys that filled it (a hostile origin's) cannot keep
the others out for good.  A hostile origin can cost the others hits (their
answers computed again), never an answer: every entry is a function of its
key alone.

The hot path stays one ``dict.get`` on a plain dict; a miss checks ``full``
before it calls :meth:`BoundedCache.put`, which checks the bounds.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["CACHES", "BoundedCache", "held_bytes", "max_bytes"]

K = TypeVar("K")
V = TypeVar("V")

# What a dict entry costs beyond its key and value (hash, pointers, and the
# free slots of its table), erring high.
_ENTRY = 100
_sizeof = sys.getsizeof

#: Every bounded cache, by name.
CACHES: dict[str, BoundedCache[object, object]] = {}


class BoundedCache(Generic[K, V]):
    """A dict (:attr:`data`) of at most ``max_bytes`` (keys, values and
    entries as estimated), whose keys of more than ``max_key`` characters
    are not kept.  Read :attr:`data` (a plain dict: a subclass's lookups
    are slower); add with :meth:`put` only, unless :attr:`full`."""

    __slots__ = ("data", "full", "generations", "held", "max_bytes", "max_key", "name")

    def __init__(self, name: str, max_bytes: int, max_key: int) -> None:
        #: The entries; emptied in place, so a reference to it stays good.
        self.data: dict[K, V] = {}
        self.name = name
        self.max_bytes = max_bytes
        self.max_key = max_key
        #: The bytes the entries take, as estimated.
        self.held = 0
        #: Whether an entry was turned away for want of room.
        self.full = False
        #: How many times the cache was renewed while full.
        self.generations = 0
        CACHES[name] = self  # type: ignore[assignment]

    def put(self, key: K, value: V, size: int | None = None) -> None:
        """Keep ``value`` for ``key`` (a ``str``, or anything whose
        ``len()`` bounds its size) unless the key is too long or there is
        no room; ``size``, the bytes key and value take, defaults to their
        ``sys.getsizeof``."""
        if len(key) > self.max_key:  # type: ignore[arg-type]
            return
        cost = _ENTRY + (_sizeof(key) + _sizeof(value) if size is None else size)
        held = self.held + cost
        if held > self.max_bytes:
            self.full = True
            return
        self.data[key] = value
        self.held = held

    def clear(self) -> None:
        self.data.clear()
        self.held = 0
        self.full = False

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[K]:
        return iter(self.data)

    def __getitem__(self, key: K) -> V:
        return self.data[key]

    def __repr__(self) -> str:
        return (
            f"<BoundedCache {self.name} entries={len(self.data)} "
            f"held={self.held}/{self.max_bytes}>"
        )


#: How many robots.txt files are parsed between two renewals of the full
#: caches.
RENEW_EVERY = 1000
_parsed = [0]


def renew() -> None:
    """Count one robots.txt parsed; every :data:`RENEW_EVERY`, empty the
    caches that are full."""
    _parsed[0] += 1
    if _parsed[0] >= RENEW_EVERY:
        _parsed[0] = 0
        for cache in CACHES.values():
            if cache.full:
                cache.clear()
                cache.generations += 1


def held_bytes() -> int:
    """The bytes all bounded caches hold, as estimated."""
    return sum(cache.held for cache in CACHES.values())


def max_bytes() -> int:
    """The most all bounded caches together may hold."""
    return sum(cache.max_bytes for cache in CACHES.values())
