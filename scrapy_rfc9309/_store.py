"""The crawl's ``ROBOTS_STORE``, built once for the components that use it.

:class:`~scrapy_rfc9309.RobotsMiddleware` keeps robots.txt outcomes and
Crawl-delay turns in it, :class:`~scrapy_rfc9309.tdmmiddleware.TdmMiddleware`
TDMRep files: one store, so a SQLite or Redis crawl opens one database
connection, not one per component.  Each user takes it with
:func:`crawl_store` and gives it back with :func:`release_store` when the
spider closes; the last one closes it.
"""

from __future__ import annotations

import inspect
import logging
from functools import cache
from typing import TYPE_CHECKING, TypeGuard

from scrapy.utils.misc import build_from_crawler, load_object

from ._config import RobotsConfig
from ._settings import SettingError
from .stores import STORES
from .stores.base import OutcomeStore, StoreError
from .stores.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy.crawler import Crawler

__all__ = [
    "build_store",
    "crawl_delay_scope",
    "crawl_store",
    "keeps_extends",
    "keeps_pauses",
    "keeps_turns",
    "release_store",
    "reserve_turn",
]

logger = logging.getLogger(__name__)


def build_store(crawler: Crawler) -> OutcomeStore:
    """A new store of the class ``ROBOTS_STORE`` names (the memory store
    when the configured one cannot be set up)."""
    name = RobotsConfig.for_crawler(crawler).store
    path = STORES.get(name.lower(), name)
    try:
        cls = load_object(path)
    except (ImportError, NameError, ValueError) as exc:
        raise SettingError(
            f"ROBOTS_STORE must be one of {', '.join(map(repr, STORES))} or the"
            f" import path of an OutcomeStore class; {name!r} cannot be loaded: {exc}"
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, OutcomeStore)):
        raise SettingError(f"ROBOTS_STORE {name!r} is not an OutcomeStore class")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise SettingError(
            f"ROBOTS_STORE {name!r} is abstract: it does not define {missing}"
        )
    try:
        store = build_from_crawler(cls, crawler)
    except StoreError as exc:
        crawler.stats.inc_value("robots/store/errors")
        logger.warning(
            "The robots.txt store %(store)s failed (%(error)s); going on with the"
            " memory store alone",
            {"store": name, "error": exc},
            extra={"crawler": crawler},
        )
        return build_from_crawler(MemoryStore, crawler)
    except SettingError:
        raise
    except Exception as exc:
        # A store class that cannot be made from these settings: the
        # crawl's configuration is wrong, said in one line (its traceback
        # at DEBUG).
        logger.debug("ROBOTS_STORE %r could not be made", name, exc_info=exc)
        raise SettingError(
            f"ROBOTS_STORE {name!r} could not be made: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(store, OutcomeStore):
        raise SettingError(f"ROBOTS_STORE {name!r} is not an OutcomeStore")
    return store


class _Shared:
    __slots__ = ("failed", "store", "users")

    def __init__(self, store: OutcomeStore) -> None:
        self.store = store
        self.users = 0
        self.failed = False


# Where the crawl's store is kept: on the crawler (a WeakKeyDictionary's
# value holding the middleware's clock, which holds the crawler, would keep
# a crawl that failed to start alive).
_ATTRIBUTE = "_scrapy_rfc9309_store"


def crawl_store(crawler: Crawler) -> OutcomeStore:
    """The crawl's store, built by the first component that asks."""
    shared: _Shared | None = getattr(crawler, _ATTRIBUTE, None)
    if shared is None:
        shared = _Shared(build_store(crawler))
        setattr(crawler, _ATTRIBUTE, shared)
    shared.users += 1
    return shared.store


async def release_store(
    crawler: Crawler, store: OutcomeStore, *, failed: bool = False
) -> None:
    """Give ``store`` back; the last of its users closes it (raising what
    its ``close()`` raises), unless one of them saw it fail (``failed``):
    a store that failed is left alone, as it was for the rest of the crawl."""
    shared: _Shared | None = getattr(crawler, _ATTRIBUTE, None)
    if shared is None or shared.store is not store:
        if not failed:
            await store.close()
        return
    shared.users -= 1
    shared.failed = shared.failed or failed
    if shared.users > 0:
        return
    delattr(crawler, _ATTRIBUTE)
    if not shared.failed:
        await store.close()


# What a store can do beyond outcomes (its optional methods).


def keeps_turns(store: OutcomeStore | None) -> TypeGuard[OutcomeStore]:
    """Whether ``store`` is shared and keeps Crawl-delay turns."""
    return store is not None and store.shared and store.implements("reserve")


def keeps_pauses(store: OutcomeStore | None) -> bool:
    """Whether ``store`` is shared and keeps the fleet's Retry-After pauses
    (:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.hold` and ``held``)."""
    return keeps_turns(store) and store.implements("hold", "held")


def keeps_extends(store: OutcomeStore | None) -> bool:
    """Whether ``store`` is shared, keeps turns and moves them to the end
    of each fetch (:meth:`~scrapy_rfc9309.stores.base.OutcomeStore.extend`)."""
    return keeps_turns(store) and store.implements("extend")


def reserve_turn(
    store: OutcomeStore, origin: str, interval: float, limit: float
) -> Awaitable[float]:
    """``store.reserve(origin, interval, limit)``, without ``limit`` for a
    store written before it was a parameter."""
    if _takes_limit(type(store)):
        return store.reserve(origin, interval, limit)
    return store.reserve(origin, interval)


@cache
def _takes_limit(store_type: type[OutcomeStore]) -> bool:
    try:
        parameters = inspect.signature(store_type.reserve).parameters
    except (TypeError, ValueError):
        return False
    return "limit" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def crawl_delay_scope(config: RobotsConfig, store: OutcomeStore | None) -> str:
    """``ROBOTS_CRAWL_DELAY_SCOPE``: ``fleet`` or ``process``.

    Unset, it is ``fleet`` with a store that keeps turns (``redis``,
    ``sqlite``), else ``process``.  ``fleet`` with a store that does not
    (``memory``) is kept per process, with a warning.
    """
    scope = config.crawl_delay_scope
    shared = keeps_turns(store)
    if scope is None:
        return "fleet" if shared else "process"
    if scope == "fleet" and not shared:
        logger.warning(
            "ROBOTS_CRAWL_DELAY_SCOPE = 'fleet' needs a shared ROBOTS_STORE"
            " ('redis' or 'sqlite'); with %(store)s each process keeps"
            " Crawl-delays on its own",
            {"store": type(store).__name__ if store is not None else "MemoryStore"},
        )
        return "process"
    return scope
