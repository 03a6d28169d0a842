"""Credentials kept out of log lines and error messages (pure).

A store URL (``ROBOTS_STORE_URL``, ``REDIS_URL``) may carry a user name and
password in its userinfo (``redis://user:pass@host``) or in its query
(``?password=...``, ``?username=...``, as redis-py reads them).  Every
message that shows such a URL shows :func:`masked` instead, and every
message that may quote one (an error of the client library) goes through
:func:`redacted`.

The URL is read as redis-py's ``parse_url`` reads it (``urlparse``, then
``parse_qs`` of its query), so that whatever it takes for a credential is
masked, and also as its writer may have meant it: a password with an
unencoded ``/``, ``?`` or ``#`` ends redis-py's host there
(``redis://u:pa/ss@host`` is host ``u``, port ``pa``), so when an ``@``
comes after the authority redis-py reads, everything before the last ``@``
counts as userinfo and each of its pieces (``pa``, ``ss``) as a secret.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, unquote_plus, urlparse

__all__ = ["MASK", "ambiguous", "masked", "redacted"]

MASK = "***"

# Query parameters whose value is a credential or names one.
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|key|auth|cred|user", re.IGNORECASE)
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)([^?#]*)(\??[^#]*)", re.DOTALL)
# What redis-py may quote of a misread userinfo: its host, port, path or
# query names are pieces of it between these.
_DELIMITERS = re.compile(r"[:/?#@&=;\[\]\s]+")
# The query options redis-py reads (URL_QUERY_ARGUMENT_PARSERS of redis-py
# 8, and the connection's own options a URL may set).
_OPTIONS = frozenset(
    [
        "db",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_read_size",
        "socket_keepalive",
        "retry_on_timeout",
        "retry_on_error",
        "max_connections",
        "health_check_interval",
        "ssl_check_hostname",
        "ssl_include_verify_flags",
        "ssl_exclude_verify_flags",
        "ssl_min_version",
        "timeout",
        "protocol",
        "legacy_responses",
        "client_name",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_certfile",
        "ssl_keyfile",
        "decode_responses",
        "encoding",
        "encoding_errors",
        "lib_name",
        "lib_version",
    ]
)
# What urlparse removes from a URL before reading it.
_UNSAFE = re.compile(r"[\t\r\n]")


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme://, userinfo, rest of the authority and path, query), or
    ``None`` when ``url`` is no URL at all."""
    match = _URL.match(url)
    if match is None:
        return None
    scheme, authority, path, query = match.groups()
    userinfo, at, host = authority.rpartition("@")
    return scheme, userinfo + at, host + path, query


def ambiguous(url: str) -> bool:
    """Whether an ``@`` comes after the authority redis-py reads: a user
    name or password with an unencoded ``/``, ``?`` or ``#`` (or an ``@``
    in the path or query)."""
    match = _URL.match(url)
    return match is not None and "@" in url[match.end(2) :]


def _query(query: str) -> list[tuple[str, str, str, bool]]:
    """The pairs of ``query`` as (name, "=", value, secret): secret when its
    name names a credential (its value is), or when it follows one and is
    no option redis-py knows, a piece of a credential with an unencoded
    ``&`` (the whole pair is)."""
    pairs = []
    after_secret = False
    for pair in query[1:].split("&") if query else ():
        name, equals, value = pair.partition("=")
        if _SECRET_NAME.search(unquote_plus(name)):
            after_secret = True
            pairs.append((name, equals, value, True))
        elif after_secret and unquote_plus(name) not in _OPTIONS:
            pairs.append((name, equals, value, True))
        else:
            after_secret = False
            pairs.append((name, equals, value, False))
    return pairs


def masked(url: str) -> str:
    """``url`` with its userinfo and every credential in its query replaced
    by ``***``: ``redis://***@host:6379/0?password=***``.  Anything that
    does not parse as a URL, or whose userinfo may run past its host (see
    :func:`ambiguous`), is masked whole after the scheme."""
    parts = _split(url)
    if parts is None:
        return MASK
    scheme, userinfo, rest, query = parts
    if ambiguous(url):
        return scheme + MASK
    if userinfo:
        userinfo = MASK + "@"
    if query:
        query = "?" + "&".join(
            (f"{name}={MASK}" if _SECRET_NAME.search(unquote_plus(name)) else MASK)
            if secret
            else name + equals + value
            for name, equals, value, secret in _query(query)
        )
    return scheme + userinfo + rest + query


def _forms(text: str) -> set[str]:
    """``text`` as written, and as redis-py may read it: tabs and line breaks
    dropped (by urlparse), decoded as a host or path (unquote) or a query
    (unquote_plus: "+" is a space)."""
    return {
        form
        for written in (text, _UNSAFE.sub("", text))
        for form in (written, unquote(written), unquote_plus(written))
        if form
    }


def _as_redis_reads(url: str) -> set[str] | None:
    """The credentials redis-py's ``parse_url`` takes from ``url``; ``None``
    when ``urlparse`` refuses it (its error may quote a piece of it)."""
    try:
        parsed = urlparse(url)
        found = {unquote(parsed.username or ""), unquote(parsed.password or "")}
    except ValueError:  # "Invalid IPv6 URL", "'x' does not appear to be ..."
        return None
    found.update((parsed.username or "", parsed.password or ""))
    for name, values in parse_qs(parsed.query).items():
        if _SECRET_NAME.search(name):
            found.update(values)
    return found


def _userinfo(url: str) -> str:
    """The userinfo of ``url`` as written: up to the last ``@`` when that
    comes after the authority redis-py reads (see :func:`ambiguous`)."""
    match = _URL.match(url)
    if match is None:
        return ""
    if ambiguous(url):
        after = url[match.end(1) :]
        return after[: after.rfind("@")]
    return match.group(2).rpartition("@")[0]


def _secrets(url: str) -> set[str]:
    """Each credential ``url`` holds, as written and percent-decoded, and
    as redis-py reads it."""
    parts = _split(url)
    if parts is None:
        return {url}
    found = _as_redis_reads(url) or set()
    userinfo = _userinfo(url)
    found.add(userinfo)
    for part in userinfo.split(":", 1):
        found.update(_forms(part))
    for name, _, value, secret in _query(parts[3]):
        if secret and _SECRET_NAME.search(unquote_plus(name)):
            found.update(_forms(value))
    return {secret for secret in found if secret}


def _pieces(url: str) -> set[str]:
    """The pieces of a userinfo redis-py misreads (see :func:`ambiguous`),
    or that ``urlparse`` refuses: what its host, port, path or query names,
    or an error, may quote."""
    # Pieces of a query credential with an unencoded "&": redis-py takes
    # them for options of their own, which its errors name.
    parts = _split(url)
    found = {
        form
        for name, _, value, secret in _query(parts[3] if parts else "")
        if secret and not _SECRET_NAME.search(unquote_plus(name))
        for form in _forms(name) | _forms(value)
    }
    if not ambiguous(url) and _as_redis_reads(url) is not None:
        return found
    return found | {
        piece
        for form in _forms(_userinfo(url))
        for piece in _DELIMITERS.split(form)
        if piece
    }


def redacted(text: str, url: str) -> str:
    """``text`` with ``url`` shown :func:`masked`, and any credential of
    ``url`` quoted on its own replaced by ``***``."""
    text = text.replace(url, masked(url))
    secrets = _secrets(url)
    # Every place any secret or piece is found, in the text as it is: masking
    # one before looking for the next would leave the rest of an overlapping
    # one shown.  Case is ignored: redis-py lower-cases what it reads as the
    # host ("Ω@Ω#" names the host "ω").  Pieces of a misread userinfo as
    # redis-py quotes them (a host, a port, a query name) are found as whole
    # words only, short as they may be.
    words = [
        rf"(?<![^\W_]){re.escape(piece)}(?![^\W_])" for piece in _pieces(url) - secrets
    ]
    spans = sorted(
        match.span(1)
        for pattern in [*map(re.escape, secrets), *words]
        for match in re.finditer(f"(?=({pattern}))", text, flags=re.IGNORECASE)
        if match.end(1) > match.start(1)
    )
    kept: list[str] = []
    end = 0
    for start, stop in spans:
        if start > end or not kept:
            kept.append(text[end:start])
            kept.append(MASK)
        end = max(end, stop)
    kept.append(text[end:])
    return "".join(kept)
