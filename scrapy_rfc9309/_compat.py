"""What the package needs from Scrapy releases newer than the oldest one it
supports (Scrapy 2.16): Scrapy's own where Scrapy has it, else the same few
lines over what Scrapy 2.16 has.

- ``sleep`` (``scrapy.utils.asyncio.sleep``, Scrapy 2.18), which works under
  the asyncio reactor, another Twisted reactor and without a reactor, as
  Scrapy's does.
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
