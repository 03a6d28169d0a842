#!/usr/bin/env bash
# Quick start: set up (.venv with the package), start the demo site on
# loopback addresses, crawl it with the sample spiders, print the summary,
# stop the demo site. Arguments go to sample_project/run_sample.py
# (--log-level DEBUG shows every dropped request, --output DIR, --port N).
set -euo pipefail
# The package alone: the demo site is the standard library's HTTP server.
VENV_EXTRAS=""
source "$(dirname "$0")/_venv.sh"
exec .venv/bin/python sample_project/run_sample.py "$@"
