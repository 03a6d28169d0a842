"""How a robots.txt (or TDMRep) request is routed: as the page request that
needed it (:data:`ROUTING_META`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.settings import BaseSettings

#: The request meta keys that route a robots.txt request, every hop of it,
#: as the page request that needed it: the same proxy (with the page's
#: ``Proxy-Authorization`` header), the same downloader slot, the same local
#: address.  Never the site's credentials (``http_user``, ``http_pass``,
#: ``Authorization``) nor cookies: a robots.txt may redirect to another
#: origin, and one page's are not every page's.  A page sent through Zyte
#: API by scrapy-zyte-api (its ``zyte_api`` or ``zyte_api_automap`` meta, or
#: its transparent mode) has its robots.txt sent through it too
#: (``zyte_api_automap``: the raw body, with the page's ``geolocation`` and
#: ``ipType``; see :class:`ZyteApi`).
ROUTING_META = ("proxy", "download_slot", "bindaddress")

# The Zyte API parameters that say where from, not what, a page is fetched.
_ZYTE_API_ROUTING = ("geolocation", "ipType")


@dataclass(frozen=True)
class ZyteApi:
    """What scrapy-zyte-api's settings do to every request: send it through
    Zyte API unless its meta says not (``ZYTE_API_TRANSPARENT_MODE``), and
    ask for what ``ZYTE_API_AUTOMAP_PARAMS`` says, which a robots.txt
    request unsets (``None``) but where from: a browser's rendering of the
    file, a screenshot, actions are no robots.txt.  A page sent with
    ``zyte_api`` is fetched from where ``ZYTE_API_DEFAULT_PARAMS`` says
    (``raw_where``), its robots.txt alike."""

    transparent: bool = False
    unset: Mapping[str, None] = field(default_factory=dict)
    #: Where from ``ZYTE_API_AUTOMAP_PARAMS`` and ``ZYTE_API_DEFAULT_PARAMS``
    #: fetch every request (``geolocation``, ``ipType``).
    automap_where: Mapping[str, Any] = field(default_factory=dict)
    raw_where: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ZyteApi:
        try:
            transparent = settings.getbool("ZYTE_API_TRANSPARENT_MODE")
            automap = _defaults(settings, "ZYTE_API_AUTOMAP_PARAMS")
            raw = _defaults(settings, "ZYTE_API_DEFAULT_PARAMS")
        except (TypeError, ValueError):  # scrapy-zyte-api refuses them itself
            return cls()
        unset = {key: None for key in automap if key not in _ZYTE_API_ROUTING}
        return cls(transparent, unset, _where(automap), _where(raw))

    def raw_body(self) -> dict[str, Any]:
        """The meta of a request of the package that is no page's (a
        sitemap): through Zyte API in its transparent mode, for the raw
        body, what ``ZYTE_API_AUTOMAP_PARAMS`` renders unset."""
        if self.transparent and self.unset:
            return {"zyte_api_automap": dict(self.unset)}
        return {}


def _defaults(settings: BaseSettings, name: str) -> dict[str, Any]:
    # Without the empty values scrapy-zyte-api drops (with a warning):
    # unsetting them would warn on every robots.txt request.
    params = settings.getdict(name)
    return {key: value for key, value in params.items() if value not in (None, {})}


def _where(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: params[key] for key in _ZYTE_API_ROUTING if key in params}


def routing(
    request: Request | None, zyte_api: ZyteApi = ZyteApi()
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The meta and headers routing a robots.txt request as ``request``
    (see :data:`ROUTING_META`), under scrapy-zyte-api's ``zyte_api``
    settings."""
    meta = {} if request is None else request.meta
    routed = {key: meta[key] for key in ROUTING_META if key in meta}
    automap = _zyte_api(meta, zyte_api)
    if automap is not None:
        routed["zyte_api_automap"] = automap
    if meta.get("_scheme_proxy"):
        # HttpProxyMiddleware's pick from the environment for the page's
        # scheme (a retry's): it picks for each robots.txt hop alike.
        routed.pop("proxy", None)
    headers = {}
    authorization = (
        None if request is None else request.headers.get(b"Proxy-Authorization")
    )
    if routed.get("proxy") and authorization:
        headers["Proxy-Authorization"] = authorization
    return routed, headers


def _zyte_api(
    meta: Mapping[str, Any], zyte_api: ZyteApi
) -> bool | dict[str, Any] | None:
    """The ``zyte_api_automap`` of a robots.txt for a page whose ``meta``
    says how the page goes, as scrapy-zyte-api reads it: through Zyte API
    with ``zyte_api`` (a dict, ``{}`` its defaults, or ``True``), else with
    ``zyte_api_automap`` (the transparent mode's default) other than
    ``False``.  Through it, the raw body from where the page is fetched;
    else not through it (``False``), or nothing to say (``None``)."""
    raw = meta.get("zyte_api", False)
    where: dict[str, Any] = {}
    if raw is not False and (raw or raw == {}):
        params = raw
        # Where ZYTE_API_DEFAULT_PARAMS sends the page, not where the
        # automap defaults would send its robots.txt.
        where = dict.fromkeys(zyte_api.automap_where)
        if meta.get("zyte_api_default_params", True) is not False:
            where.update(zyte_api.raw_where)
    else:
        params = meta.get("zyte_api_automap", zyte_api.transparent)
        if params is False:
            return False if "zyte_api_automap" in meta or "zyte_api" in meta else None
    if isinstance(params, Mapping):
        where.update(_where(params))
    return {**zyte_api.unset, **where} or True
