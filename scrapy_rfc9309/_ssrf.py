"""Which addresses ``ROBOTS_SSRF_GUARD`` lets a crawl connect to (pure)."""

from __future__ import annotations

import ipaddress

__all__ = ["is_public"]

# IPv6 prefixes whose last 32 bits are an IPv4 address a gateway connects
# to: IPv4-compatible addresses (::a.b.c.d, deprecated but still routed by
# some stacks) and the NAT64 well-known prefix (RFC 6052).
_EMBEDDING = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("64:ff9b::/96"),
)
# Not globally reachable (IANA), though older Pythons' is_global says it is:
# the NAT64 local-use prefix (RFC 8215), which embeds IPv4 addresses of a
# private network anywhere in its last 80 bits.
_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def _embedded(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses ``ip`` leads to: mapped, 6to4, Teredo, NAT64."""
    found = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:  # 2002:AABB:CCDD::/48 -> A.B.C.D
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if any(ip in network for network in _EMBEDDING):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF))
    return found


def _global(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    # is_global is False for private, loopback, link-local (cloud metadata
    # at 169.254.169.254 included), shared (100.64/10), reserved and
    # unspecified addresses.
    return ip.is_global and not ip.is_multicast


def is_public(address: str) -> bool:
    """Whether ``address`` (an IP address, IPv6 with or without a zone) is a
    public unicast one, and so is every IPv4 address it embeds."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL:
            return False
        embedded = _embedded(ip)
        if ip.ipv4_mapped is not None:
            # ::ffff:a.b.c.d is the IPv4 address itself, whatever the IPv6
            # range it sits in is classed as.
            return _global(ip.ipv4_mapped)
        if embedded and not all(_global(inner) for inner in embedded):
            return False
    return _global(ip)
