"""The engine against the conformance vectors (tests/data/conformance).

Every vector is one test id: ``<name>@<source line>`` for Google's unit test
checks, the vector's own name otherwise.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from scrapy_rfc9309.match import explain
from scrapy_rfc9309.parse import parse, product_token
from tests.conftest import load_vectors

GOOGLE_ROBOTS = load_vectors("google_robots_test.json")
GOOGLE_SPEC = load_vectors("google_spec_test.json")
GOOGLE_USER_AGENTS = load_vectors("google_user_agent_test.json")
RFC_EXAMPLES = load_vectors("rfc9309_examples.json")

# Outside the contract, in both profiles: the crawler string is not a valid
# product token.  Google compares such a string whole, so it matches no
# group; this package matches the product token of the agent it is given
# (SPEC.md section 1, is_allowed), so "Foo Bar" is "foo", "AB42bot" is "ab"
# and "XYZ123bot" is "xyz".
NOT_A_PRODUCT_TOKEN = {
    "GoogleOnly_AcceptUserAgentUpToFirstSpace@247": "crawler 'Foo Bar' is not a token",
    "correctness/user-agent-name.textproto#2": "crawler 'Foo Bar' is not a token",
    "stress/369883.textproto#7": "crawler 'AB42bot' is not a token",
    "stress/369883.textproto#8": "crawler 'AB42bot' is not a token",
    "stress/860237.textproto#9": "crawler 'XYZ123bot' is not a token",
}

# Google-specific expectations that RFC 9309 overrules in the rfc9309
# profile, with the requirement that does.
RFC_REQUIRES_OTHERWISE = {
    "ID_Encoding@419": (
        "2.2.2: non-ASCII octets in the URI are percent-encoded before "
        "comparison, so a raw 'ツ' matches the rule's %E3%83%84"
    ),
    "ID_Encoding@430": (
        "2.2.2: non-ASCII octets in the URI are percent-encoded before "
        "comparison, so a raw 'ツ' matches %E3%83%84"
    ),
    "ID_Encoding@441": (
        "2.2.2: percent-encoded unreserved octets are decoded, so the rule "
        "/foo/bar/%62%61%7A is /foo/bar/baz"
    ),
    "correctness/non-ascii-paths.textproto#3": (
        "2.2.2: non-ASCII octets in the URI are percent-encoded before comparison"
    ),
    "correctness/non-ascii-paths.textproto#5": (
        "2.2.2: non-ASCII octets in the URI are percent-encoded before comparison"
    ),
    "correctness/non-ascii-paths.textproto#6": (
        "2.2.2: percent-encoded unreserved octets are decoded before comparison"
    ),
    "stress/327748.textproto#6": "2.2.2: the /robots.txt URI is implicitly allowed",
    "stress/369883.textproto#6": "2.2.2: the /robots.txt URI is implicitly allowed",
    "stress/369883.textproto#10": "2.2.2: the /robots.txt URI is implicitly allowed",
    "stress/860237.textproto#10": "2.2.2: the /robots.txt URI is implicitly allowed",
}


def vector_id(vector: dict[str, Any]) -> str:
    if "source_line" in vector:
        return f"{vector['name']}@{vector['source_line']}"
    return str(vector["name"])


def body(vector: dict[str, Any]) -> str | bytes:
    if "robots_txt_b64" in vector:
        return base64.b64decode(vector["robots_txt_b64"])
    return str(vector["robots_txt"])


def cases(
    vectors: list[dict[str, Any]],
    *,
    rfc: bool,
    expected: str = "allowed",
) -> list[Any]:
    params = []
    for vector in vectors:
        name = vector_id(vector)
        if name in NOT_A_PRODUCT_TOKEN:
            continue
        allowed = vector[expected]
        if rfc and name in RFC_REQUIRES_OTHERWISE:
            allowed = not allowed
        params.append(pytest.param(vector, allowed, id=name))
    return params


def check(vector: dict[str, Any], profile: str, allowed: bool) -> None:
    document = parse(body(vector), profile=profile)
    decision = explain(document, vector["user_agent"], vector["url"])
    assert decision.allowed is allowed, decision


@pytest.mark.parametrize(("vector", "allowed"), cases(GOOGLE_ROBOTS, rfc=False))
def test_google_robots_google_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "google", allowed)


@pytest.mark.parametrize(("vector", "allowed"), cases(GOOGLE_ROBOTS, rfc=True))
def test_google_robots_rfc9309_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "rfc9309", allowed)


@pytest.mark.parametrize(("vector", "allowed"), cases(GOOGLE_SPEC, rfc=False))
def test_google_spec_google_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "google", allowed)


@pytest.mark.parametrize(("vector", "allowed"), cases(GOOGLE_SPEC, rfc=True))
def test_google_spec_rfc9309_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "rfc9309", allowed)


@pytest.mark.parametrize(("vector", "allowed"), cases(RFC_EXAMPLES, rfc=False))
def test_rfc_examples_rfc9309_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "rfc9309", allowed)


@pytest.mark.parametrize(
    ("vector", "allowed"), cases(RFC_EXAMPLES, rfc=False, expected="google_allowed")
)
def test_rfc_examples_google_profile(vector: dict[str, Any], allowed: bool) -> None:
    check(vector, "google", allowed)


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=vector_id(v)) for v in GOOGLE_USER_AGENTS]
)
def test_product_token(vector: dict[str, Any]) -> None:
    assert product_token(vector["user_agent"]) == vector["product_token"].lower()


_TOKEN = re.compile("[A-Za-z_-]+")


def test_exclusions_are_invalid_crawler_strings() -> None:
    vectors = {vector_id(v): v for v in GOOGLE_ROBOTS + GOOGLE_SPEC}
    for name in NOT_A_PRODUCT_TOKEN:
        assert not _TOKEN.fullmatch(vectors[name]["user_agent"]), name


def test_rfc_exceptions_are_google_specific() -> None:
    vectors = {vector_id(v): v for v in GOOGLE_ROBOTS + GOOGLE_SPEC}
    for name in RFC_REQUIRES_OTHERWISE:
        assert vectors[name]["google_specific"], name


def test_vector_counts() -> None:
    # The files are read whole: every vector is run by a test above.
    assert len(GOOGLE_ROBOTS) == 145
    assert len(GOOGLE_SPEC) == 400
    assert len(RFC_EXAMPLES) == 73
    assert len(GOOGLE_USER_AGENTS) == 11
