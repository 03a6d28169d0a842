"""AI usage preferences: IETF aipref ``Content-Usage`` beside Cloudflare's
``Content-Signal``.

``Content-Usage`` comes as robots.txt rules (draft-ietf-aipref-attach-05
section 3: ``Content-Usage: [path] preference``, read into
:class:`~scrapy_rfc9309.parse.UsageRule`) and as an HTTP response header
(attach-05 section 2); both carry an RFC 9651 Dictionary in the vocabulary
of draft-ietf-aipref-vocab-08 (``train-ai=n, search=y``).

The vocabulary has changed at almost every revision, so everything it says
(labels, which label overrides which, which takes its parent's value while
unknown, and how Content-Signal purposes relate to it) is the data of one
:class:`Vocabulary`: a new revision is a new instance of it.

Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import http_sf

from ._bytes import encode
from ._caches import BoundedCache
from ._checks import DOCUMENT, expect
from .match import Matcher, compile
from .parse import Document, Profile, UsageRule
from .profiles import RULES
from .urls import normal_pattern

__all__ = [
    "VOCABULARY",
    "VOCAB_08",
    "Preferences",
    "UsageExplanation",
    "Vocabulary",
    "combine",
    "deciding_rules",
    "governing",
    "header_preferences",
    "matched_usage",
    "parse_preference",
    "preference_problems",
    "purposes_from_content_signals",
    "refused",
    "usage_explained",
    "usage_preferences",
]

#: A category -> allowed (``True``), disallowed (``False``) or unknown
#: (``None``).
Preferences = dict[str, bool | None]


@dataclass(frozen=True)
class Vocabulary:
    """What one revision of draft-ietf-aipref-vocab says, as data."""

    #: The draft revision this describes.
    revision: str
    #: The labels (categories), in the draft's order.
    labels: tuple[str, ...]
    #: A label -> the labels it overrides: for a use that falls in both, its
    #: preference alone decides (vocab-08 section 4.3: ``search`` over
    #: ``train-ai`` and ``ai-use``).
    overrides: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: A label -> the label whose value it takes while its own is unknown
    #: (the hierarchies of vocab-00 to -06; none since -07).
    parents: Mapping[str, str] = field(default_factory=dict)
    #: A label -> the Content-Signal key of the nearest purpose.  No draft
    #: states this mapping: it is our reading (see docs/content-signal.md).
    content_signal: Mapping[str, str] = field(default_factory=dict)
    #: The tokens that allow and disallow.
    allow: str = "y"
    disallow: str = "n"


#: draft-ietf-aipref-vocab-08 (14 Sep 2026): three flat categories, and
#: ``search`` governs a use that also falls in the others.
VOCAB_08 = Vocabulary(
    revision="draft-ietf-aipref-vocab-08",
    labels=("train-ai", "ai-use", "search"),
    overrides={"search": ("train-ai", "ai-use")},
    content_signal={"train-ai": "ai-train", "ai-use": "ai-input", "search": "search"},
)
#: The revision this package follows.
VOCABULARY = VOCAB_08


class UsageExplanation(NamedTuple):
    """The preferences for a URL and the Content-Usage rules that gave them
    (those of the longest matching path; none when robots.txt disallows the
    URL, which then has no preferences, or when no rule matches)."""

    preferences: Preferences
    rules: tuple[UsageRule, ...]


def parse_preference(
    text: str | bytes, vocabulary: Vocabulary = VOCABULARY
) -> Preferences | None:
    """One statement (a robots.txt preference, or a header's value) as
    preferences for every label of ``vocabulary``; ``None`` when it is no
    RFC 9651 Dictionary (every preference is then unknown, vocab-08
    section 6.5.1).

    Only the Tokens ``y`` and ``n`` count, parameters ignored: the String
    ``"n"``, a Boolean, ``yes`` or an inner list is unknown.  The last of
    repeated keys wins (RFC 9651); other keys are ignored.
    """
    data = encode(text) if isinstance(text, str) else text
    try:
        parsed = http_sf.parse(data, tltype="dictionary")
    except ValueError:
        return None
    assert isinstance(parsed, dict)
    preferences: Preferences = {}
    for label in vocabulary.labels:
        member = parsed.get(label)
        value = member[0] if isinstance(member, tuple) else None
        # http_sf's Token compares equal to the str "n", and so does a
        # String: only a Token counts.
        if isinstance(value, http_sf.Token):
            token = str(value)
            preferences[label] = (
                True
                if token == vocabulary.allow
                else False
                if token == vocabulary.disallow
                else None
            )
        else:
            preferences[label] = None
    return preferences


def combine(
    statements: Iterable[Mapping[str, bool | None] | None],
    vocabulary: Vocabulary = VOCABULARY,
) -> Preferences:
    """Statements for one asset (robots.txt rules, header fields) as one, per
    label: any disallow wins, else any allow, else unknown (vocab-08 section
    5.1); then an unknown label takes its parent's value, if the vocabulary
    has parents.  ``None`` (an invalid statement) says nothing."""
    combined: Preferences = dict.fromkeys(vocabulary.labels)
    for statement in statements:
        if statement is None:
            continue
        for label in vocabulary.labels:
            value = statement.get(label)
            if value is False or (value is True and combined[label] is None):
                combined[label] = value
    for label in vocabulary.labels:
        parent = vocabulary.parents.get(label)
        seen = {label}
        while combined[label] is None and parent is not None and parent not in seen:
            combined[label] = combined.get(parent)
            seen.add(parent)
            parent = vocabulary.parents.get(parent)
    return combined


def header_preferences(
    values: Sequence[str | bytes], vocabulary: Vocabulary = VOCABULARY
) -> Preferences:
    """The preferences of a message's ``Content-Usage`` field lines (joined
    with commas first, as RFC 9651 section 4.2 says)."""
    if not values:
        return dict.fromkeys(vocabulary.labels)
    joined = b", ".join(
        encode(value) if isinstance(value, str) else value for value in values
    )
    return combine([parse_preference(joined, vocabulary)], vocabulary)


def governing(purpose: str, vocabulary: Vocabulary = VOCABULARY) -> tuple[str, ...]:
    """The labels whose preferences decide a use declared as ``purpose``:
    one label, or several joined by ``+`` for one use that falls in each
    (``search+train-ai``: a search engine training its ranking model), less
    those another of them overrides."""
    labels = [label for label in purpose.split("+") if label]
    overridden = {
        other
        for label in labels
        for other in vocabulary.overrides.get(label, ())
        if other != label
    }
    return tuple(label for label in labels if label not in overridden)


def refused(
    preferences: Mapping[str, bool | None],
    purposes: Iterable[str],
    vocabulary: Vocabulary = VOCABULARY,
) -> str | None:
    """The first of ``purposes`` whose governing label ``preferences``
    disallow, or ``None``: unknown is left to the crawl (it proceeds)."""
    for purpose in purposes:
        if any(
            preferences.get(label) is False for label in governing(purpose, vocabulary)
        ):
            return purpose
    return None


def purposes_from_content_signals(
    in_use: Iterable[str], vocabulary: Vocabulary = VOCABULARY
) -> tuple[str, ...]:
    """The labels of the Content-Signal purposes a crawl has in use
    (``["ai-train"]`` -> ``("train-ai",)``), through the vocabulary's
    mapping; keys it does not map name no label."""
    by_signal = {signal: label for label, signal in vocabulary.content_signal.items()}
    return tuple(by_signal[key] for key in in_use if key in by_signal)


def _path_matcher(profile: Profile, path: str) -> Matcher:
    """A matcher of the one pattern ``path`` (as a Disallow rule on line
    1: a URL matches where it decides)."""
    return Matcher.from_rules(profile, [path], [1 << 1])


def _length(profile: Profile, path: str) -> int:
    """A path's match length: octets of the percent-encoded pattern, as
    for Allow/Disallow (attach-05 section 3.1); 0 for no path."""
    if not path:
        return 0
    # Normalised as the matcher normalises Allow/Disallow patterns (cached).
    return len(encode(normal_pattern(path, RULES[profile].percent)))


def deciding_rules(
    rules: Sequence[UsageRule], profile: Profile, url: str
) -> tuple[UsageRule, ...]:
    """Those of ``rules`` whose path is the longest that matches ``url``
    (a rule without a path matches every URL, with length 0).

    The plain walk, matching every path: a crawl asks a matcher's compiled
    table instead (:class:`~scrapy_rfc9309._usage_table.UsageTable`), which
    gives the same answers."""
    best = -1
    chosen: list[UsageRule] = []
    for rule in rules:
        path = rule.path
        if path and _path_matcher(profile, path).is_allowed(url):
            continue
        length = _length(profile, path)
        if length > best:
            best, chosen = length, [rule]
        elif length == best:
            chosen.append(rule)
    return tuple(chosen)


def usage_explained(
    document: Document,
    user_agent: str,
    url: str,
    vocabulary: Vocabulary = VOCABULARY,
) -> UsageExplanation:
    """The preferences of ``document`` for ``user_agent`` and ``url``, and
    the rules (with their lines) that gave them."""
    try:
        matcher = document._matchers.get(user_agent) or compile(document, user_agent)
    except AttributeError:
        expect(document, Document, "document", DOCUMENT)
        raise
    if not matcher.is_allowed(url):
        # Usage preferences apply only to what may be crawled (attach-05
        # section 3.1).
        return UsageExplanation({}, ())
    return matched_usage(matcher, url, vocabulary)


def matched_usage(
    matcher: Matcher, url: str, vocabulary: Vocabulary = VOCABULARY
) -> UsageExplanation:
    """The preferences of ``matcher``'s Content-Usage rules for ``url``,
    which its rules allow (the caller has checked), and the deciding rules."""
    # The rules compiled once per matcher (per origin), kept with it.
    chosen = matcher.usage_table().deciding(url) if matcher.content_usage else ()
    preferences = combine(
        (_statement(rule.preference, vocabulary) for rule in chosen), vocabulary
    )
    return UsageExplanation(preferences, chosen)


# Preferences as written -> as parsed, per vocabulary: a crawl asks about
# the same few lines for every URL of an origin.  Bounded in bytes: the
# lines come from the sites.
_STATEMENTS: dict[str, BoundedCache[str, Preferences | None]] = {}
# What a statement's preferences take (a dict of a few labels).
_PREFERENCES_BYTES = 400


def _statement(text: str, vocabulary: Vocabulary) -> Preferences | None:
    cache = _STATEMENTS.get(vocabulary.revision)
    if cache is None:
        if len(_STATEMENTS) >= 4:
            return parse_preference(text, vocabulary)
        cache = _STATEMENTS[vocabulary.revision] = BoundedCache(
            f"usage.statements.{len(_STATEMENTS)}", 256 << 10, 512
        )
    if text in cache.data:
        return cache.data[text]
    statement = parse_preference(text, vocabulary)
    if not cache.full:
        cache.put(text, statement, sys.getsizeof(text) + _PREFERENCES_BYTES)
    return statement


def usage_preferences(
    document: Document, user_agent: str, url: str
) -> dict[str, bool | None]:
    """The usage preferences of ``document`` for ``user_agent`` at ``url``:
    each category allowed (``True``), disallowed (``False``) or unknown
    (``None``); empty when robots.txt disallows the URL."""
    return usage_explained(document, user_agent, url).preferences


def preference_problems(
    rule: UsageRule, vocabulary: Vocabulary = VOCABULARY
) -> list[tuple[str, str]]:
    """What is wrong with a Content-Usage rule, as ``(code, message)``
    pairs for :func:`~scrapy_rfc9309.lint.lint`.  Unknown keys are fine."""
    text = rule.preference
    if not text:
        return [
            (
                "invalid-content-usage",
                f"{rule.path!r} is followed by no preference; the line says nothing",
            )
        ]
    parsed = parse_preference(text, vocabulary)
    if parsed is None:
        # A path runs to the first SP or HTAB (aipref-attach).
        first, _, rest = text.replace("\t", " ").partition(" ")
        if "=" not in first and rest and parse_preference(rest.strip(), vocabulary):
            return [
                (
                    "content-usage-not-rooted",
                    f"the path {first!r} does not start with '/', so the whole "
                    "value is read as the preference, which is invalid: every "
                    "preference of the line is unknown",
                )
            ]
        return [
            (
                "invalid-content-usage",
                f"{text!r} is not an RFC 9651 Dictionary: every preference of "
                "the line is unknown",
            )
        ]
    problems = []
    dictionary = http_sf.parse(encode(text), tltype="dictionary")
    assert isinstance(dictionary, dict)
    for key, member in dictionary.items():
        value = member[0] if isinstance(member, tuple) else member
        if key in vocabulary.labels and parsed[key] is None:
            shown = http_sf.ser(value) if not isinstance(value, list) else "(...)"
            problems.append(
                (
                    "content-usage-value",
                    f"{key}={shown} is neither the token "
                    f"{vocabulary.allow} nor {vocabulary.disallow}: read as unknown",
                )
            )
    return problems
