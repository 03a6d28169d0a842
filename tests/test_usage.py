"""Content-Usage (IETF aipref): the drafts' examples as vectors
(tests/data/aipref.json), the vocabulary as data, and properties of the
robots.txt rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import (
    Document,
    UsageRule,
    is_allowed,
    parse,
    stringify,
    usage_explained,
    usage_preferences,
)
from scrapy_rfc9309.usage import (
    VOCAB_08,
    VOCABULARY,
    Vocabulary,
    combine,
    governing,
    header_preferences,
    parse_preference,
    purposes_from_content_signals,
    refused,
)
from tests.support.utils import read_document

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "aipref.json").read_text("utf-8")
)
ROBOTS_CASES = [
    pytest.param(
        vector["robots_txt"], case, profile, id=f"{vector['source'][:40]}-{n}-{profile}"
    )
    for vector in VECTORS["robots"]
    for n, case in enumerate(vector["cases"])
    for profile in case.get("profiles", ("rfc9309", "google"))
]


@pytest.mark.parametrize(("robots_txt", "case", "profile"), ROBOTS_CASES)
def test_robots_vectors(robots_txt: str, case: dict[str, Any], profile: str) -> None:
    url = "https://example.com" + case["path"]
    # Both routes: the one-agent scan of unread text, and read groups.
    for document in (
        parse(robots_txt, profile=profile),
        read_document(parse(robots_txt, profile=profile)),
    ):
        assert is_allowed(document, case["agent"], url) is case["allowed"]
        assert usage_preferences(document, case["agent"], url) == case["preferences"]
        explained = usage_explained(document, case["agent"], url)
        assert [rule.line for rule in explained.rules] == case["lines"]


@pytest.mark.parametrize(
    "vector", VECTORS["header"], ids=[v["source"][:50] for v in VECTORS["header"]]
)
def test_header_vectors(vector: dict[str, Any]) -> None:
    assert header_preferences(vector["fields"]) == vector["preferences"]
    encoded = [field.encode() for field in vector["fields"]]
    assert header_preferences(encoded) == vector["preferences"]


@pytest.mark.parametrize(
    "vector", VECTORS["combine"], ids=[v["source"][:50] for v in VECTORS["combine"]]
)
def test_combine_vectors(vector: dict[str, Any]) -> None:
    assert combine(vector["statements"]) == vector["preferences"]


@pytest.mark.parametrize(
    "vector", VECTORS["purposes"], ids=[v["source"][:50] for v in VECTORS["purposes"]]
)
def test_purpose_vectors(vector: dict[str, Any]) -> None:
    found = refused(vector["preferences"], [vector["purpose"]])
    assert (found is not None) is vector["refused"]


def test_only_the_token_counts_never_the_string() -> None:
    # http_sf's Token compares equal to the str "n", and so does a String.
    assert parse_preference('train-ai="n"') == {
        "train-ai": None,
        "ai-use": None,
        "search": None,
    }
    assert parse_preference("train-ai=n") == {
        "train-ai": False,
        "ai-use": None,
        "search": None,
    }
    assert parse_preference("train-ai=n,") is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=80), st.text(max_size=80)))
def test_any_input_parses_without_error(data: bytes | str) -> None:
    statement = parse_preference(data)
    assert statement is None or statement.keys() == set(VOCABULARY.labels)
    assert header_preferences([data]).keys() == set(VOCABULARY.labels)


def test_vocabulary_is_data() -> None:
    """A revision is a Vocabulary: vocab-03's labels and hierarchy (bots ⊃
    train-ai ⊃ train-genai), with y/n, make an unknown child take its
    parent's value, with no change of code."""
    vocab_03 = Vocabulary(
        revision="draft-ietf-aipref-vocab-03",
        labels=("bots", "train-ai", "train-genai", "search"),
        parents={"train-ai": "bots", "train-genai": "train-ai", "search": "bots"},
    )
    statement = parse_preference("bots=n, train-ai=y", vocab_03)
    assert combine([statement], vocab_03) == {
        "bots": False,
        "train-ai": True,
        "train-genai": True,
        "search": False,
    }
    assert header_preferences(["bots=n"], vocab_03)["train-genai"] is False
    # vocab-08 has none of those labels, and no hierarchy.
    assert VOCABULARY is VOCAB_08
    assert parse_preference("bots=n, train-genai=n") == dict.fromkeys(VOCAB_08.labels)


def test_governing_labels() -> None:
    assert governing("train-ai") == ("train-ai",)
    assert governing("search+train-ai+ai-use") == ("search",)
    assert governing("ai-use+train-ai") == ("ai-use", "train-ai")


def test_content_signal_mapping() -> None:
    assert purposes_from_content_signals(["ai-train"]) == ("train-ai",)
    assert purposes_from_content_signals(["ai-input", "search", "use"]) == (
        "ai-use",
        "search",
    )


def test_rules_read_with_lines_and_written_back() -> None:
    text = (
        "User-agent: *\nContent-Usage: train-ai=n\nDisallow: /x\n"
        "content-usage:/a/\t\tsearch=y, ai-use=n # note\nContent-Usage: /b/\n"
    )
    document = parse(text)
    (group,) = document.groups
    assert group.content_usage == (
        UsageRule("", "train-ai=n", 2),
        UsageRule("/a/", "search=y, ai-use=n", 4),
        UsageRule("/b/", "", 5),
    )
    written = stringify(document)
    assert "Content-Usage: /a/ search=y, ai-use=n\n" in written
    assert parse(written).without_lines() == document.without_lines()
    assert Document.from_dict(document.to_dict()) == document


# -- properties -----------------------------------------------------------------

_PATHS = st.sampled_from(["/", "/a", "/a/", "/a/b", "/*.pdf", "/b$", "/%61", "/ä"])
_PREFERENCES = st.sampled_from(
    [
        "train-ai=n",
        "train-ai=y",
        "search=n, ai-use=y",
        "ai-use=n;p=1",
        'train-ai="n"',
        "train-ai=yes",
        "train-ai=n,",
        "",
        "x=1 y=2",
    ]
)
# (path, preference) of a Content-Usage line; "" for no path.
_USAGE = st.tuples(st.one_of(st.just(""), _PATHS), _PREFERENCES)
_RULE_LINE = st.builds(
    lambda allow, path: f"{'Allow' if allow else 'Disallow'}: {path}",
    st.booleans(),
    _PATHS,
)
_AGENTS = st.sampled_from(["*", "bot", "other"])
_URLS = ["/", "/a", "/a/", "/a/b", "/a/x.pdf", "/b", "/ä", "/c"]


def _group(agents: list[str], lines: list[str]) -> str:
    return "".join(f"User-agent: {agent}\n" for agent in agents) + "".join(
        f"{line}\n" for line in lines
    )


_GROUPS = st.lists(
    st.tuples(
        st.lists(_AGENTS, min_size=1, max_size=2),
        st.lists(_RULE_LINE, max_size=4),
        st.lists(_USAGE, max_size=4),
    ),
    min_size=1,
    max_size=3,
)


Groups = list[tuple[list[str], list[str], list[tuple[str, str]]]]


def usage_line(path: str, preference: str) -> str:
    return f"Content-Usage: {path} {preference}".rstrip()


def _text(groups: Groups) -> str:
    # Content-Usage lines first: a group of them alone ends (a rule, as
    # attach's grammar has it), except in the google profile.
    return "\n".join(
        _group(agents, [*(usage_line(*u) for u in usage), *rules])
        for agents, rules, usage in groups
    )


@settings(max_examples=150, deadline=None)
@given(_GROUPS)
def test_content_usage_never_changes_crawlability(groups: Groups) -> None:
    # A group of Content-Usage lines alone is a group of its own (see
    # tests/test_usage_groups.py): here every group with some has a rule.
    groups = [
        (agents, rules, usage if rules else []) for agents, rules, usage in groups
    ]
    without = parse(_text([(agents, rules, []) for agents, rules, _ in groups]))
    # Both routes: the one-agent scan, and the groups read.
    for with_usage in (parse(_text(groups)), read_document(parse(_text(groups)))):
        for agent in ("bot", "other", "nobody"):
            for url in _URLS:
                allowed = is_allowed(without, agent, url)
                assert is_allowed(with_usage, agent, url) == allowed
                if not allowed:
                    assert usage_preferences(with_usage, agent, url) == {}


@settings(max_examples=150, deadline=None)
@given(_GROUPS, st.randoms(use_true_random=False))
def test_order_of_lines_never_matters(groups: Groups, random: Any) -> None:
    original = parse(_text(groups))
    shuffled_groups = []
    for agents, rules, usage in groups:
        lines = [*rules[1:], *(usage_line(*u) for u in usage)]
        random.shuffle(lines)
        # The first rule stays first: it is what separates the groups (a
        # group without rules joins the next one whatever the order).
        shuffled_groups.append(_group(agents, [*rules[:1], *lines]))
    shuffled = parse("\n".join(shuffled_groups))
    for agent in ("bot", "other", "nobody"):
        for url in _URLS:
            assert usage_preferences(shuffled, agent, url) == usage_preferences(
                original, agent, url
            )
            assert is_allowed(shuffled, agent, url) == is_allowed(original, agent, url)


@settings(max_examples=150, deadline=None)
@given(_GROUPS, st.sampled_from(["x-future=n", "bots=n", "train-genai=n", "a.b*c=y"]))
def test_unknown_keys_never_matter(groups: Groups, unknown: str) -> None:
    original = parse(_text(groups))
    extended = parse(
        _text(
            [
                (
                    agents,
                    rules,
                    [
                        (path, f"{preference}, {unknown}" if preference else unknown)
                        for path, preference in usage
                    ],
                )
                for agents, rules, usage in groups
            ]
        )
    )
    for agent in ("bot", "other", "nobody"):
        for url in _URLS:
            assert usage_preferences(extended, agent, url) == usage_preferences(
                original, agent, url
            )
