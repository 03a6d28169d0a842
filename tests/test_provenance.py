"""Evidence of what allowed each item: ``robots_provenance`` and ``ROBOTS_REPORT``.

Real crawls on loopback origins: the hash of the robots.txt body is taken
once, when it is fetched, and kept with the outcome in every store; items
carry the record of the robots.txt, line and preferences that allowed them
(``ROBOTS_PROVENANCE``, off by default); the report has one line per origin
whose counts are the crawl's stats.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable

from tests.crawl_helpers import crawl, middleware
from tests.server import Server
from tests.utils import coroutine_test

ROBOTS = "User-agent: *\nDisallow: /private\nAllow: /public\n"


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


@coroutine_test
async def test_the_body_hash_is_taken_once_when_fetched(
    make_server: Callable[..., Server],
) -> None:
    plain, zipped, cut = make_server(), make_server(), make_server()
    plain.route("/robots.txt", ROBOTS)
    # Of the body read, decoded: the file as the site wrote it.
    zipped.route(
        "/robots.txt",
        gzip.compress(ROBOTS.encode()),
        headers={"Content-Encoding": "gzip"},
    )
    long = ROBOTS + "".join(f"Disallow: /p{i}\n" for i in range(100))
    cut.route("/robots.txt", long)
    crawler = await crawl(
        [server.url("/public") for server in (plain, zipped, cut)],
        {"ROBOTS_MAX_BYTES": 600},
    )
    memory = middleware(crawler).memory
    hashes = []
    for server in (plain, zipped, cut):
        entry = memory.entry(server.url("/robots.txt"))
        assert entry is not None
        hashes.append(entry.outcome.body_sha256)
    # Cut at ROBOTS_MAX_BYTES: of the bytes read up to it.
    assert hashes == [sha256(ROBOTS), sha256(ROBOTS), sha256(long.encode()[:600])]
