"""Reading the package's settings, shared by every Scrapy component."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._defaults import DEFAULTS

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.settings import BaseSettings


def setting(settings: BaseSettings, name: str) -> Any:
    """The value of ``name``, or its package default when it is not set."""
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


def positive_int(settings: BaseSettings, name: str, *, minimum: int) -> int:
    """``name`` as an integer of at least ``minimum``; ``ValueError``
    otherwise, since crawling on with a setting ignored would be wrong."""
    value = setting(settings, name)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise ValueError(
            f"{name} must be an integer of at least {minimum}, not {value!r}"
        )
    return number


def robots_user_agent(settings: BaseSettings, spider: Spider | None = None) -> str:
    """The agent whose robots.txt rules apply to this crawl.

    A spider attribute ``robots_user_agent`` wins, then ``ROBOTS_USER_AGENT``,
    ``ROBOTSTXT_USER_AGENT`` and ``USER_AGENT``; its product token is what is
    matched against ``User-agent`` lines.
    """
    for value in (
        getattr(spider, "robots_user_agent", None),
        settings.get("ROBOTS_USER_AGENT"),
        settings.get("ROBOTSTXT_USER_AGENT"),
        settings.get("USER_AGENT"),
    ):
        if value:
            return str(value)
    return "*"
