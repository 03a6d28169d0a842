"""A second crawler with its own robots.txt agent: SampleNewsBot."""

from __future__ import annotations

from sample_project.spiders.base import DemoSpider


class NewsSpider(DemoSpider):
    """Crawls the rules host under the rules for SampleNewsBot.

    ``robots_user_agent`` picks the robots.txt group for this spider alone:
    the rules host lets SampleNewsBot into ``/news/`` only, while SampleBot
    (the sample spider) may go anywhere but ``/private/`` and ``/drafts/``.
    The User-Agent header stays the project's, as Googlebot-News obeys its
    own group while sending Googlebot's user agent string.
    """

    name = "news"
    robots_user_agent = "SampleNewsBot/1.0"
    start_pages = (("rules", "/news/"),)
