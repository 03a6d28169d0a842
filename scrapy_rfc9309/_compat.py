"""Where the package meets differences between the Scrapy releases it
supports: Scrapy 2.14 and newer (Python 3.10 and newer).

- ``is_asyncio_available`` is Scrapy's, but ``True`` where no reactor is
  installed (plain asyncio, as Scrapy 2.15 answers), where Scrapy 2.14
  raises;
- ``sleep`` is Scrapy's own where Scrapy has it
  (``scrapy.utils.asyncio.sleep``, Scrapy 2.18), else the same few lines
  over what older releases have: it works under the asyncio reactor,
  another Twisted reactor and without a reactor, as Scrapy's does;
- ``run_in_thread`` (Scrapy 2.15) likewise: ``asyncio.to_thread`` where
  asyncio runs, else Twisted's thread pool;
- ``DownloadTimeoutError`` (Scrapy 2.15) is what a download that timed out
  raises; before 2.15, Twisted's ``TimeoutError`` (which ``RETRY_EXCEPTIONS``
  names there);
- ``slot_clock`` is the clock of a downloader slot's ``lastseen``:
  ``time.monotonic`` from Scrapy 2.16, ``time.time`` before.

The other differences are read where they are used: a downloader slot's
jitter (``Slot.jitter``, Scrapy 2.19) against the boolean
``randomize_delay`` before it (``_slots.py``), Scrapy's ``robots_parsed``
signal (Scrapy 2.18), sent only where it exists (``_coordination.py``), and
Scrapy 2.14's settings, which tell a class from its import path, so the
add-on also disables the built-in middleware by its path there
(``addon.py``).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from scrapy import version_info
from scrapy.utils.asyncio import call_later
from scrapy.utils.asyncio import is_asyncio_available as _is_asyncio_available
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DownloadTimeoutError",
    "is_asyncio_available",
    "run_in_thread",
    "sleep",
    "slot_clock",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")

slot_clock = time.monotonic if version_info >= (2, 16) else time.time


def is_asyncio_available() -> bool:
    """Whether asyncio code may run: under the asyncio reactor, or without
    a reactor."""
    try:
        return _is_asyncio_available()
    except RuntimeError:  # Scrapy 2.14, no reactor installed: plain asyncio
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
