"""Credentials kept out of log lines and error messages (pure).

A store URL (``ROBOTS_STORE_URL``, ``REDIS_URL``) may carry a user name and
password in its userinfo (``redis://user:pass@host``) or in its query
(``?password=...``, ``?username=...``, as redis-py reads them).  Every
message that shows such a URL shows :func:`masked` instead, and every
message that may quote one (an error of the client library) goes through
:func:`redacted`.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

__all__ = ["MASK", "masked", "redacted"]

MASK = "***"

# Query parameters whose value is a credential or names one.
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|key|auth|cred|user", re.IGNORECASE)


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme://, userinfo, rest of the authority and path, query), or
    ``None`` when ``url`` is no URL at all."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)([^?#]*)(\??[^#]*)", url)
    if match is None:
        return None
    scheme, authority, path, query = match.groups()
    userinfo, at, host = authority.rpartition("@")
    return scheme, userinfo + at, host + path, query


def _secret_pairs(query: str) -> list[tuple[str, str]]:
    pairs = []
    for pair in query.lstrip("?").split("&"):
        name, _, value = pair.partition("=")
        if value and _SECRET_NAME.search(unquote_plus(name)):
            pairs.append((name, value))
    return pairs


def masked(url: str) -> str:
    """``url`` with its userinfo and every credential in its query replaced
    by ``***``: ``redis://***@host:6379/0?password=***``.  Anything that
    does not parse as a URL is masked whole."""
    parts = _split(url)
    if parts is None:
        return MASK
    scheme, userinfo, rest, query = parts
    if userinfo:
        userinfo = MASK + "@"
    if query:
        secret = {name for name, _ in _secret_pairs(query)}
        pairs = [pair.partition("=") for pair in query[1:].split("&")]
        query = "?" + "&".join(
            f"{name}={MASK}" if name in secret else name + equals + value
            for name, equals, value in pairs
        )
    return scheme + userinfo + rest + query


def _secrets(url: str) -> set[str]:
    """Each credential ``url`` holds, as written and percent-decoded."""
    parts = _split(url)
    if parts is None:
        return {url}
    found: set[str] = set()
    userinfo = parts[1].rstrip("@")
    for part in filter(None, userinfo.split(":", 1)):
        found.update((part, unquote(part)))
    for _, value in _secret_pairs(parts[3]):
        found.update((value, unquote_plus(value)))
    return {secret for secret in found if secret}


def redacted(text: str, url: str) -> str:
    """``text`` with ``url`` shown :func:`masked`, and any credential of
    ``url`` quoted on its own replaced by ``***``."""
    text = text.replace(url, masked(url))
    # Longest first, so that a secret containing another is masked whole.
    for secret in sorted(_secrets(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
