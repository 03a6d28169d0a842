"""Sphinx configuration of the scrapy-rfc9309 documentation.

Build: ``.venv/bin/sphinx-build -W --keep-going -b html docs docs/_build/html``
(``bash scripts/test.sh`` does it with warnings as errors).
"""

from __future__ import annotations

import sys
from pathlib import Path

# autodoc imports the package from this checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scrapy_rfc9309  # noqa: E402

project = "scrapy-rfc9309"
author = "the scrapy-rfc9309 authors"
copyright = "the scrapy-rfc9309 authors"
release = scrapy_rfc9309.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Markdown: "## Heading" gets an anchor usable as [text](page.md#heading).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True}

html_theme = "furo"
html_title = f"scrapy-rfc9309 {release}"
