"""What the sample spiders share: reading the demo site's URLs, following links."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import scrapy
from scrapy.http import HtmlResponse, Response

from sample_project.demo_site import DEFAULT_SITE_FILE


class DemoSpider(scrapy.Spider):
    """Starts at ``start_pages`` of the demo site and follows every link.

    The spider argument ``site`` names the JSON file of base URLs written by
    the demo site (``python -m sample_project.demo_site``); by default
    ``output/demo_site.json`` of the sample project.
    """

    start_pages: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(demo host name, path) pairs to start from."""

    def __init__(self, *args: Any, site: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.site_file = Path(site) if site else DEFAULT_SITE_FILE
        # Origin -> demo host name, for the summary.
        self.host_names: dict[str, str] = {}

    async def start(self) -> AsyncIterator[Any]:
        try:
            urls: dict[str, str] = json.loads(
                self.site_file.read_text(encoding="utf-8")
            )
        except OSError as error:
            raise RuntimeError(
                f"cannot read the demo site's URLs from {self.site_file} "
                f"({error.strerror}): start the demo site first with "
                "`python -m sample_project.demo_site`, or run run_sample.py"
            ) from None
        self.host_names = {url: name for name, url in urls.items()}
        for name, path in self.start_pages:
            yield scrapy.Request(urls[name] + path)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        # Pages give items; anything else reaching here (a sitemap, say) does not.
        if not isinstance(response, HtmlResponse):
            return
        yield {
            "url": response.url,
            "title": response.css("title::text").get(),
            "spider": self.name,
        }
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)
