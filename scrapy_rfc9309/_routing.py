"""How a robots.txt (or TDMRep) request is routed: as the page request that
needed it (:data:`ROUTING_META`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request

#: The request meta keys that route a robots.txt request, every hop of it,
#: as the page request that needed it: the same proxy (with the page's
#: ``Proxy-Authorization`` header), the same downloader slot, the same local
#: address.  Never the site's credentials (``http_user``, ``http_pass``,
#: ``Authorization``) nor cookies: a robots.txt may redirect to another
#: origin, and one page's are not every page's.  A page sent through Zyte
#: API by scrapy-zyte-api's ``zyte_api`` or ``zyte_api_automap`` meta has
#: its robots.txt sent through it too (``zyte_api_automap``: the raw body,
#: with the page's ``geolocation`` and ``ipType``).
ROUTING_META = ("proxy", "download_slot", "bindaddress")

# The Zyte API parameters that say where from, not what, a page is fetched.
_ZYTE_API_ROUTING = ("geolocation", "ipType")


def routing(request: Request | None) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The meta and headers routing a robots.txt request as ``request``
    (see :data:`ROUTING_META`)."""
    if request is None:
        return {}, {}
    meta = request.meta
    routed = {key: meta[key] for key in ROUTING_META if key in meta}
    if "zyte_api" in meta or "zyte_api_automap" in meta:
        routed["zyte_api_automap"] = _zyte_api(meta)
    if meta.get("_scheme_proxy"):
        # HttpProxyMiddleware's pick from the environment for the page's
        # scheme (a retry's): it picks for each robots.txt hop alike.
        routed.pop("proxy", None)
    headers = {}
    authorization = request.headers.get(b"Proxy-Authorization")
    if routed.get("proxy") and authorization:
        headers["Proxy-Authorization"] = authorization
    return routed, headers


def _zyte_api(meta: dict[str, Any]) -> bool | dict[str, Any]:
    """How a robots.txt goes through Zyte API (scrapy-zyte-api) for a page
    whose ``meta`` says how the page does (``zyte_api``, or
    ``zyte_api_automap``): its raw body (``zyte_api_automap``), from where
    the page is fetched; not through it when the page is not.  Never the
    page's other parameters: a browser's rendering, a screenshot."""
    params = meta.get("zyte_api") or meta.get("zyte_api_automap")
    if not params:
        return False
    if isinstance(params, dict):
        return {key: params[key] for key in _ZYTE_API_ROUTING if key in params} or True
    return True
