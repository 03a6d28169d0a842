"""How the persistent stores write an outcome and read it back.

An entry is the JSON of ``Outcome.to_dict()`` (which carries its own format
version) without the documents' other records (``name: value`` lines that
decide nothing), compressed with zlib against a fixed dictionary of the
JSON's own keys: ``z1:`` and the zlib stream.  Over the 4,231 robots.txt
files of Protego's corpus that is 0.5 KB per origin on average, against
3.5 KB for the JSON alone (``python -m benchmarks.stores`` prints both).

Reading never fails: an entry another version of the package wrote, or one
damaged on disk or by hand, is treated as missing, so the origin's
robots.txt is simply fetched again.  Entries of the previous form (the bare
JSON, records included) still read.  What is read back is validated as
``Outcome.from_dict()`` validates it, and decompressing stops at
:data:`MAX_DECODED` bytes.
"""

from __future__ import annotations

import json
import logging
import zlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._json import loads
from ..outcome import Outcome
from ..parse import Document

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Stats key: reads of a stored entry that could not be decoded (another
#: format, damaged or tampered with): each is treated as missing, and the
#: origin's robots.txt fetched again.
DISCARDED = "robots/store/discarded"

#: Stats key: outcomes not written to a shared store because their entry
#: was larger than ``ROBOTS_STORE_MAX_ENTRY_BYTES``: kept in the memory of
#: the process that fetched them, not shared.
OVERSIZED = "robots/store/oversized"

#: What starts an entry of the compact form.
COMPACT = b"z1:"

#: The zlib dictionary of the ``z1:`` form: the JSON's keys and common
#: values, so that even a short entry compresses.  Entries written with it
#: read only with it: a new dictionary needs a new prefix.
DICTIONARY = (
    b'{"format":1,"kind":"unreachable","fetched_at":,"expires_at":,'
    b'"retain_until":,"http_status":null,"detail":"","unreachable_since":null,'
    b'"grace_ends_at":null,"fallback":null,"document":{"profile":"rfc9309",'
    b'"groups":[{"user_agents":["*"],"rules":[["allow","/",1],["disallow","/",'
    b'],"crawl_delay":null,"content_signals":{},"line":1,"content_usage":[]}],'
    b'"sitemaps":["https://www.'
    b'"],"records":[]},"detail":"HTTP 200","http_status":200,"kind":"parsed",'
)

#: The most an entry may hold, a compact one once decompressed (16 MiB): far
#: more than any robots.txt of ``ROBOTS_MAX_BYTES`` gives, so only an entry
#: written by hand (a decompression bomb, megabytes of JSON) is refused.
MAX_DECODED = 16 * 1024 * 1024


def encode(outcome: Outcome) -> bytes:
    """The stored form of ``outcome``: ``z1:`` and its compressed JSON."""
    return pack(_kept(outcome).to_dict())


def pack(value: Any) -> bytes:
    """``value`` (JSON-friendly) in the compact form: ``z1:`` and the zlib
    stream of its ASCII JSON."""
    data = json.dumps(value, separators=(",", ":")).encode("ascii")
    compressor = zlib.compressobj(9, zdict=DICTIONARY)
    return COMPACT + compressor.compress(data) + compressor.flush()


def legacy_encode(outcome: Outcome) -> str:
    """The previous stored form, still read: ASCII JSON.

    A document parsed from bytes that are not UTF-8 keeps them as lone
    surrogates, which no UTF-8 encoder accepts; escaped as ``\\udcXX`` they
    are stored as ASCII and read back exactly.
    """
    return json.dumps(outcome.to_dict(), separators=(",", ":"))


def _kept(outcome: Outcome) -> Outcome:
    """``outcome`` with only what the crawl reads kept in its documents:
    groups, sitemaps, profile and RSL ``License`` lines (with their line
    numbers, which tell the groups they apply to), not the other records."""
    return replace(
        outcome,
        document=_without_records(outcome.document),
        fallback=_without_records(outcome.fallback),
    )


def _without_records(document: Document | None) -> Document | None:
    if document is None or not document.records:
        return document
    kept = tuple(record for record in document.records if record.name == "license")
    if len(kept) == len(document.records):
        return document
    return Document(document.groups, document.sitemaps, kept, document.profile)


def unpack(data: str | bytes) -> Any:
    """The JSON value of a stored entry, compact or of the previous form.

    Raises ``ValueError`` when it is neither, or holds (compact: once
    decompressed) more than :data:`MAX_DECODED` bytes, which are not read.
    """
    if len(data) > MAX_DECODED:
        # A bare JSON entry of that size was written by hand: parsing it
        # would hold the event loop for seconds.
        raise ValueError(f"more than {MAX_DECODED} bytes")
    if isinstance(data, bytes) and data.startswith(COMPACT):
        decompressor = zlib.decompressobj(zdict=DICTIONARY)
        data = decompressor.decompress(data[len(COMPACT) :], MAX_DECODED)
        if decompressor.unconsumed_tail:
            raise ValueError(f"decompresses to more than {MAX_DECODED} bytes")
        if not decompressor.eof or decompressor.unused_data:
            raise ValueError("not one whole zlib stream")
    return loads(data)


def decode(
    data: str | bytes, origin: str, crawler: Crawler | None = None
) -> Outcome | None:
    """The outcome stored as ``data``, or ``None`` when it cannot be read."""
    try:
        return Outcome.from_dict(unpack(data))
    # Whatever an entry holds is data from outside this process (another
    # version, another program, a damaged file): any failure to read it
    # (absurdly nested JSON included: _json.loads) means "not stored".
    except Exception as exc:
        if crawler is not None and crawler.stats is not None:
            crawler.stats.inc_value(DISCARDED)
        logger.debug(
            "Ignoring the stored outcome of %(origin)s: %(error)s",
            {"origin": origin, "error": exc},
            extra=log_extra(crawler),
        )
        return None


def oversized(crawler: Crawler | None, origin: str, size: int, bound: int) -> None:
    """Count and log an entry of ``origin`` of ``size`` bytes, over the
    ``bound`` of ``ROBOTS_STORE_MAX_ENTRY_BYTES``, that is not stored."""
    if crawler is not None and crawler.stats is not None:
        crawler.stats.inc_value(OVERSIZED)
    logger.warning(
        "The robots.txt outcome of %(origin)s takes %(size)s bytes stored, over"
        " ROBOTS_STORE_MAX_ENTRY_BYTES (%(bound)s): kept in this process only,"
        " not shared",
        {"origin": origin, "size": size, "bound": bound},
        extra=log_extra(crawler),
    )


def log_extra(crawler: Crawler | None) -> dict[str, Any]:
    """``extra`` for log calls: the crawler's spider, when there is one."""
    return {"spider": crawler.spider} if crawler is not None else {}
