"""The yandex and bing profiles: every difference in the vendors' tables
(docs/profiles.md), selectors, the status policy and what lint says."""

from __future__ import annotations

import pytest
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.lint import lint
from scrapy_rfc9309.match import compile, crawl_delay, explain, is_allowed
from scrapy_rfc9309.outcome import Lifetimes, kind_of_status, parsed
from scrapy_rfc9309.parse import parse
from scrapy_rfc9309.parser import RobotParser
from scrapy_rfc9309.profiles import PROFILES, RULES
from scrapy_rfc9309.stores.memory import new_entry

Y = "User-agent: Yandex\n"
B = "User-agent: bingbot\n"
# Over 512,000 octets, "Disallow: /" first (tests/test_middleware_profiles.py
# crawls it too).
OVERSIZE = "User-agent: *\nDisallow: /\n" + "# padding padding padding\n" * 20_000

# (case, robots.txt, URL, agent of the vendor's profile, agent of the others,
# {profile: allowed}): the notes' tables, row by row.
DIFFERENCES: list[tuple[str, str, str, str, str, dict[str, bool]]] = [
    ("Y1", Y + "Disallow:\nDisallow: /\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y1-reversed", Y + "Disallow: /\nDisallow:\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y2", Y + "Disallow: /p/a**b\nAllow: /p/a*b\n", "/p/ab", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y3", Y + "Disallow: /p/exact$\nAllow: /p/exact\n", "/p/exact", "Yandex",
     "Yandex", {"yandex": True, "google": False, "rfc9309": False}),
    ("Y4", Y + "Disallow: /s/ab*\nAllow: /s/a**\n", "/s/ab", "Yandex", "Yandex",
     {"yandex": False, "google": True, "rfc9309": True}),
    ("Y5", Y + "Disalow: /x\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y6", Y + "Disallow /x\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y7", Y + "Disallow-extra: /x\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": True}),
    ("Y8", "User-agent: Yandex extra\nDisallow: /x\n", "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y9", Y + "Disallow: /a\nUser agent: Other\nDisallow: /b\n", "/b", "Yandex",
     "Yandex", {"yandex": False, "google": True, "rfc9309": True}),
    ("Y10", Y + "Disallow: /a\nUser-agent: *\nDisallow: /b\n", "/a", "Yandex",
     "YandexBot", {"yandex": False, "google": True, "rfc9309": True}),
    ("Y11", OVERSIZE, "/x", "Yandex", "Yandex",
     {"yandex": True, "google": False, "rfc9309": False}),
    ("Y13", "User-agent: *\nDisallow: /\n", "/x", "YandexAdditionalBot",
     "YandexAdditionalBot", {"yandex": True, "google": False, "rfc9309": False}),
    ("B1", B + "Disallow: /eu-%62$\n", "/eu-b", "bingbot", "bingbot",
     {"bing": True, "google": True, "rfc9309": False}),
    ("B2", B + "Disallow: /hl-a%2fb$\n", "/hl-a%2fb", "bingbot", "bingbot",
     {"bing": True, "google": True, "rfc9309": False}),
    ("B3", "User-agent: OtherBot\nDisallow: /o\nUser-agent: *\nDisallow: /wf\n",
     "/wf/i", "adidxbot", "adidxbot",
     {"bing": True, "google": False, "rfc9309": False}),
    # Open: the 2012 order bingbot > msnbot > * is not read (docs/profiles.md).
    ("B4", "User-agent: msnbot\nDisallow: /\n", "/x", "bingbot", "bingbot",
     {"bing": True, "google": True, "rfc9309": True}),
    ("B5", B + "Disallow:\nDisallow: /\n", "/x", "bingbot", "bingbot",
     {"bing": False, "google": False, "rfc9309": False}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("robots", "url", "vendor_agent", "other_agent", "profile", "allowed"),
    [
        pytest.param(
            robots, url, vendor, other, profile, answer, id=f"{name}-{profile}"
        )
        for name, robots, url, vendor, other, answers in DIFFERENCES
        for profile, answer in answers.items()
    ],
)
def test_differences(
    robots: str,
    url: str,
    vendor_agent: str,
    other_agent: str,
    profile: str,
    allowed: bool,
) -> None:
    agent = vendor_agent if profile in ("yandex", "bing") else other_agent
    document = parse(robots, profile=profile)
    assert is_allowed(document, agent, "https://e.com" + url) is allowed
    assert explain(document, agent, url).allowed is allowed


def test_y1_explains_the_empty_disallow() -> None:
    document = parse(Y + "Disallow: /\nDisallow:\n", profile="yandex")
    decision = explain(document, "Yandex", "/x")
    assert decision.reason == "empty_disallow"
    assert decision.rule is not None
    assert (decision.rule.allow, decision.rule.pattern, decision.rule.line) == (
        False,
        "",
        3,
    )
    # An "Allow: /" of its own line is reported as itself.
    document = parse(Y + "Allow: /\nDisallow:\nDisallow: /\n", profile="yandex")
    assert explain(document, "Yandex", "/x").reason == "rule_allow"


@pytest.mark.parametrize(
    ("robots", "agent", "url", "allowed"),
    [
        # An empty Allow is dropped (tester ydx-06).
        (Y + "Allow:\nDisallow: /\n", "Yandex", "/x", False),
        # The longest value naming the robot wins; "*" is then not read.
        (
            Y + "Disallow: /a\nUser-agent: YandexBot\nDisallow: /b\n",
            "Yandex",
            "/a",
            True,
        ),
        (
            Y + "Disallow: /a\nUser-agent: YandexBot\nDisallow: /b\n",
            "Yandex",
            "/b",
            False,
        ),
        ("User-agent: YandexB\nDisallow: /b\n", "Yandex", "/b", False),
        ("User-agent: YandexImages\nDisallow: /b\n", "Yandex", "/b", True),
        # Groups of the same value merge; blank lines end no group.
        (
            Y + "Disallow: /a\n\nUser-agent: *\nDisallow: /\n" + Y + "\nDisallow: /c\n",
            "Yandex",
            "/c",
            False,
        ),
        # AdditionalBot reads its own group, never Yandex's.
        (
            Y + "Disallow: /a\nUser-agent: YandexAdditionalBot\nDisallow: /b\n",
            "YandexAdditionalBot",
            "/a",
            True,
        ),
        (
            Y + "Disallow: /a\nUser-agent: YandexAdditionalBot\nDisallow: /b\n",
            "YandexAdditionalBot",
            "/b",
            False,
        ),
        # Rules before any group, and rules not starting with "/" or "*".
        ("Disallow: /a\n" + Y + "Disallow: b\n", "Yandex", "/a", True),
        ("Disallow: /a\n" + Y + "Disallow: b\n", "Yandex", "/b", True),
        # A lone "*" is "/*": as specific as "/", so an Allow of "/" wins.
        (Y + "Disallow: *\nAllow: /\n", "Yandex", "/x", True),
        (Y + "Disallow: /\nAllow: *\n", "Yandex", "/x", True),
        (Y + "Disallow: /\nAllow: **\n", "Yandex", "/x", True),
        # Hex case compared as written, nothing decoded (the library).
        (Y + "Disallow: /a%2fb\n", "Yandex", "/a%2fb", False),
        (Y + "Disallow: /a%2fb\n", "Yandex", "/a%2Fb", True),
        (Y + "Disallow: /%62\n", "Yandex", "/b", True),
        # Non-ASCII patterns match the URL as a crawler sends it, encoded.
        (Y + "Disallow: /ツ\n", "Yandex", "/%E3%83%84", False),
        # Bing: AdIdxBot reads its own group; keys are read exactly.
        ("User-agent: AdIdxBot\nDisallow: /a\n", "adidxbot", "/a", False),
        (B + "Disallow /x\nDisalow: /y\n", "bingbot", "/x", True),
        (B + "Disallow /x\nDisalow: /y\n", "bingbot", "/y", True),
        (B + "Allow:\nDisallow: /\n", "bingbot", "/x", False),
        (B + "Disallow: /*.pdf$\nAllow: /a\n", "bingbot", "/a.pdf", False),
    ],
)
def test_more_of_the_notes(robots: str, agent: str, url: str, allowed: bool) -> None:
    profile = "bing" if agent.lower() in ("bingbot", "adidxbot") else "yandex"
    assert is_allowed(parse(robots, profile=profile), agent, url) is allowed


# Where a group ends (group_ends): Yandex's library (robots_txt.h ParseRules,
# `if ((prevType != type || wasBlank) && type == USER_AGENT)
# currentBotIds.clear();`) starts a new set of agents at a User-agent line
# after any other key: value line or a blank or comment-only line; RFC 9309
# only after a rule.  (robots.txt, URL, {profile: allowed}, Yandex's
# Crawl-delay), agent Yandex.
YANDEX_GROUPS: list[tuple[str, str, dict[str, bool], float | None]] = [
    (Y + "Crawl-delay: 5\nClean-param: ref /dir/\n\nUser-agent: *\n"
     "Disallow: /cgi-bin\n", "/cgi-bin/x", {"yandex": True, "rfc9309": False}, 5.0),
    (Y + "Host: example.com\nUser-agent: *\nDisallow: /\n", "/page",
     {"yandex": True, "rfc9309": False}, None),
    (Y + "Sitemap: https://example.com/s.xml\nUser-agent: Googlebot\n"
     "Disallow: /\n", "/page", {"yandex": True, "rfc9309": False}, None),
    ("User-agent: YandexBot\nCrawl-delay: 1\n" + Y + "Disallow: /private\n",
     "/private", {"yandex": True, "rfc9309": False}, 1.0),
    (Y + "\nUser-agent: *\nDisallow: /\n", "/page",
     {"yandex": True, "rfc9309": False}, None),
    (Y + "# everyone else\nUser-agent: *\nDisallow: /\n", "/page",
     {"yandex": True, "rfc9309": False}, None),
    (Y + "Crawl-delay: 1\nUser-agent: Googlebot\nAllow: /private/\n\n" + Y
     + "Disallow: /private\n", "/private/x", {"yandex": False, "rfc9309": True}, 1.0),
    # Stacked lines, and text without a colon between them, end no group.
    (Y + "User-agent: *\nDisallow: /\n", "/page",
     {"yandex": False, "rfc9309": False}, None),
    (Y + "not a line\nUser-agent: *\nDisallow: /\n", "/page",
     {"yandex": False, "rfc9309": False}, None),
    # A blank line before a rule ends no group (tester ydx-03/04).
    (Y + "\nDisallow: /a\n", "/a", {"yandex": False, "rfc9309": False}, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("robots", "url", "profile", "allowed", "delay"),
    [
        (robots, url, profile, answer, delay)
        for robots, url, answers, delay in YANDEX_GROUPS
        for profile, answer in answers.items()
    ],
)
def test_where_a_yandex_group_ends(
    robots: str, url: str, profile: str, allowed: bool, delay: float | None
) -> None:
    document = parse(robots, profile=profile)
    assert is_allowed(document, "Yandex", url) is allowed
    assert explain(document.for_agent("Yandex"), "Yandex", url).allowed is allowed
    if profile == "yandex":
        # A group of agents alone reads as "Allow: /" (AfterParse), with
        # the Crawl-delay of its own lines only.
        assert crawl_delay(document, "Yandex") == delay


def test_yandex_allows_all_past_its_rule_limit() -> None:
    limit = RULES["yandex"].max_rules
    assert limit is not None
    rules = "".join(f"Disallow: /{n}\n" for n in range(limit))
    assert not is_allowed(parse(Y + rules, profile="yandex"), "Yandex", "/1")
    more = parse(Y + rules + "Disallow: /x\n", profile="yandex")
    assert is_allowed(more, "Yandex", "/1")


def test_b6_crawl_delay_of_a_shared_and_of_a_separate_group() -> None:
    # "*" and bingbot stacked (a Crawl-delay ends no group): one group.
    shared = "User-agent: *\nCrawl-delay: 5\n" + B + "Disallow: /a\n"
    assert crawl_delay(parse(shared, profile="bing"), "bingbot") == 5.0
    # Open: a "*" group's Crawl-delay does not reach a bingbot group.
    separate = "User-agent: *\nDisallow: /z\nCrawl-delay: 5\n" + B + "Disallow: /a\n"
    assert crawl_delay(parse(separate, profile="bing"), "bingbot") is None


@pytest.mark.parametrize(
    ("profile", "agent"),
    [
        ("yandex", "Yandex"),
        ("yandex", "YANDEX"),
        ("yandex", "yandexadditionalbot"),
        ("bing", "bingbot"),
        ("bing", "BINGBOT"),
        ("bing", "bingbot/2.0"),
        ("bing", "AdIdxBot"),
        ("rfc9309", "YandexBot/3.0"),
        ("google", "anything"),
    ],
)
def test_accepted_selectors(profile: str, agent: str) -> None:
    document = parse("User-agent: *\nDisallow: /\n", profile=profile)
    compile(document, agent)


@pytest.mark.parametrize(
    ("profile", "agent"),
    [
        # A crawler's name, not a group label: no silent mapping.
        ("yandex", "YandexBot"),
        ("yandex", "YandexBot/3.0"),
        ("yandex", "Mozilla/5.0 (compatible; YandexBot/3.0)"),
        ("yandex", "*"),
        ("yandex", "bingbot"),
        ("bing", "msnbot"),
        ("bing", "Googlebot"),
        ("bing", "Mozilla/5.0 (compatible; bingbot/2.0)"),
    ],
)
def test_rejected_selectors(profile: str, agent: str) -> None:
    document = parse("User-agent: *\nDisallow: /\n", profile=profile)
    with pytest.raises(ValueError, match=f"{profile} profile answers for"):
        is_allowed(document, agent, "/x")
    with pytest.raises(ValueError, match="not its HTTP User-Agent"):
        document.for_agent(agent)


@pytest.mark.parametrize(
    ("robots", "agent"),
    [
        (Y + "Disallow: /\nDisallow:\nUser-agent: *\nDisallow: /b\n", "Yandex"),
        ("User-agent: YandexAdditionalBot\nDisallow: /a*\nAllow: /a/b$\n",
         "YandexAdditionalBot"),
        ("User-agent: AdIdxBot\nDisallow: /a\n", "AdIdxBot"),
    ],
)  # fmt: skip
def test_what_the_memory_store_keeps_answers_alike(robots: str, agent: str) -> None:
    document = parse(robots, profile="yandex" if agent[0] in "Yy" else "bing")
    outcome = parsed(document, now=0.0, lifetimes=Lifetimes(), http_status=200)
    restored = new_entry(outcome, agent).restored().document
    slim = document.for_agent(agent)
    assert restored is not None
    for url in ("/", "/a", "/a/b", "/b", "/x"):
        expected = explain(document, agent, url)
        assert explain(restored, agent, url) == expected
        assert explain(slim, agent, url) == expected


STATUS_POLICY = {
    # status: (rfc9309, google, yandex, bing)
    200: ("parsed", "parsed", "parsed", "parsed"),
    206: ("parsed", "parsed", "unavailable", "parsed"),
    304: ("unavailable", "unavailable", "unavailable", "unavailable"),
    404: ("unavailable", "unavailable", "unavailable", "unavailable"),
    429: ("unreachable", "unreachable", "unavailable", "unreachable"),
    503: ("unreachable", "unreachable", "unavailable", "unreachable"),
    999: ("unreachable", "unreachable", "unavailable", "unreachable"),
}


@pytest.mark.parametrize(
    ("status", "profile", "kind"),
    [
        (status, profile, kind)
        for status, kinds in STATUS_POLICY.items()
        for profile, kind in zip(PROFILES, kinds, strict=True)
    ],
)
def test_status_policy(status: int, profile: str, kind: str) -> None:
    assert kind_of_status(status, profile) == kind


def test_network_and_size_policy() -> None:
    assert {profile: RULES[profile].status["network"] for profile in PROFILES} == {
        "rfc9309": "unreachable",
        "google": "unreachable",
        "yandex": "unreachable",
        "bing": "unreachable",
    }
    assert RULES["yandex"].status["oversize"] == "unavailable"


def _codes(robots: str | bytes, profile: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in lint(robots, profile=profile)]


@pytest.mark.parametrize(
    ("robots", "profile", "expected"),
    [
        (Y + "Disalow: /x\n", "yandex", (2, "typo-ignored")),
        (Y + "Disallow-extra: /x\n", "yandex", (2, "typo-ignored")),
        (Y + "User agent: Other\n", "yandex", (2, "typo-ignored")),
        (Y + "Disallow /x\n", "yandex", (2, "missing-colon-ignored")),
        ("Disallow: /x\n" + Y, "yandex", (1, "rule-outside-group")),
        (Y + "Disallow:\n", "yandex", (2, "empty-disallow-allows-all")),
        ("User-agent: YandexBot\nDisallow: /\n", "yandex", (0, "no-groups")),
        ("User-agent: Googlebot\nDisallow: /\n", "yandex",
         (1, "user-agent-not-selected")),
        (Y + "Crawl-delay: 3\n", "yandex", (1, "unsupported-directive")),
        (OVERSIZE, "yandex", (0, "body-over-vendor-limit")),
        ("User-agent: msnbot\nDisallow: /\n", "bing", (1, "user-agent-not-selected")),
        ("User-agent: *\nDisallow: %2Fa\n", "google", (2, "pattern-not-rooted")),
        (B + "Disallow /x\n", "bing", (2, "missing-colon-ignored")),
    ],
)  # fmt: skip
def test_lint_names_the_profiles_reasons(
    robots: str, profile: str, expected: tuple[int, str]
) -> None:
    if expected[1] == "no-groups":
        # YandexBot is a robot Yandex reads: no warning about the group.
        assert (1, "user-agent-not-selected") not in _codes(robots, profile)
        return
    assert expected in _codes(robots, profile)
    if expected[1] not in ("rule-outside-group", "user-agent-not-selected"):
        assert expected not in _codes(robots, "rfc9309")


@pytest.mark.parametrize(
    ("profile", "agent"), [("yandex", "Yandex"), ("bing", "bingbot")]
)
def test_lint_reads_a_wildcard_with_more_as_the_engine_does(
    profile: str, agent: str
) -> None:
    robots = "User-agent: * x\nDisallow: /\n"
    assert explain(parse(robots, profile=profile), agent, "/x").allowed is False
    assert _codes(robots, profile) == [(1, "user-agent-not-token")]


def test_lint_in_the_lenient_profiles_is_unchanged() -> None:
    assert (2, "typo-accepted") in _codes(Y + "Disalow: /x\n", "rfc9309")
    assert (2, "missing-colon") in _codes(Y + "Disallow /x\n", "google")


def test_robot_parser_reads_with_the_profile_and_refuses_other_agents() -> None:
    crawler = get_crawler(settings_dict={"ROBOTS_PROFILE": "yandex"})
    body = (Y + "Disallow:\nDisallow: /\n").encode()
    parser = RobotParser.from_crawler(crawler, body)
    assert parser.allowed("https://e.com/x", "Yandex")
    with pytest.raises(ValueError, match="yandex profile answers for"):
        parser.allowed("https://e.com/x", "Scrapy/2.19 (+https://scrapy.org)")
