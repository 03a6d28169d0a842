"""Where a site says its licence terms are (RSL 1.0 discovery): robots.txt
``License:`` lines and ``Link: <...>; rel="license"`` response headers.

Recorded, never enforced (:mod:`scrapy_rfc9309.licensemiddleware` gives
them to responses and items); no licence document is fetched.  See
docs/rights.md.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    from .parse import Document, Group, Record

__all__ = ["is_license_url", "license_records", "link_licenses", "robots_licenses"]

#: RSL's media type: a ``rel="license"`` link of another type is an
#: ordinary licence link (Creative Commons, ...), recorded all the same.
_RSL_TYPE = "application/rsl+xml"
_LICENSE = "license"

# One link of a Link header (RFC 8288): <target> and its parameters.  A
# target holds no "<": each search from a "<" stops at the next one, so a
# value is read in linear time (with "[^>]*", 16 KB of "<" took a second).
_LINK = re.compile(r"<([^<>]*)>((?:\s*;\s*[^;,\"]*(?:\"(?:[^\"\\]|\\.)*\")?)*)")
_PARAM = re.compile(
    r";\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*(\"(?:[^\"\\]|\\.)*\"|[^;,\s]*))?"
)


def is_license_url(url: str) -> bool:
    """Whether ``url`` is an absolute URL with a host (what RSL requires of
    a ``License:`` line, which is left out otherwise)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.scheme and parts.netloc) and not any(c.isspace() for c in url)


def license_records(
    records: Sequence[Record], groups: Sequence[Group], chosen: Iterable[Group]
) -> tuple[Record, ...]:
    """The ``License`` records among ``records`` that apply to the agent the
    ``chosen`` groups (of ``groups``, the document's) answer for.

    RSL (errata of 2026-01-16): a line inside a group applies to the agents
    of that group, one before every group is global; the chosen groups'
    lines, if any, replace the global ones.  A line belongs to the group
    whose first User-agent line is the last before it; a value that is no
    absolute URL is no licence.
    """
    found = [
        record
        for record in records
        if record.name == _LICENSE and is_license_url(record.value.strip())
    ]
    if not found:
        return ()
    starts = [group.line for group in groups]
    picked = {id(group) for group in chosen}
    scoped: list[Record] = []
    unscoped: list[Record] = []
    for record in found:
        index = bisect_right(starts, record.line) - 1
        if index < 0:
            unscoped.append(record)
        elif id(groups[index]) in picked:
            scoped.append(record)
    return tuple(scoped or unscoped)


def robots_licenses(document: Document, user_agent: str) -> tuple[str, ...]:
    """The licence URLs of ``document`` for ``user_agent``, in file order,
    each once; values that are no absolute URL are left out."""
    if not any(record.name == _LICENSE for record in document.records):
        return ()
    try:
        records = document.for_agent(user_agent).records
    except ValueError:
        # An agent the profile does not answer for (the memory store asks
        # for "*" when it keeps whole outcomes): no group is its.
        return ()
    urls = (record.value.strip() for record in records if record.name == _LICENSE)
    return tuple(dict.fromkeys(url for url in urls if is_license_url(url)))


def link_licenses(
    values: Iterable[bytes | str], base: str = ""
) -> list[dict[str, Any]]:
    """The ``rel="license"`` links of ``Link`` header values: their target
    (resolved against ``base``; a target that stays relative is left out)
    and whether they are RSL (``type="application/rsl+xml"``)."""
    found: list[dict[str, Any]] = []
    for value in values:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for match in _LINK.finditer(text):
            params: dict[str, str] = {}
            for name, raw in _PARAM.findall(match[2]):
                params.setdefault(name.lower(), raw.strip('"'))
            if _LICENSE not in params.get("rel", "").lower().split():
                continue
            target = match[1].strip()
            url = urljoin(base, target) if base and target else target
            if not is_license_url(url):
                continue
            found.append(
                {
                    "url": url,
                    "source": "link",
                    "rsl": params.get("type", "").strip().lower() == _RSL_TYPE,
                }
            )
    return found
