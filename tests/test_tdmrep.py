"""TDMRep's engine (scrapy_rfc9309.tdmrep): the report's worked examples as
vectors (E1-E10 of shared/notes/tdmrep.md), the file's error cases, the
priority order, and hypothesis: reading never raises, the first match wins."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.tdmmiddleware import TdmEntry
from scrapy_rfc9309.tdmrep import (
    Step,
    TdmState,
    _reservation_value,
    from_file,
    header_values,
    meta_values,
    parse_file,
    resolve,
)

FILE = "https://provider.com/.well-known/tdmrep.json"
POLICY = "https://provider.com/policies/policy.json"
F1 = [{"location": "/", "tdm-reservation": 1}]
F2 = [
    {"location": "/directory-a/", "tdm-reservation": 1},
    {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": POLICY},
    {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
]
F5 = [
    {"location": "/", "tdm-reservation": 1},
    {"location": "/pub/", "tdm-reservation": 0},
]


def state(
    rules: list[Any] | None,
    path: str,
    header: tuple[list[bytes], list[bytes]] = ([], []),
    html: str | None = None,
) -> TdmState:
    url = "https://provider.com" + path
    tdm_file = None if rules is None else parse_file(json.dumps(rules), FILE)
    steps: list[tuple[str, Step]] = [("header", header_values(*header, url))]
    if html is not None:
        steps.append(("meta", meta_values(html, url)))
    return resolve(from_file(tdm_file, FILE, url), steps)


@pytest.mark.parametrize(
    ("name", "rules", "path", "header", "html", "expected"),
    [
        ("E1", F1, "/any/page", ([], []), None, (1, None, "tdmrep.json")),
        (
            "E2",
            F2,
            "/directory-b/images/cat.jpg",
            ([], []),
            None,
            (0, None, "tdmrep.json"),
        ),
        (
            "E3",
            F2,
            "/directory-b/html/a.html",
            ([], []),
            None,
            (1, POLICY, "tdmrep.json"),
        ),
        ("E4", F2, "/directory-c/x.html", ([], []), None, (None, None, None)),
        # First match wins: longest match would give 0.
        ("E5", F5, "/pub/a", ([], []), None, (1, None, "tdmrep.json")),
        ("E6", F1, "/x", ([b"0"], []), None, (0, None, "header")),
        (
            "E7",
            None,
            "/x",
            ([b"1"], []),
            '<head><meta name="tdm-policy" content="https://p.example/P"></head>',
            (1, "https://p.example/P", "header"),
        ),
        ("E8", None, "/x", ([b"2"], []), None, (None, None, None)),
        # The policy of a non-reservation is not processed.
        (
            "E9",
            None,
            "/x",
            ([b"0"], [b"https://p.example/P"]),
            None,
            (0, None, "header"),
        ),
        (
            "E10",
            [{"location": "/path/foo-%24", "tdm-reservation": 1}],
            "/path/foo-$",
            ([], []),
            None,
            (1, None, "tdmrep.json"),
        ),
    ],
)
def test_worked_examples(
    name: str,
    rules: list[Any] | None,
    path: str,
    header: tuple[list[bytes], list[bytes]],
    html: str | None,
    expected: tuple[Any, ...],
) -> None:
    found = state(rules, path, header, html)
    assert (found.reservation, found.policy, found.source) == expected, name


@pytest.mark.parametrize(
    ("location", "path", "matches"),
    [
        ("/a", "/a", True),
        ("/a", "/ab", True),
        ("/a$", "/ab", False),
        ("/a$", "/a", True),
        ("/*.jpg", "/x/y.jpg", True),
        ("/*.jpg$", "/x/y.jpg?s=1", False),
        ("/a", "/A", False),
        # Unreserved escapes compare decoded.
        ("/%7Euser", "/~user", True),
        ("/path/foo-%2A", "/path/foo-*", True),
        ("/path/foo-%2A", "/path/foo-x", False),
        # The query is part of what is matched (Google's robots.txt reading).
        ("/s?q=", "/s?q=1", True),
        ("*", "/anything", True),
    ],
)
def test_location_matching(location: str, path: str, matches: bool) -> None:
    tdm_file = parse_file(json.dumps([{"location": location, "tdm-reservation": 1}]))
    assert (tdm_file.rule_for("https://h.example" + path) is not None) == matches


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (0, 0),
        ("1", 1),
        (" 0 ", 0),
        (1.0, 1),
        (2, None),
        (True, None),
        (None, None),
        ("yes", None),
        ([1], None),
    ],
)
def test_reservation_values(value: Any, expected: int | None) -> None:
    assert _reservation_value(value) == expected


@pytest.mark.parametrize(
    ("body", "rules", "problem"),
    [
        (b"", 0, "not JSON"),
        (b"{}", 0, "not a JSON array"),
        (b"[" * 50_000, 0, "not JSON"),
        (b'[1, {"location": "x", "tdm-reservation": 1}]', 0, "left out"),
        (b'[{"location": "/", "tdm-reservation": 2}]', 1, "unset"),
        (b'[{"location": "/"}]', 1, "unset"),
        (b'[{"location": "/", "tdm-reservation": 1}]', 1, None),
        # UTF-8 only, a byte-order mark allowed (RFC 8259 8.1); json.loads
        # alone would read UTF-16 and UTF-32 too.
        (b'\xef\xbb\xbf[{"location": "/", "tdm-reservation": 1}]', 1, None),
        ('[{"location": "/", "tdm-reservation": 1}]'.encode("utf-16"), 0, "not JSON"),
        ('[{"location": "/", "tdm-reservation": 1}]'.encode("utf-32"), 0, "not JSON"),
    ],
)
def test_file_errors(body: bytes, rules: int, problem: str | None) -> None:
    tdm_file = parse_file(body)
    assert len(tdm_file.rules) == rules
    if problem is None:
        assert tdm_file.problems == ()
    else:
        assert problem in tdm_file.problems[0]


def test_headers() -> None:
    assert header_values([b" 1 "], [], "u").reservation == 1
    # One value repeated is that value; 0 and 1 together are invalid.
    assert header_values([b"1", b"1"], [], "u").reservation == 1
    assert header_values([b"1, 0"], [], "u") == Step(None, None, True)
    assert header_values([], [], "u") == Step()
    assert header_values([], [b" /p "], "https://h/x").policy == "https://h/p"


def test_meta_skips_comments_and_takes_the_first() -> None:
    html = (
        '<!-- <meta name="tdm-reservation" content="0"> -->'
        "<meta name=tdm-reservation content=1>"
        '<meta name="tdm-reservation" content="0">'
    )
    assert meta_values(html, "u").reservation == 1


def test_absent_and_invalid_steps_reset_nothing() -> None:
    start = state(F2, "/directory-b/html/x")
    after = resolve(start, [("header", Step(invalid=True)), ("meta", Step())])
    assert (after.reservation, after.policy, after.source) == (1, POLICY, "tdmrep.json")
    assert after.problems == ("header: invalid tdm-reservation, ignored",)
    # A later policy alone replaces the policy, not the reservation.
    after = resolve(start, [("meta", Step(policy="https://o.example/"))])
    assert (after.reservation, after.policy) == (1, "https://o.example/")


def test_entry_round_trip() -> None:
    tdm_file = parse_file(json.dumps([*F2, "junk"]), FILE)
    entry = TdmEntry(tdm_file, "parsed", "HTTP 200", 1.0, 2.0)
    assert TdmEntry.decode(entry.encode(), FILE) == entry
    missing = TdmEntry(None, "missing", "HTTP 404", 1.0, 2.0)
    assert TdmEntry.decode(missing.encode(), FILE) == missing
    for junk in (None, "", "[]", '{"tdmrep": 2}', '{"tdmrep": 1, "rules": 5}'):
        assert TdmEntry.decode(junk, FILE) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["location", "tdm-reservation", "tdm-policy", "x"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.text(alphabet="/ab*$%2A?", max_size=10))
def test_any_json_is_read_without_error(data: Any, path: str) -> None:
    tdm_file = parse_file(json.dumps(data), FILE)
    rule = tdm_file.rule_for("https://h.example/" + path)
    assert rule is None or rule.reservation in (0, 1, None)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["/", "/a", "/a/", "/*b", "/a$", "/ab"]),
            st.sampled_from([0, 1]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["/a", "/a/b", "/ab", "/b", "/"]),
)
def test_the_first_match_wins(rules: list[tuple[str, int]], path: str) -> None:
    tdm_file = parse_file(
        json.dumps([{"location": loc, "tdm-reservation": r} for loc, r in rules])
    )
    url = "https://h.example" + path
    found = tdm_file.rule_for(url)
    alone = [
        rule
        for rule in tdm_file.rules
        if parse_file(
            json.dumps([{"location": rule.location, "tdm-reservation": 1}])
        ).rule_for(url)
    ]
    assert found == (alone[0] if alone else None)


def test_problems_are_bounded() -> None:
    tdm_file = parse_file(json.dumps([1] * 5000))
    assert len(tdm_file.problems) == 11
    assert tdm_file.problems[-1] == "and 4990 more"
