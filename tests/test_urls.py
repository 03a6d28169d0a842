from __future__ import annotations

from urllib.parse import quote_from_bytes, unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.urls import (
    SAFE_OCTETS,
    escape_pattern,
    http_url,
    normalize_path,
    normalize_pattern,
    request_path,
    robots_url,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/a/b?c#d", "https://example.com/robots.txt"),
        ("HTTP://Example.COM", "http://example.com/robots.txt"),
        ("http://example.com:80/x", "http://example.com/robots.txt"),
        ("https://example.com:443/x", "https://example.com/robots.txt"),
        ("https://example.com:80/x", "https://example.com:80/robots.txt"),
        ("http://example.com:8080/x", "http://example.com:8080/robots.txt"),
        ("http://user:pass@example.com/x", "http://example.com/robots.txt"),
        ("http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/robots.txt"),
        ("http://[::1]/x", "http://[::1]/robots.txt"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example/robots.txt"),
        ("https://BÜCHER.example/x", "https://xn--bcher-kva.example/robots.txt"),
        ("http://127.0.0.2:5000/a", "http://127.0.0.2:5000/robots.txt"),
        ("  https://example.com/ ", "https://example.com/robots.txt"),
    ],
)
def test_robots_url(url: str, expected: str) -> None:
    assert robots_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "",
        "/just/a/path",
        "example.com/x",
        "ftp://example.com/x",
        "mailto:someone@example.com",
        "data:text/plain,hi",
        "http://",
        "https:///path",
        "http://example.com:notaport/",
        "http://example.com:99999/",
        "http://[::1/",
        "http://" + "ü" * 100 + ".com/",
        "\x00",
    ],
)
def test_robots_url_none(url: str) -> None:
    assert robots_url(url) is None


@pytest.mark.parametrize(
    ("url", "path"),
    [
        # Google's TestGetPathParamsQuery.
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("example.com", "/"),
        ("example.com/", "/"),
        ("example.com/a", "/a"),
        ("example.com/a/", "/a/"),
        ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("a", "/"),
        ("a/", "/"),
        ("/a", "/a"),
        ("a/b", "/b"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
        # And a few more.
        ("https://a#x/y", "/"),
        ("/a?b://c", "/a?b://c"),
        ("https://a/b//c", "/b//c"),
    ],
)
def test_request_path(url: str, path: str) -> None:
    assert request_path(url) == path


@pytest.mark.parametrize(
    ("pattern", "escaped"),
    [
        # Google's TestMaybeEscapePattern.
        ("http://www.example.com", "http://www.example.com"),
        ("/a/b/c", "/a/b/c"),
        ("á", "%C3%A1"),
        ("%aa", "%AA"),
        # And a few more.
        ("/%zz%4", "/%zz%4"),
        ("/ツ*$", "/%E3%83%84*$"),
        ("/caf\udce9", "/caf%E9"),
    ],
)
def test_escape_pattern(pattern: str, escaped: str) -> None:
    assert escape_pattern(pattern) == escaped


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("/plain/path?q=1&r=2", "/plain/path?q=1&r=2"),
        ("/%62%61%7A", "/baz"),
        ("/%7e%7E", "/~~"),
        ("/ツ", "/%E3%83%84"),
        ("/%e3%83%84", "/%E3%83%84"),
        ("/a*b$", "/a%2Ab%24"),
        ("/a%2ab%24", "/a%2Ab%24"),
        ("/a b", "/a%20b"),
        ("/100%", "/100%25"),
        ("/%25", "/%25"),
        ("/%3A%2F%3F", "/:/?"),
        ("/caf\udce9", "/caf%E9"),
        ("/\ud800", "/%ED%A0%80"),
    ],
)
def test_normalize_path(path: str, normal: str) -> None:
    assert normalize_path(path) == normal
    assert normalize_path(normal) == normal


@pytest.mark.parametrize(
    ("pattern", "normal"),
    [
        ("/a*b$", "/a*b$"),
        ("/a$b", "/a%24b"),
        ("/%2A*", "/%2A*"),
        ("/ツ*.gif$", "/%E3%83%84*.gif$"),
        ("*", "*"),
        ("$", "$"),
        ("/%62*%63$", "/b*c$"),
    ],
)
def test_normalize_pattern(pattern: str, normal: str) -> None:
    assert normalize_pattern(pattern) == normal


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.characters(max_codepoint=0x7F),
            st.sampled_from(
                [
                    *("%2f", "%2F", "%e3", "%E3", "%zz", "%", "%4", "%41"),
                    *("%2a", "%24", "%3A", "%3a", "%7E", "%7F", "%20", "%25"),
                ]
            ),
        ),
        max_size=20,
    ).map("".join)
)
def test_normalize_path_of_ascii_is_unquote_then_quote(path: str) -> None:
    # ASCII text takes a shortcut (one regex); it must give what the
    # definition gives: every valid escape decoded, then every octet
    # outside the safe set encoded with upper-case hex.
    expected = quote_from_bytes(unquote_to_bytes(path.encode()), SAFE_OCTETS)
    assert normalize_path("/" + path) == "/" + expected


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.characters(),
            st.sampled_from(
                [
                    *("é", "ツ", "\U0001f600", "\udc80", "\udcff", "\ud800", "\x80"),
                    *("%e3", "%E3", "%83%84", "%ff", "%C3%A9", "%2f", "%zz", "%4"),
                ]
            ),
        ),
        max_size=20,
    ).map("".join)
)
def test_normalize_path_of_any_text_is_unquote_then_quote(path: str) -> None:
    # Text outside ASCII is normalised octet by octet over its UTF-8 (lone
    # surrogates as their escaped octets, or as surrogatepass writes them):
    # the same as the definition.
    try:
        octets = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        octets = path.encode("utf-8", "surrogatepass")
    expected = quote_from_bytes(unquote_to_bytes(octets), SAFE_OCTETS)
    assert normalize_path("/" + path) == "/" + expected


def test_normalize_path_of_every_ascii_escape_and_character() -> None:
    # The shortcut calls back only for what changes: every escape and every
    # character, next to a safe one, against the definition.
    digits = "0123456789ABCDEFabcdef"
    texts = [f"%{high}{low}" for high in digits for low in digits]
    texts += [chr(octet) for octet in range(0x80)]
    for text in texts:
        path = f"/a{text}b"
        expected = quote_from_bytes(unquote_to_bytes(path.encode()), SAFE_OCTETS)
        assert normalize_path(path) == expected, path


@pytest.mark.parametrize(
    ("base", "value", "url"),
    [
        ("http://a.example/x/y", "/s.xml", "http://a.example/s.xml"),
        ("http://a.example/x/y", "z", "http://a.example/x/z"),
        ("http://a.example/", "//b.example/s", "http://b.example/s"),
        ("https://a.example/", b"/robots.txt?x=1", "https://a.example/robots.txt?x=1"),
        # Escaped as Scrapy sends it: UTF-8, then percent-encoded.
        ("http://a.example/", "/caf\u00e9 1", "http://a.example/caf%C3%A9%201"),
        ("http://a.example/", b"/caf\xc3\xa9", "http://a.example/caf%C3%A9"),
        ("http://a.example/", "http://b.example:8080/", "http://b.example:8080/"),
        # Not an http(s) URL with a host: nothing to fetch.
        ("http://a.example/", "", None),
        ("http://a.example/", b"", None),
        ("http://a.example/", "ftp://a.example/s.xml", None),
        ("http://a.example/", "javascript:alert(1)", None),
        ("http://a.example/", "https:///nohost", None),
        ("http://a.example/", "http://[x/", None),
        ("http://a.example/", "http://a.example:99999/", None),
        ("http://a.example/", b"http://a.example:-1/", None),
    ],
)
def test_http_url(base: str, value: str | bytes, url: str | None) -> None:
    assert http_url(base, value) == url
