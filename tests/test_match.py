from __future__ import annotations

import pickle

import pytest

from scrapy_rfc9309.match import (
    Decision,
    Matcher,
    _compile_text,
    compile,
    content_signals,
    crawl_delay,
    explain,
    is_allowed,
)
from scrapy_rfc9309.parse import Document, Group, Rule, body_text, parse
from scrapy_rfc9309.profiles import RULES
from tests.support.utils import read_document

PROFILES = ["rfc9309", "google"]


def decide(
    body: str, url: str, agent: str = "FooBot", profile: str = "rfc9309"
) -> Decision:
    return explain(parse(body, profile=profile), agent, url)


def test_decision_reasons_and_lines() -> None:
    body = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n"
    assert decide(body, "https://a/private/x") == Decision(
        False, "rule_disallow", Rule(False, "/private", 2)
    )
    assert decide(body, "https://a/private/ok") == Decision(
        True, "rule_allow", Rule(True, "/private/ok", 3)
    )
    assert decide(body, "https://a/public") == Decision(True, "default_allow", None)
    assert decide(body, "https://a/robots.txt") == Decision(True, "robots_txt", None)


def test_robots_txt_is_always_allowed_in_rfc9309_only() -> None:
    body = "User-agent: *\nDisallow: /\n"
    for url in ["https://a/robots.txt", "/robots.txt", "https://a/robots.txt?x=1"]:
        assert decide(body, url).reason == "robots_txt"
        assert decide(body, url, profile="google").allowed is False
    assert decide(body, "https://a/robots.txt.bak").allowed is False
    assert decide(body, "https://a/x/robots.txt").allowed is False


@pytest.mark.parametrize("profile", PROFILES)
def test_longest_match_wins(profile: str) -> None:
    body = (
        "User-agent: *\nAllow: /a\nDisallow: /a/b\nAllow: /a/b/c\nDisallow: /*.gif$\n"
    )
    assert decide(body, "/a/x", profile=profile).rule == Rule(True, "/a", 2)
    assert decide(body, "/a/b/x", profile=profile).rule == Rule(False, "/a/b", 3)
    assert decide(body, "/a/b/c", profile=profile).rule == Rule(True, "/a/b/c", 4)
    # "/*.gif$" counts 7 octets, "/a/b/c" 6.
    assert decide(body, "/a/b/c.gif", profile=profile).rule == Rule(False, "/*.gif$", 5)
    assert decide(body, "/x.gif", profile=profile).rule == Rule(False, "/*.gif$", 5)


@pytest.mark.parametrize("profile", PROFILES)
def test_allow_wins_ties_and_the_first_line_reports(profile: str) -> None:
    body = "User-agent: *\nDisallow: /x\nDisallow: /*\nAllow: /x\nAllow: /x\n"
    assert decide(body, "/x", profile=profile).rule == Rule(True, "/x", 4)
    body = "User-agent: *\nDisallow: /ab\nDisallow: /a*\n"
    assert decide(body, "/ab", profile=profile).rule == Rule(False, "/ab", 2)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("/", "/", True),
        ("/a", "/abc", True),
        ("/a$", "/a", True),
        ("/a$", "/ab", False),
        ("/*", "/", True),
        ("*", "/x", True),
        ("/*/b", "/a/b", True),
        ("/*/b", "/b", False),
        ("/a*b*c$", "/abxc", True),
        ("/a*b*c$", "/abxcd", False),
        ("/a*b*c$", "/acb", False),
        ("/a**b", "/axb", True),
        ("/a*$", "/a", True),
        ("/a$b", "/a$b", True),
        ("/a$b", "/ab", False),
        ("/*.php$", "/x.php", True),
        ("/*.php$", "/x.php?y", False),
        ("/*?", "/x?y", True),
        ("/*?", "/x", False),
        ("*.gif$", "/a/b.gif", True),
        ("/a*bc*bc$", "/abcbc", True),
        ("/a*bc*bc$", "/abc", False),
        ("/$", "/", True),
        ("$", "/", False),
        ("/fish*", "/fishheads", True),
        ("/fish/", "/fish", False),
        ("/Fish", "/fish", False),
        ("private", "/private", False),
    ],
)
def test_patterns(profile: str, pattern: str, url: str, matches: bool) -> None:
    decision = decide(f"User-agent: *\nDisallow: {pattern}\n", url, profile=profile)
    assert (decision.reason == "rule_disallow") is matches


@pytest.mark.parametrize(
    ("url", "matches"),
    [("/ax$yb", True), ("/a$b", True), ("/axyb", False), ("/ax$y", False)],
)
def test_dollar_between_wildcards_is_literal(url: str, matches: bool) -> None:
    decision = decide("User-agent: *\nDisallow: /a*$*b\n", url, profile="google")
    assert (decision.reason == "rule_disallow") is matches


def test_many_wildcards_against_a_long_url() -> None:
    # No backtracking blow-up: each "*" looks for the next literal once.
    pattern = "/" + "a*" * 50 + "b$"
    body = f"User-agent: *\nDisallow: {pattern}\n"
    url = "https://example.com/" + "a" * 10_000
    matcher = compile(parse(body), "bot")
    for profile in PROFILES:
        matcher = compile(parse(body, profile=profile), "bot")
        assert matcher.is_allowed(url) is True
        assert matcher.is_allowed(url + "b") is False
        assert matcher.is_allowed(url + "c") is True


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/ツ"),
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-*.html"),
        ("/path/foo-%24", "/path/foo-$"),
        ("/a%20b", "/a b"),
        ("/100%", "/100%25"),
    ],
)
def test_percent_encoding_is_normalised_on_both_sides(pattern: str, url: str) -> None:
    assert decide(f"User-agent: *\nDisallow: {pattern}\n", url).allowed is False


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/path/file-with-a-%2A.html", "/path/file-with-a-b.html"),
        ("/a%2Fb", "/a"),
        ("/%2541", "/A"),
    ],
)
def test_percent_encoding_keeps_meaning(pattern: str, url: str) -> None:
    assert decide(f"User-agent: *\nDisallow: {pattern}\n", url).allowed is True


def test_google_profile_compares_escapes_literally() -> None:
    body = (
        "User-agent: *\nDisallow: /foo/bar/%62%61%7A\nDisallow: /x/ツ\n"
        "Disallow: /y/%aa\n"
    )
    assert decide(body, "/foo/bar/baz", profile="google").allowed is True
    assert decide(body, "/foo/bar/%62%61%7A", profile="google").allowed is False
    assert decide(body, "/x/%E3%83%84", profile="google").allowed is False
    assert decide(body, "/x/ツ", profile="google").allowed is True
    assert decide(body, "/y/%AA", profile="google").allowed is False


@pytest.mark.parametrize("profile", PROFILES)
def test_index_html_allows_its_directory(profile: str) -> None:
    body = "User-agent: *\nDisallow: /\nAllow: /d/index.html\nAllow: /e/index.htmx\n"
    assert decide(body, "/d/", profile=profile) == Decision(
        True, "rule_allow", Rule(True, "/d/index.html", 3)
    )
    assert decide(body, "/d/index.html", profile=profile).allowed is True
    assert decide(body, "/d/x", profile=profile).allowed is False
    assert decide(body, "/e/", profile=profile).allowed is True


def test_index_html_escaped_allows_its_directory_where_escapes_are_decoded() -> None:
    body = "User-agent: *\nDisallow: /d/\nAllow: /d/%69ndex.html\n"
    assert decide(body, "/d/") == Decision(
        True, "rule_allow", Rule(True, "/d/%69ndex.html", 3)
    )
    # Google compares escapes as written: "%69ndex" is not "index".
    assert decide(body, "/d/", profile="google").allowed is False


def test_empty_patterns_match_nothing() -> None:
    body = "User-agent: *\nDisallow:\nAllow:\n"
    assert decide(body, "/x") == Decision(True, "default_allow", None)


def test_agent_is_matched_by_product_token() -> None:
    body = "User-agent: foobot\nDisallow: /\nUser-agent: *\nAllow: /\n"
    for agent in ["FooBot", "foobot/1.0", "FOOBOT (+https://x)", "FooBot-News"]:
        expected = agent != "FooBot-News"
        assert decide(body, "/x", agent=agent).allowed is not expected
    assert decide(body, "/x", agent="").allowed is True


def test_specific_group_replaces_star_even_without_rules() -> None:
    body = "User-agent: *\nDisallow: /\n\nUser-agent: FooBot\n"
    assert decide(body, "/x").allowed is True
    assert decide(body, "/x", agent="Other").allowed is False


def test_user_agent_values_are_read_as_tokens() -> None:
    body = (
        "User-agent: FooBot/2.1 extra\nDisallow: /a\nUser-agent: * also\nDisallow: /b\n"
    )
    assert decide(body, "/a").allowed is False
    assert decide(body, "/b").allowed is True
    assert decide(body, "/b", agent="Other").allowed is False


@pytest.mark.parametrize(
    "url",
    [
        "",
        "relative/path",
        "?query",
        "#fragment",
        "//host",
        "http://",
        "https://a/%",
        "https://a/%zz%",
        "https://a/\udcff\ud800",
        "https://a/" + "%" * 5000,
        "https://a/ツ?ツ=ツ#ツ",
        "file:///etc/passwd",
        "https://[::1]:99999/x",
        "\x00\n\t ",
        "https://a/" + "x" * 200_000,
    ],
)
@pytest.mark.parametrize("profile", PROFILES)
def test_any_url_is_answered(url: str, profile: str) -> None:
    document = parse("User-agent: *\nDisallow: /*x*x\nAllow: /\n", profile=profile)
    assert isinstance(explain(document, "bot", url), Decision)


def test_path_only_urls() -> None:
    body = "User-agent: *\nDisallow: /a\n"
    assert decide(body, "/a").allowed is False
    assert decide(body, "/a?x").allowed is False
    assert decide(body, "/b#/a").allowed is True
    assert decide(body, "//host/a").allowed is False


def test_crawl_delay_and_content_signals() -> None:
    document = parse(
        "User-agent: FooBot\nCrawl-delay: 2\nContent-Signal: ai-train=yes, search=yes\n"
        "Disallow: /x\n"
        "User-agent: *\nCrawl-delay: 9\nDisallow: /y\n"
        "User-agent: foobot\nCrawl-delay: 5\nContent-Signal: ai-train=no\n"
    )
    assert crawl_delay(document, "FooBot/1.0") == 5.0
    assert content_signals(document, "FooBot") == {"ai-train": False, "search": True}
    assert crawl_delay(document, "other") == 9.0
    assert content_signals(document, "other") == {}
    assert crawl_delay(parse(""), "x") is None


def test_matcher() -> None:
    document = parse(
        "User-agent: foobot\nDisallow: /x\nCrawl-delay: 3\nContent-Signal: search=no\n"
    )
    matcher = compile(document, "FooBot/2")
    assert isinstance(matcher, Matcher)
    assert matcher.profile == "rfc9309"
    assert matcher.crawl_delay == 3.0
    assert matcher.content_signals == {"search": False}
    matcher.content_signals["search"] = True
    assert matcher.content_signals == {"search": False}
    assert matcher.is_allowed("/x") is False
    assert matcher.explain("/x") == explain(document, "foobot", "/x")
    assert matcher.explain("/x") == matcher.explain("/x/y")
    assert "entries=1" in repr(matcher)
    copy = pickle.loads(pickle.dumps(matcher))
    assert copy.explain("/x/y") == matcher.explain("/x/y")
    assert copy.is_allowed("/y") is True


def test_is_allowed_agrees_with_explain() -> None:
    document = parse("User-agent: *\nDisallow: /a\nAllow: /a/b\n")
    for url in ["/a", "/a/b", "/c", "/robots.txt"]:
        assert is_allowed(document, "bot", url) is explain(document, "bot", url).allowed


def _big_document() -> str:
    lines = ["User-agent: *"]
    for i in range(300):
        lines.append(f"Disallow: /section{i % 7}/item{i}/")
        lines.append(f"Allow: /section{i % 7}/item{i}/public")
        if i % 10 == 0:
            lines.append(f"Disallow: /*?filter{i}=")
            lines.append(f"Disallow: /*.ext{i}$")
    lines.append("Disallow: /")
    return "\n".join(lines)


@pytest.mark.parametrize(
    "path",
    [
        "/section3/item3/",
        "/section3/item3/public/page",
        "/section3/item10/",
        "/section3/item10/x?filter10=1",
        "/other/thing.ext20",
        "/other",
        "/section0/item0/publicity",
        "/s",
        "/",
    ],
)
def test_filed_matcher_agrees_with_a_scan(path: str) -> None:
    # Matchers with many rules file them by prefix; the answer must be the
    # one a plain scan in priority order gives.
    document = parse(_big_document())
    decision = compile(document, "bot").explain(path)
    rules = document.groups[0].rules
    ranked = sorted(
        rules, key=lambda rule: (-len(rule.pattern), not rule.allow, rule.line)
    )
    small = [
        compile(
            parse(f"User-agent: *\n{'Allow' if r.allow else 'Disallow'}: {r.pattern}"),
            "b",
        )
        for r in ranked
    ]
    expected = next(
        (
            rule
            for rule, matcher in zip(ranked, small, strict=True)
            if matcher.explain(path).rule
        ),
        None,
    )
    assert decision.rule is not None
    assert expected is not None
    assert (decision.rule.allow, decision.rule.pattern) == (
        expected.allow,
        expected.pattern,
    )


@pytest.mark.parametrize("profile", PROFILES)
def test_index_html_after_a_wildcard_allows_every_such_directory(profile: str) -> None:
    # Google adds ".../$" with the pattern's own wildcards: "/*/index.html"
    # also allows "/*/$", that is any "/x/".
    body = "User-agent: *\nDisallow: /\nAllow: /*/index.html\n"
    assert decide(body, "/abc/", profile=profile) == Decision(
        True, "rule_allow", Rule(True, "/*/index.html", 3)
    )
    assert decide(body, "/abc/x", profile=profile).allowed is False


@pytest.mark.parametrize("profile", PROFILES)
def test_odd_octets_in_urls_get_an_answer(profile: str) -> None:
    # Lone surrogates (from undecodable input) and non-ASCII text never
    # raise, and only ever match patterns written with the same octets.
    document = parse(b"User-agent: *\nDisallow: /a\nDisallow: /\xff\n", profile=profile)
    matcher = compile(document, "bot")
    assert matcher.is_allowed("/a\udcff") is False
    assert matcher.is_allowed("https://h/b\ud800x") is True
    assert matcher.is_allowed("/ツ") is True
    # The pattern's octet 0xFF: the same octet in the URL matches in the
    # rfc9309 profile; Google compares the URL as given with "/%FF".
    rule = Rule(False, "/\udcff", 3)
    assert matcher.explain("/%FF").rule == rule
    expected = rule if profile == "rfc9309" else None
    assert matcher.explain("/\udcff").rule == expected


def test_decisions_name_their_rule() -> None:
    matcher = compile(parse("User-agent: *\nDisallow: /a\nDisallow: /b\n"), "bot")
    first = matcher.explain("/a")
    assert matcher.explain("/b").rule == Rule(False, "/b", 3)
    assert matcher.explain("/a/x") == first
    other = compile(parse("User-agent: *\nDisallow: /a\n"), "bot")
    assert other.explain("/a") == first
    assert other.explain("/a").rule == Rule(False, "/a", 2)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    "body",
    [
        "",
        "User-agent: *\nDisallow: /x\n",
        "User-agent: foobot\nCrawl-delay: 3\nUser-agent: *\nDisallow: /\n",
        "User-agent: *\nContent-Signal: search=no\nUser-agent: foobot\nAllow: /a\n"
        "Disallow: /\nUser-agent: FooBot/2\nCrawl-delay: 7\nDisallow: /*.pdf$\n",
        "Disallow: /early\nUser-agent: foobot\n",
        "\ufeffUser-agent: *\r\nDisallow: /%61*\r\n\x00junk\n",
    ],
)
def test_unread_document_answers_as_the_read_one(body: str, profile: str) -> None:
    # parse() leaves the groups unread; compile() then reads only those
    # that apply.
    ours = compile(parse(body.encode(), profile=profile), "FooBot/1.0")
    reference = compile(read_document(parse(body, profile=profile)), "FooBot/1.0")
    assert (ours.profile, ours.crawl_delay, ours.content_signals) == (
        reference.profile,
        reference.crawl_delay,
        reference.content_signals,
    )
    for url in ["/", "/x", "/a", "/a.pdf", "/early", "/abc", "/robots.txt"]:
        assert ours.explain(url) == reference.explain(url)


def test_unread_document_is_cut_as_parse_cuts() -> None:
    body = "User-agent: *\nDisallow: /a\n" + "#" * 100 + "\nDisallow: /b\n"
    matcher = compile(parse(body, max_bytes=40), "bot")
    assert matcher.is_allowed("/a") is False
    assert matcher.is_allowed("/b") is True


@pytest.mark.parametrize("profile", PROFILES)
def test_a_hand_built_pattern_with_a_line_break(profile: str) -> None:
    # parse() never makes one; read as a URL carries it, as "%0A".
    rules = (Rule(False, "/a\nb", 1), Rule(True, "/c", 2), Rule(False, "/", 3))
    document = Document(groups=(Group(("*",), rules),), profile=profile)
    matcher = compile(document, "bot")
    assert matcher.explain("/a%0Ab").rule == Rule(False, "/a%0Ab", 1)
    assert matcher.explain("/c").rule == rules[1]
    assert matcher.explain("/a").rule == rules[2]


def test_a_document_keeps_its_matchers() -> None:
    # The natural route is the fast one: asking a document again, however
    # many other documents were asked in between, compiles nothing.
    documents = [parse(f"User-agent: *\nDisallow: /{n}\n") for n in range(100)]
    first = [compile(document, "bot") for document in documents]
    assert all(
        compile(document, "bot") is matcher
        for document, matcher in zip(documents, first, strict=True)
    )
    assert compile(documents[0], "other") is not first[0]


def test_kept_matchers_are_not_part_of_the_document() -> None:
    body = "User-agent: *\nDisallow: /x\nSitemap: https://a/s.xml\n"
    unread = parse(body)
    compile(unread, "bot")
    read = read_document(parse(body))
    assert unread == read
    assert hash(unread) == hash(read)
    again = pickle.loads(pickle.dumps(unread))
    assert again == read
    assert again._matchers == {}
    assert repr(again) == repr(read)
    with pytest.raises(AttributeError):
        unread.profile = "google"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("rules", "url", "line"),
    [
        # Equal once normalised (RFC 9309 2.2.2): Allow wins the tie,
        # whichever comes first and however either is written.
        (["Disallow: /%61", "Allow: /a"], "/a", 3),
        (["Allow: /a", "Disallow: /%61"], "/a", 2),
        (["Disallow: /a", "Allow: /%61"], "/a", 3),
        (["Disallow: /%61*", "Allow: /a*"], "/ab", 3),
        (["Disallow: /*%61$", "Allow: /*a$"], "/xa", 3),
        (["Disallow: /x%2fa", "Allow: /x/a"], "/x/a", 3),
        (["Disallow: /%C3%A9", "Allow: /\u00e9"], "/%c3%a9", 3),
    ],
)
def test_allow_wins_a_tie_of_normalised_patterns(
    rules: list[str], url: str, line: int
) -> None:
    body = "User-agent: *\n" + "\n".join(rules) + "\n"
    decision = compile(parse(body), "bot").explain(url)
    assert decision.allowed
    assert decision.rule is not None
    assert decision.rule.line == line


@pytest.mark.parametrize("profile", PROFILES)
def test_allow_wins_a_tie_of_the_same_pattern(profile: str) -> None:
    for rules in (["Disallow: /a", "Allow: /a"], ["Allow: /a", "Disallow: /a"]):
        body = "User-agent: *\n" + "\n".join(rules) + "\n"
        decision = compile(parse(body, profile=profile), "bot").explain("/a")
        assert decision.allowed


@pytest.mark.parametrize("blank_lines", [10, 40_000, 70_000])
def test_a_rule_far_down_keeps_its_line(blank_lines: int) -> None:
    # Tables take two octets an entry while line numbers fit, more after.
    body = "User-agent: *\n" + "\n" * blank_lines + "Disallow: /a\nAllow: /a/b*\n"
    matcher = compile(parse(body), "bot")
    assert matcher.explain("/a/x").rule == Rule(False, "/a", blank_lines + 2)
    assert matcher.explain("/a/bc").rule == Rule(True, "/a/b*", blank_lines + 3)


# Bodies of one "*" group, where every route selects the same rules: an
# empty Disallow, more rules than Yandex reads, Google's index.html, escapes
# and wildcards.
ROUTE_BODIES = [
    "User-agent: *\nDisallow:\nDisallow: /a\nAllow: /a/b\n",
    "User-agent: *\n" + "".join(f"Disallow: /p{i}\n" for i in range(10_001)),
    "User-agent: *\nAllow: /x/index.html\nDisallow: /x/\nDisallow: /y/index.htm\n",
    "User-agent: *\nDisallow: /%7ea\nDisallow: /*.pdf$\nAllow: /a*b\nDisallow: /ä\n",
]
ROUTE_URLS = [
    "http://a.test/",
    "http://a.test/a",
    "http://a.test/a/b",
    "http://a.test/p5",
    "http://a.test/p10000x",
    "http://a.test/x/",
    "http://a.test/x/index.html",
    "http://a.test/y/",
    "http://a.test/~a",
    "http://a.test/%7Ea",
    "http://a.test/f.pdf",
    "http://a.test/azb",
    "http://a.test/%C3%A4",
]
ROUTE_AGENTS = {"yandex": "Yandex", "bing": "bingbot"}


@pytest.mark.parametrize("profile", sorted(RULES))
@pytest.mark.parametrize("body", ROUTE_BODIES, ids=range(len(ROUTE_BODIES)))
def test_every_route_to_a_matcher_applies_the_profile_rules(
    profile: str, body: str
) -> None:
    # compile() reads the rules for one agent from the text where the
    # profile allows; Matcher() reads the document's groups; the usage
    # tables build theirs from paths.  One factory applies the profile's
    # rules on each: compiling from the text under Yandex once skipped its
    # limit of rules.
    agent = ROUTE_AGENTS.get(profile, "bot")
    routes = [
        compile(parse(body, profile=profile, max_bytes=1 << 20), agent),
        Matcher(parse(body, profile=profile, max_bytes=1 << 20), agent),
    ]
    if "Disallow:\n" not in body:
        # The text route, asked even where compile() takes the other (the
        # one-agent reader leaves empty patterns out).
        text = body_text(body, 1 << 20)
        routes.append(_compile_text(text, profile, agent))
    decisions = [[route.explain(url) for url in ROUTE_URLS] for route in routes]
    assert all(found == decisions[1] for found in decisions)


def test_the_text_route_applies_yandex_s_limit_of_rules() -> None:
    body = ROUTE_BODIES[1]
    matcher = _compile_text(body_text(body, 1 << 20), "yandex", "Yandex")
    assert matcher.explain("http://a.test/p5") == Decision(True, "default_allow", None)
