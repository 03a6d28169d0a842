"""The one-agent route reads a robots.txt exactly as the whole-Document
route does: ``rules_for()`` (which reads only the groups that apply) gives
what the groups of ``read_document()`` that apply give, merged: the same
patterns, line numbers, Crawl-delay, Content-Signal values and Content-Usage
rules, whatever the text.  Both take where groups start from
``group_starts()``, which is held to RFC 9309 section 2.2.4 applied line by
line.  And a handler (lint's) changes nothing read."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309._agents import applicable_groups, merge_signals
from scrapy_rfc9309._bytes import MAX_LINE_BYTES, body_text
from scrapy_rfc9309._read import (
    AgentRules,
    _Reading,
    read_chunk,
    read_document,
    rules_for,
)
from scrapy_rfc9309.parse import Document
from scrapy_rfc9309.profiles import RULES
from tests.support.utils import Recorder

PROFILES = ("rfc9309", "google")
# Whether a Content-Usage line ends a group, per profile (issue 26).
USAGE_ENDS = {name: rules.usage_ends_group for name, rules in RULES.items()}
# Whether any line but a User-agent one ends a group, per profile (Yandex).
ANY_LINE_ENDS = {name: rules.group_ends == "line" for name, rules in RULES.items()}
# Every profile reads a whole document through group_starts().
ALL_PROFILES = ("rfc9309", "google", "yandex", "bing")
TOKENS = ("examplebot", "other", "")

# Past the cap a line is cut, whatever it holds.
PAST_CAP = MAX_LINE_BYTES + 10


def document_rules(text: str, profile: str, token: str) -> AgentRules:
    """What rules_for() must give: the rules (empty patterns left out, as
    they match nothing), the largest Crawl-delay, the Content-Signal
    values and the Content-Usage rules (in file order) of the groups of the
    whole Document that apply to ``token``."""
    document = Document(*read_document(text, profile), profile=profile)
    groups = applicable_groups(document, token)
    rules = sorted(
        (rule for group in groups for rule in group.rules), key=lambda r: r.line
    )
    patterns = [rule.pattern for rule in rules if rule.pattern]
    metas = [rule.line << 1 | rule.allow for rule in rules if rule.pattern]
    delays = [group.crawl_delay for group in groups if group.crawl_delay is not None]
    signals: dict[str, bool | str] = {}
    for group in groups:
        merge_signals(signals, group.content_signals)
    usage = sorted(
        (rule for group in groups for rule in group.content_usage),
        key=lambda rule: rule.line,
    )
    return patterns, metas, max(delays) if delays else None, signals, usage


def rfc9309_groups(text: str, profile: str) -> list[tuple[int, list[str], list[int]]]:
    """The groups of ``text`` as RFC 9309 section 2.2.4 draws them, each
    line read alone (by the line reader): a User-agent line starts a group
    unless the group being read has no rule yet (in Yandex's reading, no
    other line yet: a ``key: value``, blank or comment-only one).  Each
    group as its first line, its User-agent values and the lines of its
    rules."""
    groups: list[tuple[int, list[str], list[int]]] = []
    # Whether the group being read has a line that ends it: a rule, or a
    # Content-Usage line where the profile reads it as one.
    ended = False
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        # A group is open (line=1), so a rule line alone is read as one.
        reading = _Reading(line=1)
        read_chunk(line, 1, profile, reading)
        reading.end_group()
        assert reading.groups
        group = reading.groups[0]
        agents, rules = group.user_agents, group.rules
        if agents:
            if not groups or ended:
                groups.append((number, [], []))
                ended = False
            groups[-1][1].extend(agents)
        elif groups and (rules or (group.content_usage and USAGE_ENDS[profile])):
            ended = True
            if rules:
                groups[-1][2].append(number)
        elif ANY_LINE_ENDS[profile]:
            # Yandex's ParseRules: a line with a colon (before a "#" or a
            # NUL), or a blank one; other text is skipped.
            content = re.split("[#\0]", line)[0]
            ended = ended or ":" in content or not content.strip(" \t\v\f\r")
    return groups


def assert_groups_as_rfc9309_draws_them(text: str, profile: str) -> None:
    groups = read_document(text, profile)[0]
    read = [
        (group.line, list(group.user_agents), [rule.line for rule in group.rules])
        for group in groups
    ]
    assert read == rfc9309_groups(text, profile)


TEXTS = {
    "empty": "",
    "no user-agent": "Disallow: /a\nAllow: /b\nCrawl-delay: 3\n",
    "only user-agents": "User-agent: examplebot\nUser-agent: *\n",
    "no final newline": "User-agent: *\nDisallow: /a\nDisallow: /b",
    "cr only": "User-agent: *\rDisallow: /a\rUser-agent: examplebot\rDisallow: /b\r",
    "crlf": "User-agent: *\r\nDisallow: /a \r\n\r\nUser-agent: examplebot\r\n"
    "Disallow: /b\r\nAllow: /c\r\n",
    "crlf, then a lone cr at the end": "User-agent: examplebot\r\n"
    "Disallow: /a\r\nUser-agent: examplebot\r",
    "mixed line ends": "User-agent: *\r\nDisallow: /a\rAllow: /b\n"
    "User-agent: examplebot\r\n\r\nDisallow: /c\r\r\nDisallow: /d",
    "nul": "User-agent: exa\0mplebot\nDisallow: /a\0b\nUser-agent: *\n"
    "Dis\0allow: /x\nDisallow: /y\0\n\0User-agent: examplebot\nDisallow: /z\n"
    "User-agent: examplebot\0\nAllow: /w\0\0\n",
    "nul in user-agent values": "User-agent: *\0x\nDisallow: /a\n"
    "User-agent: examplebot\nUser-agent: other\0\nDisallow: /b\n",
    "nul in a key between user-agents": "User-agent: other\nDisallow\0: x\n"
    "User-agent: examplebot\nDisallow: /y\n",
    "bom": body_text(b"\xef\xbb\xbfUser-agent: *\nDisallow: /a\n", 512_000),
    "partial bom": body_text(b"\xef\xbbUser-agent: *\nDisallow: /a\n", 512_000),
    "bom character inside": "User-agent: *\n\ufeffDisallow: /a\nDisallow: /b\n",
    "rule past the cap": "User-agent: *\nDisallow: /" + "a" * PAST_CAP + "\n"
    "Disallow: /b\n",
    "rule at the cap": "User-agent: *\nDisallow: /"
    + "a" * (MAX_LINE_BYTES - 11)
    + "\nDisallow: /"
    + "b" * (MAX_LINE_BYTES - 10)
    + "\r\n",
    "key pushed past the cap": "User-agent: *\n"
    + " " * PAST_CAP
    + "Disallow: /x\nDisallow: /y\n",
    "colon pushed past the cap": "User-agent: *\nDisallow"
    + " " * PAST_CAP
    + ": /x\nDisallow: /y\n",
    "pattern after spaces past the cap": "User-agent: *\nDisallow: "
    + " " * PAST_CAP
    + "/x\n",
    "user-agent pushed past the cap": "User-agent: *\nDisallow: /a\n"
    + "\t" * PAST_CAP
    + "User-agent: examplebot\nDisallow: /b\n",
    "user-agent value cut by the cap": "User-agent: "
    + "a" * (MAX_LINE_BYTES - 12)
    + "examplebot\nDisallow: /a\nUser-agent: *\nDisallow: /b\n",
    "non-ascii line past the cap": "User-agent: *\nDisallow: /" + "é" * 8400 + "\n"
    "Allow: /" + "日" * 5600 + "\nDisallow: /c\n",
    "long comment": "User-agent: *\nDisallow: /a #" + "c" * PAST_CAP + "\n"
    "# " + "d" * PAST_CAP + "\nDisallow: /b\n",
    "missing colon": "User-agent examplebot\nDisallow /a\nAllow /b c\n"
    "User-agent\tother\nDisallow\t/d\n",
    "google prefix keys": "user-agentfoo: examplebot\ndisallowed: /a\n"
    "allowance: /b\nUser-Agent: *\nDisallowing /c\nUser-agents other\n"
    "Disallow: /d\n",
    "prefix rule key between user-agents": "User-agent: a\nDisallowed: /x\n"
    "User-agent: examplebot\nDisallow: /y\n",
    "odd rule between user-agents": "User-agent: a\ndisallow /x\n"
    "User-agent: examplebot\nDisallow: /y\nUser-agent: b\n  DISALLOW : /z\n"
    "User-agent: other\nDisallow: /w\n",
    "typos": "useragent: examplebot\ndissallow: /a\ndisalow: /b\ndiasllow: /c\n"
    "disallaw: /d\nuser agent: *\ndissalow: /e\nUser Agent: other\n",
    "whitespace": "\vUser-agent:\fexamplebot\v\n\fDisallow:\v/a\f\n \t\vAllow: /b\n"
    "  User-agent: other\n\t\tDisallow: /c \t\n",
    "comments": "# User-agent: examplebot\nUser-agent: examplebot # me\n"
    "Disallow: /a # no\n#Disallow: /b\nDisallow: /c#d\nAllow: # empty\n"
    "Disallow #: /e\nUser-agent: other#x\nDisallow: /f\n",
    "star with more": "User-agent: * junk\nDisallow: /a\nUser-agent: *junk\n"
    "Disallow: /b\nUser-agent: *\tx\nDisallow: /c\nUser-agent: *#c\nAllow: /d\n",
    "user-agents between rules": "User-agent: a\nDisallow: /1\n"
    "User-agent: examplebot\nUser-agent: b\nDisallow: /2\nAllow: /3\n"
    "User-agent: c\nDisallow: /4\n",
    "crawl-delay and content-signal": "User-agent: examplebot\nCrawl-delay: x\n"
    "Crawl-delay: 5\nContent-Signal: search=yes\nDisallow: /a\nCrawl-delay: 7\n"
    "Content-Signal: ai-train=no, search=no\nUser-agent: examplebot\n"
    "crawl delay: 2\ncontent-signals: ai-input=maybe\nDisallow: /b\n"
    "crawldelay 9\n",
    "crawl-delay between user-agents": "User-agent: examplebot\nCrawl-delay: 3\n"
    "User-agent: other\nDisallow: /a\nUser-agent: *\nCrawl-delay: -1\n",
    "rules before user-agents": "Disallow: /x\nAllow: /y\nCrawl-delay: 3\n"
    "User-agent: *\nDisallow: /z\n",
    "empty patterns": "User-agent: *\nDisallow:\nDisallow: \nAllow:\t\n"
    "Disallow: /a\nDisallow:  \r\n",
    "several named groups": "User-agent: examplebot\nDisallow: /1\n"
    "User-agent: other\nDisallow: /2\nUser-agent: ExampleBot/2.0\nAllow: /3\n"
    "User-agent: EXAMPLEBOT\n",
    "named and starred": "User-agent: *\nDisallow: /s\nUser-agent: examplebot\n"
    "Disallow: /n\nUser-agent: *\nCrawl-delay: 9\nContent-Signal: search=no\n",
    "last group without rules": "User-agent: *\nDisallow: /a\n"
    "User-agent: examplebot\nCrawl-delay: 4\nSitemap: https://x/s.xml\n",
    "content-usage": "User-agent: *\nContent-Usage: train-ai=n\n"
    "Disallow: /never/\ncontent-usage :/ai-ok/\t train-ai=y # c\n"
    "User-agent: examplebot\nContent-Usage: search=n\nUser-agent: other\n"
    "Allow: /\nUser-agent: examplebot\nCONTENT-USAGE /x train-ai=n\n",
    "blank lines before the rules": "User-agent: examplebot\n\n# c\n\n"
    "Disallow: /a\n\nUser-agent: *\n\nDisallow: /b\n",
    "other user lines": "User-agent: examplebot\nUsername: x\nDisallow: /a\n"
    "User-agent: other\nUser: y\nDisallow: /b\n",
    "other spellings among rules": "User-agent: *\nDisallow: /a\ndisallow: /b\n"
    "Disallow:/c\nDISALLOW : /d\nAllow: /e\nDisallow:\t/f\nallow /g\n"
    "Noindex: /h\nDisallow: /i\n",
    "non-ascii": "User-agent: *\nDisallow: /日本\nAllow: /café\n"
    "User-agent: examplébot\nDisallow: /x\n",
    "surrogate escapes": body_text(
        b"User-agent: *\nDisallow: /\xff\xfe\nAllow: /caf\xc3\xa9\n"
        b"User-agent: ex\xe9mple\nDisallow: /\xc3\n",
        512_000,
    ),
    "characters lowering to ascii": "\u0130User-agent: examplebot\n"
    "U\u017fer-agent: examplebot\nUser-agent: examplebot\nD\u0130sallow: /a\n"
    "Di\u017fallow: /b\n\u212aDisallow: /c\nDisallow: /d\n",
    "other line breaks": "User-agent: *\x1cDisallow: /a\nDisallow: /b\x1d\n"
    "Disallow: /c\x85Allow: /d\u2028\n",
}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_one_agent_reads_as_the_document(name: str, profile: str) -> None:
    text = TEXTS[name]
    for token in TOKENS:
        assert rules_for(text, profile, token) == document_rules(text, profile, token)
    assert_reporting_changes_nothing(text, profile)


@pytest.mark.parametrize("profile", ALL_PROFILES)
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_groups_start_where_rfc9309_says(name: str, profile: str) -> None:
    assert_groups_as_rfc9309_draws_them(TEXTS[name], profile)


def assert_reporting_changes_nothing(text: str, profile: str) -> None:
    # lint's route (line by line, with a handler) reads what parse's does.
    recorder = Recorder()
    reported = read_document(text, profile, recorder)
    assert reported == read_document(text, profile)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
    assert all(1 <= line <= lines for line, _, _ in recorder.events)


def test_one_agent_finds_rules_line_numbers_and_values() -> None:
    text = TEXTS["crawl-delay and content-signal"]
    patterns, metas, delay, signals, _ = rules_for(text, "rfc9309", "examplebot")
    assert patterns == ["/a", "/b"]
    assert metas == [5 << 1, 11 << 1]
    assert delay == 5.0
    assert signals == {"search": False, "ai-train": False, "ai-input": "maybe"}


# Pieces robots.txt files are made of, odd and long ones included.
_KEY = st.sampled_from(
    [
        "User-agent",
        "user-agent",
        "USER-AGENT",
        "useragent",
        "user agent",
        "User-agentX",
        "Username",
        "Disallow",
        "disallow",
        "DISALLOW",
        "Disallowed",
        "dissallow",
        "Allow",
        "allow",
        "Crawl-delay",
        "crawl delay",
        "Content-Signal",
        "Content-Usage",
        "content usage",
        "Sitemap",
        "Host",
        "",
    ]
)
_VALUE = st.one_of(
    st.sampled_from(
        [
            "*",
            "* x",
            "*x",
            "examplebot",
            "ExampleBot/1.0",
            "other",
            "",
            "/a",
            "/ä",
            "/x y",
            "5",
            "x",
            "search=no, ai-train=yes",
            "train-ai=n",
            "/a train-ai=y",
            "/\ttrain-ai=n, search=y",
        ]
    ),
    st.text(max_size=6),
)
_SPACE = st.sampled_from(["", "", " ", "\t", "\v", "\f", "  "])
_SEPARATOR = st.sampled_from([": ", ":", " : ", " ", "\t", ":  "])
_COMMENT = st.sampled_from(["", "", " # note", "#", "#: x", "\0x", "\0"])
_ODD = st.sampled_from(
    [
        "",
        "   ",
        "# comment",
        "<br />",
        "\x00junk",
        "User-agent: examplebot\x00x",
        "User-agent: *\x00x",
        "Disallow\x00: /x",
        "\ufeff",
        "Disallow: /" + "a" * PAST_CAP,
        " " * PAST_CAP + "Disallow: /x",
        "Disallow: /" + "é" * 8400,
        "User-agent: " + "a" * (MAX_LINE_BYTES - 12) + "examplebot",
    ]
)
# Lines as most files write them, which the scan reads by a quicker route.
_USUAL = st.sampled_from(
    [
        "User-agent: *",
        "User-agent: examplebot",
        "User-agent: other",
        "Disallow: /a",
        "Disallow: /b ",
        "Disallow: ",
        "Allow: /c",
        "Crawl-delay: 2",
        "Content-Signal: search=no",
        "Content-Usage: train-ai=n",
        "Content-Usage: /a train-ai=y",
        "Sitemap: https://example.com/s.xml",
    ]
)
_LINE = st.one_of(
    _USUAL,
    st.tuples(_SPACE, _KEY, _SEPARATOR, _SPACE, _VALUE, _SPACE, _COMMENT).map("".join),
    _ODD,
)
_NEWLINE = st.sampled_from(["\n", "\n", "\r\n", "\r"])
ROBOTS_TXT = st.lists(st.tuples(_LINE, _NEWLINE).map("".join), max_size=30).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROBOTS_TXT, st.sampled_from(PROFILES))
def test_one_agent_reads_generated_texts_as_the_document(
    text: str, profile: str
) -> None:
    for token in TOKENS:
        assert rules_for(text, profile, token) == document_rules(text, profile, token)
    assert_reporting_changes_nothing(text, profile)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROBOTS_TXT, st.sampled_from(ALL_PROFILES))
def test_generated_groups_start_where_rfc9309_says(text: str, profile: str) -> None:
    assert_groups_as_rfc9309_draws_them(text, profile)
