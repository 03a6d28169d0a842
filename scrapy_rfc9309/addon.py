"""The add-on: ``ADDONS = {"scrapy_rfc9309.Addon": 100}``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import version_info
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.misc import load_object

from ._defaults import DEFAULTS
from .middleware import RobotsMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["Addon"]

#: Where the built-in RobotsTxtMiddleware sits, so robots.txt is obeyed at
#: the same point of the downloader middleware chain.
DOWNLOADER_PRIORITY = 100
#: Spider middleware order: after HttpErrorMiddleware (50) has dropped error
#: responses, before Referer (700), UrlLength (800) and Depth (900) see the
#: follow-up requests of a page.
SPIDER_PRIORITY = 550
#: Scrapy's RobotsTxtMiddleware as DOWNLOADER_MIDDLEWARES_BASE names it.
BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
# By import path: the add-on does not need the spider middleware's module.
DIRECTIVES_MIDDLEWARE = "scrapy_rfc9309.spidermiddleware.DirectivesMiddleware"
SITEMAPS_MIDDLEWARE = "scrapy_rfc9309.sitemaps.SitemapsMiddleware"
USAGE_MIDDLEWARE = "scrapy_rfc9309.usagemiddleware.UsageMiddleware"
LICENSES_MIDDLEWARE = "scrapy_rfc9309.licensemiddleware.LicensesMiddleware"
TDM_MIDDLEWARE = "scrapy_rfc9309.tdmmiddleware.TdmMiddleware"
TDM_ITEMS_MIDDLEWARE = "scrapy_rfc9309.tdmmiddleware.TdmItemsMiddleware"
#: Right after RobotsMiddleware: the TDMRep file is read for the requests
#: robots.txt lets through.
TDM_PRIORITY = 105
PACING_MIDDLEWARE = "scrapy_rfc9309.politeness.PacingMiddleware"
#: Last in the downloader middleware chain: after HttpCacheMiddleware (900),
#: so a cached response never waits, and after whatever picks a request's
#: downloader slot (proxy rotation at 600-800, scrapy-zyte-api at 1000).
PACING_PRIORITY = 1_000_000
PROVENANCE_MIDDLEWARE = "scrapy_rfc9309.provenancemiddleware.ProvenanceMiddleware"
#: Nearer the engine than the middlewares judging items: it records (and
#: counts) only the items they kept.
PROVENANCE_PRIORITY = 530
#: Beside DirectivesMiddleware: both judge the items of a page.
USAGE_PRIORITY = 560
#: Beside them: it only records.
LICENSES_PRIORITY = 570
#: Beside them too: it judges the items of a page.
TDM_ITEMS_PRIORITY = 565
#: Near the spider (after Depth, 900): the sitemap requests it puts in place
#: of a SitemapSpider's robots.txt start requests pass every other one.
SITEMAPS_PRIORITY = 950


class Addon:
    """Enable scrapy-rfc9309 in one line.

    Writes the package's defaults at ``"addon"`` priority (project and spider
    settings still win), removes Scrapy's ``RobotsTxtMiddleware`` from the
    chain whatever ``ROBOTSTXT_OBEY`` says, and installs
    :class:`~scrapy_rfc9309.RobotsMiddleware`,
    :class:`~scrapy_rfc9309.DirectivesMiddleware`,
    :class:`~scrapy_rfc9309.usagemiddleware.UsageMiddleware`,
    :class:`~scrapy_rfc9309.licensemiddleware.LicensesMiddleware`,
    :class:`~scrapy_rfc9309.tdmmiddleware.TdmMiddleware` and
    :class:`~scrapy_rfc9309.tdmmiddleware.TdmItemsMiddleware` (TDMRep, for a
    text and data mining crawl),
    :class:`~scrapy_rfc9309.politeness.PacingMiddleware` (last in the
    downloader middleware chain) and
    :class:`~scrapy_rfc9309.sitemaps.SitemapsMiddleware` and
    :class:`~scrapy_rfc9309.ProvenanceMiddleware` unless the project placed
    (or disabled, with ``None``) them itself.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            settings.set(name, value, "addon")
        # Scrapy's project template sets ROBOTSTXT_OBEY = True at project
        # priority, which an add-on cannot override; taking the built-in out
        # of the chain keeps it from fetching robots.txt a second time and
        # from judging requests by its own, different rules.
        _disable(settings, "DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware)
        if version_info < (2, 15):
            # Scrapy 2.13 and 2.14 tell a class from its import path, the key of
            # DOWNLOADER_MIDDLEWARES_BASE: the built-in is named that way too.
            _set(settings, "DOWNLOADER_MIDDLEWARES", BUILTIN_MIDDLEWARE, None)
        _setdefault(
            settings, "DOWNLOADER_MIDDLEWARES", RobotsMiddleware, DOWNLOADER_PRIORITY
        )
        _setdefault(
            settings, "DOWNLOADER_MIDDLEWARES", PACING_MIDDLEWARE, PACING_PRIORITY
        )
        _setdefault(
            settings, "SPIDER_MIDDLEWARES", DIRECTIVES_MIDDLEWARE, SPIDER_PRIORITY
        )
        _setdefault(settings, "SPIDER_MIDDLEWARES", USAGE_MIDDLEWARE, USAGE_PRIORITY)
        _setdefault(
            settings, "SPIDER_MIDDLEWARES", LICENSES_MIDDLEWARE, LICENSES_PRIORITY
        )
        _setdefault(
            settings, "SPIDER_MIDDLEWARES", SITEMAPS_MIDDLEWARE, SITEMAPS_PRIORITY
        )
        _setdefault(settings, "DOWNLOADER_MIDDLEWARES", TDM_MIDDLEWARE, TDM_PRIORITY)
        _setdefault(
            settings, "SPIDER_MIDDLEWARES", TDM_ITEMS_MIDDLEWARE, TDM_ITEMS_PRIORITY
        )
        _setdefault(
            settings, "SPIDER_MIDDLEWARES", PROVENANCE_MIDDLEWARE, PROVENANCE_PRIORITY
        )


def _set(
    settings: BaseSettings, name: str, path: type | str, priority: int | None
) -> None:
    """Set the priority of ``path`` (a class, or its import path) in the
    component priority dict ``name``."""
    components: dict[Any, Any] = settings.getdict(name)
    components[path] = priority
    settings.set(name, components, settings.getpriority(name) or 0)


def _setdefault(
    settings: BaseSettings, name: str, component: type | str, priority: int
) -> None:
    """Place ``component`` (a class, or its import path) in the component
    priority dict ``name`` at ``priority``, unless the project placed (or
    disabled) it, or placed a subclass of it (one it disabled, ``None``,
    leaves the component to be placed: else nothing would obey robots.txt)."""
    path = component
    if isinstance(path, type):
        path = f"{path.__module__}.{path.__qualname__}"
    for key, value in settings.getdict(name).items():
        placed = _loaded(key)
        if not isinstance(placed, type):
            continue
        names = [f"{each.__module__}.{each.__qualname__}" for each in placed.__mro__]
        if names[0] == path or (value is not None and path in names):
            return
    _set(settings, name, component, priority)


def _disable(settings: BaseSettings, name: str, cls: type) -> None:
    """``set_in_component_priority_dict(name, cls, None)``, which imports
    every key: a plug-in the project disabled, then uninstalled, would stop
    a crawl that Scrapy runs."""
    components: dict[Any, Any] = settings.getdict(name)
    for key in list(components):
        if isinstance(key, str) and _loaded(key) is cls:
            del components[key]
    components[cls] = None
    settings.set(name, components, settings.getpriority(name) or 0)


def _loaded(key: Any) -> Any:
    """The component ``key`` names: itself, or what its import path gives;
    ``None`` when that does not import (a plug-in disabled, then
    uninstalled: Scrapy runs without it)."""
    if not isinstance(key, str):
        return key
    try:
        return load_object(key)
    except (ImportError, AttributeError, ValueError, NameError):
        return None
