"""Properties of the engine over generated input (hypothesis)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import product
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import match
from scrapy_rfc9309._agents import applicable_groups
from scrapy_rfc9309._bytes import body_text
from scrapy_rfc9309._read import read_document as read_text
from scrapy_rfc9309.lint import CODES, lint
from scrapy_rfc9309.match import Decision, compile, explain
from scrapy_rfc9309.parse import Document, parse, product_token
from scrapy_rfc9309.stringify import stringify
from scrapy_rfc9309.urls import (
    escape_pattern,
    normalize_path,
    normalize_pattern,
    request_path,
)
from tests.support.utils import Recorder, read_document

PROFILES = st.sampled_from(["rfc9309", "google"])
# Reading and linting: every profile (the bounded ones answer for their
# labels only, so matching with any agent takes the first two).
ALL_PROFILES = st.sampled_from(["rfc9309", "google", "yandex", "bing"])
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Pieces robots.txt files are made of, odd ones included.
_PATH_CHARS = st.sampled_from(
    [*"/abcxyz*$?=&.%-_~:;@!2A", "ツ", "é", " ", "%2A", "%62"]
)
PATTERN = st.lists(_PATH_CHARS, max_size=12).map("".join)
AGENT = st.sampled_from(
    ["FooBot", "foobot", "BarBot/1.0", "*", "* x", "", "b@d", "Foo Bar"]
)
KEY = st.sampled_from(
    [
        "User-agent",
        "user-agent",
        "useragent",
        "Allow",
        "Disallow",
        "disallow",
        "dissallow",
        "Disallowed",
        "Sitemap",
        "site-map",
        "Crawl-delay",
        "Content-Signal",
        "Host",
        "Unknown",
        "",
    ]
)
VALUE = st.one_of(
    PATTERN,
    AGENT,
    st.sampled_from(
        ["5", "0.5", "-1", "x", "search=yes, ai-train=no", "a=b, c", "https://a/s"]
    ),
    st.text(max_size=10),
)
SEPARATOR = st.sampled_from([": ", ":", " : ", " ", "\t"])
COMMENT = st.sampled_from(["", "", " # note", "#"])
LINE = st.one_of(
    st.tuples(KEY, SEPARATOR, VALUE, COMMENT).map("".join),
    st.sampled_from(["", "   ", "# comment", "<br />", "\x00junk", "\ufeff"]),
)
NEWLINE = st.sampled_from(["\n", "\r\n", "\r"])
ROBOTS_TXT = st.lists(st.tuples(LINE, NEWLINE).map("".join), max_size=25).map("".join)
# Schemes, separators and authorities, odd ones included: the matcher
# reads the path of the usual ones by a quicker route than request_path().
_SCHEME = st.sampled_from(["https", "http", "ftp", "a+b.c-d", "h", "1x", "", "é"])
_SEPARATOR = st.sampled_from(["://", "//", ":/", ":"])
_AUTHORITY = st.lists(
    st.sampled_from([*"a.-:@[]#?;/%", "é", " ", "\t", "%41", "\x7f"]), max_size=6
).map("".join)
URL = st.one_of(
    PATTERN.map(lambda path: "https://example.com/" + path.lstrip("/")),
    st.tuples(_SCHEME, _SEPARATOR, _AUTHORITY, PATTERN).map("".join),
    PATTERN,
    st.text(max_size=30),
)


@SETTINGS
@given(st.binary(max_size=2000), ALL_PROFILES, st.integers(min_value=0, max_value=3000))
def test_parse_never_raises_on_bytes(data: bytes, profile: str, max_bytes: int) -> None:
    document = parse(data, profile=profile, max_bytes=max_bytes)
    assert isinstance(document, Document)


@SETTINGS
@given(st.text(max_size=2000), ALL_PROFILES)
def test_parse_and_lint_never_raise_on_text(text: str, profile: str) -> None:
    parse(text, profile=profile)
    for diagnostic in lint(text, profile=profile):
        assert CODES[diagnostic.code] == diagnostic.severity


@SETTINGS
@given(st.binary(max_size=2000), ALL_PROFILES)
def test_lint_never_raises_on_bytes(data: bytes, profile: str) -> None:
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
    for diagnostic in lint(data, profile=profile):
        assert 0 <= diagnostic.line <= lines


@SETTINGS
@given(
    st.one_of(ROBOTS_TXT, st.text(max_size=300), st.binary(max_size=300)),
    ALL_PROFILES,
)
def test_stringify_round_trip(source: str | bytes, profile: str) -> None:
    document = parse(source, profile=profile)
    again = parse(stringify(document), profile=profile)
    assert again.without_lines() == document.without_lines()


@SETTINGS
@given(ROBOTS_TXT, ALL_PROFILES)
def test_to_dict_round_trip(source: str, profile: str) -> None:
    document = parse(source, profile=profile)
    assert Document.from_dict(json.loads(json.dumps(document.to_dict()))) == document


@SETTINGS
@given(ROBOTS_TXT, PROFILES, AGENT, URL)
def test_explain_never_raises_and_for_agent_agrees(
    source: str, profile: str, agent: str, url: str
) -> None:
    document = parse(source, profile=profile)
    decision = explain(document, agent, url)
    assert isinstance(decision, Decision)
    assert decision.allowed is compile(document, agent).is_allowed(url)
    assert explain(document.for_agent(agent), agent, url) == decision
    if decision.rule is not None:
        assert decision.rule in {
            rule for group in document.groups for rule in group.rules
        }


# An independent reference: the brute force below uses none of the
# package's URL or group functions, only these, written for the reader
# from RFC 9309 and Google's robots.cc, so that it can disagree.


def _octets(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _path_of(url: str) -> str:
    """Google's GetPathParamsQuery: what follows the authority, from the
    first "/", "?" or ";", up to a "#"; "/" if there is none."""
    start = 2 if url.startswith("//") else 0
    rest = url[start:]
    scheme, protocol, after = rest.partition("://")
    if not protocol or any(c in scheme for c in "/?;"):
        after = rest
    where = next((i for i, c in enumerate(after) if c in "/?;"), None)
    if where is None:
        return "/"
    before = rest[: len(rest) - len(after) + where]
    if "#" in before:
        return "/"
    path = after[where:].split("#")[0]
    return path if path.startswith("/") else "/" + path


def _escapes(data: bytes) -> Iterator[tuple[bytes, int | None]]:
    """``data`` piece by piece: each %XX escape with its octet, each other
    octet alone with ``None``."""
    i = 0
    while i < len(data):
        escape = data[i : i + 3]
        if (
            len(escape) == 3
            and escape[:1] == b"%"
            and all(c in b"0123456789abcdefABCDEF" for c in escape[1:])
        ):
            yield escape, int(escape[1:], 16)
            i += 3
        else:
            yield data[i : i + 1], None
            i += 1


def _canonical(text: str) -> str:
    """RFC 9309 2.2.2: octets, escapes decoded, then every octet but
    printable ASCII other than "%", "*" and "$" written as %XX."""
    decoded = [
        piece[0] if octet is None else octet for piece, octet in _escapes(_octets(text))
    ]
    return "".join(
        chr(o) if 0x21 <= o < 0x7F and chr(o) not in "%*$" else f"%{o:02X}"
        for o in decoded
    )


def _canonical_pattern(pattern: str) -> str:
    """A pattern canonical between its wildcards, its final "$" kept."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    return "*".join(map(_canonical, body.split("*"))) + ("$" if anchored else "")


def _google_pattern(pattern: str) -> str:
    """Google's MaybeEscapePattern: escapes upper-cased, octets outside
    ASCII written as %XX, nothing decoded."""
    return "".join(
        piece.decode().upper()
        if octet is not None
        else chr(piece[0])
        if piece[0] < 0x80
        else f"%{piece[0]:02X}"
        for piece, octet in _escapes(_octets(pattern))
    )


def _token(value: str) -> str:
    return re.match("[A-Za-z_-]*", value)[0].lower()  # type: ignore[index]


def _groups_for(document: Document, agent: str) -> list[Any]:
    """RFC 9309 2.2.1: the groups naming the agent's product token, else
    those naming "*" (Google: "*" then whitespace and anything)."""
    token = _token(agent)

    def names(value: str) -> str:
        return (
            "*"
            if re.fullmatch(r"\*(?:[ \t\n\v\f\r].*)?", value, re.S)
            else _token(value)
        )

    named = [g for g in document.groups if token and token in map(names, g.user_agents)]
    return named or [g for g in document.groups if "*" in map(names, g.user_agents)]


def _reference(document: Document, agent: str, url: str) -> tuple[bool, int]:
    """Allowed, and the deciding line (0: none), by brute force: every rule
    of the groups that apply turned into a regular expression; the longest
    match wins, Allow over Disallow of the same length, then the earlier
    line."""
    rfc = document.profile == "rfc9309"
    path = _path_of(url)
    if rfc:
        path = _canonical(path)
        if path.split("?")[0] == "/robots.txt":
            return True, 0
    candidates = []
    for group in _groups_for(document, agent):
        for rule in group.rules:
            pattern = (
                _canonical_pattern(rule.pattern)
                if rfc
                else _google_pattern(rule.pattern)
            )
            if not pattern:
                continue
            variants = [pattern]
            slash = pattern.rfind("/")
            if rule.allow and pattern.startswith("/index.htm", slash):
                variants.append(pattern[: slash + 1] + "$")
            for variant in variants:
                anchored = variant.endswith("$")
                body = variant[:-1] if anchored else variant
                regex = ".*".join(map(re.escape, body.split("*"))) + (
                    r"\Z" if anchored else ""
                )
                if re.match(regex, path, re.DOTALL):
                    candidates.append((len(variant), rule.allow, -rule.line))
    if not candidates:
        return True, 0
    _, allow, line = max(candidates)
    return allow, -line


@SETTINGS
@given(URL)
def test_the_reference_reads_urls_as_the_package(url: str) -> None:
    # Two implementations of the same definitions.
    assert _path_of(url) == request_path(url)
    assert _canonical(url) == normalize_path(url)
    assert _canonical_pattern(url) == normalize_pattern(url)
    assert _google_pattern(url) == escape_pattern(url)


@SETTINGS
@given(ROBOTS_TXT, AGENT)
def test_the_reference_picks_groups_as_the_package(source: str, agent: str) -> None:
    document = parse(source)
    assert _groups_for(document, agent) == applicable_groups(
        document, product_token(agent)
    )


@SETTINGS
@given(ROBOTS_TXT, PROFILES, AGENT, URL)
def test_matcher_agrees_with_brute_force(
    source: str, profile: str, agent: str, url: str
) -> None:
    document = parse(source, profile=profile)
    decision = compile(document, agent).explain(url)
    line = decision.rule.line if decision.rule is not None else 0
    assert (decision.allowed, line) == _reference(document, agent, url)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.lists(st.sampled_from([*"/ab*$", "%61", "%2a"]), max_size=8),
        ),
        min_size=9,
        max_size=60,
    ),
    st.lists(st.sampled_from([*"/ab", "%61", "%2A"]), max_size=12),
)
def test_many_rules_agree_with_brute_force(
    rules: list[tuple[bool, list[str]]], path: list[str]
) -> None:
    # Enough rules for long chains of prefixes of one another (the parent
    # links the bisection follows) and many heads.
    source = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: /{''.join(chars)}\n"
        for allow, chars in rules
    )
    document = parse(source)
    url = "/" + "".join(path)
    decision = compile(document, "bot").explain(url)
    line = decision.rule.line if decision.rule is not None else 0
    assert (decision.allowed, line) == _reference(document, "bot", url)


@SETTINGS
@given(st.one_of(ROBOTS_TXT, st.text(max_size=300), st.binary(max_size=300)), PROFILES)
def test_reporting_changes_nothing_read(source: str | bytes, profile: str) -> None:
    # One reader serves parse() and lint(): what it reports about a body
    # never changes how it reads it.
    text = body_text(source, 512_000)
    recorder = Recorder()
    reported = read_text(text, profile, recorder)
    assert parse(source, profile=profile) == Document(*reported, profile=profile)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
    assert all(1 <= line <= lines for line, _, _ in recorder.events)


@SETTINGS
@given(ROBOTS_TXT, PROFILES, AGENT, st.lists(URL, max_size=5))
def test_unread_document_answers_as_the_read_one(
    source: str, profile: str, agent: str, urls: list[str]
) -> None:
    ours = compile(parse(source, profile=profile), agent)
    reference = compile(read_document(parse(source, profile=profile)), agent)
    assert ours.profile == reference.profile
    assert ours.crawl_delay == reference.crawl_delay
    assert ours.content_signals == reference.content_signals
    for url in urls:
        assert ours.explain(url) == reference.explain(url)


# Patterns made of a few pieces, so that they share prefixes and heads
# ("/a", "/a/b", "/a*b", "*b$") often.
_PIECE = st.sampled_from(["/", "a", "b", "/a", "*", "$", "?", "%61", "ツ"])
_RULE = st.tuples(st.booleans(), st.lists(_PIECE, max_size=5).map("".join))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_RULE, max_size=40),
    st.lists(st.lists(_PIECE, max_size=6).map(lambda parts: "/" + "".join(parts))),
    PROFILES,
)
def test_shared_prefixes_agree_with_brute_force(
    rules: list[tuple[bool, str]], paths: list[str], profile: str
) -> None:
    # Plain prefixes, heads of wildcard patterns and "/" all in one sorted
    # table: the longest match must still win, whatever sorts between.
    source = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules
    )
    document = parse(source, profile=profile)
    matcher = compile(document, "bot")
    for path in paths:
        decision = matcher.explain(path)
        line = decision.rule.line if decision.rule is not None else 0
        assert (decision.allowed, line) == _reference(document, "bot", path)
        # is_allowed() may stop early once no other rule could change the
        # verdict: it must still give the same one.
        assert matcher.is_allowed(path) == decision.allowed


@pytest.mark.parametrize("profile", ["rfc9309", "google"])
def test_every_short_pattern_agrees_with_brute_force(profile: str) -> None:
    # The matcher reads most wildcard patterns off one regex over all the
    # patterns of a file: every pattern of up to four pieces decides as the
    # brute force does, alone (beside one other rule) and all in one file.
    pieces = ["", "/", "a", "*", "$", "/a", "ab", "**", "*$", "/*"]
    patterns = sorted(
        {
            "".join(parts)
            for size in range(1, 5)
            for parts in product(pieces, repeat=size)
        }
        - {""}
    )
    paths = ["/", "/a", "/ab", "/a/b", "/ba", "/aab", "/a$", "/x/ab", "/abab"]
    bodies = [
        "User-agent: *\n" + "".join(f"Disallow: {pattern}\n" for pattern in patterns),
        *(
            f"User-agent: *\nDisallow: {pattern}\nAllow: /a*b$\n"
            for pattern in patterns
        ),
    ]
    for body in bodies:
        document = parse(body, profile=profile)
        matcher = compile(document, "bot")
        for path in paths:
            decision = matcher.explain(path)
            line = decision.rule.line if decision.rule is not None else 0
            expected = _reference(document, "bot", path)
            assert (decision.allowed, line) == expected, (body[:80], path)


@SETTINGS
@given(
    ROBOTS_TXT,
    st.sampled_from(
        [
            ("yandex", "Yandex"),
            ("yandex", "YandexAdditionalBot"),
            ("bing", "bingbot"),
            ("bing", "AdIdxBot"),
        ]
    ),
    URL,
)
def test_bounded_profiles_explain_and_for_agent_agree(
    source: str, profile_agent: tuple[str, str], url: str
) -> None:
    profile, agent = profile_agent
    document = parse(source, profile=profile)
    decision = match.explain(document, agent, url)
    assert match.is_allowed(document, agent, url) is decision.allowed
    assert match.explain(document.for_agent(agent), agent, url) == decision
