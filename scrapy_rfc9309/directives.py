"""Page directives: the ``X-Robots-Tag`` header and ``<meta name="robots">``.

Pure parsing and merging, as Google documents them: a value is a
comma-separated list of directives, ``botname:`` scopes the directives that
follow it, and ``unavailable_after:`` / ``max-*:`` are directives that carry
their own colon.  :func:`directives_for` reads a Scrapy response by duck
typing (``headers.getlist``, ``text``) and imports nothing from Scrapy.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any, Protocol

from .match import product_token

__all__ = [
    "IMAGE_PREVIEWS",
    "MAX_VALUE_LENGTH",
    "DirectiveSet",
    "directives_for",
    "is_html",
    "merge",
    "meta_contents",
    "parse_directives",
    "stringify_directives",
]

#: ``max-image-preview`` values, least to most generous.
IMAGE_PREVIEWS = ("none", "standard", "large")

#: The most characters of one ``X-Robots-Tag`` value or robots meta
#: ``content`` read (bytes, for a header): real ones are a few dozen.  A
#: longer value is read up to its last comma or space within the limit, the
#: directive cut in two and what follows ignored.
MAX_VALUE_LENGTH = 8192


@dataclass(frozen=True)
class DirectiveSet:
    """The directives given to one bot (``bot=None``: to every bot).

    ``bot`` is lower-cased.  Flags default to off and limits to ``None``
    (not given); ``-1`` means "no limit" for ``max_snippet`` and
    ``max_video_preview``.  ``unavailable_after`` is always an aware
    datetime in UTC (a naive one is read as UTC).  ``other`` holds the
    directives this module does not interpret (``noai``,
    ``indexifembedded``, ...), lower-cased, sorted and distinct.
    """

    bot: str | None = None
    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    nosnippet: bool = False
    noimageindex: bool = False
    notranslate: bool = False
    max_snippet: int | None = None
    max_image_preview: str | None = None
    max_video_preview: int | None = None
    unavailable_after: datetime | None = None
    other: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Bot names match case-insensitively; the lower-cased form is the one
        # that compares equal to what parsing gives.
        if self.bot is not None:
            object.__setattr__(self, "bot", self.bot.lower())
        when = self.unavailable_after
        if when is not None and when.tzinfo is not timezone.utc:
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            object.__setattr__(self, "unavailable_after", when.astimezone(timezone.utc))
        # A tuple rather than a frozenset: feed exporters write tuples (as
        # lists), and sorting makes equal sets compare equal.
        object.__setattr__(self, "other", tuple(sorted(set(self.other))))

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether ``unavailable_after`` has passed at ``now`` (default: now)."""
        if self.unavailable_after is None:
            return False
        if now is None:
            now = datetime.now(timezone.utc)
        elif now.tzinfo is None:
            now = now.replace(tzinfo=timezone.utc)
        return now >= self.unavailable_after

    def __str__(self) -> str:
        return stringify_directives(self)


# -- merging -----------------------------------------------------------------


def _either(a: bool, b: bool) -> bool:
    return a or b


def _tighter_limit(a: int | None, b: int | None) -> int | None:
    # None is "not given" and -1 "no limit": both yield to any real limit.
    if a is None or a == -1:
        return b if b is not None else a
    if b is None or b == -1:
        return a
    return min(a, b)


def _smaller_preview(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if IMAGE_PREVIEWS.index(a) <= IMAGE_PREVIEWS.index(b) else b


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


# How two values of one field combine: the more restrictive one wins.
_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "noindex": _either,
    "nofollow": _either,
    "noarchive": _either,
    "nosnippet": _either,
    "noimageindex": _either,
    "notranslate": _either,
    "max_snippet": _tighter_limit,
    "max_image_preview": _smaller_preview,
    "max_video_preview": _tighter_limit,
    "unavailable_after": _earlier,
}
# ``other`` is the union, gathered in a dict (ordered, for a set) and sorted
# once by DirectiveSet: a sorted tuple made again for each word made
# distinct words quadratic.
_FIELDS = tuple(_COMBINE)
_EMPTY = DirectiveSet()


def merge(*sets: DirectiveSet, bot: str | None = None) -> DirectiveSet:
    """One set holding the most restrictive value of every field of ``sets``.

    A flag set anywhere is on; the smallest limit, the smallest image preview
    and the earliest ``unavailable_after`` apply; ``other`` is the union.
    The result is scoped to ``bot``.
    """
    if len(sets) == 1 and sets[0].bot == bot:
        return sets[0]
    values = {name: getattr(_EMPTY, name) for name in _FIELDS}
    other: dict[str, None] = {}
    for one in sets:
        for name in _FIELDS:
            values[name] = _COMBINE[name](values[name], getattr(one, name))
        other.update(dict.fromkeys(one.other))
    return DirectiveSet(bot=bot, **values, other=tuple(other))


# -- parsing -----------------------------------------------------------------

_FLAGS = {
    "noindex": ("noindex",),
    "nofollow": ("nofollow",),
    "noarchive": ("noarchive",),
    "nocache": ("noarchive",),  # Bing's spelling of noarchive
    "nosnippet": ("nosnippet",),
    "noimageindex": ("noimageindex",),
    "notranslate": ("notranslate",),
    "none": ("noindex", "nofollow"),
    # The defaults, spelled out: they switch nothing on.
    "all": (),
    "index": (),
    "follow": (),
}
_LIMITS = {"max-snippet": "max_snippet", "max-video-preview": "max_video_preview"}
_DATE_KEYS = {"unavailable_after", "unavailable-after"}
_VALUE_KEYS = {*_LIMITS, "max-image-preview", *_DATE_KEYS}
# What a bot name, or an uninterpreted directive kept in ``other``, may be.
_WORD = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")
# What follows a ``max-*:``: its value, then the spaces after it.
_VALUE = re.compile(r"\s*(\S+)\s*")
_INTEGER = re.compile(r"-?[0-9]+").fullmatch
# A date whose own commas were split apart ("Monday, 27-Jun-2011 ...") is
# put back together from at most this many following pieces.
_DATE_PIECES = 2

_ISO_DATE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)"
    r"(?:[t ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?)?"
    r"\s*(z|utc|gmt|[+-]\d\d(?::?\d\d)?)?",
    re.IGNORECASE,
)


def _iso_date(text: str) -> datetime | None:
    match = _ISO_DATE.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    tz = timezone.utc
    if zone and zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        tz = timezone(-offset if zone[0] == "-" else offset)
    return datetime(
        int(year),
        int(month),
        int(day),
        int(hour or 0),
        int(minute or 0),
        int(second or 0),
        int((fraction or "0")[:6].ljust(6, "0")),
        tzinfo=tz,
    )


def _parse_date(text: str) -> datetime | None:
    """RFC 822 / 850 / 1123, asctime or ISO 8601 text as a datetime, else None."""
    text = text.strip()
    if not text:
        return None
    try:
        when = _iso_date(text)
        if when is None:
            try:
                when = parsedate_to_datetime(text)
            except (ValueError, TypeError, IndexError):
                # A date without a time ("25 Jun 2010") is midnight.
                when = parsedate_to_datetime(f"{text} 00:00:00")
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return when.astimezone(timezone.utc)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None


class _Scopes:
    """The directives read so far, per bot, in order of first appearance."""

    def __init__(self) -> None:
        self.values: dict[str | None, dict[str, Any]] = {}
        self.bot: str | None = None

    def set(self, name: str, value: Any) -> None:
        values = self.values.setdefault(self.bot, {})
        old = values.get(name)
        values[name] = value if old is None else _COMBINE[name](old, value)

    def other(self, word: str) -> None:
        """Keep ``word``, uninterpreted (DirectiveSet sorts them once)."""
        values = self.values.setdefault(self.bot, {})
        values.setdefault("other", {})[word] = None

    def touch(self) -> None:
        self.values.setdefault(self.bot, {})

    def word(self, word: str) -> None:
        flags = _FLAGS.get(word)
        if flags is not None:
            self.touch()
            for flag in flags:
                self.set(flag, True)
        elif word not in _VALUE_KEYS and _WORD.fullmatch(word):
            self.other(word)


def parse_directives(value: str | bytes) -> list[DirectiveSet]:
    """The directives of one ``X-Robots-Tag`` value or robots meta content.

    One :class:`DirectiveSet` per bot scope, in order of first appearance
    (``bot=None`` for the directives before any ``botname:``); a scope named
    twice is merged.  Case-insensitive and whitespace-tolerant; whatever
    cannot be read is skipped, so this never raises on content.  Linear in
    the value, of which at most :data:`MAX_VALUE_LENGTH` are read.
    """
    text = _bounded(value)
    scopes = _Scopes()
    pieces = text.lower().split(",")
    index = 0
    while index < len(pieces):
        piece = pieces[index]
        index += 1
        # One piece may carry a scope, then a directive: "googlebot: noindex".
        # Read by position: a copy of the rest at each colon made a:a:a:...
        # quadratic.
        start = 0
        while start < len(piece):
            colon = piece.find(":", start)
            if colon < 0:
                for word in piece[start:].split():
                    scopes.word(word)
                break
            key = piece[start:colon].strip()
            start = colon + 1
            if key in _DATE_KEYS:
                index += _read_date(scopes, piece[start:], pieces, index)
                break
            if key in _VALUE_KEYS or key.startswith("max-"):
                start = _read_value(scopes, key, piece, start)
            elif key in _FLAGS:
                # "noindex: nofollow" is a typo for "noindex, nofollow", not a bot.
                scopes.word(key)
            elif _WORD.fullmatch(key):
                scopes.bot = key
            else:
                break
    return [DirectiveSet(bot=bot, **values) for bot, values in scopes.values.items()]


def _bounded(value: str | bytes) -> str:
    """``value`` as text, cut to :data:`MAX_VALUE_LENGTH` at its last comma
    or space within it (one character past the limit tells whether the
    directive there ends at the limit)."""
    head = value[: MAX_VALUE_LENGTH + 1]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    if len(value) <= MAX_VALUE_LENGTH:
        return text
    match = _LAST_SEPARATOR.search(text)
    return text[: match.start()] if match is not None else ""


_LAST_SEPARATOR = re.compile(r"[\s,][^\s,]*\Z")


def _read_date(scopes: _Scopes, text: str, pieces: list[str], index: int) -> int:
    """Read ``unavailable_after``; return how many following pieces it took."""
    for extra in range(min(_DATE_PIECES, len(pieces) - index) + 1):
        when = _parse_date(",".join([text, *pieces[index : index + extra]]))
        if when is not None:
            scopes.set("unavailable_after", when)
            return extra
    # Google ignores an unreadable date; the scope still counts as given.
    scopes.touch()
    return 0


def _read_value(scopes: _Scopes, key: str, piece: str, start: int) -> int:
    """Read a ``max-*`` directive from ``piece[start:]``; return where what
    follows its value starts."""
    match = _VALUE.match(piece, start)
    if match is None:
        return len(piece)
    value = match.group(1)
    field = _LIMITS.get(key)
    if field is not None:
        # An integer as Google writes one: ASCII digits, perhaps "-1" (not
        # "+5", "1_000" or other scripts' digits, which int() takes).
        limit = int(value) if _INTEGER(value) else -2
        if limit >= -1:
            scopes.set(field, limit)
        else:
            scopes.touch()
    elif key == "max-image-preview":
        if value in IMAGE_PREVIEWS:
            scopes.set("max_image_preview", value)
        else:
            scopes.touch()
    elif _WORD.fullmatch(key):
        scopes.other(f"{key}:{value}")
    return match.end()


# -- writing -----------------------------------------------------------------


def stringify_directives(directives: DirectiveSet, *, explicit: bool = False) -> str:
    """``directives`` as an ``X-Robots-Tag`` value that parses back to it.

    A scoped set starts with ``bot:``.  By default only what restricts is
    written, and a set restricting nothing is ``all``.  ``explicit=True``
    also writes the positive forms ``index`` and ``follow`` for the two
    switches that are off, so the value states both of them (``index,
    follow`` for an empty set); ``none`` is never used, ``noindex,
    nofollow`` is written out.
    """
    d = directives
    tokens: list[str] = []
    if d.noindex or explicit:
        tokens.append("noindex" if d.noindex else "index")
    if d.nofollow or explicit:
        tokens.append("nofollow" if d.nofollow else "follow")
    tokens.extend(
        flag
        for flag in ("noarchive", "nosnippet", "noimageindex", "notranslate")
        if getattr(d, flag)
    )
    if d.max_snippet is not None:
        tokens.append(f"max-snippet:{d.max_snippet}")
    if d.max_image_preview is not None:
        tokens.append(f"max-image-preview:{d.max_image_preview}")
    if d.max_video_preview is not None:
        tokens.append(f"max-video-preview:{d.max_video_preview}")
    if d.unavailable_after is not None:
        when = d.unavailable_after.isoformat().replace("+00:00", "Z")
        tokens.append(f"unavailable_after: {when}")
    tokens.extend(d.other)
    text = ", ".join(tokens) or "all"
    return text if d.bot is None else f"{d.bot}: {text}"


# -- responses ---------------------------------------------------------------


class _Headers(Protocol):
    def getlist(self, key: bytes) -> list[bytes]: ...

    def get(self, key: bytes) -> bytes | None: ...


class _Response(Protocol):
    @property
    def headers(self) -> _Headers: ...


@lru_cache(maxsize=64)
def _meta_finder(token: str) -> re.Pattern[str]:
    # The hot path: one scan per HTML page.  Finding nothing (the usual case)
    # costs a single regex search, no DOM is ever built.  No part of a tag
    # may run past a "<" (not even a quoted value), so every attempt stops
    # at the next tag, and no run of characters can be split two ways: hostile
    # markup cannot make the scan quadratic.
    names = "robots" if not token or token == "robots" else f"robots|{re.escape(token)}"
    inside = "(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*"
    return re.compile(
        rf"<meta\b(?={inside}?\bname\s*=\s*(?:[\"']\s*)?(?:{names})[\"'\s/>]){inside}>",
        re.IGNORECASE,
    )


_ATTRIBUTE = re.compile(
    r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?"""
)
# Text in which a "<meta" is not a tag: comments, scripts, style sheets (an
# unclosed one runs to the end, as in a browser).  A comment ends at the
# first "-->" after its "<!--", or at once as "<!-->" or "<!--->" (empty
# comments in HTML5).
_OPAQUE = re.compile(
    r"<!--(?:-?>|.*?(?:-->|\Z))|<(script|style)\b.*?(?:</\1|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def _robots_meta(text: str, token: str) -> Iterator[tuple[str, str]]:
    """``(name, content)`` of the robots meta tags of an HTML page, any case."""
    matches = list(_meta_finder(token).finditer(text))
    if not matches:
        return
    # Only the text up to the last candidate matters, usually just the head.
    spans = _OPAQUE.finditer(text, 0, matches[-1].end())
    # Candidates and opaque spans both come in text order and the spans do
    # not overlap: one walk over the spans serves every candidate, so a page
    # of hostile comment + meta pairs costs linear time, not quadratic.
    start = end = -1
    for match in matches:
        position = match.start()
        while end <= position:
            span = next(spans, None)
            if span is None:
                # No more opaque text: nothing past here is skipped.
                start = end = len(text) + 1
                break
            start, end = span.span()
        if start < position < end:
            continue
        attributes: dict[str, str] = {}
        for attribute in _ATTRIBUTE.finditer(match.group(), 5):
            name = attribute.group(1).lower()
            if name not in attributes:
                value = attribute.group(2)
                if value is None:
                    value = attribute.group(3)
                if value is None:
                    value = attribute.group(4) or ""
                attributes[name] = html.unescape(value) if "&" in value else value
        name = attributes.get("name", "").strip().lower()
        if name in ("robots", token) and "content" in attributes:
            yield name, attributes["content"]


def meta_contents(text: str, name: str, *, first: bool = False) -> Iterator[str]:
    """The ``content`` of each ``<meta name="{name}">`` of an HTML page (the
    name matched ASCII case-insensitively), found as robots meta tags are:
    one linear scan, comments and scripts skipped; only the first with
    ``first``."""
    name = name.lower()
    for found, content in _robots_meta(text, name):
        if found == name:
            yield content
            if first:
                return


def is_html(response: Any) -> bool:
    """Whether ``response`` (a Scrapy response, or anything with its
    ``headers``) is an HTML page: by its Content-Type, or its class."""
    content_type = response.headers.get(b"Content-Type") or b""
    if b"html" in content_type.lower():
        return True
    return any(cls.__name__ == "HtmlResponse" for cls in type(response).__mro__)


def directives_for(response: _Response, user_agent: str) -> DirectiveSet:
    """The directives of ``response`` that apply to ``user_agent``.

    Every ``X-Robots-Tag`` header and, for HTML, every ``<meta
    name="robots">`` and ``<meta name="{product token}">``: the unscoped
    directives and those scoped to the agent's product token, merged (the
    more restrictive value wins).  The result has ``bot=None``.
    """
    token = product_token(user_agent)
    sets: list[DirectiveSet] = []
    for value in response.headers.getlist(b"X-Robots-Tag"):
        sets.extend(s for s in parse_directives(value) if s.bot in (None, token))
    if is_html(response):
        text = getattr(response, "text", None)
        if isinstance(text, str):
            for _, content in _robots_meta(text, token):
                sets.extend(
                    s for s in parse_directives(content) if s.bot in (None, token)
                )
    if not sets:
        return _EMPTY
    return merge(*sets)
