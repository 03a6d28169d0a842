"""HTTP dates and ``Retry-After`` (RFC 9110 5.6.7, 10.2.3): what a ``429``
or ``503`` asks a crawler to wait
(:class:`~scrapy_rfc9309.politeness.Politeness` pauses the origin for it),
and the ``Date`` of a response (when Scrapy's HTTP cache stored it)."""

from __future__ import annotations

import time
from datetime import timezone
from email.utils import parsedate_to_datetime

__all__ = ["RETRY_AFTER_STATUSES", "http_date", "retry_after"]

#: The statuses whose Retry-After pauses the origin (RFC 9110 10.2.3).
RETRY_AFTER_STATUSES = frozenset((429, 503))


def http_date(value: bytes | str) -> float | None:
    """An HTTP-date (any of RFC 9110's three formats, or an RFC 5322 date)
    in seconds since the epoch; ``None`` when it is not a date.

    A date without a zone is UTC: an HTTP-date is always in GMT (RFC 9110
    5.6.7; its asctime format says no zone), and RFC 5322 says so of
    ``-0000`` and of a zone name it does not know.
    """
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    try:
        moment = parsedate_to_datetime(value.strip())
        if moment.tzinfo is None:  # no zone, "-0000", or one unknown
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def retry_after(value: bytes | str, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` value asks to wait: delta-seconds or an
    HTTP-date (0 for a date past, see :func:`http_date`); ``None`` when it is
    neither."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    moment = http_date(text)
    if moment is None:
        return None
    return max(moment - (time.time() if now is None else now), 0.0)
