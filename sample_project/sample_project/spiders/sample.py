"""The general crawler: every demo host, as SampleBot (the project's USER_AGENT)."""

from __future__ import annotations

from sample_project.spiders.base import DemoSpider


class SampleSpider(DemoSpider):
    """Follows links from the home page of every demo host.

    Its robots.txt agent is the project's ``USER_AGENT`` (``SampleBot/1.0``).
    It declares no Content-Signal purpose, so the signals host is crawled,
    and ``ROBOTS_SITEMAPS`` (in settings.py) brings in the pages that only
    the maps host's sitemaps list.
    """

    name = "sample"
    start_pages = (
        ("rules", "/"),
        ("slow", "/"),
        ("down", "/"),
        ("gone", "/"),
        ("moved", "/"),
        ("maps", "/"),
        ("tags", "/"),
        ("signals", "/"),
    )
