"""Purpose-aware crawling (``ROBOTS_CONTENT_SIGNALS``), in real crawls.

A crawl declares what its data is for; an origin whose robots.txt, in the
groups that apply to the crawl's agent, says ``no`` to one of those purposes
is not crawled.  ``yes``, a missing key or another value does not stop it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from scrapy import Request

from tests.support.crawl_helpers import RecordingSpider, crawl
from tests.support.crawl_helpers import stats as all_stats
from tests.support.server import Server
from tests.support.utils import coroutine_test

MakeServer = Callable[..., Server]
# The crawl's agent (BASE_SETTINGS) is TestBot/1.0: its token is "testbot".
AI_TRAIN = {"ROBOTS_CONTENT_SIGNALS": {"ai-train": True}}
SEARCH = {"ROBOTS_CONTENT_SIGNALS": {"search": True}}
CLOUDFLARE = "User-Agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n"


def _urls(server: Server, count: int = 3) -> list[str]:
    return [server.url(f"/p{i}") for i in range(count)]


def _forbidden(count: int, cause: str = "content_signal") -> dict[str, int]:
    return {"robots/forbidden": count, f"robots/forbidden/{cause}": count}


PARSED_ONCE = {"robots/fetch_count": 1, "robots/outcome/parsed": 1}


def stats(crawler: Any) -> dict[str, Any]:
    """robots.txt's stats: a training crawl also reads each origin's TDMRep
    file (``robots/tdm/*``, counted in tests/test_tdmrep_crawl.py)."""
    return {
        key: value
        for key, value in all_stats(crawler).items()
        if not key.startswith("robots/tdm/")
    }


@coroutine_test
async def test_ai_train_no_stops_an_ai_training_crawl(server: Server) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    crawler = await crawl(_urls(server), AI_TRAIN)
    assert crawler.spider.crawled == []
    assert stats(crawler) == {**PARSED_ONCE, **_forbidden(3)}
    # robots.txt only: not one page was requested.
    assert [hit.path for hit in server.hits] == ["/robots.txt"]
    for dropped in crawler.spider.dropped.values():
        assert dropped.cause == "content_signal"
        assert dropped.origin == server.url("/robots.txt")
        assert not dropped.decision.allowed


@coroutine_test
async def test_ai_train_no_does_not_stop_a_search_crawl(server: Server) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    crawler = await crawl(_urls(server), SEARCH)
    assert sorted(crawler.spider.crawled) == _urls(server)
    assert stats(crawler) == PARSED_ONCE


@coroutine_test
async def test_no_declared_purpose_means_no_content_signal_check(
    server: Server,
) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    crawler = await crawl(_urls(server))
    assert sorted(crawler.spider.crawled) == _urls(server)
    assert stats(crawler) == PARSED_ONCE


@coroutine_test
async def test_a_purpose_set_false_is_not_in_use(server: Server) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    crawler = await crawl(
        _urls(server),
        {"ROBOTS_CONTENT_SIGNALS": {"ai-train": False, "search": True}},
    )
    assert sorted(crawler.spider.crawled) == _urls(server)
    assert stats(crawler) == PARSED_ONCE


@pytest.mark.parametrize(
    ("robots", "purposes"),
    [
        # yes to the purpose in use
        ("Content-Signal: ai-train=yes\n", {"ai-train": True}),
        (
            "Content-Signal: search=yes, ai-input=yes, ai-train=yes\n",
            {"ai-input": True},
        ),
        # the key missing: other purposes refused, not this one
        ("Content-Signal: search=no, ai-input=no\n", {"ai-train": True}),
        ("Content-Signal: ai-train=no\n", {"search": True, "ai-input": True}),
        # no Content-Signal at all
        ("Disallow: /private\n", {"ai-train": True, "search": True}),
        # a value that is neither yes nor no refuses nothing
        ("Content-Signal: ai-train=maybe\n", {"ai-train": True}),
        # not key=value: ignored
        ("Content-Signal: ai-train\n", {"ai-train": True}),
    ],
)
@coroutine_test
async def test_yes_missing_and_other_values_do_not_stop_the_crawl(
    server: Server, robots: str, purposes: dict[str, bool]
) -> None:
    server.route("/robots.txt", f"User-agent: *\n{robots}")
    crawler = await crawl(_urls(server), {"ROBOTS_CONTENT_SIGNALS": purposes})
    assert sorted(crawler.spider.crawled) == _urls(server)
    assert stats(crawler) == PARSED_ONCE


@pytest.mark.parametrize(
    ("robots", "purposes"),
    [
        (
            "Content-Signal: search=yes, ai-train=no\n",
            {"search": True, "ai-train": True},
        ),
        ("Content-Signal: ai-input=no\n", {"ai-input": True}),
        ("Content-Signal: search=no\n", {"search": True}),
        # keys and values are case-insensitive, on both sides
        ("Content-Signal: AI-Train=No\n", {"ai-train": True}),
        ("Content-Signal: ai-train=no\n", {"AI-TRAIN": True}),
        # a key nobody standardised yet is kept and obeyed
        ("Content-Signal: ai-agents=no\n", {"ai-agents": True}),
        # two lines in one group, and a no elsewhere in the line
        (
            "Content-Signal: search=yes\nContent-Signal: ai-train=no\n",
            {"ai-train": True},
        ),
    ],
)
@coroutine_test
async def test_no_to_a_purpose_in_use_stops_the_crawl(
    server: Server, robots: str, purposes: dict[str, bool]
) -> None:
    server.route("/robots.txt", f"User-agent: *\n{robots}Allow: /\n")
    crawler = await crawl(_urls(server), {"ROBOTS_CONTENT_SIGNALS": purposes})
    assert crawler.spider.crawled == []
    assert stats(crawler) == {**PARSED_ONCE, **_forbidden(3)}


@pytest.mark.parametrize(
    ("robots", "stopped"),
    [
        # the signal is in another agent's group: not ours
        (
            "User-agent: otherbot\nContent-Signal: ai-train=no\nAllow: /\n\n"
            "User-agent: *\nAllow: /\n",
            False,
        ),
        # our own group has no signal, so the * group's does not apply
        (
            "User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n\n"
            "User-agent: testbot\nAllow: /\n",
            False,
        ),
        # our own group says no
        (
            "User-agent: testbot\nContent-Signal: ai-train=no\nAllow: /\n\n"
            "User-agent: *\nAllow: /\n",
            True,
        ),
        # no rule before the next user-agent line: one group for both
        # agents (RFC 9309: only a user-agent line after a rule starts a
        # new group), so otherbot's signal is ours too
        (
            "User-agent: otherbot\nContent-Signal: ai-train=no\n\n"
            "User-agent: *\nAllow: /\n",
            True,
        ),
        # our group, named among others
        (
            "User-agent: otherbot\nUser-agent: TestBot\nContent-Signal: ai-train=no\n",
            True,
        ),
        # two groups of ours are merged; no wins
        (
            "User-agent: testbot\nContent-Signal: ai-train=yes\nAllow: /a\n\n"
            "User-agent: testbot\nContent-Signal: ai-train=no\nAllow: /b\n",
            True,
        ),
        # only the * group, which applies to every agent
        ("User-agent: *\nContent-Signal: ai-train=no\n", True),
    ],
)
@coroutine_test
async def test_only_the_groups_of_the_crawls_agent_apply(
    server: Server, robots: str, stopped: bool
) -> None:
    server.route("/robots.txt", robots)
    crawler = await crawl(_urls(server), AI_TRAIN)
    if stopped:
        assert crawler.spider.crawled == []
        assert stats(crawler) == {**PARSED_ONCE, **_forbidden(3)}
    else:
        assert sorted(crawler.spider.crawled) == _urls(server)
        assert stats(crawler) == PARSED_ONCE


@coroutine_test
async def test_robots_user_agent_decides_which_group_applies(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-agent: trainer\nContent-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n",
    )
    crawler = await crawl(
        _urls(server), {**AI_TRAIN, "ROBOTS_USER_AGENT": "Trainer/2.0"}
    )
    assert crawler.spider.crawled == []
    assert stats(crawler) == {**PARSED_ONCE, **_forbidden(3)}


@coroutine_test
async def test_only_the_refusing_origin_is_skipped(make_server: MakeServer) -> None:
    refusing, agreeing, silent = make_server(), make_server(), make_server()
    refusing.route("/robots.txt", CLOUDFLARE)
    agreeing.route("/robots.txt", "User-agent: *\nContent-Signal: ai-train=yes\n")
    silent.route("/robots.txt", "", status=404)
    urls = _urls(refusing, 2) + _urls(agreeing, 2) + _urls(silent, 2)
    crawler = await crawl(urls, AI_TRAIN)
    assert sorted(crawler.spider.crawled) == sorted(
        _urls(agreeing, 2) + _urls(silent, 2)
    )
    assert sorted(crawler.spider.dropped) == _urls(refusing, 2)
    assert stats(crawler) == {
        "robots/fetch_count": 3,
        "robots/outcome/parsed": 2,
        "robots/outcome/unavailable": 1,
        **_forbidden(2),
    }


@coroutine_test
async def test_rules_are_judged_before_content_signals(server: Server) -> None:
    server.route(
        "/robots.txt",
        "User-agent: *\nDisallow: /private\nContent-Signal: ai-train=no\n",
    )
    urls = [server.url("/private/a"), server.url("/public/a"), server.url("/public/b")]
    crawler = await crawl(urls, AI_TRAIN)
    assert crawler.spider.crawled == []
    causes = {url: error.cause for url, error in crawler.spider.dropped.items()}
    assert causes == {
        urls[0]: "rule",
        urls[1]: "content_signal",
        urls[2]: "content_signal",
    }
    assert stats(crawler) == {
        **PARSED_ONCE,
        "robots/forbidden": 3,
        "robots/forbidden/rule": 1,
        "robots/forbidden/content_signal": 2,
    }


class Bypassing(RecordingSpider):
    name = "bypassing"

    async def start(self) -> AsyncIterator[Request]:
        for url in self.urls:
            yield Request(url, meta={"dont_obey_robotstxt": True})


@coroutine_test
async def test_dont_obey_robotstxt_skips_the_content_signal_check(
    server: Server,
) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    crawler = await crawl(_urls(server), AI_TRAIN, Bypassing)
    assert sorted(crawler.spider.crawled) == _urls(server)
    assert server.count("/robots.txt") == 0
    assert stats(crawler) == {}


@coroutine_test
async def test_sitemaps_of_a_refusing_origin_are_not_crawled(
    make_server: MakeServer,
) -> None:
    refusing, other = make_server(), make_server()
    refusing.route(
        "/robots.txt",
        f"{CLOUDFLARE}Sitemap: /sitemap.xml\nSitemap: {other.url('/sitemap.xml')}\n",
    )
    sitemap = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{other.url('/listed')}</loc></url></urlset>"
    )
    other.route("/sitemap.xml", sitemap, headers={"Content-Type": "application/xml"})
    crawler = await crawl(
        [refusing.url("/start")],
        # The other origin's sitemap is on another site: followed by request.
        {**AI_TRAIN, "ROBOTS_SITEMAPS": True, "ROBOTS_SITEMAP_OTHER_SITES": True},
    )
    # Its own sitemap is one of its URLs; the other origin's is not.
    assert refusing.count("/sitemap.xml") == 0
    assert crawler.spider.crawled == [other.url("/listed")]
    assert stats(crawler) == {
        "robots/fetch_count": 2,
        "robots/outcome/parsed": 2,
        "robots/sitemaps/discovered": 2,
        **_forbidden(2),
    }


@coroutine_test
async def test_purposes_given_as_json_on_the_command_line(server: Server) -> None:
    server.route("/robots.txt", CLOUDFLARE)
    # As ``scrapy crawl -s ROBOTS_CONTENT_SIGNALS='{"ai-train": true}'`` gives it.
    crawler = await crawl(
        _urls(server), {"ROBOTS_CONTENT_SIGNALS": '{"ai-train": true}'}
    )
    assert crawler.spider.crawled == []
    assert stats(crawler) == {**PARSED_ONCE, **_forbidden(3)}


@pytest.mark.parametrize("value", [["ai-train"], "ai-train", 1])
@coroutine_test
async def test_purposes_not_a_dict_are_a_clear_error(
    server: Server, value: Any
) -> None:
    with pytest.raises(ValueError, match="ROBOTS_CONTENT_SIGNALS"):
        await crawl(_urls(server), {"ROBOTS_CONTENT_SIGNALS": value})
    assert server.hits == []
