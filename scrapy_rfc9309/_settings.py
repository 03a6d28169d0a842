"""Reading the package's settings, shared by every Scrapy component."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

from scrapy.exceptions import NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES

from ._defaults import DEFAULTS

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# The crawls whose "ROBOTSTXT_OBEY = False" was logged: one line per crawl,
# whichever of the package's components is built first.
_told: WeakSet[Crawler] = WeakSet()


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


def ensure_enabled(crawler: Crawler, *, quiet: bool = False) -> None:
    """Raise ``NotConfigured`` when robots.txt handling is switched off.

    ``ROBOTS_ENABLED`` off, or ``ROBOTSTXT_OBEY = False`` set above the
    project's settings (``-s`` on the command line, a spider's
    ``custom_settings``).  At project priority ``ROBOTSTXT_OBEY`` is what
    Scrapy's project template wrote for its built-in middleware: enabling
    this package is the consent that counts there.  ``quiet``: no reason
    for Scrapy to log at WARNING when ``ROBOTS_ENABLED`` is off.
    """
    settings = crawler.settings
    if not settings.getbool("ROBOTS_ENABLED", setting(settings, "ROBOTS_ENABLED")):
        raise NotConfigured() if quiet else NotConfigured("ROBOTS_ENABLED is off")
    priority = settings.getpriority("ROBOTSTXT_OBEY")
    if (
        priority is not None
        and priority > SETTINGS_PRIORITIES["project"]
        and not settings.getbool("ROBOTSTXT_OBEY")
    ):
        if crawler not in _told:
            _told.add(crawler)
            names = [k for k, v in SETTINGS_PRIORITIES.items() if v == priority]
            logger.info(
                "ROBOTSTXT_OBEY = False (%(source)s settings): robots.txt is"
                " neither fetched nor obeyed in this crawl",
                {"source": names[0] if names else f"priority {priority}"},
                extra={"crawler": crawler},
            )
        # No message: Scrapy would log it again, per component, at WARNING.
        raise NotConfigured
