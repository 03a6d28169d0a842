"""The package's settings, read once per crawl into one frozen object.

:class:`RobotsConfig` holds every ``ROBOTS_*`` setting (and the Scrapy
settings the package derives from), validated by the readers of
:mod:`~scrapy_rfc9309._settings` with their error messages.
:meth:`RobotsConfig.for_crawler` builds it for a crawl once, the first time
a component asks, and hands every component of that crawl the same object:
no component reads the settings itself, and two components never disagree
about a value.

Not read here: ``ROBOTS_ENABLED`` and ``ROBOTSTXT_OBEY``, which
:func:`~scrapy_rfc9309._settings.ensure_enabled` reads before a component
asks for the config (a crawl that turned the package off is not refused
for its other settings); what only a store or the report can check (a
Redis URL for ``ROBOTS_STORE='redis'``, the report's folder) is checked
there, from the values kept here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from ._settings import (
    AGENT_HINT,
    SettingError,
    choice,
    crawl_purposes,
    flag,
    positive_int,
    robots_profile,
    robots_user_agent_from,
    seconds,
    setting,
    text,
)
from .outcome import Lifetimes
from .parse import product_token
from .profiles import selector_for

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["MODES", "REFUSED", "SCOPES", "RobotsConfig"]

#: ``ROBOTS_DIRECTIVES``, ``ROBOTS_USAGE``, ``ROBOTS_TDMREP``.
MODES = ("drop", "annotate", "off")
#: ``ROBOTS_REFUSED``.
REFUSED = ("allow", "disallow")
#: ``ROBOTS_CRAWL_DELAY_SCOPE``.
SCOPES = ("fleet", "process")
#: ``ROBOTS_CRAWL_DELAY_OVER_MAX``.
OVER_MAX = ("clamp", "skip")

# Where the crawl's config is kept: on the crawler, with the spider it was
# read for (the crawl's agent may be the spider's attribute).
_ATTRIBUTE = "_scrapy_rfc9309_config"


@dataclass(frozen=True, slots=True)
class RobotsConfig:
    """The crawl's settings, validated (one field per setting, named after
    it; see docs/settings.md for what each means)."""

    #: The agent whose rules apply (``robots_user_agent`` of the spider,
    #: ``ROBOTS_USER_AGENT``, ``ROBOTSTXT_USER_AGENT``, ``USER_AGENT``).
    user_agent: str
    profile: str
    #: ``ROBOTS_CACHE_LIFETIME``, ``ROBOTS_UNREACHABLE_LIFETIME``,
    #: ``ROBOTS_UNREACHABLE_GRACE``.
    lifetimes: Lifetimes
    max_bytes: int
    max_redirects: int
    ssrf_guard: bool
    #: ``ROBOTS_REFUSED = "allow"``.
    refused_allows: bool
    #: The purposes of the crawl: Content-Signal keys, and aipref
    #: categories (``ROBOTS_PURPOSES``, ``ROBOTS_CONTENT_SIGNALS``).
    purposes: tuple[str, ...]
    usage_purposes: tuple[str, ...]
    crawl_delay: bool
    crawl_delay_max: float
    #: ``ROBOTS_CRAWL_DELAY_OVER_MAX = "skip"``.
    crawl_delay_skip: bool
    #: ``None``: unset (the store decides, see ``crawl_delay_scope``).
    crawl_delay_scope: str | None
    retry_after: bool
    retry_after_max: float
    memory_max_origins: int
    memory_max_bytes: int
    directives: str
    usage: str
    tdmrep: str
    tdmrep_timeout: float
    provenance: bool
    #: As given (placeholders replaced and checked by ``report_path``).
    report: object
    sitemaps: bool
    sitemap_max_bytes: int
    sitemap_max_depth: int
    sitemap_max_per_robotstxt: int
    sitemap_max_requests: int
    sitemap_max_urls_per_robotstxt: int
    sitemap_other_sites: bool
    #: The store's short name or import path, as given.
    store: str
    store_max_entry_bytes: int
    store_prefix: str | None
    store_url: str | None
    #: Scrapy's ``DOWNLOAD_TIMEOUT`` (180 when 0 or unset).
    download_timeout: float
    #: The tries of one download: 1, and Scrapy's ``RETRY_TIMES`` more when
    #: ``RETRY_ENABLED`` (a robots.txt that times out is tried again).
    download_tries: int
    #: Whether the scheduler's queue outlives the crawl: Scrapy's, with a
    #: ``JOBDIR`` (for the resumed crawl); scrapy-redis's, with
    #: ``SCHEDULER_PERSIST`` (for the fleet).
    queue_kept: bool

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> RobotsConfig:
        """The config of ``crawler``'s crawl: read the first time a
        component asks, the same object for every component after.

        Read again only for another spider (``crawler.spider`` set after a
        component was built without one): its agent may differ.
        """
        spider = crawler.spider
        kept: tuple[Spider | None, RobotsConfig] | None = getattr(
            crawler, _ATTRIBUTE, None
        )
        if kept is not None and kept[0] is spider:
            return kept[1]
        config = cls.from_settings(crawler.settings, spider)
        setattr(crawler, _ATTRIBUTE, (spider, config))
        return config

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, spider: Spider | None = None
    ) -> RobotsConfig:
        """Read and validate ``settings`` (:class:`SettingError` naming the
        first bad one); ``spider`` may name the agent."""
        user_agent, source = robots_user_agent_from(settings, spider)
        lifetimes = Lifetimes(
            cache=seconds(settings, "ROBOTS_CACHE_LIFETIME"),
            unreachable=seconds(settings, "ROBOTS_UNREACHABLE_LIFETIME"),
            grace=seconds(settings, "ROBOTS_UNREACHABLE_GRACE"),
        )
        profile = robots_profile(settings)
        try:
            selector_for(profile, product_token(user_agent))
        except ValueError as exc:
            # A bounded profile answering for another agent would answer
            # under the wrong semantics.
            named = f"{source} {user_agent!r}"
            if not source.isupper():  # not a setting: the spider's attribute
                named = f"{source}, {user_agent!r},"
            raise SettingError(
                f"{named} does not suit ROBOTS_PROFILE {profile!r}: {exc}"
                + (AGENT_HINT if source in ("USER_AGENT", "the default agent") else "")
            ) from None
        purposes, usage_purposes = crawl_purposes(settings)
        timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0) or 180.0
        retries = (
            settings.getint("RETRY_TIMES") if settings.getbool("RETRY_ENABLED") else 0
        )
        return cls(
            user_agent=user_agent,
            profile=profile,
            lifetimes=lifetimes,
            max_bytes=positive_int(settings, "ROBOTS_MAX_BYTES", minimum=1),
            max_redirects=positive_int(settings, "ROBOTS_MAX_REDIRECTS", minimum=0),
            ssrf_guard=flag(settings, "ROBOTS_SSRF_GUARD"),
            refused_allows=choice(settings, "ROBOTS_REFUSED", REFUSED) == "allow",
            purposes=purposes,
            usage_purposes=usage_purposes,
            crawl_delay=flag(settings, "ROBOTS_CRAWL_DELAY"),
            crawl_delay_max=seconds(settings, "ROBOTS_CRAWL_DELAY_MAX"),
            crawl_delay_skip=choice(settings, "ROBOTS_CRAWL_DELAY_OVER_MAX", OVER_MAX)
            == "skip",
            crawl_delay_scope=_scope(settings),
            retry_after=flag(settings, "ROBOTS_RETRY_AFTER"),
            retry_after_max=seconds(settings, "ROBOTS_RETRY_AFTER_MAX"),
            memory_max_origins=_count(settings, "ROBOTS_MEMORY_MAX_ORIGINS", 1),
            memory_max_bytes=_count(settings, "ROBOTS_MEMORY_MAX_BYTES", 1),
            directives=choice(settings, "ROBOTS_DIRECTIVES", MODES),
            usage=choice(settings, "ROBOTS_USAGE", MODES),
            tdmrep=choice(settings, "ROBOTS_TDMREP", MODES),
            tdmrep_timeout=seconds(settings, "ROBOTS_TDMREP_TIMEOUT", positive=True),
            provenance=flag(settings, "ROBOTS_PROVENANCE"),
            report=setting(settings, "ROBOTS_REPORT"),
            sitemaps=flag(settings, "ROBOTS_SITEMAPS"),
            sitemap_max_bytes=_count(settings, "ROBOTS_SITEMAP_MAX_BYTES", 1),
            sitemap_max_depth=_count(settings, "ROBOTS_SITEMAP_MAX_DEPTH", 1),
            sitemap_max_per_robotstxt=_count(
                settings, "ROBOTS_SITEMAP_MAX_PER_ROBOTSTXT", 0
            ),
            sitemap_max_requests=_count(settings, "ROBOTS_SITEMAP_MAX_REQUESTS", 0),
            sitemap_max_urls_per_robotstxt=_count(
                settings, "ROBOTS_SITEMAP_MAX_URLS_PER_ROBOTSTXT", 0
            ),
            sitemap_other_sites=flag(settings, "ROBOTS_SITEMAP_OTHER_SITES"),
            store=str(setting(settings, "ROBOTS_STORE")).strip(),
            store_max_entry_bytes=_count(settings, "ROBOTS_STORE_MAX_ENTRY_BYTES", 1),
            store_prefix=text(settings, "ROBOTS_STORE_PREFIX"),
            store_url=text(settings, "ROBOTS_STORE_URL"),
            download_timeout=timeout,
            download_tries=1 + max(retries, 0),
            queue_kept=_queue_kept(settings),
        )


def _queue_kept(settings: BaseSettings) -> bool:
    """Whether the scheduler's queue outlives the crawl: scrapy-redis's
    with ``SCHEDULER_PERSIST`` (it reads no ``JOBDIR``), any other with a
    ``JOBDIR`` (Scrapy's disk queues; ``SCHEDULER_PERSIST`` is not its)."""
    scheduler = settings.get("SCHEDULER")
    try:
        loaded = load_object(scheduler) if isinstance(scheduler, str) else scheduler
        modules = [each.__module__ for each in loaded.__mro__]
    except Exception:  # Scrapy refuses it itself
        modules = [str(scheduler)]
    if any(module.partition(".")[0] == "scrapy_redis" for module in modules):
        return settings.getbool("SCHEDULER_PERSIST")
    return bool(settings.get("JOBDIR"))


def _count(settings: BaseSettings, name: str, minimum: int) -> int:
    return positive_int(settings, name, minimum=minimum)


def _scope(settings: BaseSettings) -> str | None:
    value = setting(settings, "ROBOTS_CRAWL_DELAY_SCOPE")
    if value is None or value == "":
        return None
    return choice(settings, "ROBOTS_CRAWL_DELAY_SCOPE", SCOPES)
