"""A Content-Usage line is a rule (attach's grammar): a User-agent line after
it starts a new group, in every route (the groups of the whole document,
the rules read for one agent, lint), except in the google profile, whose
parser does not know the key (ProfileRules.usage_ends_group)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import is_allowed, parse, usage_preferences
from scrapy_rfc9309.lint import lint
from scrapy_rfc9309.profiles import RULES
from tests.support.utils import read_document

# The issue's text.
ISSUE = "User-agent: *\nContent-Usage: train-ai=n\n\nUser-agent: examplebot\nAllow: /\n"


def _routes(text: str, profile: str = "rfc9309") -> list[object]:
    # The one-agent scan (parse() leaves the groups unread) and the groups
    # of the whole document.
    return [parse(text, profile=profile), read_document(parse(text, profile=profile))]


def test_issue_text_gives_examplebot_no_preference() -> None:
    for document in _routes(ISSUE):
        assert usage_preferences(document, "ExampleBot", "/page")["train-ai"] is None
        assert usage_preferences(document, "otherbot", "/page")["train-ai"] is False
    assert [group.user_agents for group in parse(ISSUE).groups] == [
        ("*",),
        ("examplebot",),
    ]


def test_google_profile_keeps_one_group() -> None:
    # Google's parser reads Content-Usage as an unknown line, which ends
    # nothing: the profile's groups are Google's.
    assert RULES["google"].usage_ends_group is False
    assert all(
        rules.usage_ends_group for name, rules in RULES.items() if name != "google"
    )
    for document in _routes(ISSUE, "google"):
        assert usage_preferences(document, "ExampleBot", "/page")["train-ai"] is False
    text = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n"
    for document in _routes(text, "google"):
        assert not is_allowed(document, "a", "/x")
    for document in _routes(text):
        assert is_allowed(document, "a", "/x")
        assert not is_allowed(document, "b", "/x")


def test_lint_reads_the_same_groups() -> None:
    text = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\n"
    (found,) = [d for d in lint(text) if d.code == "group-without-rules"]
    assert (found.line, "'b'" in found.message, "'a'" in found.message) == (
        3,
        True,
        False,
    )
    (found,) = [
        d for d in lint(text, profile="google") if d.code == "group-without-rules"
    ]
    assert (found.line, "'a', 'b'" in found.message) == (1, True)


# (text, agent, url, allowed, train-ai)
INTERLEAVINGS = [
    # Content-Usage after Allow/Disallow: the group ended at the rule anyway.
    (
        "User-agent: a\nDisallow: /x\nContent-Usage: train-ai=n\nUser-agent: b\n"
        "Allow: /\n",
        "b",
        "/x",
        True,
        None,
    ),
    (
        "User-agent: a\nDisallow: /x\nContent-Usage: train-ai=n\nUser-agent: b\n"
        "Allow: /\n",
        "a",
        "/x",
        False,
        None,
    ),
    # Before the rules: the group ends after them (still one group).
    (
        "User-agent: a\nContent-Usage: train-ai=n\nDisallow: /x\nUser-agent: b\n"
        "Allow: /\n",
        "b",
        "/y",
        True,
        None,
    ),
    (
        "User-agent: a\nContent-Usage: train-ai=n\nDisallow: /x\nUser-agent: b\n"
        "Allow: /\n",
        "a",
        "/y",
        True,
        False,
    ),
    # Alone: the next User-agent line starts a group, whose Disallow is not a's.
    (
        "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n",
        "a",
        "/y",
        True,
        False,
    ),
    (
        "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n",
        "b",
        "/y",
        False,
        None,
    ),
    # Between two User-agent lines of one group, Content-Usage splits them.
    (
        "User-agent: a\nContent-Usage: /p/ train-ai=y\nUser-agent: b\n"
        "Content-Usage: train-ai=n\nAllow: /\n",
        "a",
        "/p/q",
        True,
        True,
    ),
    (
        "User-agent: a\nContent-Usage: /p/ train-ai=y\nUser-agent: b\n"
        "Content-Usage: train-ai=n\nAllow: /\n",
        "b",
        "/p/q",
        True,
        False,
    ),
    # User-agent lines in a run before it stay one group.
    (
        "User-agent: a\nUser-agent: b\nContent-Usage: train-ai=n\nUser-agent: c\n"
        "Disallow: /\n",
        "b",
        "/y",
        True,
        False,
    ),
    (
        "User-agent: a\nUser-agent: b\nContent-Usage: train-ai=n\nUser-agent: c\n"
        "Disallow: /\n",
        "c",
        "/y",
        False,
        None,
    ),
    # Spelt in other cases, with whitespace, a comment and CRLF.
    (
        "User-agent: a\r\n  content-USAGE : train-ai=n # no\r\nUser-agent: b\r\n"
        "Disallow: /\r\n",
        "a",
        "/y",
        True,
        False,
    ),
    # Content-Signal still never ends a group.
    (
        "User-agent: a\nContent-Signal: ai-train=no\nUser-agent: b\nDisallow: /\n",
        "a",
        "/y",
        False,
        None,
    ),
]


@pytest.mark.parametrize(("text", "agent", "url", "allowed", "train"), INTERLEAVINGS)
def test_interleavings(
    text: str, agent: str, url: str, allowed: bool, train: bool | None
) -> None:
    for document in _routes(text):
        assert is_allowed(document, agent, url) is allowed
        preferences = usage_preferences(document, agent, url)
        assert preferences.get("train-ai") is (train if allowed else None)


_LINES = st.sampled_from(
    [
        "User-agent: a",
        "User-agent: b",
        "User-agent: *",
        "Allow: /p",
        "Disallow: /p",
        "Disallow: /",
        "Content-Usage: train-ai=n",
        "Content-Usage: /p train-ai=y",
        "content-usage:\ttrain-ai=y",
        "Content-Signal: ai-train=no",
        "",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=12), st.sampled_from(["rfc9309", "google"]))
def test_routes_agree(lines: list[str], profile: str) -> None:
    one, whole = _routes("\n".join(lines) + "\n", profile)
    for agent in ("a", "b", "c"):
        for url in ("/", "/p", "/p/q"):
            assert is_allowed(one, agent, url) == is_allowed(whole, agent, url)
            assert usage_preferences(one, agent, url) == usage_preferences(
                whole, agent, url
            )
