"""A robots.txt body as text, as Google's parser reads it: cut at the byte
limit on the last whole line, a (possibly broken) UTF-8 byte-order mark
skipped, invalid UTF-8 kept as surrogate escapes, lines capped at
:data:`MAX_LINE_BYTES` octets; and the facts of the bytes (the cut, the
mark, the first invalid octet) told to the reader's handler.  Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._model import Profile
from .profiles import RULES

if TYPE_CHECKING:
    from ._read import Handler

#: Google's ``kMaxLineLen`` (2083 * 8) less its terminating NUL: the octets
#: of a line kept; the rest of a longer line is ignored.
MAX_LINE_BYTES = 2083 * 8 - 1


UTF8_BOM = b"\xef\xbb\xbf"
# No line of a shorter text can exceed the cap, whatever its characters.
SAFE_CHARS = MAX_LINE_BYTES // 4
# What the UTF-8 decoder's surrogateescape makes of an invalid octet.
_ESCAPED = re.compile("[\udc80-\udcff]").search


def body_text(
    source: str | bytes, max_bytes: int, handler: Handler | None = None
) -> str:
    """A robots.txt body as text, as Google's parser reads it, telling
    ``handler`` what it finds.

    Cut at ``max_bytes`` octets on the last whole line, a (possibly
    truncated) UTF-8 byte-order mark skipped, invalid UTF-8 kept as
    surrogate escapes (see :func:`encode`).
    """
    if isinstance(source, str) and len(source) <= max_bytes and source.isascii():
        return source
    data = encode(source) if isinstance(source, str) else bytes(source)
    if len(data) > max_bytes:
        kept = cut(data, max_bytes)
        if handler is not None:
            handler.body_cut(_line_count(kept.decode("latin-1")), len(data), len(kept))
        data = kept
    skip = 0
    if data[:1] == b"\xef":
        while skip < 3 and data[skip : skip + 1] == UTF8_BOM[skip : skip + 1]:
            skip += 1
        if handler is not None:
            handler.byte_order_mark(1, skip)
    text = data[skip:].decode("utf-8", "surrogateescape")
    escaped = None if handler is None or text.isascii() else _ESCAPED(text)
    if handler is not None and escaped is not None:
        handler.invalid_utf8(_line_count(text[: escaped.start()]))
    return text


def _line_count(text: str) -> int:
    """The number of the line that ``text`` ends on: its line ends (CR, LF,
    CRLF) plus one."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + 1


def encode(text: str) -> bytes:
    """``text`` as UTF-8, surrogate escapes (invalid UTF-8 read with
    ``surrogateescape``) back to their octets; never raises."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def cut(data: bytes, max_bytes: int) -> bytes:
    """``data`` cut to at most ``max_bytes``, on the last whole line."""
    if len(data) <= max_bytes:
        return data
    if data[max_bytes : max_bytes + 1] in (b"\n", b"\r"):
        return data[:max_bytes]
    end = max(data.rfind(b"\n", 0, max_bytes), data.rfind(b"\r", 0, max_bytes))
    return data[: end + 1]


def cap_line(line: str) -> str:
    """``line`` cut to :data:`MAX_LINE_BYTES` octets of UTF-8."""
    if len(line) <= SAFE_CHARS:
        return line
    data = encode(line)
    if len(data) <= MAX_LINE_BYTES:
        return line
    return data[:MAX_LINE_BYTES].decode("utf-8", "surrogateescape")


def oversize_allows_all(source: str | bytes, max_bytes: int, profile: Profile) -> bool:
    """Whether ``profile`` reads ``source`` as allowing everything because
    it is over ``max_bytes`` octets (its status policy's ``oversize``)."""
    if RULES[profile].status["oversize"] == "parsed":
        return False
    if isinstance(source, str):
        size = len(source) if source.isascii() else len(encode(source))
    else:
        size = len(source)
    return size > max_bytes
