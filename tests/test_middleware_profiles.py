"""The yandex and bing profiles in real crawls: the start-up check of the
agent and the status policy (docs/profiles.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.crawl_helpers import crawl, make_crawler, stats
from tests.support.server import Server
from tests.support.utils import coroutine_test
from tests.test_profiles import OVERSIZE


def _settings(profile: str, agent: str) -> dict[str, Any]:
    return {"ROBOTS_PROFILE": profile, "ROBOTS_USER_AGENT": agent}


@coroutine_test
async def test_start_up_refuses_an_agent_the_profile_does_not_answer_for() -> None:
    crawler = make_crawler(_settings("yandex", "YandexBot/3.0"))
    with pytest.raises(ValueError, match=r"ROBOTS_USER_AGENT 'YandexBot/3\.0'.*yandex"):
        await crawler.crawl_async(urls=[])


@pytest.mark.parametrize(
    ("profile", "agent", "status", "crawled"),
    [
        ("yandex", "Yandex", 503, True),
        ("yandex", "Yandex", 206, True),
        ("rfc9309", "Yandex", 503, False),
        ("bing", "bingbot", 503, False),
        ("bing", "bingbot", 200, False),
    ],
)
@coroutine_test
async def test_crawl_follows_the_status_policy(
    server: Server, profile: str, agent: str, status: int, crawled: bool
) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /\n", status=status)
    crawler = await crawl([server.url("/a")], _settings(profile, agent))
    assert (crawler.spider.crawled == [server.url("/a")]) is crawled
    assert stats(crawler)["robots/fetch_count"] == 1


@coroutine_test
async def test_crawl_yandex_oversize_body_allows_all(server: Server) -> None:
    server.route("/robots.txt", OVERSIZE)
    crawler = await crawl([server.url("/a")], _settings("yandex", "Yandex"))
    assert crawler.spider.crawled == [server.url("/a")]
    assert stats(crawler)["robots/outcome/unavailable"] == 1
