"""A crawler collecting AI training data: it declares that purpose."""

from __future__ import annotations

from sample_project.spiders.base import DemoSpider


class TrainerSpider(DemoSpider):
    """Crawls for AI training, so origins that refuse it are skipped.

    ``ROBOTS_CONTENT_SIGNALS`` names the purposes of this crawl: the signals
    host says ``Content-Signal: ai-train=no``, so nothing of it is crawled,
    while the gone host, which says nothing, is.  Its ``USER_AGENT`` is its
    own, and so is the robots.txt group it gets (``SampleTrainer``, or ``*``).
    """

    name = "trainer"
    # Scrapy's usual spelling; Scrapy only reads it.
    custom_settings = {  # noqa: RUF012
        "USER_AGENT": "SampleTrainer/1.0 (+http://127.0.0.1/sample-bots)",
        "ROBOTS_CONTENT_SIGNALS": {"ai-train": True},
    }
    start_pages = (("signals", "/"), ("gone", "/"))
