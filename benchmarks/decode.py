"""Memory of decoding hostile robots.txt bodies: the bounded decoder against
what Scrapy's HttpCompressionMiddleware allocates for the same body.

Each bomb decodes to 64 MiB of NULs after one rule; the package's decoder
stops one byte past ``ROBOTS_MAX_BYTES`` (512,000), Scrapy's decodes up to
``DOWNLOAD_MAXSIZE`` (1 GiB by default), which is what every robots.txt got
before (``download_maxsize`` 0 for multi-member gzip and raw deflate: no
limit at all).  Memory is the tracemalloc peak of the decode alone.

    python -m benchmarks.decode
"""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Callable
from functools import partial

import brotli
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.utils.test import get_crawler

from scrapy_rfc9309._decode import decode

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd

LIMIT = 512_000
DOWNLOAD_MAXSIZE = 1024 * 1024 * 1024
MiB = 1024 * 1024
HEAD = b"User-agent: *\nDisallow: /private\n"


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _bombs() -> dict[str, tuple[bytes, str]]:
    zeros = bytes(64 * MiB)
    member = gzip.compress(bytes(16 * MiB), compresslevel=9)
    return {
        "gzip, 4 members": (gzip.compress(HEAD) + member * 4, "gzip"),
        "raw deflate": (_raw_deflate(HEAD + zeros), "deflate"),
        "br": (brotli.compress(HEAD + zeros, quality=5), "br"),
        "zstd": (zstd.compress(HEAD + zeros), "zstd"),
        "gzip, gzip": (gzip.compress(gzip.compress(HEAD + zeros)), "gzip, gzip"),
    }


def _peak(work: Callable[[], Callable[[], int]]) -> tuple[int, int]:
    """What ``work`` decoded (its result tells, once measured) and the
    tracemalloc peak of the work."""
    tracemalloc.start()
    try:
        size = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return size(), peak


def _ours(body: bytes, encoding: str) -> Callable[[], int]:
    decoder = decode(body, [encoding], LIMIT)
    return lambda: len(decoder.body)


def _scrapys(
    middleware: HttpCompressionMiddleware, body: bytes, encoding: str
) -> Callable[[], int]:
    decoded, _ = middleware._handle_encoding(
        body, [encoding.encode()], DOWNLOAD_MAXSIZE
    )
    return lambda: len(decoded)


def main() -> None:
    middleware = HttpCompressionMiddleware.from_crawler(get_crawler())
    print(
        f"{'body':<18} {'on the wire':>12} {'decoded':>12} {'peak':>10}"
        f" {'Scrapy decoded':>15} {'Scrapy peak':>12} {'ratio':>7}"
    )
    for name, (body, encoding) in _bombs().items():
        ours, our_peak = _peak(partial(_ours, body, encoding))
        theirs, their_peak = _peak(partial(_scrapys, middleware, body, encoding))
        print(
            f"{name:<18} {len(body):>12,} {ours:>12,} {our_peak / MiB:>8.2f}Mi"
            f" {theirs:>15,} {their_peak / MiB:>10.1f}Mi"
            f" {their_peak / our_peak:>6.0f}x"
        )


if __name__ == "__main__":
    main()
