"""Settings of the sample project.

Scrapy's project template, trimmed, with scrapy-rfc9309 enabled by its
add-on, and the sample's summary (an add-on of this project).
"""

from pathlib import Path

BOT_NAME = "sample_project"

SPIDER_MODULES = ["sample_project.spiders"]
NEWSPIDER_MODULE = "sample_project.spiders"

ADDONS = {
    # The one line that makes Scrapy obey robots.txt as RFC 9309 says.
    "scrapy_rfc9309.Addon": 100,
    # Prints what was crawled and dropped per host when a spider closes.
    "sample_project.summary.SummaryAddon": 200,
}

# Crawl responsibly by identifying yourself on the user-agent. Its product
# token, SampleBot, is what robots.txt groups are matched against; a spider
# can pick another one with a robots_user_agent attribute (see news.py).
USER_AGENT = "SampleBot/1.0 (+http://127.0.0.1/sample-bots)"

# Obey robots.txt rules: Scrapy's template sets this; the add-on replaces the
# built-in middleware with its own and leaves this setting alone.
ROBOTSTXT_OBEY = True

# Feed the Sitemap: URLs of each robots.txt to the spider.
ROBOTS_SITEMAPS = True

# No delay of our own, so that the only delay is the one a robots.txt asks
# for (Crawl-delay): the summary shows it host by host.
CONCURRENT_REQUESTS_PER_DOMAIN = 1
DOWNLOAD_DELAY = 0

# The demo site answers at once; a failed robots.txt should not be retried
# for long either.
DOWNLOAD_TIMEOUT = 10

TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"

# Items and the summaries go to output/ beside scrapy.cfg.
SAMPLE_OUTPUT_DIR = str(Path(__file__).resolve().parent.parent / "output")
# A path as a string: Scrapy 2.14 turns a Path into a file URI whose "%"
# is escaped, and the "%(name)s" placeholder fails.
FEEDS = {
    str(Path(SAMPLE_OUTPUT_DIR) / "%(name)s.jsonl"): {
        "format": "jsonlines",
        "encoding": "utf8",
        "overwrite": True,
    },
}

FEED_EXPORT_ENCODING = "utf-8"
