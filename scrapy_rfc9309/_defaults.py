"""Every setting of the package with its default, declared once.

The add-on writes these at ``"addon"`` priority; the crawl's
:class:`~scrapy_rfc9309._config.RobotsConfig` reads settings through
``_settings.setting`` so that enabling a middleware by hand (without the
add-on) sees the same defaults.
"""

from __future__ import annotations

from typing import Any

from .outcome import Lifetimes
from .profiles import MAX_BYTES

DEFAULTS: dict[str, Any] = {
    "ROBOTS_CACHE_LIFETIME": Lifetimes.cache,
    "ROBOTS_CONTENT_SIGNALS": {},
    "ROBOTS_CRAWL_DELAY": True,
    "ROBOTS_CRAWL_DELAY_MAX": 30,
    "ROBOTS_CRAWL_DELAY_OVER_MAX": "clamp",
    # None: "fleet" with a store shared by processes (redis, sqlite), else
    # "process" (see _store.crawl_delay_scope).
    "ROBOTS_CRAWL_DELAY_SCOPE": None,
    "ROBOTS_DIRECTIVES": "drop",
    "ROBOTS_ENABLED": True,
    "ROBOTS_MAX_BYTES": MAX_BYTES,
    "ROBOTS_MAX_REDIRECTS": 5,
    # 256 MiB, as entry_size() counts (about 1.3x what is really held):
    # ~55,000 origins of the real-world mix, whose estimated mean is
    # ~4.9 KB, 100,000 (ROBOTS_MEMORY_MAX_ORIGINS) of its median (~2 KB),
    # at least 38 hostile ones of ~7 MB (python -m benchmarks.memory
    # prints these).
    "ROBOTS_MEMORY_MAX_BYTES": 268_435_456,
    "ROBOTS_MEMORY_MAX_ORIGINS": 100_000,
    "ROBOTS_PROFILE": "rfc9309",
    "ROBOTS_PROVENANCE": False,
    "ROBOTS_PURPOSES": [],
    "ROBOTS_REFUSED": "allow",
    "ROBOTS_RETRY_AFTER": True,
    "ROBOTS_RETRY_AFTER_MAX": 600,
    # None: no report; a path (placeholders as in FEEDS, and %(pid)s).
    "ROBOTS_REPORT": None,
    # 50 MiB: the largest sitemap the sitemaps.org protocol allows, decoded.
    "ROBOTS_SITEMAP_MAX_BYTES": 52_428_800,
    "ROBOTS_SITEMAP_MAX_DEPTH": 3,
    # 99.8 % of the Protego corpus's robots.txt files name 100 or fewer.
    "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT": 100,
    # As many sitemaps as one sitemap index may name (sitemaps.org).
    "ROBOTS_SITEMAP_MAX_REQUESTS": 50_000,
    "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT": 100_000,
    "ROBOTS_SITEMAP_OTHER_SITES": False,
    "ROBOTS_SITEMAPS": False,
    "ROBOTS_SSRF_GUARD": False,
    "ROBOTS_STORE": "memory",
    # 64 KiB of compressed entry: every robots.txt of the Protego corpus but
    # one (docs.oracle.com's 852 KB file, 106 KB stored) fits.
    "ROBOTS_STORE_MAX_ENTRY_BYTES": 65_536,
    "ROBOTS_STORE_PREFIX": "robots:",
    "ROBOTS_STORE_URL": None,
    # TDMRep: "drop" for a crawl whose ROBOTS_PURPOSES is text and data
    # mining (see tdmmiddleware), "annotate", or "off".
    "ROBOTS_TDMREP": "drop",
    # Seconds an origin's tdmrep.json may take (its requests wait for it).
    "ROBOTS_TDMREP_TIMEOUT": 30,
    "ROBOTS_UNREACHABLE_GRACE": Lifetimes.grace,
    "ROBOTS_UNREACHABLE_LIFETIME": Lifetimes.unreachable,
    "ROBOTS_USAGE": "drop",
    # ROBOTS_USER_AGENT has no fixed default: it falls back to
    # ROBOTSTXT_USER_AGENT, then USER_AGENT (see _settings.robots_user_agent).
    "ROBOTS_USER_AGENT": None,
}
