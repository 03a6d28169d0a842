"""Outcomes: classification, lifetimes, the 30-day rule, evaluation, JSON."""

from __future__ import annotations

import json
import pickle

import pytest

from scrapy_rfc9309.outcome import (
    FORMAT,
    Lifetimes,
    Outcome,
    explain_by,
    is_allowed_by,
    kind_of_status,
    lifetime,
    max_age,
    parsed,
    unavailable,
    unreachable,
)
from scrapy_rfc9309.parse import parse

ROBOTS = (
    "User-agent: *\n"
    "Disallow: /private\n"
    "\n"
    "User-agent: OtherBot\n"
    "Disallow: /\n"
    "Crawl-delay: 3\n"
    "\n"
    "Sitemap: http://example.com/sitemap.xml\n"
)
DOC = parse(ROBOTS)
DAY = 86_400.0
LIFETIMES = Lifetimes(cache=DAY, unreachable=600, grace=30 * DAY)
T0 = 1_700_000_000.0


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, "parsed"),
        (204, "parsed"),
        (299, "parsed"),
        (301, "unavailable"),  # a redirect left over: no Location, too many hops
        (304, "unavailable"),
        (400, "unavailable"),
        (401, "unavailable"),
        (403, "unavailable"),
        (404, "unavailable"),
        (410, "unavailable"),
        (451, "unavailable"),
        (429, "unreachable"),
        (500, "unreachable"),
        (503, "unreachable"),
        (599, "unreachable"),
        (100, "unreachable"),
        (600, "unreachable"),
        (999, "unreachable"),
    ],
)
def test_kind_of_status(status: int, kind: str) -> None:
    assert kind_of_status(status) == kind


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("public", None),
        ("max-age=3600", 3600.0),
        ("public, max-age=120", 120.0),
        ("Max-Age = 60", 60.0),
        ('max-age="90"', 90.0),
        ("max-age=abc", None),
        ("max-age=-5", 0.0),
        ("no-cache", 0.0),
        ("no-store, max-age=600", 0.0),
        ("max-age=900, max-age=300", 300.0),
        # Untrusted numbers: capped as RFC 9111 1.2.2 says, never an error.
        ("max-age=" + "9" * 400, 2.0**31),
        ("max-age=" + "9" * 5000, 2.0**31),
        ("max-age=2147483649", 2.0**31),
        ("max-age=" + "0" * 30 + "42", 42.0),
        ("max-age=1_000", None),
        ("max-age=\u0663", None),  # an Arabic-Indic digit
        ("max-age=1e9", None),
        ("max-age=inf", None),
    ],
)
def test_max_age(header: str | None, expected: float | None) -> None:
    assert max_age(header) == expected


@pytest.mark.parametrize(
    ("cache_max_age", "expected"),
    [
        (None, DAY),  # no header: the setting
        (3600.0, 3600.0),  # shorter wins
        (2 * DAY, DAY),  # never longer than the setting
        (60.0, 600.0),  # never under 10 minutes
        (0.0, 600.0),  # no-cache too
    ],
)
def test_lifetime(cache_max_age: float | None, expected: float) -> None:
    assert lifetime(LIFETIMES, cache_max_age) == expected


def test_lifetime_setting_below_the_floor_is_kept() -> None:
    # The 10-minute floor is for Cache-Control; a shorter configured
    # lifetime (tests, aggressive refresh) stays what it is.
    short = Lifetimes(cache=5, unreachable=1, grace=10)
    assert lifetime(short, None) == 5
    assert lifetime(short, 1.0) == 5


def test_parsed_outcome_times() -> None:
    outcome = parsed(DOC, now=T0, lifetimes=LIFETIMES, cache_max_age=3600)
    assert outcome.kind == "parsed"
    assert outcome.http_status == 200
    assert outcome.fetched_at == T0
    assert outcome.expires_at == T0 + 3600
    # Kept past expiry for the 30-day rule.
    assert outcome.retain_until == T0 + 3600 + 30 * DAY
    assert outcome.rules is DOC
    assert outcome.detail == "HTTP 200"


def test_unavailable_outcome_times() -> None:
    outcome = unavailable(now=T0, lifetimes=LIFETIMES, http_status=404)
    assert outcome.kind == "unavailable"
    assert outcome.expires_at == T0 + DAY
    assert outcome.retain_until == outcome.expires_at
    assert outcome.rules is None
    assert outcome.detail == "HTTP 404"


def test_unreachable_outcome_times() -> None:
    outcome = unreachable(now=T0, lifetimes=LIFETIMES, http_status=503)
    assert outcome.kind == "unreachable"
    assert outcome.expires_at == T0 + 600
    assert outcome.unreachable_since == T0
    assert outcome.grace_ends_at == T0 + 30 * DAY
    assert outcome.fallback is None
    assert outcome.disallows_all(T0 + 1)


def test_run_of_failures_keeps_its_start_and_the_last_parsed_document() -> None:
    good = parsed(DOC, now=T0, lifetimes=LIFETIMES)
    first = unreachable(now=T0 + DAY, lifetimes=LIFETIMES, previous=good)
    assert first.unreachable_since == T0 + DAY
    assert first.fallback is DOC
    later = unreachable(now=T0 + 10 * DAY, lifetimes=LIFETIMES, previous=first)
    assert later.unreachable_since == T0 + DAY
    assert later.grace_ends_at == T0 + 31 * DAY
    assert later.fallback is DOC


def test_unavailable_ends_what_there_is_to_fall_back_to() -> None:
    good = parsed(DOC, now=T0, lifetimes=LIFETIMES)
    gone = unavailable(now=T0 + DAY, lifetimes=LIFETIMES, http_status=404)
    failed = unreachable(now=T0 + 2 * DAY, lifetimes=LIFETIMES, previous=gone)
    assert failed.fallback is None
    assert unreachable(now=T0 + DAY, lifetimes=LIFETIMES, previous=good).fallback is DOC


def test_a_previous_outcome_past_its_retention_is_forgotten() -> None:
    good = parsed(DOC, now=T0, lifetimes=LIFETIMES)
    much_later = good.retain_until + 1
    failed = unreachable(now=much_later, lifetimes=LIFETIMES, previous=good)
    assert failed.fallback is None
    assert failed.unreachable_since == much_later


URL = "http://example.com/private/page"


def test_explain_by_parsed() -> None:
    outcome = parsed(DOC, now=T0, lifetimes=LIFETIMES)
    decision = explain_by(outcome, "TestBot/1.0", URL, now=T0)
    assert not decision.allowed
    assert decision.reason == "rule_disallow"
    assert decision.rule is not None
    assert decision.rule.line == 2
    assert explain_by(outcome, "TestBot", "/public", now=T0).reason == "default_allow"
    # The agent's product token picks its group.
    assert not is_allowed_by(outcome, "OtherBot/2.0", "/public", now=T0)


def test_explain_by_unavailable() -> None:
    outcome = unavailable(now=T0, lifetimes=LIFETIMES, http_status=404)
    decision = explain_by(outcome, "TestBot", URL, now=T0)
    assert decision == (True, "unavailable", None)


def test_explain_by_unreachable_within_grace() -> None:
    outcome = unreachable(now=T0, lifetimes=LIFETIMES, http_status=500)
    assert explain_by(outcome, "TestBot", "/public", now=T0) == (
        False,
        "unreachable",
        None,
    )
    # robots.txt itself stays allowed.
    robots = explain_by(outcome, "TestBot", "http://example.com/robots.txt", now=T0)
    assert robots.allowed
    assert robots.reason == "robots_txt"


def test_thirty_day_rule_falls_back_to_the_last_parsed_robots_txt() -> None:
    good = parsed(DOC, now=T0, lifetimes=LIFETIMES)
    failed = unreachable(now=T0 + DAY, lifetimes=LIFETIMES, previous=good)
    within = T0 + DAY + 30 * DAY - 1
    past = T0 + DAY + 30 * DAY
    assert not is_allowed_by(failed, "TestBot", "/public", now=within)
    assert is_allowed_by(failed, "TestBot", "/public", now=past)
    decision = explain_by(failed, "TestBot", URL, now=past)
    assert decision.reason == "rule_disallow"
    assert not failed.disallows_all(past)


def test_thirty_day_rule_without_a_parsed_copy_means_unavailable() -> None:
    failed = unreachable(now=T0, lifetimes=LIFETIMES, http_status=503)
    decision = explain_by(failed, "TestBot", URL, now=T0 + 30 * DAY)
    assert decision == (True, "unavailable", None)


def test_explain_by_defaults_to_the_current_time() -> None:
    failed = unreachable(now=T0, lifetimes=LIFETIMES)
    # T0 is in 2023: its 30 days are long over.
    assert is_allowed_by(failed, "TestBot", URL)


def _round_trip(outcome: Outcome) -> Outcome:
    return Outcome.from_dict(json.loads(json.dumps(outcome.to_dict())))


@pytest.mark.parametrize(
    "outcome",
    [
        parsed(DOC, now=T0, lifetimes=LIFETIMES, cache_max_age=900),
        unavailable(now=T0, lifetimes=LIFETIMES, http_status=404),
        unavailable(now=T0, lifetimes=LIFETIMES, detail="more than 5 redirects"),
        unreachable(now=T0, lifetimes=LIFETIMES, detail="DownloadTimeoutError"),
        unreachable(
            now=T0 + DAY,
            lifetimes=LIFETIMES,
            previous=parsed(DOC, now=T0, lifetimes=LIFETIMES),
            http_status=503,
        ),
    ],
    ids=["parsed", "unavailable", "redirects", "unreachable", "with-fallback"],
)
def test_json_round_trip(outcome: Outcome) -> None:
    again = _round_trip(outcome)
    assert again == outcome
    # Line numbers survive, so decisions still name the deciding line.
    assert explain_by(again, "TestBot", URL, now=T0) == explain_by(
        outcome, "TestBot", URL, now=T0
    )
    assert pickle.loads(pickle.dumps(outcome)) == outcome


def test_to_dict_is_versioned() -> None:
    data = parsed(DOC, now=T0, lifetimes=LIFETIMES).to_dict()
    assert data["format"] == FORMAT == 1
    assert data["document"]["groups"][0]["rules"][0][2] == 2


def test_from_dict_ignores_keys_it_does_not_know() -> None:
    outcome = unavailable(now=T0, lifetimes=LIFETIMES, http_status=410)
    data = {**outcome.to_dict(), "added_later": {"anything": 1}}
    assert Outcome.from_dict(data) == outcome


@pytest.mark.parametrize(
    "data",
    [
        {"format": 2, "kind": "parsed"},
        {"kind": "parsed"},
        {
            "format": 1,
            "kind": "maybe",
            "fetched_at": 0,
            "expires_at": 0,
            "retain_until": 0,
        },
        {
            "format": 1,
            "kind": "parsed",
            "fetched_at": 0,
            "expires_at": 0,
            "retain_until": 0,
        },
        {"format": 1, "kind": "unavailable", "fetched_at": "soon", "expires_at": 0},
    ],
    ids=[
        "newer-format",
        "no-format",
        "unknown-kind",
        "parsed-without-document",
        "bad-time",
    ],
)
def test_from_dict_refuses_what_it_cannot_read(data: dict[str, object]) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        Outcome.from_dict(data)


def test_from_dict_refuses_non_objects() -> None:
    with pytest.raises(TypeError):
        Outcome.from_dict(["parsed"])


def test_slimmed_keeps_what_answers_for_the_agent() -> None:
    failed = unreachable(
        now=T0 + DAY,
        lifetimes=LIFETIMES,
        previous=parsed(DOC, now=T0, lifetimes=LIFETIMES),
    )
    for outcome in (parsed(DOC, now=T0, lifetimes=LIFETIMES), failed):
        slim = outcome.slimmed("TestBot/1.0")
        rules = slim.rules
        assert rules is not None
        assert len(rules.groups) == 1
        assert rules.sitemaps == ("http://example.com/sitemap.xml",)
        for url in (URL, "/public", "/robots.txt"):
            now = T0 + 40 * DAY
            assert explain_by(slim, "TestBot", url, now=now) == explain_by(
                outcome, "TestBot", url, now=now
            )


def test_a_guard_refusal_never_wears_off_and_round_trips() -> None:
    lifetimes = Lifetimes(grace=0)
    refused = unreachable(
        now=1000.0, lifetimes=lifetimes, detail="refused", guard_refused=True
    )
    plain = unreachable(now=1000.0, lifetimes=lifetimes, detail="HTTP 503")
    assert refused.disallows_all(10.0**10)
    assert not plain.disallows_all(1000.0)
    back = Outcome.from_dict(json.loads(json.dumps(refused.to_dict())))
    assert back.guard_refused
    assert "guard_refused" not in plain.to_dict()
    assert not is_allowed_by(back, "bot", "http://h/page", now=10.0**10)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("expires_at", float("inf")),
        ("expires_at", float("nan")),
        ("fetched_at", "1000"),
        ("retain_until", 1e12),
        ("expires_at", 10.0**9),  # past retain_until
        ("http_status", -5),
        ("http_status", 200.5),
        ("guard_refused", 1),
    ],
)
def test_from_dict_refuses_values_no_outcome_holds(key: str, value: object) -> None:
    data = parsed(
        parse("User-agent: *\nDisallow: /x\n"), now=1000.0, lifetimes=Lifetimes()
    ).to_dict()
    data[key] = value
    with pytest.raises((TypeError, ValueError)):
        Outcome.from_dict(data)


SHA = "0123456789abcdef" * 4


def test_body_hashes_round_trip_and_older_entries_read() -> None:
    fetched = parsed(DOC, now=T0, lifetimes=LIFETIMES, body_sha256=SHA)
    failed = unreachable(now=T0 + DAY, lifetimes=LIFETIMES, previous=fetched)
    # The rules an unreachable origin falls back to keep their file's hash,
    # along a run of failures too.
    assert failed.fallback_sha256 == SHA
    again = unreachable(now=T0 + 2 * DAY, lifetimes=LIFETIMES, previous=failed)
    assert again.fallback_sha256 == SHA
    for outcome in (fetched, failed, again):
        assert _round_trip(outcome) == outcome
    assert _round_trip(fetched).body_sha256 == SHA
    # Written by an earlier version: no hash, read as unknown.
    older = fetched.to_dict()
    del older["body_sha256"]
    assert Outcome.from_dict(older).body_sha256 is None
    assert "body_sha256" not in parsed(DOC, now=T0, lifetimes=LIFETIMES).to_dict()


def test_a_guard_refusal_falls_back_to_no_hash() -> None:
    fetched = parsed(DOC, now=T0, lifetimes=LIFETIMES, body_sha256=SHA)
    refused = unreachable(
        now=T0, lifetimes=LIFETIMES, previous=fetched, guard_refused=True
    )
    assert refused.fallback is None
    assert refused.fallback_sha256 is None


@pytest.mark.parametrize(
    "value", ["AB" * 32, "ab" * 31, "zz" * 32, 42, ["ab" * 32]], ids=repr
)
def test_from_dict_refuses_a_hash_no_outcome_holds(value: object) -> None:
    data = parsed(DOC, now=T0, lifetimes=LIFETIMES, body_sha256=SHA).to_dict()
    data["body_sha256"] = value
    with pytest.raises(ValueError, match="SHA-256"):
        Outcome.from_dict(data)
