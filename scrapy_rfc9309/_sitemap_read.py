"""Reading a sitemap's XML within fixed bounds.

A sitemap comes from the server being crawled, and its size alone
(``ROBOTS_SITEMAP_MAX_BYTES``) does not bound the work of reading it: 50 MiB
of ``<x/>`` is 13 million elements.  :class:`SitemapReader` reads the XML a
chunk at a time with a pull parser that resolves no entity and reaches no
network, frees every element once it is read (so that what it holds stays
flat whatever the document's size), and stops for good, saying why in
:attr:`SitemapReader.cut`, at the first of:

- :data:`MAX_ELEMENTS` elements (:data:`ELEMENTS`);
- :data:`MAX_NAMES` distinct element and attribute names (:data:`NAMES`),
  which the parser keeps in a dictionary of its own for the whole document;
- :data:`MAX_OPEN_BYTES` of input read without an element closing
  (:data:`OPEN`): text and attributes pile up until their element ends;
- :data:`MAX_ENTRIES` entries with a ``<loc>``, the sitemaps.org protocol's
  limit for one sitemap or sitemap index (:data:`URLS`);
- the ``max_urls`` page URLs (``<url>`` entries) the caller has left
  (:data:`URL_BUDGET`).

What was read before the cut is kept.  :func:`read` drives a reader over a
response body (gzip decompressed as it is read), and :func:`site` says which
site a URL is on.  Pure: lxml and tldextract, no Scrapy, no I/O.
"""

from __future__ import annotations

import zlib
from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import lxml.etree
from tldextract import TLDExtract

from ._decode import MAX_MEMBERS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator

__all__ = [
    "CHUNK",
    "ELEMENTS",
    "MAX_ELEMENTS",
    "MAX_ENTRIES",
    "MAX_NAMES",
    "MAX_OPEN_BYTES",
    "MEMBERS",
    "NAMES",
    "OPEN",
    "URLS",
    "URL_BUDGET",
    "WHY",
    "SitemapReader",
    "TooLarge",
    "TooManyMembers",
    "chunks",
    "gunzip_chunks",
    "read",
    "site",
]

#: How much input the parser is given at a time.
CHUNK = 65_536
#: A sitemap of 50,000 URLs, each with ``<loc>``, ``<lastmod>``,
#: ``<changefreq>`` and ``<priority>``, is 250,001 elements; image, video and
#: ``xhtml:link`` extensions add some more per URL.
MAX_ELEMENTS = 1_000_000
#: The sitemaps protocol and its image, video, news and xhtml extensions use
#: about 40 names.
MAX_NAMES = 256
MAX_OPEN_BYTES = 1_048_576
#: sitemaps.org: "no more than 50,000 URLs".
MAX_ENTRIES = 50_000

#: Why a sitemap was cut (the ``robots/sitemaps/cut/<why>`` stats).
ELEMENTS = "elements"
NAMES = "names"
OPEN = "open_element"
URLS = "urls"
URL_BUDGET = "robots_txt_urls"
MEMBERS = "members"
#: Not a cut of the reading: the ``xhtml:link`` alternates past
#: :data:`MAX_ENTRIES` in one sitemap, left out of its entries (no more page
#: requests are made from one sitemap), every ``<loc>`` read all the same.
ALTERNATES = "alternates"
#: Each cut explained, for the log (``%(robots_txt)s``: the robots.txt URL).
WHY = {
    ELEMENTS: f"over {MAX_ELEMENTS:,} elements",
    NAMES: f"over {MAX_NAMES} distinct names",
    OPEN: f"over {MAX_OPEN_BYTES:,} bytes without an element closing",
    URLS: f"over {MAX_ENTRIES:,} entries, the sitemaps.org limit",
    MEMBERS: f"over {MAX_MEMBERS} gzip members",
    URL_BUDGET: (
        "the sitemaps below %(robots_txt)s gave"
        " ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT page URLs"
    ),
    ALTERNATES: (
        f"over {MAX_ENTRIES:,} alternate links, the rest left out of its"
        " entries (every <loc> read)"
    ),
}

_ENTRIES = frozenset(("url", "sitemap"))
#: What Scrapy's ``gzip_magic_number`` looks for.
_GZIP = b"\x1f\x8b\x08"


class TooLarge(Exception):
    """A gzip sitemap decompressing past its limit (args: the limit)."""


class TooManyMembers(Exception):
    """A gzip sitemap of more members than are read (args: how many)."""


def chunks(body: bytes) -> Iterator[bytes]:
    """``body`` in pieces of :data:`CHUNK` bytes."""
    for start in range(0, len(body), CHUNK):
        yield body[start : start + CHUNK]


def gunzip_chunks(body: bytes, limit: int) -> Iterator[bytes]:
    """``body`` decompressed a piece at a time (every gzip member), as
    resilient as Scrapy's ``gunzip``: a broken stream ends the output, or
    raises ``OSError`` / ``EOFError`` if nothing came out of it.
    :class:`TooLarge` past ``limit`` bytes (0: no limit); :class:`TooManyMembers`
    past :data:`~scrapy_rfc9309._decode.MAX_MEMBERS` members, so that a body
    of millions of empty members (each decoding to nothing) is bounded work
    as well, a member at a time (``GzipFile.read1`` walks them all in one
    call)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending, members, size = body, 1, 0
    while True:
        try:
            piece = inflater.decompress(pending, CHUNK)
        except zlib.error:
            if size:
                return
            raise
        pending = inflater.unconsumed_tail
        if piece:
            size += len(piece)
            if limit and size > limit:
                raise TooLarge(limit)
            yield piece
        elif inflater.eof:
            if not inflater.unused_data:
                return
            if members >= MAX_MEMBERS:
                raise TooManyMembers(MAX_MEMBERS)
            members += 1
            pending = inflater.unused_data
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif not pending:
            if size:
                return
            raise EOFError("the gzip stream ends before its end")


# Registrable domains from the public suffix list bundled with tldextract
# (a dependency of Scrapy): no download, no cache written.  Private suffixes
# count, so two blogs on one hosting domain are two sites.
_SITES = TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


def site(url: str) -> str:
    """The registrable domain of ``url``'s host (``example.co.uk`` for
    ``www.example.co.uk``), or the host itself (an IP address, a name under
    no public suffix)."""
    host = urlsplit(url).hostname or ""
    parts = _SITES(host)
    return f"{parts.domain}.{parts.suffix}" if parts.domain and parts.suffix else host


def _local(tag: object) -> str:
    """The name of an element without its namespace ('' for entities)."""
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


class SitemapReader:
    """The type and ``<loc>`` values of one sitemap, read within bounds."""

    def __init__(
        self,
        *,
        max_urls: int = MAX_ENTRIES,
        max_entries: int = MAX_ENTRIES,
        max_elements: int = MAX_ELEMENTS,
        max_names: int = MAX_NAMES,
        max_open_bytes: int = MAX_OPEN_BYTES,
        keep_entries: bool = False,
    ) -> None:
        self.max_urls = max_urls
        self.max_entries = max_entries
        self.max_elements = max_elements
        self.max_names = max_names
        self.max_open_bytes = max_open_bytes
        #: The root element's name (``urlset``, ``sitemapindex``, ...), once
        #: an element has been read.
        self.kind: str | None = None
        #: The ``<loc>`` of each entry, in document order.
        self.locations: list[str] = []
        #: With ``keep_entries``, each entry as Scrapy's ``Sitemap`` gives it
        #: (its fields by name, ``alternate`` for the ``xhtml:link`` hrefs).
        self.entries: list[dict[str, Any]] = []
        self._keep = keep_entries
        self._fields: dict[str, Any] = {}
        #: Alternate links kept in :attr:`entries`, and left out past
        #: ``max_entries`` (:data:`ALTERNATES`).
        self.alternates = self.alternates_left_out = 0
        #: Why reading stopped before the end (:data:`ELEMENTS`, ...).
        self.cut: str | None = None
        #: Elements read so far.
        self.elements = 0
        self.done = False
        self._names: set[str] = set()
        self._open = 0
        self._loc: str | None = None
        self._root: lxml.etree._Element | None = None
        self._parser = lxml.etree.XMLPullParser(
            events=("end",),
            recover=True,
            resolve_entities=False,
            huge_tree=False,
            no_network=True,
            remove_comments=True,
            remove_pis=True,
            remove_blank_text=True,
            collect_ids=False,
        )

    def read(self, pieces: Iterable[bytes]) -> SitemapReader:
        """Read the whole of ``pieces``, or up to the cut."""
        for piece in pieces:
            self.feed(piece)
            if self.done:
                return self
        self.close()
        return self

    def feed(self, piece: bytes) -> None:
        if self.done:
            return
        self._open += len(piece)
        try:
            self._parser.feed(piece)
        except lxml.etree.XMLSyntaxError:
            self.done = True
        self._read_events()
        if not self.done and self._open > self.max_open_bytes:
            self._stop(OPEN)

    def close(self) -> None:
        if self.done:
            return
        # An empty or broken document: what was read stays.
        with suppress(lxml.etree.XMLSyntaxError):
            self._parser.close()
        self._read_events()
        self.done = True

    def _stop(self, why: str) -> None:
        self.cut = why
        self.done = True
        # Nothing more will be fed: let the parser and its tree go now.
        self._root = None
        del self._parser

    def _read_events(self) -> None:
        if self.done and self.cut is not None:
            return
        for _, element in self._parser.read_events():
            self._open = 0
            if not self._element(element):
                return

    def _element(self, element: lxml.etree._Element) -> bool:
        """Read one element that has just ended, then free it; ``False``
        once reading has stopped."""
        self.elements += 1
        if self.elements > self.max_elements:
            self._stop(ELEMENTS)
            return False
        names = self._names
        if isinstance(element.tag, str):
            names.add(element.tag)
        if element.attrib:
            names.update(element.attrib)
        if len(names) > self.max_names:
            self._stop(NAMES)
            return False
        parent = element.getparent()
        if self._root is None:
            self._root = element if parent is None else _root_of(parent)
            self.kind = _local(self._root.tag)
            if self.kind not in ("urlset", "sitemapindex"):
                # Not a sitemap: no need to read the rest.
                self.done = True
                return False
        if parent is not None and not self._entry_field(element, parent):
            return False
        # Free what was read: the element's content, and the elements
        # before it (the one just ended may still be its parent's tail).
        element.clear()
        if parent is not None:
            while element.getprevious() is not None:
                del parent[0]
        return True

    def _entry_field(
        self, element: lxml.etree._Element, parent: lxml.etree._Element
    ) -> bool:
        """Keep the ``<loc>`` of an entry; ``False`` past the entries'
        limit."""
        local = _local(element.tag)
        if parent is self._root:
            if local in _ENTRIES and self._loc is not None:
                taken = len(self.locations)
                if taken >= self.max_entries:
                    self._stop(URLS)
                    return False
                if self.kind == "urlset" and taken >= self.max_urls:
                    self._stop(URL_BUDGET)
                    return False
                self.locations.append(self._loc)
                if self._keep:
                    self.entries.append({**self._fields, "loc": self._loc})
            self._loc = None
            self._fields = {}
        elif parent.getparent() is self._root and _local(parent.tag) in _ENTRIES:
            text = (element.text or "").strip()
            if local == "loc" and self._loc is None:
                self._loc = text
            if not self._keep or not local:
                return True
            if local == "link":
                href = element.get("href")
                if href and self.alternates < self.max_entries:
                    self.alternates += 1
                    self._fields.setdefault("alternate", []).append(href)
                elif href:
                    self.alternates_left_out += 1
            else:
                self._fields[local] = text
        return True


def _root_of(element: lxml.etree._Element) -> lxml.etree._Element:
    while (parent := element.getparent()) is not None:
        element = parent
    return element


async def read(
    body: bytes,
    limit: int,
    max_urls: int,
    pause: Callable[[], Awaitable[None]],
    *,
    keep_entries: bool = False,
) -> SitemapReader | None:
    """``body`` read as a sitemap, plain or gzip (decompressed as it is read,
    so that a sitemap cut short is decompressed no further), awaiting
    ``pause()`` between two pieces of input: reading is bounded work, but up
    to a million elements of it, which would hold up everything else on the
    event loop.  ``None`` for a corrupt gzip file; :class:`TooLarge` when it
    decompresses past ``limit`` bytes."""
    reader = SitemapReader(max_urls=max_urls, keep_entries=keep_entries)
    pieces = gunzip_chunks(body, limit) if body[:3] == _GZIP else chunks(body)
    try:
        for piece in pieces:
            reader.feed(piece)
            if reader.done:
                return reader
            await pause()
    # Not gzip after all.
    except (OSError, EOFError, zlib.error):
        return None
    except TooManyMembers:
        # What the members read gave is kept, as for the other cuts.
        reader.close()
        reader.cut = MEMBERS
        return reader
    reader.close()
    return reader
