"""Where the package meets differences between the Scrapy releases it
supports: Scrapy 2.13 and newer (Python 3.10 and newer).

- ``spider_argument`` makes a middleware whose methods take no ``spider``
  callable as Scrapy 2.13 calls them (with ``spider=``); every middleware
  of the package is wrapped, a no-op from 2.14;
- ``download`` is ``engine.download_async`` (Scrapy 2.14), or the Deferred
  of ``engine.download`` awaited on 2.13;
- ``is_asyncio_available`` is Scrapy's (on 2.13,
  ``is_asyncio_reactor_installed``), but ``True`` where no reactor is
  installed (plain asyncio, as Scrapy 2.15 answers), where Scrapy 2.13 and
  2.14 raise;
- ``sleep`` is Scrapy's own where Scrapy has it
  (``scrapy.utils.asyncio.sleep``, Scrapy 2.18), else the same few lines
  over what older releases have: it works under the asyncio reactor,
  another Twisted reactor and without a reactor, as Scrapy's does;
- ``run_in_thread`` (Scrapy 2.15) likewise: ``asyncio.to_thread`` where
  asyncio runs, else Twisted's thread pool;
- ``DownloadTimeoutError`` (Scrapy 2.15) is what a download that timed out
  raises; before 2.15, Twisted's ``TimeoutError`` (which ``RETRY_EXCEPTIONS``
  names there);
- ``DownloadCancelledError`` (Scrapy 2.15) is what a download cancelled past
  its ``download_maxsize`` raises; before 2.15, Twisted's ``CancelledError``;
- ``slot_clock`` is the clock of a downloader slot's ``lastseen``:
  ``time.monotonic`` from Scrapy 2.16, ``time.time`` before;
- ``downloader_slot`` is a request's downloader slot (and key), made as the
  downloader makes it if it does not exist yet: ``Downloader._get_slot``
  takes the spider as well on Scrapy 2.13.

The other differences are read where they are used: a downloader slot's
jitter (``Slot.jitter``, Scrapy 2.19) against the boolean
``randomize_delay`` before it (``_slots.py``), Scrapy's ``robots_parsed``
signal (Scrapy 2.18), sent only where it exists (``_coordination.py``), and
the settings of Scrapy 2.13 and 2.14, which tell a class from its import
path, so the add-on also disables the built-in middleware by its path there
(``addon.py``).
"""

from __future__ import annotations

import asyncio
import time
from functools import wraps
from inspect import (
    Parameter,
    getattr_static,
    isasyncgenfunction,
    iscoroutinefunction,
    isfunction,
    signature,
)
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from scrapy import version_info
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

try:
    from scrapy.utils.asyncio import call_later
    from scrapy.utils.asyncio import is_asyncio_available as _is_asyncio_available
except ImportError:  # Scrapy 2.13
    from scrapy.utils.reactor import CallLaterOnce
    from scrapy.utils.reactor import (
        is_asyncio_reactor_installed as _is_asyncio_available,
    )

    def call_later(delay: float, func: Callable[..., Any], *args: Any) -> None:  # type: ignore[misc]
        CallLaterOnce(func, *args).schedule(delay)


if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.core.downloader import Slot
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

__all__ = [
    "DownloadCancelledError",
    "DownloadTimeoutError",
    "crawl_engine",
    "download",
    "downloader_slot",
    "is_asyncio_available",
    "run_in_thread",
    "sleep",
    "slot_clock",
    "spider_argument",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")

slot_clock = time.monotonic if version_info >= (2, 16) else time.time


def is_asyncio_available() -> bool:
    """Whether asyncio code may run: under the asyncio reactor, or without
    a reactor."""
    try:
        return _is_asyncio_available()
    except RuntimeError:  # Scrapy < 2.15, no reactor installed: plain asyncio
        return True


try:
    from scrapy.utils.asyncio import sleep
except ImportError:  # Scrapy < 2.18

    async def sleep(seconds: float) -> None:
        """Sleep for ``seconds``, with or without asyncio."""
        if is_asyncio_available():
            await asyncio.sleep(seconds)
            return
        waiter: Deferred[None] = Deferred()
        call_later(seconds, waiter.callback, None)
        await maybe_deferred_to_future(waiter)


try:
    from scrapy.exceptions import DownloadTimeoutError
    from scrapy.utils.asyncio import run_in_thread
except ImportError:  # Scrapy < 2.15
    from twisted.internet.error import (  # type: ignore[assignment]
        TimeoutError as DownloadTimeoutError,
    )

    async def run_in_thread(
        func: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """``func(*args, **kwargs)`` in a thread, with or without asyncio."""
        if is_asyncio_available():
            return await asyncio.to_thread(func, *args, **kwargs)
        from twisted.internet.threads import deferToThread

        return await maybe_deferred_to_future(deferToThread(func, *args, **kwargs))


def crawl_engine(crawler: Crawler) -> ExecutionEngine | None:
    """``crawler``'s engine, ``None`` before its crawl starts: Scrapy 2.19's
    ``Crawler.engine`` raises ``RuntimeError`` then, older releases give
    ``None``."""
    try:
        return crawler.engine
    except RuntimeError:
        return None


def downloader_slot(crawler: Crawler, request: Request) -> tuple[str, Slot]:
    """The key and slot ``crawler``'s downloader will send ``request``
    through, the slot made (its ``DOWNLOAD_SLOTS`` concurrency and delay)
    if it does not exist yet, as the downloader makes it when the request
    reaches it.  Only while crawling (:func:`crawl_engine`)."""
    engine = crawl_engine(crawler)
    assert engine is not None
    if version_info >= (2, 14):
        return engine.downloader._get_slot(request)
    # Scrapy 2.13 reads the spider's download_delay, max_concurrent_requests.
    return engine.downloader._get_slot(request, crawler.spider)


try:
    from scrapy.exceptions import DownloadCancelledError
except ImportError:  # Scrapy < 2.15
    from twisted.internet.defer import (  # type: ignore[assignment]
        CancelledError as DownloadCancelledError,
    )


async def download(crawler: Crawler, request: Request) -> Response:
    """``request`` downloaded through ``crawler``'s engine, past the
    downloader middlewares and outside the scheduler."""
    engine = crawler.engine
    assert engine is not None
    if hasattr(engine, "download_async"):
        return await engine.download_async(request)
    # Scrapy 2.13: the Deferred form.
    return await maybe_deferred_to_future(engine.download(request))


#: The middleware methods Scrapy 2.13 calls with a ``spider`` keyword.
_HOOKS = (
    "process_request",
    "process_response",
    "process_exception",
    "process_spider_input",
    "process_spider_output",
    "process_spider_output_async",
    "process_spider_exception",
)


def spider_argument(cls: type[_T]) -> type[_T]:
    """``cls``, a middleware whose methods take no ``spider``, as Scrapy 2.13
    calls them: with ``spider=`` as well, which they are not given.  From
    Scrapy 2.14 on, ``cls`` itself.

    On 2.13 a subclass's methods are wrapped alike when it is made (a
    user's override of ``process_request``, or a mixin's before ``cls``),
    unless they take ``spider`` themselves; a wrapped method called with
    the spider as its last positional argument
    (``super().process_request(request, spider)``) drops it too.
    """
    if version_info >= (2, 14):
        return cls
    _wrap_hooks(cls)
    base: type[Any] = cls

    def init_subclass(subclass: type[Any], /, **kwargs: Any) -> None:
        super(base, subclass).__init_subclass__(**kwargs)
        _wrap_hooks(subclass)

    base.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment]
    return cls


def _wrap_hooks(cls: type) -> None:
    for name in _HOOKS:
        # The method cls has, as its class dict holds it: its own, or a
        # mixin's in front of the wrapped class (wrapped on cls, the mixin
        # left as it is).
        method = getattr_static(cls, name, None)
        # A method taking a spider (a wrapper, or written for Scrapy 2.13,
        # maybe under a decorator of its own) is left as it is.
        if isfunction(method) and not any(
            "spider" in signature(method, follow_wrapped=unwrap).parameters
            for unwrap in (False, True)
        ):
            setattr(cls, name, _without_spider(method))


def _without_spider(method: Callable[..., Any]) -> Callable[..., Any]:
    # Scrapy tells an async generator, a coroutine and a plain method apart:
    # the wrapper is of the same kind.  A spider passed by position (by a
    # subclass written for Scrapy 2.13) is the one argument beyond those
    # ``method`` takes.
    kinds = [parameter.kind for parameter in signature(method).parameters.values()]
    taken = None if Parameter.VAR_POSITIONAL in kinds else len(kinds)
    wrapper: Callable[..., Any]
    if isasyncgenfunction(method):

        async def wrapper(*args: Any, spider: Any = None, **kwargs: Any) -> Any:
            async for item in method(*args[:taken], **kwargs):
                yield item

    elif iscoroutinefunction(method):

        async def wrapper(*args: Any, spider: Any = None, **kwargs: Any) -> Any:
            return await method(*args[:taken], **kwargs)

    else:

        def wrapper(*args: Any, spider: Any = None, **kwargs: Any) -> Any:
            return method(*args[:taken], **kwargs)

    return wraps(method)(wrapper)
