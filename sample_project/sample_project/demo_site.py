"""The demo site: eight small web sites on loopback addresses.

Each host shows one behaviour of scrapy-rfc9309.  They listen on distinct
addresses (127.0.0.2, 127.0.0.3, ...) so that Scrapy gives each its own
downloader slot, and a Crawl-delay on one host slows down that host alone.
Nothing here leaves the machine.

Run it alone, then crawl it with ``scrapy crawl`` from another terminal::

    python -m sample_project.demo_site            # Ctrl-C stops it
    scrapy crawl sample -a site=output/demo_site.json
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gzip
import html
import ipaddress
import json
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_SITE_FILE = Path(__file__).resolve().parent.parent / "output" / "demo_site.json"


@dataclass(frozen=True)
class Page:
    """One answer of the demo site."""

    body: bytes
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


Pages = dict[str, Page]


@dataclass(frozen=True)
class Host:
    """A demo host: its name, what it shows, and its pages.

    ``pages`` receives the base URL of every host, since some pages (a
    redirect, a sitemap) point at other hosts or need absolute URLs.
    """

    name: str
    shows: str
    pages: Callable[[dict[str, str]], Pages]


def _html(
    title: str, *links: str, meta: str = "", headers: dict[str, str] | None = None
) -> Page:
    items = "".join(
        f'<li><a href="{html.escape(link)}">{html.escape(link)}</a></li>'
        for link in links
    )
    body = (
        f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title>{meta}</head>"
        f"<body><h1>{html.escape(title)}</h1><ul>{items}</ul></body></html>"
    )
    return Page(body.encode(), headers=tuple((headers or {}).items()))


def _text(text: str, status: int = 200) -> Page:
    return Page(text.encode(), status=status, content_type="text/plain; charset=utf-8")


def _xml(text: str, *, gzipped: bool = False) -> Page:
    if gzipped:
        return Page(gzip.compress(text.encode()), content_type="application/gzip")
    return Page(text.encode(), content_type="application/xml")


def _rules(urls: dict[str, str]) -> Pages:
    return {
        "/robots.txt": _text(
            "# The rules host: one group for SampleBot, another for SampleNewsBot\n"
            "User-agent: SampleBot\n"
            "Disallow: /private/\n"
            "Disallow: /drafts/\n"
            "\n"
            "User-agent: SampleNewsBot\n"
            "Allow: /news/\n"
            "Disallow: /\n"
            "\n"
            "User-agent: *\n"
            "Disallow: /private/\n"
        ),
        "/": _html(
            "Rules: home",
            "/about",
            "/news/",
            "/private/",
            "/private/salaries",
            "/drafts/next",
        ),
        "/about": _html("Rules: about", "/"),
        "/news/": _html("Rules: news", "/news/launch", "/news/archive", "/"),
        "/news/launch": _html("Rules: launch news", "/news/", "/about"),
        "/news/archive": _html("Rules: news archive", "/news/"),
        "/private/": _html("Rules: private", "/private/salaries"),
        "/private/salaries": _html("Rules: salaries"),
        "/drafts/next": _html("Rules: next draft"),
        # The robots.txt that the moved host redirects to.
        "/shared/robots-for-moved.txt": _text(
            "# Served by the rules host for the moved host, whose\n"
            "# /robots.txt redirects here: these rules apply to the moved host\n"
            "User-agent: *\n"
            "Disallow: /archive/\n"
        ),
    }


def _slow(urls: dict[str, str]) -> Pages:
    return {
        "/robots.txt": _text("User-agent: *\nCrawl-delay: 1\nDisallow:\n"),
        "/": _html("Slow: home", "/a", "/b", "/c"),
        "/a": _html("Slow: a"),
        "/b": _html("Slow: b"),
        "/c": _html("Slow: c"),
    }


def _down(urls: dict[str, str]) -> Pages:
    return {
        # An unreachable robots.txt means "crawl nothing", whatever the body.
        "/robots.txt": _text("User-agent: *\nAllow: /\n", status=503),
        "/": _html("Down: home", "/a"),
        "/a": _html("Down: a"),
    }


def _gone(urls: dict[str, str]) -> Pages:
    return {
        # A 4xx robots.txt means "crawl everything", whatever the body says.
        "/robots.txt": _text("User-agent: *\nDisallow: /\n", status=404),
        "/": _html("Gone: home", "/a", "/b"),
        "/a": _html("Gone: a"),
        "/b": _html("Gone: b"),
    }


def _moved(urls: dict[str, str]) -> Pages:
    target = urls["rules"] + "/shared/robots-for-moved.txt"
    return {
        "/robots.txt": Page(
            f'<a href="{target}">Moved</a>'.encode(),
            status=301,
            headers=(("Location", target),),
        ),
        "/": _html("Moved: home", "/current", "/archive/2019", "/archive/2020"),
        "/current": _html("Moved: current"),
        "/archive/2019": _html("Moved: 2019"),
        "/archive/2020": _html("Moved: 2020"),
    }


def _urlset(base: str, *paths: str) -> str:
    urls = "".join(f"<url><loc>{base}{path}</loc></url>" for path in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )


def _maps(urls: dict[str, str]) -> Pages:
    base = urls["maps"]
    index = "".join(
        f"<sitemap><loc>{base}/sitemaps/{name}.xml.gz</loc></sitemap>"
        for name in ("articles", "products")
    )
    return {
        "/robots.txt": _text(
            f"User-agent: *\nAllow: /\n\nSitemap: {base}/sitemap_index.xml\n"
        ),
        # The home page links nowhere: the other pages are found through
        # the sitemaps only.
        "/": _html("Maps: home"),
        "/sitemap_index.xml": _xml(
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{index}</sitemapindex>"
        ),
        "/sitemaps/articles.xml.gz": _xml(
            _urlset(base, "/articles/1", "/articles/2"), gzipped=True
        ),
        "/sitemaps/products.xml.gz": _xml(
            _urlset(base, "/products/1", "/products/2"), gzipped=True
        ),
        "/articles/1": _html("Maps: article 1"),
        "/articles/2": _html("Maps: article 2"),
        "/products/1": _html("Maps: product 1"),
        "/products/2": _html("Maps: product 2"),
    }


def _tags(urls: dict[str, str]) -> Pages:
    return {
        "/robots.txt": _text("User-agent: *\nAllow: /\n"),
        "/": _html(
            "Tags: home",
            "/header-noindex",
            "/meta-noindex",
            "/meta-nofollow",
            "/normal",
        ),
        "/header-noindex": _html(
            "Tags: noindex in a header", "/normal", headers={"X-Robots-Tag": "noindex"}
        ),
        "/meta-noindex": _html(
            "Tags: noindex in a meta tag",
            "/normal",
            meta='<meta name="robots" content="noindex">',
        ),
        "/meta-nofollow": _html(
            "Tags: nofollow in a meta tag",
            "/only-linked-from-nofollow",
            meta='<meta name="robots" content="nofollow">',
        ),
        "/normal": _html("Tags: normal page"),
        "/only-linked-from-nofollow": _html("Tags: never crawled"),
    }


def _signals(urls: dict[str, str]) -> Pages:
    return {
        "/robots.txt": _text(
            "User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n"
        ),
        "/": _html("Signals: home", "/recipes/1", "/recipes/2"),
        "/recipes/1": _html("Signals: recipe 1"),
        "/recipes/2": _html("Signals: recipe 2"),
    }


HOSTS: tuple[Host, ...] = (
    Host("rules", "Disallow rules, one group per crawler", _rules),
    Host("slow", "Crawl-delay: 1", _slow),
    Host("down", "robots.txt answers 503: unreachable", _down),
    Host("gone", "robots.txt answers 404 (body says Disallow: /)", _gone),
    Host("moved", "robots.txt redirects to the rules host", _moved),
    Host("maps", "Sitemap: line naming a sitemap index", _maps),
    Host("tags", "X-Robots-Tag and robots meta directives", _tags),
    Host("signals", "Content-Signal: ai-train=no", _signals),
)

_NOT_FOUND = _html("Not found")


def _handler(pages: Pages) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            page = pages.get(self.path.split("?", 1)[0])
            if page is None:
                page = Page(_NOT_FOUND.body, status=404)
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            self.send_header("Content-Length", str(len(page.body)))
            for name, value in page.headers:
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(page.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class DemoSite:
    """Every demo host, each on its own loopback address, served from threads.

    ``port=0`` lets the system pick a free port for each host.  Use it as a
    context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, first_address: str = "127.0.0.2", port: int = 0) -> None:
        self.first_address = ipaddress.IPv4Address(first_address)
        self.port = port
        self.urls: dict[str, str] = {}
        self._servers: list[ThreadingHTTPServer] = []

    def start(self) -> dict[str, str]:
        """Bind every host, then serve; return the base URL of each host."""
        # Bind first: the pages of a host may need the URLs of the others.
        for offset, host in enumerate(HOSTS):
            address = str(self.first_address + offset)
            try:
                server = ThreadingHTTPServer(
                    (address, self.port), BaseHTTPRequestHandler
                )
            except OSError as error:
                self.stop()
                raise DemoSiteError(_bind_error(address, self.port, error)) from None
            server.daemon_threads = True
            self._servers.append(server)
            self.urls[host.name] = f"http://{address}:{server.server_address[1]}"
        for host, server in zip(HOSTS, self._servers, strict=True):
            server.RequestHandlerClass = _handler(host.pages(self.urls))
            # A short poll keeps stop() quick: each server notices it within
            # this many seconds, one after the other.
            threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
            ).start()
        return dict(self.urls)

    def stop(self) -> None:
        """Stop serving and release the addresses."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> DemoSite:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def write(self, path: Path) -> None:
        """Save the base URLs, for the spiders' ``site`` argument."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.urls, indent=2) + "\n", encoding="utf-8")


class DemoSiteError(Exception):
    """The demo site could not start."""


def _bind_error(address: str, port: int, error: OSError) -> str:
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {address}: this system only answers on 127.0.0.1. "
            f"On macOS, add the loopback aliases first, e.g. "
            f"`sudo ifconfig lo0 alias {address} up` for 127.0.0.2 to 127.0.0.9"
        )
    if error.errno == errno.EADDRINUSE:
        return f"port {port} is already in use on {address}: pick another with --port"
    return f"cannot listen on {address}:{port}: {error.strerror}"


def describe(urls: dict[str, str]) -> str:
    """One line per host: its base URL and what it shows."""
    return "\n".join(
        f"  {host.name:<8} {urls[host.name]:<24} {host.shows}" for host in HOSTS
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="one port for every host (default: free ports)",
    )
    parser.add_argument(
        "--first-address", default="127.0.0.2", help="address of the first host"
    )
    parser.add_argument(
        "--write",
        type=Path,
        default=DEFAULT_SITE_FILE,
        help="where to save the base URLs",
    )
    args = parser.parse_args(argv)
    site = DemoSite(args.first_address, args.port)
    try:
        site.start()
    except DemoSiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    site.write(args.write)
    print(f"Demo site up (base URLs saved to {args.write}):\n{describe(site.urls)}")
    print("Ctrl-C stops it.", flush=True)
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    # A signal may arrive on a server thread, which would not wake a wait
    # without a timeout in this one.
    while not stopped.wait(0.5):
        pass
    site.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
