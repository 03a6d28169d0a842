"""Where the package meets differences between the Scrapy releases it
supports: Scrapy 2.16 and newer (Python 3.10 and newer).

- ``sleep`` is Scrapy's own where Scrapy has it
  (``scrapy.utils.asyncio.sleep``, Scrapy 2.18), else the same few lines
  over what Scrapy 2.16 has: it works under the asyncio reactor, another
  Twisted reactor and without a reactor, as Scrapy's does.

The other differences are read where they are used: a downloader slot's
jitter (``Slot.jitter``, Scrapy 2.19) against the boolean
``randomize_delay`` before it (``politeness.py``), and Scrapy's
``robots_parsed`` signal (Scrapy 2.18), sent only where it exists
(``_coordination.py``).
"""

from __future__ import annotations

import asyncio

from scrapy.utils.asyncio import call_later, is_asyncio_available
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

__all__ = ["sleep"]

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
