#!/usr/bin/env bash
# Set up (virtualenv, package, test tools, redis-server) and run every check:
# ruff, ruff format, mypy --strict, the docs (warnings as errors), then the
# whole pytest suite, and the crawl tests again without a reactor.
#
#   bash scripts/test.sh [PYTEST ARGS]   arguments go to the first pytest run
#   bash scripts/test.sh --oldest        the tests on the oldest versions
#                                        supported (Python 3.10, Scrapy 2.13.4)
#   bash scripts/test.sh --scrapy 2.18.0 the tests on that Scrapy release
set -euo pipefail
cd "$(dirname "$0")/.."

# The crawl tests (real crawls): run again without a Twisted reactor below,
# and on other Scrapy releases by --oldest and --scrapy. A new crawl test
# file goes here.
crawl=(
    tests/test_middleware*.py tests/test_crawl_delay.py tests/test_crawl_delay_fleet.py
    tests/test_crawl_delay_slots.py tests/test_crawl_delay_renewal.py tests/test_retry_after.py
    tests/test_addon.py
    tests/test_directives_crawl.py tests/test_ai_directives_crawl.py tests/test_licenses.py
    tests/test_sitemaps.py tests/test_tdmrep_crawl.py tests/test_tdmrep_fetch.py
    tests/test_content_signals_crawl.py tests/test_usage_crawl.py tests/test_faults.py
    tests/test_scrapy_conventions.py tests/test_provenance.py tests/test_provenance_bounds.py
    tests/test_sitemap_bounds.py
    tests/test_sitemap_failures.py tests/test_sitemap_interplay.py
    tests/test_store_hold.py tests/test_retry_after_shared.py tests/test_config.py
    tests/test_caches.py tests/test_usage_table.py tests/test_coordination.py
    tests/test_closing.py
)
# Without a reactor (TWISTED_REACTOR_ENABLED=False: aiohttp downloads on
# Scrapy 2.19, httpx on 2.15 to 2.18; pytest-asyncio). aiohttp itself refuses a header
# field over 8,190 bytes (the download fails before the package sees it), so
# the huge folded X-Robots-Tag case cannot arise there; it runs under the
# reactor.
reactorless=(
    -p no:twisted -o addopts=""
    --deselect tests/test_directives_crawl.py::test_a_huge_folded_x_robots_tag_is_read_within_the_bound
)
# Tests that must not share the machine with other tests of this suite run
# after the others, alone, in one process. None need to: the Crawl-delay,
# Retry-After and fleet tests measure the gaps at the server, and those hold
# however loaded the machine is (a request's turn also counts from the end
# of the fetch before it, docs/crawl-delay.md); 3,791 + 626 tests passed
# with 6 workers on 2 cores at once. A test that races the clock goes here.
alone=()
# The tests share the cores (pytest-xdist): each worker starts its own
# redis-server and servers on loopback addresses of its own
# (tests/support/utils.py: loopback_hosts). One worker more than the cores, at least
# 3: the crawl tests spend much of their time waiting (Crawl-delays, fleets
# of worker processes). TEST_WORKERS=1 runs them one at a time.
cores=$(nproc 2>/dev/null || echo 2)
workers=(-n "${TEST_WORKERS:-$((cores < 2 ? 3 : cores > 8 ? 9 : cores + 1))}" --dist worksteal)
# Bytecode written once is read by every scrapy subprocess the tests start.
unset PYTHONDONTWRITEBYTECODE

# split PYTHON [PYTEST OPTIONS] -- FILE...: the files not in alone on every
# worker, then those in alone in one process; any failure stops the script.
split() {
    local python=$1 file
    local options=() shared=() single=()
    shift
    while [ "$1" != -- ]; do
        options+=("$1")
        shift
    done
    shift
    for file in "$@"; do
        case " ${alone[*]} " in
            *" $file "*) single+=("$file") ;;
            *) shared+=("$file") ;;
        esac
    done
    if [ ${#shared[@]} -gt 0 ]; then
        "$python" -m pytest -q "${workers[@]}" "${options[@]}" "${shared[@]}"
    fi
    if [ ${#single[@]} -gt 0 ]; then
        "$python" -m pytest -q "${options[@]}" "${single[@]}"
    fi
}

# The oldest Scrapy supported, on Python 3.10: --oldest.
OLDEST=2.13.4

need_redis_server() {
    command -v redis-server >/dev/null 2>&1 && return
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing redis-server from the system packages" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
        echo "error: redis-server is required by the tests (apt-get install redis-server)" >&2
        exit 1
    fi
}

# --oldest and --scrapy VERSION: every test on another Scrapy release, and
# the crawl tests without a reactor where it has that mode, in a git-ignored
# venv of its own (never the .venv below).
other=
case "${1-}" in
    --oldest) other=$OLDEST ;;
    --scrapy)
        # A usage error like the others: one line, exit status 2.
        case "${2-}" in
            "" | -*)
                echo "error: --scrapy takes a Scrapy version, as in --scrapy 2.18.0" >&2
                exit 2
                ;;
        esac
        other=$2
        shift
        ;;
esac
if [ -n "$other" ]; then
    shift
    if [ $# -ne 0 ]; then
        echo "error: --oldest and --scrapy VERSION take no other argument" >&2
        exit 2
    fi
    need_redis_server
    if [ "$other" = "$OLDEST" ]; then
        # The floor on the oldest Python too: a 3.10 that runs (a pyenv
        # shim may exist and refuse).
        venv=.venv-oldest
        py=
        for candidate in ${PYTHON_OLDEST:-} python3.10 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10; do
            if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
                py=$candidate
                break
            fi
        done
        if [ -z "$py" ]; then
            py=python3
            echo "warning: no Python 3.10 found (PYTHON_OLDEST=/path/to/python3.10 names one):" \
                "testing Scrapy $OLDEST on $("$py" --version 2>&1) instead" >&2
        fi
    else
        venv=.venv-scrapy-$other
        py=python3
    fi
    if [ ! -x "$venv/bin/python" ]; then
        "$py" -m venv "$venv"
    fi
    # httpx: the download handler of Scrapy 2.15 to 2.18 without a reactor.
    pins=("scrapy==$other" httpx)
    stamp=$venv/.installed
    if [ "$(cat "$stamp" 2>/dev/null || true)" != "${pins[*]}" ] || [ setup.cfg -nt "$stamp" ] \
        || [ pyproject.toml -nt "$stamp" ]; then
        "$venv/bin/python" -m pip install -q --upgrade pip
        "$venv/bin/python" -m pip install -q -e ".[test,redis]" "${pins[@]}"
        echo "${pins[*]}" >"$stamp"
    fi
    echo "testing on $("$venv/bin/python" --version), Scrapy" \
        "$("$venv/bin/python" -c 'import scrapy; print(scrapy.__version__)')" >&2
    # Every test (what a release changes shows in the sample, in feed exports,
    # in `scrapy crawl`'s exit status, not only in crawls).
    split "$venv/bin/python" -- tests/test_*.py
    # Scrapy runs without a reactor from 2.15 (TWISTED_REACTOR_ENABLED).
    if "$venv/bin/python" -c 'import scrapy, sys; sys.exit(scrapy.version_info < (2, 15))'; then
        split "$venv/bin/python" "${reactorless[@]}" -- "${crawl[@]}"
    fi
    exit 0
fi

source scripts/_venv.sh
need_redis_server

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
if [ $# -gt 0 ]; then
    # What the arguments name, in one process.
    .venv/bin/python -m pytest -q "$@"
else
    split .venv/bin/python -- tests/test_*.py
fi
split .venv/bin/python "${reactorless[@]}" -- "${crawl[@]}"
