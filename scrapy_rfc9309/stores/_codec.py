"""How the persistent stores write an outcome and read it back.

An entry is the JSON of ``Outcome.to_dict()``, which carries its own format
version.  Reading never fails: an entry another version of the package
wrote, or one damaged on disk or by hand, is treated as missing, so the
origin's robots.txt is simply fetched again.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from ..outcome import Outcome

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Stats key: reads of a stored entry that could not be decoded (another
#: format, damaged or tampered with): each is treated as missing, and the
#: origin's robots.txt fetched again.
DISCARDED = "robots/store/discarded"


def encode(outcome: Outcome) -> str:
    """The stored form of ``outcome``: ASCII JSON.

    A document parsed from bytes that are not UTF-8 keeps them as lone
    surrogates, which no UTF-8 encoder accepts; escaped as ``\\udcXX`` they
    are stored as ASCII and read back exactly.
    """
    return json.dumps(outcome.to_dict(), separators=(",", ":"))


def decode(
    data: str | bytes, origin: str, crawler: Crawler | None = None
) -> Outcome | None:
    """The outcome stored as ``data``, or ``None`` when it cannot be read."""
    try:
        return Outcome.from_dict(json.loads(data))
    # Whatever an entry holds is data from outside this process (another
    # version, another program, a damaged file): any failure to read it,
    # down to a RecursionError on absurdly nested JSON, means "not stored".
    except Exception as exc:
        if crawler is not None and crawler.stats is not None:
            crawler.stats.inc_value(DISCARDED)
        logger.debug(
            "Ignoring the stored outcome of %(origin)s: %(error)s",
            {"origin": origin, "error": exc},
            extra=log_extra(crawler),
        )
        return None


def log_extra(crawler: Crawler | None) -> dict[str, Any]:
    """``extra`` for log calls: the crawler's spider, when there is one."""
    return {"spider": crawler.spider} if crawler is not None else {}
