"""What the public engine API answers to an argument of the wrong kind: a
``TypeError`` (or ``ValueError``) naming the argument, raised at the entry
point, never an ``AttributeError`` from deep inside nor a silent answer
(docs/engine.md, "Bad input")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scrapy_rfc9309 import (
    Answer,
    Document,
    Lifetimes,
    Outcome,
    classify,
    compile,
    content_signals,
    crawl_delay,
    explain,
    explain_by,
    is_allowed,
    is_allowed_by,
    lint,
    parse,
    product_token,
    robots_url,
    stringify,
    usage_explained,
    usage_preferences,
)

BODY = b"User-agent: *\nDisallow: /a\n"
DOCUMENT = parse(BODY)


def _outcome() -> Outcome:
    return classify(
        Answer(200, BODY),
        profile="rfc9309",
        max_bytes=500_000,
        now=0.0,
        lifetimes=Lifetimes(),
    )


#: Each entry point with a robots.txt's text where its document goes, or
#: its arguments in another order.
NOT_A_DOCUMENT: list[tuple[str, Callable[[], Any]]] = [
    ("explain", lambda: explain(BODY.decode(), "bot", "/a")),  # type: ignore[arg-type]
    ("explain", lambda: explain("/a", DOCUMENT, "bot")),  # type: ignore[arg-type]
    ("is_allowed", lambda: is_allowed(BODY, "bot", "/a")),  # type: ignore[arg-type]
    ("compile", lambda: compile(BODY.decode(), "bot")),  # type: ignore[arg-type]
    ("crawl_delay", lambda: crawl_delay(BODY.decode(), "bot")),  # type: ignore[arg-type]
    ("content_signals", lambda: content_signals("x", "bot")),  # type: ignore[arg-type]
    ("usage_preferences", lambda: usage_preferences("x", "bot", "/a")),  # type: ignore[arg-type]
    ("usage_explained", lambda: usage_explained("x", "bot", "/a")),  # type: ignore[arg-type]
    ("stringify", lambda: stringify(BODY.decode())),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    "call", [pytest.param(call, id=name) for name, call in NOT_A_DOCUMENT]
)
def test_text_where_a_document_goes_is_named(call: Callable[[], Any]) -> None:
    # It was AttributeError: 'str' object has no attribute '_matchers'.
    with pytest.raises(TypeError, match=r"^document must be a Document \(from parse"):
        call()


@pytest.mark.parametrize("explains", [explain_by, is_allowed_by])
def test_a_document_where_an_outcome_goes_is_named(explains: Any) -> None:
    with pytest.raises(TypeError, match=r"^outcome must be an Outcome"):
        explains(DOCUMENT, "bot", "/a")
    assert explain_by(_outcome(), "bot", "/a").allowed is False


@pytest.mark.parametrize("agent", [None, b"bot", 5])
def test_a_user_agent_that_is_no_str_is_named(agent: Any) -> None:
    # It was TypeError: expected string or bytes-like object (from re).
    document = parse(BODY)
    for call in (
        lambda: explain(document, agent, "/a"),
        lambda: is_allowed(document, agent, "/a"),
        lambda: compile(document, agent),
        lambda: document.for_agent(agent),
        lambda: product_token(agent),
    ):
        with pytest.raises(TypeError, match=r"^user_agent must be a str, not "):
            call()


def test_a_url_and_an_agent_swapped_are_read_as_documented() -> None:
    # Two strings are not told apart (a User-Agent header may start with a
    # URL, and RobotParser passes it on as it is): the URL is read as the
    # agent of its product token, the agent's name as a relative URL,
    # which matches as "/" (docs/engine.md, "Bad input").
    swapped = explain(DOCUMENT, "https://example.com/a", "bot")
    assert swapped == explain(DOCUMENT, "https", "/")


@pytest.mark.parametrize("url", [None, b"/a", b"https://example.com/a", 5])
@pytest.mark.parametrize("profile", ["rfc9309", "google"])
def test_a_url_that_is_no_str_is_named(url: Any, profile: Any) -> None:
    # It was TypeError: cannot use a string pattern on a bytes-like object.
    document = parse(BODY, profile=profile)
    matcher = compile(document, "bot")
    for call in (
        lambda: explain(document, "bot", url),
        lambda: is_allowed(document, "bot", url),
        lambda: matcher.explain(url),
        lambda: matcher.is_allowed(url),
        lambda: usage_explained(document, "bot", url),
    ):
        with pytest.raises(TypeError, match=r"^url must be a str, not "):
            call()


@pytest.mark.parametrize("source", [5, None, ["User-agent: *"], 1.5, object()])
@pytest.mark.parametrize("profile", ["rfc9309", "yandex"])
def test_a_source_that_is_no_text_is_named(source: Any, profile: Any) -> None:
    # parse(5) was the document of five NUL octets (bytes(5)): no rules,
    # silently; lint(5) linted them.
    for read in (parse, lint):
        with pytest.raises(TypeError, match=r"^source must be str or bytes, not "):
            read(source, profile=profile)


def test_bytes_like_sources_are_read() -> None:
    for source in (bytearray(BODY), memoryview(BODY)):
        assert parse(source) == DOCUMENT  # type: ignore[arg-type]


def _document(**group: Any) -> dict[str, Any]:
    return {
        "profile": "rfc9309",
        "groups": [{"user_agents": ["bot"], "rules": [], **group}],
        "sitemaps": [],
    }


@pytest.mark.parametrize(
    ("data", "named"),
    [
        # Each was read letter by letter: the agents "b", "o", "t".
        (_document(user_agents="bot"), "user_agents"),
        (_document(user_agents={"bot": 1}), "user_agents"),
        ({**_document(), "sitemaps": "https://x/s.xml"}, "sitemaps"),
        ({**_document(), "groups": {"user_agents": ["bot"]}}, "groups"),
        (_document(rules="d/1"), "rules"),
        (_document(content_usage="/a"), "content_usage"),
        ({**_document(), "records": "abc"}, "records"),
    ],
)
def test_from_dict_refuses_text_where_a_list_goes(
    data: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=rf"not a robots\.txt document: .*{named}"):
        Document.from_dict(data)


def test_robots_url_takes_the_host_as_urllib_splits_it() -> None:
    # Documented, not refused: Scrapy sends such a URL as it is, and its
    # robots.txt, asked of the same host, fails as the page would.
    assert robots_url("http://h /p") == "http://h /robots.txt"
    assert robots_url(b"http://h/p") is None  # type: ignore[arg-type]
    assert robots_url(None) is None  # type: ignore[arg-type]
