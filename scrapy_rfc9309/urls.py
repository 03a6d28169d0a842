"""URLs as robots.txt sees them: the robots.txt URL of an origin, and the
path (with params and query) that rules are matched against.

Pure: no Scrapy, no network.  Nothing here raises on a malformed URL.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from w3lib.url import safe_url_string

from ._bytes import encode
from ._caches import BoundedCache

__all__ = [
    "SAFE_CLASS",
    "SAFE_OCTETS",
    "escape_pattern",
    "http_url",
    "normal_pattern",
    "normalize_path",
    "normalize_pattern",
    "origin_robots_url",
    "request_path",
    "robots_url",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
# A host Scrapy can request (an IDN is ASCII once escaped): no "%20", no zone.
_HOST = re.compile(r"[a-z0-9_.-]+|[0-9a-f:.]+").fullmatch


def http_url(base: str, value: str | bytes) -> str | None:
    """``value`` (a link, a ``Sitemap:`` line, a ``Location`` header) made
    absolute against ``base`` and escaped as Scrapy sends it, if it is an
    http(s) URL with a host; ``None`` for anything else (empty, another
    scheme, malformed).  Never raises."""
    if not value:
        return None
    try:
        url = urljoin(base, safe_url_string(value))
        parts = urlsplit(url)
        # A port out of range: w3lib 2.5 raises above; older w3lib may not.
        parts.port  # noqa: B018
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not _HOST(parts.hostname or ""):
        return None
    return url


def robots_url(url: str) -> str | None:
    """The ``/robots.txt`` URL of the origin of ``url``.

    Scheme and host are lower-cased, an IDN host is written in ASCII
    (punycode), the default port is dropped and any other port kept, an IPv6
    host is bracketed and userinfo is dropped.  ``None`` for anything that is
    not an http(s) URL with a host.
    """
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = parts.hostname
        if scheme not in _DEFAULT_PORTS or not host:
            return None
        port = parts.port
    except (ValueError, TypeError, AttributeError):
        return None
    if ":" in host:
        host = f"[{host}]"
    elif not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{port}/robots.txt"
    return f"{scheme}://{host}/robots.txt"


# Hosts (with their port) -> their robots.txt URL, per scheme: every request
# asks.  Never keyed by userinfo (kilobytes of anything, dropped anyway).
_ORIGINS: dict[str, BoundedCache[str, str | None]] = {
    scheme: BoundedCache(f"urls.origins.{scheme}", 1 << 20, 300)
    for scheme in _DEFAULT_PORTS
}
_NO_ORIGIN = "\0"


def origin_robots_url(scheme: str, netloc: str) -> str | None:
    """:func:`robots_url` of ``scheme://netloc/`` (the parts of a URL as
    ``urlparse`` gives them), from a cache for http(s)."""
    cache = _ORIGINS.get(scheme)
    if cache is None:
        return robots_url(f"{scheme}://{netloc}/")
    if "@" in netloc:
        # As urlsplit reads userinfo: up to the last "@".
        netloc = netloc.rpartition("@")[2]
    origin = cache.data.get(netloc, _NO_ORIGIN)
    if origin is _NO_ORIGIN:
        origin = robots_url(f"{scheme}://{netloc}/")
        if not cache.full:
            cache.put(netloc, origin)
    return origin


_PATH_DELIMITER = re.compile("[/?;]").search


def request_path(url: str) -> str:
    """The path, params and query of ``url``, as Google's ``GetPathParamsQuery``.

    Scheme, authority and fragment are dropped; the result always starts
    with ``/`` (``"/"`` when the URL has no path or is not a URL at all).  A
    ``/``-rooted path is returned as it is, without its fragment.
    """
    start = 2 if url.startswith("//") else 0
    early = _PATH_DELIMITER(url, start)
    protocol = url.find("://", start)
    if protocol == -1 or (early is not None and early.start() < protocol):
        protocol_end = start
    else:
        protocol_end = protocol + 3
    found = _PATH_DELIMITER(url, protocol_end)
    if found is None:
        return "/"
    path_start = found.start()
    hash_pos = url.find("#", start)
    if hash_pos != -1 and hash_pos < path_start:
        return "/"
    path = url[path_start:] if hash_pos == -1 else url[path_start:hash_pos]
    return path if path[0] == "/" else "/" + path


#: The octets a normalised path or pattern holds as they are: printable
#: ASCII but "%" (which then only starts an escape), "*" and "$" (their
#: literal forms stay escaped).  Every test of what normalising may change
#: derives from it.
SAFE_OCTETS = bytes(c for c in range(0x21, 0x7F) if c not in b"%*$")
#: :data:`SAFE_OCTETS` as the body of a regex character class.
SAFE_CLASS = re.escape(SAFE_OCTETS.decode("ascii"))


# Anything that does not stand for itself: one scan tells whether a path
# needs normalising.
_NEEDS_NORMALIZING = re.compile(f"[^{SAFE_CLASS}]").search
_NEEDS_NORMALIZING_PATTERN = re.compile(f"[^{SAFE_CLASS}*]").search


def _canonical(octet: int) -> str:
    """An octet in the canonical form: itself if safe, else ``%XX``."""
    return chr(octet) if octet in SAFE_OCTETS else f"%{octet:02X}"


# The canonical form of every "%xx" and unsafe ASCII character.
_ASCII_CANONICAL = {
    **{
        f"%{high}{low}": _canonical(int(high + low, 16))
        for high in "0123456789ABCDEFabcdef"
        for low in "0123456789ABCDEFabcdef"
    },
    **{
        chr(octet): _canonical(octet)
        for octet in range(0x80)
        if octet not in SAFE_OCTETS
    },
}


def _ascii_canonical(found: re.Match[str]) -> str:
    return _ASCII_CANONICAL[found[0]]


# What normalising changes in ASCII text, and only that (the escapes that
# stay, most, cost no call): an escape with a lower-case hex digit or of a
# safe octet ("2[1-36-9B-F]|...", by high digit); a "%" that starts no
# escape; an unsafe character.
_SAFE_ESCAPES = "|".join(
    f"{high:X}[" + "".join(f"{o & 15:X}" for o in SAFE_OCTETS if o >> 4 == high) + "]"
    for high in sorted({octet >> 4 for octet in SAFE_OCTETS})
)
_ESCAPE_CHANGES = (
    f"%(?:[0-9A-F][a-f]|[a-f][0-9A-Fa-f]|{_SAFE_ESCAPES})|%(?![0-9A-Fa-f]{{2}})"
)
_ASCII_CHANGES = re.compile(_ESCAPE_CHANGES + f"|[^{SAFE_CLASS}%]")
# The same over octets read as Latin-1 characters (one per octet), where a
# run of octets outside ASCII is encoded in one call.
_OCTET_CHANGES = re.compile(_ESCAPE_CHANGES + f"|([\x80-\xff]+)|[^{SAFE_CLASS}%]")


def _octet_canonical(found: re.Match[str]) -> str:
    run = found[1]
    if run is None:
        return _ASCII_CANONICAL[found[0]]
    return "%" + run.encode("latin-1").hex("%").upper()


def normalize_path(path: str) -> str:
    """``path`` (from :func:`request_path`) in the canonical percent-encoding
    of the ``rfc9309`` profile (RFC 9309 section 2.2.2).

    Every valid ``%XX`` escape is decoded, then the octets that need it are
    encoded again with upper-case hex: non-ASCII octets, controls and space,
    ``%``, ``*`` and ``$``.  So ``%62`` and ``b``, ``%3A`` and ``:``, ``ツ``
    and ``%E3%83%84``, ``%2a`` and ``%2A`` compare equal, and a literal
    ``*`` or ``$`` (``%2A``, ``%24``) never reads as a wildcard.
    """
    if _NEEDS_NORMALIZING(path) is None:
        return path
    if path.isascii():
        return _ASCII_CHANGES.sub(_ascii_canonical, path)
    # The octets of its UTF-8 as Latin-1 text, each beyond ASCII encoded
    # (urllib's unquote_to_bytes() then quote_from_bytes() give the same,
    # but cost 3 % more instructions on the library route).
    return _OCTET_CHANGES.sub(_octet_canonical, encode(path).decode("latin-1"))


def normalize_pattern(pattern: str) -> str:
    """A rule pattern in the same canonical form as :func:`normalize_path`,
    keeping its ``*`` wildcards and its final ``$`` anchor."""
    if _NEEDS_NORMALIZING(pattern) is None:
        return pattern
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if _NEEDS_NORMALIZING_PATTERN(body) is None:
        # Only "*" wildcards (and a final "$"): already normal.
        return pattern
    normal = "*".join(normalize_path(part) for part in body.split("*"))
    return normal + "$" if anchored else normal


_GOOGLE_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})|[\x80-\xff]")


def _google_escape(match: re.Match[bytes]) -> bytes:
    hexdigits = match[1]
    if hexdigits is not None:
        return b"%" + hexdigits.upper()
    return b"%%%02X" % match[0][0]


_OUTSIDE_ASCII = re.compile(rb"[\x80-\xff]")


def escape_pattern(pattern: str, *, upper_hex: bool = True) -> str:
    """A rule pattern as Google's ``MaybeEscapePattern`` leaves it.

    ``%xx`` escapes get upper-case hex digits (unless not ``upper_hex``:
    Yandex compares them as written) and octets outside ASCII are
    percent-encoded; nothing is decoded.
    """
    if pattern.isascii() and ("%" not in pattern or not upper_hex):
        return pattern
    if not upper_hex:
        return _OUTSIDE_ASCII.sub(_escape_octet, encode(pattern)).decode("ascii")
    return _GOOGLE_ESCAPE.sub(_google_escape, encode(pattern)).decode("ascii")


def _escape_octet(match: re.Match[bytes]) -> bytes:
    return b"%%%02X" % match[0][0]


def normal_pattern(pattern: str, percent: str) -> str:
    """``pattern`` normalised as the matcher compares patterns (``percent``
    a profile's :data:`~scrapy_rfc9309.profiles.Percent`); kept in the cache
    (the same escaped patterns come back from file to file)."""
    cache = _NORMALS[percent]
    normal = cache.data.get(pattern)
    if normal is None:
        if percent == "normalize":
            normal = normalize_pattern(pattern)
        else:
            normal = escape_pattern(pattern, upper_hex=percent == "escape")
        if not cache.full:
            cache.put(pattern, normal)
    return normal


# Patterns as written -> normalised, for each way of normalising; bounded in
# bytes (patterns come from the sites, up to a line of 16 KB each).
_NORMALS: dict[str, BoundedCache[str, str]] = {
    percent: BoundedCache(f"urls.normals.{percent}", 2 << 20, 2048)
    for percent in ("normalize", "escape", "verbatim")
}
