"""Cost of directives_for per HTML response, against building a DOM (lxml via
parsel) to read the same meta tags.  Prints times and ratios; no pass/fail.
Then a hostile page: comment + robots meta tag pairs, 168 KiB and four times
that (672 KiB), whose cost must grow four times, not sixteen.

    .venv/bin/python benchmarks/directives.py
"""

from __future__ import annotations

import random
import timeit
from collections.abc import Callable
from functools import partial

from scrapy.http import HtmlResponse

from scrapy_rfc9309.directives import directives_for

AGENT = "ExampleBot/1.0 (+https://example.com/bot)"
WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
]
ROBOTS = (
    '<meta name="robots" content="index, follow, max-image-preview:large,'
    ' max-snippet:-1, max-video-preview:-1">'
)


def page(robots_meta: bool, paragraphs: int = 600) -> bytes:
    rng = random.Random(1)
    head = (
        '<meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        '<meta name="description" content="x"><meta property="og:title" content="t">'
        '<link rel="stylesheet" href="/s.css"><script>var a = "<b>";</script>'
        "<!-- comment -->" + (ROBOTS if robots_meta else "")
    )
    body = "\n".join(
        f'<p class="c{i % 7}">{" ".join(rng.choice(WORDS) for _ in range(12))}'
        f' <a href="/p/{i}">link {i}</a></p>'
        for i in range(paragraphs)
    )
    html = (
        f"<!DOCTYPE html><html><head><title>t</title>{head}</head>"
        f"<body>{body}</body></html>"
    )
    return html.encode()


#: One pair of the hostile page: every meta tag follows a comment.
HOSTILE_PAIR = '<!-- x --><meta name="robots" content="noindex">'


def best(function: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=7)) / number


def make_response(body: bytes) -> HtmlResponse:
    return HtmlResponse(
        "http://example.com/",
        body=body,
        headers={
            "Content-Type": "text/html; charset=utf-8",
            "X-Robots-Tag": "noarchive",
        },
    )


def main() -> None:
    for robots_meta in (False, True):
        body = page(robots_meta)
        decoded = make_response(body)
        decoded.text  # noqa: B018  (decode once, as a spider reading the page does)
        ours = best(partial(directives_for, decoded, AGENT), 500)
        base = best(partial(make_response, body), 200)
        dom = best(lambda b=body: make_response(b).xpath("//meta[@name]"), 50) - base
        print(
            f"robots meta={robots_meta!s:5} {len(body) // 1024} KiB:"
            f" directives_for {ours * 1e6:6.0f} us,"
            f" lxml DOM + xpath {dom * 1e6:6.0f} us, ratio {dom / ours:5.1f}x"
        )
    times = []
    for size in (168 * 1024, 672 * 1024):
        body = (HOSTILE_PAIR * (size // len(HOSTILE_PAIR))).encode()
        body = b"<html><head>" + body + b"</head></html>"
        decoded = make_response(body)
        decoded.text  # noqa: B018
        ours = best(partial(directives_for, decoded, AGENT), 3)
        base = best(partial(make_response, body), 3)
        dom = best(lambda b=body: make_response(b).xpath("//meta[@name]"), 3) - base
        times.append(ours)
        print(
            f"hostile comment + meta pairs, {len(body) // 1024} KiB:"
            f" directives_for {ours * 1e3:6.1f} ms,"
            f" lxml DOM + xpath {dom * 1e3:6.1f} ms, ratio {dom / ours:5.1f}x"
        )
    print(f"four times the hostile page: {times[1] / times[0]:.1f} times the cost")


if __name__ == "__main__":
    main()
