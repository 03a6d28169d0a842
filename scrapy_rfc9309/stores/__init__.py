"""Outcome stores: ``memory`` (default), ``sqlite`` and ``redis``.

``ROBOTS_STORE`` names one of these or gives the import path of an
:class:`~scrapy_rfc9309.stores.base.OutcomeStore` subclass, which is built
with ``scrapy.utils.misc.build_from_crawler``.
"""

from __future__ import annotations

from .base import OutcomeStore, StoreError

STORES = {
    "memory": "scrapy_rfc9309.stores.memory.MemoryStore",
    "redis": "scrapy_rfc9309.stores.redis.RedisStore",
    "sqlite": "scrapy_rfc9309.stores.sqlite.SQLiteStore",
}

__all__ = ["STORES", "OutcomeStore", "StoreError"]
