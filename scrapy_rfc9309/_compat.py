"""Where the package meets differences between the Scrapy releases it
supports: Scrapy 2.18 and newer (Python 3.10 and newer).

- ``sleep`` is Scrapy's own (``scrapy.utils.asyncio.sleep``, Scrapy 2.18),
  which works under the asyncio reactor, another Twisted reactor and without
  a reactor.  It is imported from here so that the floor is stated once.

The one other difference is read where it is used: a downloader slot's
jitter (``Slot.jitter``, Scrapy 2.19) against the boolean
``randomize_delay`` of Scrapy 2.18 (``politeness.py``).
"""

from __future__ import annotations

from scrapy.utils.asyncio import sleep

__all__ = ["sleep"]
