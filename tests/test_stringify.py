from __future__ import annotations

import pytest

from scrapy_rfc9309.parse import Document, parse
from scrapy_rfc9309.stringify import stringify


def test_layout() -> None:
    document = parse(
        "Sitemap: https://a/s.xml\n"
        "user-agent: FooBot\n"
        "useragent: BarBot\n"
        "disallow: /x # comment\n"
        "Content-Signal: ai-train=no, search=yes, other=later\n"
        "crawl-delay: 2\n"
        "Host: a\n"
        "User-agent: *\n"
        "Allow: /\n"
    )
    assert stringify(document) == (
        "User-agent: FooBot\n"
        "User-agent: BarBot\n"
        "Crawl-delay: 2.0\n"
        "Content-Signal: ai-train=no, search=yes, other=later\n"
        "Disallow: /x\n"
        "\n"
        "User-agent: *\n"
        "Allow: /\n"
        "\n"
        "Sitemap: https://a/s.xml\n"
        "\n"
        "host: a\n"
    )


def test_empty() -> None:
    assert stringify(Document()) == ""
    assert parse(stringify(Document())) == Document()


@pytest.mark.parametrize("profile", ["rfc9309", "google"])
@pytest.mark.parametrize(
    "body",
    [
        "User-agent: *\nDisallow:\n",
        "User-agent:\nDisallow: /\n",
        "User-agent: a\nUser-agent: b\nCrawl-delay: 0.25\nDisallow: /x\n"
        "User-agent: c\n",
        "User-agent: *\nDisallow: /ツ\nAllow: /%E3%83%84*$\n",
        b"User-agent: *\nDisallow: /caf\xe9\n\xff: \xfe\n",
        "<html>\n<br />\nUser-agent: *<br />\nDisallow: /<br />\n",
        "User-agent: *\nDisallowed: /x\nsite-map: https://a/b\nfoo bar\n",
        "Crawl-delay: 3\nUser-agent: *\nContent-Signal: x=y=z, a=\n",
    ],
)
def test_round_trip(body: str | bytes, profile: str) -> None:
    document = parse(body, profile=profile)
    again = parse(stringify(document), profile=profile)
    assert again.without_lines() == document.without_lines()
