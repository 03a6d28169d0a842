"""``outcome.classify``: the HTTP result -> outcome policy, without a crawl.

The crawl tests (test_middleware_outcomes.py) check the same answers end to
end through Scrapy; here each row of RFC 9309 section 2.3.1 and of each
profile's status policy is one table entry.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from scrapy_rfc9309.outcome import (
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    Answer,
    Lifetimes,
    Outcome,
    classify,
)
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.profiles import RULES

BODY = b"User-agent: *\nDisallow: /private\n"
LIFETIMES = Lifetimes(cache=1000, unreachable=100, grace=10_000, minimum=10)


def _classify(
    answer: Answer | str,
    profile: str = "rfc9309",
    previous: Outcome | None = None,
    max_bytes: int = 512_000,
) -> Outcome:
    return classify(
        answer,
        profile=profile,
        max_bytes=max_bytes,
        now=5000.0,
        lifetimes=LIFETIMES,
        previous=previous,
    )


STATUS_TABLE = [
    # status, rfc9309 / google / bing, yandex
    (200, PARSED, PARSED),
    (204, PARSED, UNAVAILABLE),
    (299, PARSED, UNAVAILABLE),
    (300, UNAVAILABLE, UNAVAILABLE),
    (304, UNAVAILABLE, UNAVAILABLE),
    (400, UNAVAILABLE, UNAVAILABLE),
    (401, UNAVAILABLE, UNAVAILABLE),
    (403, UNAVAILABLE, UNAVAILABLE),
    (404, UNAVAILABLE, UNAVAILABLE),
    (410, UNAVAILABLE, UNAVAILABLE),
    (429, UNREACHABLE, UNAVAILABLE),
    (500, UNREACHABLE, UNAVAILABLE),
    (503, UNREACHABLE, UNAVAILABLE),
    (599, UNREACHABLE, UNAVAILABLE),
    (100, UNREACHABLE, UNAVAILABLE),
    (600, UNREACHABLE, UNAVAILABLE),
]


@pytest.mark.parametrize(("status", "rfc", "yandex"), STATUS_TABLE)
@pytest.mark.parametrize("profile", ["rfc9309", "google", "bing", "yandex"])
def test_each_status_gives_its_profiles_outcome(
    status: int, rfc: str, yandex: str, profile: str
) -> None:
    outcome = _classify(Answer(status, BODY), profile)
    assert outcome.kind == (yandex if profile == "yandex" else rfc)
    assert outcome.http_status == status
    assert outcome.detail == f"HTTP {status}"
    if outcome.kind == PARSED:
        assert outcome.document == parse(BODY, profile=profile)
        assert outcome.body_sha256 == hashlib.sha256(BODY).hexdigest()
        assert outcome.expires_at == 5000 + LIFETIMES.cache
    elif outcome.kind == UNAVAILABLE:
        assert outcome.document is None
        assert outcome.expires_at == 5000 + LIFETIMES.cache
    else:
        assert outcome.expires_at == 5000 + LIFETIMES.unreachable


@pytest.mark.parametrize("profile", ["rfc9309", "google", "bing", "yandex"])
def test_no_answer_is_unreachable(profile: str) -> None:
    outcome = _classify("TCP connection timed out", profile)
    assert (outcome.kind, outcome.http_status, outcome.detail) == (
        UNREACHABLE,
        None,
        "TCP connection timed out",
    )


@pytest.mark.parametrize("status", [200, 404, 503])
def test_a_truncated_body_is_no_answer_whatever_its_status(status: int) -> None:
    outcome = _classify(Answer(status, BODY[:10], truncated=True))
    assert (outcome.kind, outcome.http_status, outcome.detail) == (
        UNREACHABLE,
        status,
        "truncated body",
    )


def test_a_profile_may_read_no_answer_as_no_robots_txt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hook the status policy offers ("network"); no built-in profile
    # uses it today.
    rules = RULES["rfc9309"]
    status = {**rules.status, "network": UNAVAILABLE}
    monkeypatch.setitem(RULES, "rfc9309", replace(rules, status=status))
    assert _classify("DNS lookup failed").kind == UNAVAILABLE
    assert _classify(Answer(200, BODY, truncated=True)).kind == UNAVAILABLE


def test_an_undecodable_2xx_is_unreachable_and_a_4xx_ignores_its_body() -> None:
    broken = _classify(Answer(200, b"", error="not gzip data"))
    assert (broken.kind, broken.detail) == (UNREACHABLE, "not gzip data")
    assert _classify(Answer(404, b"", error="not gzip data")).kind == UNAVAILABLE
    assert _classify(Answer(503, b"", error="not gzip data")).detail == "HTTP 503"


def test_the_last_parsed_robots_txt_is_carried_for_the_30_day_rule() -> None:
    first = _classify(Answer(200, BODY))
    failed = _classify(Answer(503), previous=first)
    assert failed.kind == UNREACHABLE
    assert failed.fallback == first.document
    assert failed.fallback_sha256 == first.body_sha256
    assert failed.grace_ends_at == 5000 + LIFETIMES.grace
    # "No robots.txt" is an answer: nothing to fall back to after it.
    gone = _classify(Answer(404), previous=first)
    assert _classify("reset", previous=gone).fallback is None


def test_cache_control_shortens_but_never_lengthens_the_lifetime() -> None:
    short = _classify(Answer(200, BODY, cache_control="max-age=60"))
    assert short.expires_at == 5000 + 60
    floor = _classify(Answer(404, cache_control="no-store"))
    assert floor.expires_at == 5000 + LIFETIMES.minimum
    long = _classify(Answer(200, BODY, cache_control="max-age=999999"))
    assert long.expires_at == 5000 + LIFETIMES.cache


def test_a_cut_body_is_parsed_up_to_the_limit_and_says_so() -> None:
    body = BODY + b"Disallow: /past-the-limit\n"
    outcome = _classify(Answer(200, body, cut=True), max_bytes=len(BODY))
    assert outcome.kind == PARSED
    assert outcome.detail == f"HTTP 200, cut at {len(BODY)} bytes"
    assert outcome.document == parse(BODY)
    assert outcome.body_sha256 == hashlib.sha256(BODY).hexdigest()
    stacked = _classify(
        Answer(200, BODY, cut=True, overrun="more than 256 gzip members")
    )
    assert (
        stacked.detail == "HTTP 200, cut at 512000 bytes (more than 256 gzip members)"
    )


def test_yandex_reads_a_body_over_its_limit_as_no_robots_txt() -> None:
    over = _classify(Answer(200, b"#" * 512_001), "yandex", max_bytes=10**6)
    assert (over.kind, over.detail) == (
        UNAVAILABLE,
        "HTTP 200, body over 512000 bytes",
    )
    assert _classify(Answer(200, BODY, cut=True), "yandex").kind == UNAVAILABLE
    assert _classify(Answer(200, b"#" * 512_001), "google").kind == PARSED
