"""Content-Usage rules compiled once per origin (issue 24, F4).

The table gives what the plain walk over the rules gives (hypothesis,
every profile), and costs a request a lookup or two however many rules
the origin has: work counted in matcher lookups (``Matcher._find`` calls),
never in time.
"""

from __future__ import annotations

import gc
import itertools
import string
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import _sizes
from scrapy_rfc9309._usage_table import UsageTable
from scrapy_rfc9309.match import Matcher, compile
from scrapy_rfc9309.parse import PROFILES, UsageRule, parse
from scrapy_rfc9309.usage import deciding_rules, matched_usage, usage_explained
from tests.support.crawl_helpers import crawl
from tests.support.server import Server
from tests.support.utils import coroutine_test

AGENT = "examplebot"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every matcher lookup (``Matcher._find`` call)."""
    counted = [0]
    find = Matcher._find

    def counting(self: Matcher, url: str, verdict_only: bool = False) -> int:
        counted[0] += 1
        return find(self, url, verdict_only)

    monkeypatch.setattr(Matcher, "_find", counting)
    return counted


# Paths and URLs from a small alphabet, so that they often match: wildcards,
# anchors, escapes (normalised or not by the profile), non-ASCII.
_PIECES = ["a", "b", "/", "*", "$", "%7E", "~", "%2F", "é", "?", "=", "%e9", "ab"]
paths = st.lists(st.sampled_from(_PIECES), max_size=5).map(lambda p: "/" + "".join(p))
rules = st.lists(
    st.tuples(st.one_of(st.just(""), paths), st.sampled_from(["train-ai=n", "x"])),
    max_size=10,
).map(
    lambda pairs: [
        UsageRule(path, preference, line)
        for line, (path, preference) in enumerate(pairs, 2)
    ]
)
urls = st.lists(
    st.sampled_from([p for p in _PIECES if p not in ("*", "$")]), max_size=6
).map(lambda p: "http://a.test/" + "".join(p))


@settings(max_examples=300, deadline=None)
@given(rules=rules, url_list=st.lists(urls, min_size=1, max_size=4), data=st.data())
def test_the_table_answers_as_the_plain_walk(
    rules: list[UsageRule], url_list: list[str], data: st.DataObject
) -> None:
    profile = data.draw(st.sampled_from(PROFILES))
    table = UsageTable(rules, profile)
    for url in url_list:
        assert table.deciding(url) == deciding_rules(rules, profile, url), url


@pytest.mark.parametrize("profile", PROFILES)
def test_ties_between_paths_of_one_length_are_all_chosen(profile: str) -> None:
    rules = [
        UsageRule("/a*", "train-ai=n", 2),
        UsageRule("/*b", "search=n", 3),
        UsageRule("/ab", "ai-use=n", 4),
        UsageRule("/ab", "ai-use=y", 5),
        UsageRule("", "train-ai=y", 6),
        UsageRule("/a", "search=y", 7),
    ]
    table = UsageTable(rules, profile)
    for url in ("http://a.test/ab", "http://a.test/abc", "http://a.test/xb", "/a"):
        assert table.deciding(url) == deciding_rules(rules, profile, url)
    assert table.deciding("http://a.test/ab") == tuple(rules[:4])
    assert table.deciding("http://a.test/zz") == (rules[4],)


@pytest.mark.parametrize("profile", PROFILES)
def test_many_paths_of_one_length_in_chunks(profile: str) -> None:
    letters = "abcdefghij"
    rules = [
        UsageRule(f"/*{x}*{y}", "train-ai=n", line)
        for line, (x, y) in enumerate(((x, y) for x in letters for y in letters), 2)
    ]
    rules.append(UsageRule("/jj", "search=n", 200))
    table = UsageTable(rules, profile)
    for url in ("/ab", "/jaj", "/ajbjc", "/zzz", "/jj", "/" + letters, "/aaa"):
        assert table.deciding(url) == deciding_rules(rules, profile, url), url
    assert len(table.deciding("/" + letters)) == 45


def many_rules(count: int) -> str:
    lines = ["User-agent: *", "Disallow: /private"]
    lines += [f"Content-Usage: /section{i}/ train-ai=n" for i in range(count)]
    lines.append("Content-Usage: search=y")
    return "\n".join(lines) + "\n"


def test_a_request_costs_a_lookup_whatever_the_number_of_rules(
    lookups: list[int],
) -> None:
    document = parse(many_rules(16_000), max_bytes=4 << 20)
    matcher = compile(document, AGENT)
    assert len(matcher.content_usage) == 16_001
    requests = [f"http://a.test/section{i * 50}/page" for i in range(300)]
    requests += ["http://a.test/other", "http://a.test/section/x"]
    lookups[0] = 0
    answers = [matched_usage(matcher, url).rules for url in requests]
    # One lookup of the matcher of all paths: the plain walk took 16,000 a
    # request.
    assert lookups[0] <= len(requests)
    assert answers[0] == (matcher.content_usage[0],)
    assert answers[299] == (matcher.content_usage[299 * 50],)
    assert answers[300] == answers[301] == (matcher.content_usage[-1],)
    # Compiled once, kept with the matcher (the origin's entry).
    table = matcher._usage_table
    matched_usage(matcher, requests[0])
    assert matcher._usage_table is table
    # Same answers as the plain walk (on a few: it is slow).
    for url, answer in list(zip(requests, answers, strict=True))[::60]:
        assert deciding_rules(matcher.content_usage, matcher.profile, url) == answer


def test_without_the_shortcut_lengths_are_tried_longest_first(
    lookups: list[int],
) -> None:
    # Yandex ranks patterns without their "*": lengths are tried in turn.
    rules = [UsageRule(f"/s{i}/*x", "train-ai=n", i) for i in range(2000)]
    table = UsageTable(rules, "yandex")
    lookups[0] = 0
    assert table.deciding("http://a.test/s1234/ax") == (rules[1234],)
    # The longest length first: its matcher of paths with a "*" finds the
    # earliest that matches, then the later chunks of 32 paths are ruled
    # out one lookup each, and the paths of its own chunk one by one.
    assert lookups[0] <= 1 + 1000 // 32 + 32
    # A URL no path matches: a lookup a length.
    lookups[0] = 0
    assert table.deciding("http://a.test/none") == ()
    assert lookups[0] == 4


def test_no_origin_costs_another_its_compiled_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The plain walk's cache of path matchers was global: once an origin of
    # many rules had filled it, every request of the next origin compiled
    # its paths again.  Tables go with their matcher.
    hostile = parse(many_rules(4_000), max_bytes=4 << 20)
    for i in range(0, 4000, 3):
        usage_explained(hostile, AGENT, f"http://a.test/section{i}/page")
    built = [0]
    setup = Matcher._build

    def counting(self: Matcher, *args: Any) -> None:
        built[0] += 1
        setup(self, *args)

    monkeypatch.setattr(Matcher, "_build", counting)
    benign = parse(
        "User-agent: *\nContent-Usage: /a/ train-ai=n\n"
        "Content-Usage: /b/ train-ai=y\nContent-Usage: /*.pdf$ search=n\n"
    )
    for i in range(300):
        usage_explained(benign, AGENT, f"http://b.test/{'ab'[i % 2]}/{i}")
    # The benign origin's matcher, and its table's (built once).
    assert built[0] <= 4


@coroutine_test
async def test_a_purposes_crawl_of_an_origin_of_many_rules(
    lookups: list[int],
) -> None:
    server = Server()
    try:
        server.route("/robots.txt", many_rules(16_000))
        urls = [server.url(f"/section{i * 7}/p") for i in range(40)]
        urls.append(server.url("/open"))
        lookups[0] = 0
        crawler = await crawl(urls, {"ROBOTS_PURPOSES": ["train-ai"]})
    finally:
        server.close()
    spider: Any = crawler.spider
    assert spider.crawled == [server.url("/open")]
    assert len(spider.dropped) == 40
    assert {error.cause for error in spider.dropped.values()} == {"content_usage"}
    # The robots.txt rule and the Content-Usage table: a few lookups a
    # request (the plain walk: 16,000).
    assert lookups[0] <= 5 * len(urls)


def test_yandex_s_limit_of_rules_is_no_limit_of_the_table() -> None:
    """Past 10,000 rules for an agent Yandex allows everything: a limit on
    an agent's Allow and Disallow lines, not on the Content-Usage paths
    that one of the table's matchers holds."""
    rules = [
        UsageRule(f"/p{number:05d}", "train-ai=n", number + 2)
        for number in range(10_001)
    ]
    table = UsageTable(rules, "yandex")
    url = "http://a.test/p00042/page"
    assert table.deciding(url) == deciding_rules(rules, "yandex", url) == (rules[42],)


@pytest.mark.parametrize(
    "paths",
    [
        ["/**", "/a*"],
        ["/a*", "/**"],
        ["/x**", "/*$", "/a*"] + [f"/{n:02}*" for n in range(40)],
    ],
)
def test_yandex_s_ranking_picks_no_earliest_path_of_a_length(paths: list[str]) -> None:
    # Yandex ranks "/a*" above "/**" (it counts no "*"), though Content-Usage
    # counts both 3 octets long: a tie, and both decide for "/a" (found by
    # Hypothesis).  The matcher of a length's wildcard paths then gives one
    # of them that is not the earliest.
    rules = [UsageRule(path, "train-ai=n", line) for line, path in enumerate(paths, 2)]
    table = UsageTable(rules, "yandex")
    for url in ("http://a.test/a", "http://a.test/x", "http://a.test/07"):
        assert table.deciding(url) == deciding_rules(rules, "yandex", url), url


def _every_pair() -> tuple[list[str], str]:
    """The 1,296 two-character texts of [a-z0-9], and a path holding all of
    them (a de Bruijn sequence)."""
    alphabet = string.ascii_lowercase + string.digits
    pairs = ["".join(pair) for pair in itertools.product(alphabet, repeat=2)]
    path, seen = "a", {""}
    while len(seen) < len(pairs) + 1:
        # Greedy: the last character's first pair not yet in the path.
        follow = next(c for c in reversed(alphabet) if path[-1] + c not in seen)
        seen.add(path[-1] + follow)
        path += follow
    return pairs, "/" + path


@pytest.mark.parametrize("profile", ["rfc9309", "yandex"])
@pytest.mark.parametrize("shape", ["/*{}", "/*{}*", "/**{}", "/*{}*/"], ids=str)
def test_the_table_holds_no_more_than_the_store_counts(
    profile: str, shape: str
) -> None:
    # The worst case of the compiled rules: paths of one length (one chunk
    # matcher per 32 of them), all matching one URL (a matcher of its own
    # for each), which the memory store counts before any is built.
    pairs, path = _every_pair()
    body = "User-agent: *\n" + "".join(
        f"Content-Usage: {shape.format(pair)} train-ai=n\n" for pair in pairs
    )
    agent = "Yandex" if profile == "yandex" else "bot"
    matcher = compile(parse(body, profile=profile, max_bytes=1 << 22), agent)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        found = matched_usage(matcher, f"https://example.com{path}/").rules
        for url in (f"https://example.com{path}", "https://example.com/x"):
            matched_usage(matcher, url)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(found) > 1000
    counted = sum(_sizes.usage_table_size(rule.path) for rule in matcher.content_usage)
    assert held <= counted
