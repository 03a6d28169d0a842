"""``Retry-After`` (RFC 9110 10.2.3): what a ``429`` or ``503`` asks a
crawler to wait; :class:`~scrapy_rfc9309.politeness.Politeness` pauses the
origin for it."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

__all__ = ["RETRY_AFTER_STATUSES", "retry_after"]

#: The statuses whose Retry-After pauses the origin (RFC 9110 10.2.3).
RETRY_AFTER_STATUSES = frozenset((429, 503))


def retry_after(value: bytes | str, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` value asks to wait: delta-seconds or an
    HTTP-date (0 for a date past); ``None`` when it is neither."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:
        # RFC 9110 dates are in GMT; parsedate_to_datetime leaves "-0000" naive.
        return None
    return max(moment.timestamp() - (time.time() if now is None else now), 0.0)
