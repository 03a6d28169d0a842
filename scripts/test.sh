#!/usr/bin/env bash
# Set up (virtualenv, package, test tools, redis-server) and run every check:
# ruff, ruff format, mypy --strict, the docs (warnings as errors), then the
# whole pytest suite.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"

if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing redis-server from the system packages" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
        echo "error: redis-server is required by the tests (apt-get install redis-server)" >&2
        exit 1
    fi
fi

# tests/test_differential.py compares this package with Protego over
# Protego's own 4,231 real robots.txt files, fetched once into .cache/ (pip
# download of its source distribution).  Offline, the test falls back to a
# small built-in sample and says so.
if ! .venv/bin/python -m benchmarks._corpus; then
    echo "warning: Protego's robots.txt corpus could not be fetched into .cache/;" \
        "tests/test_differential.py falls back to its built-in sample" >&2
fi

.venv/bin/ruff check scrapy_rfc9309 tests benchmarks sample_project
.venv/bin/ruff format --check scrapy_rfc9309 tests benchmarks sample_project
.venv/bin/mypy --strict scrapy_rfc9309
.venv/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
.venv/bin/python -m pytest -q "$@"
# The crawl tests once more without a Twisted reactor
# (TWISTED_REACTOR_ENABLED=False, aiohttp downloads, pytest-asyncio).
# aiohttp itself refuses a header field over 8,190 bytes (the download fails
# before the package sees it), so the huge folded X-Robots-Tag case cannot
# arise there; it runs under the reactor above.
.venv/bin/python -m pytest -q -p no:twisted -o addopts="" \
    --deselect tests/test_directives_crawl.py::test_a_huge_folded_x_robots_tag_is_read_within_the_bound \
    tests/test_middleware*.py tests/test_crawl_delay.py tests/test_crawl_delay_fleet.py \
    tests/test_crawl_delay_slots.py tests/test_retry_after.py tests/test_store_hold.py \
    tests/test_retry_after_shared.py \
    tests/test_addon.py \
    tests/test_directives_crawl.py tests/test_ai_directives_crawl.py tests/test_licenses.py \
    tests/test_sitemaps.py tests/test_tdmrep_crawl.py \
    tests/test_content_signals_crawl.py tests/test_usage_crawl.py tests/test_faults.py \
    tests/test_scrapy_conventions.py tests/test_provenance.py tests/test_sitemap_bounds.py \
    tests/test_caches.py tests/test_usage_table.py
