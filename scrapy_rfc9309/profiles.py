"""What differs between the ``rfc9309``, ``google``, ``yandex`` and ``bing``
profiles, as data: key spellings, selectors and group selection, rule
precedence, percent-encoding, empty rules, limits and the status policy.

The reader (:mod:`~scrapy_rfc9309.parse`), the matcher
(:mod:`~scrapy_rfc9309.match`), :func:`~scrapy_rfc9309.lint.lint` and the
outcome of a fetch (:func:`~scrapy_rfc9309.outcome.kind_of_status`) ask
:data:`RULES` rather than test a profile's name.  docs/profiles.md explains
every value and where it comes from; a point the vendors leave open is
marked there, and changing the reading chosen is a change of one value here.

Pure: no Scrapy, no Twisted, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "BING",
    "GOOGLE",
    "MAX_BYTES",
    "PROFILES",
    "RFC9309",
    "RULES",
    "YANDEX",
    "OutcomeKind",
    "Percent",
    "ProfileRules",
    "Rank",
    "Selector",
    "effective_max_bytes",
    "selector_for",
    "status_category",
]

RFC9309 = "rfc9309"
GOOGLE = "google"
YANDEX = "yandex"
BING = "bing"
#: Every profile name, the default first.
PROFILES = (RFC9309, GOOGLE, YANDEX, BING)

#: The default bytes of a robots.txt read (RFC 9309 section 2.5: at least
#: 500 KiB); ``ROBOTS_MAX_BYTES`` and the engine's ``max_bytes`` arguments.
MAX_BYTES = 512_000

#: How patterns and paths are compared: ``normalize`` decodes and re-encodes
#: both (RFC 9309 2.2.2); ``escape`` upper-cases the hex of a pattern's
#: escapes and encodes its non-ASCII octets, the URL staying as it is
#: (Google); ``verbatim`` encodes a pattern's non-ASCII octets only, hex
#: case and all else compared as written (Yandex's library).
Percent = Literal["normalize", "escape", "verbatim"]
#: How long a pattern counts when rules compete: ``length`` every octet of
#: it (RFC 9309, Google); ``specificity`` its octets other than ``*`` and a
#: final ``$`` (Yandex's ``StrLenWithoutStars``).
Rank = Literal["length", "specificity"]
#: What an outcome of a fetch is (see scrapy_rfc9309.outcome).
OutcomeKind = Literal["parsed", "unavailable", "unreachable"]


@dataclass(frozen=True)
class Selector:
    """An agent a bounded profile answers for, and the groups that apply to it.

    ``tiers`` are tried in order: the groups of the first tier with any
    are the ones that apply.  With ``match="token"`` a tier is product
    tokens a group's ``User-agent`` value may name; with ``"name_prefix"``
    (Yandex's ``CheckRobot``) a value applies if, lower-cased, it starts with
    ``required_prefix`` and is a prefix of ``full_name``, and the longest
    such value wins.  ``wildcard``: whether ``User-agent: *`` applies when
    no group names the agent.
    """

    label: str
    wildcard: bool
    match: Literal["token", "name_prefix"] = "token"
    tiers: tuple[tuple[str, ...], ...] = ()
    full_name: str = ""
    required_prefix: str = ""

    def rank(self, name: str, token: str) -> int:
        """How well a ``User-agent`` value (``name``: stripped and
        lower-cased; ``token``: the token it names) names this agent: 0 not
        at all; of the groups naming it, those of highest rank apply."""
        if self.match == "name_prefix":
            if name.startswith(self.required_prefix) and self.full_name.startswith(
                name
            ):
                return len(name)
            return 0
        for index, tier in enumerate(self.tiers):
            if token in tier:
                return len(self.tiers) - index
        return 0


_STATUS_CATEGORIES = ("200", "2xx", "3xx", "4xx", "429", "5xx", "other", "network")

#: The status policy of RFC 9309 as this package reads it (and Google's):
#: a 3xx left over (no Location, too many hops) and 4xx mean no robots.txt,
#: 429, 5xx and network errors that it cannot be reached.  ``oversize``: a
#: body over ROBOTS_MAX_BYTES is read up to the limit.
_RFC9309_STATUS: dict[str, OutcomeKind] = {
    "200": "parsed",
    "2xx": "parsed",
    "3xx": "unavailable",
    "4xx": "unavailable",
    "429": "unreachable",
    "5xx": "unreachable",
    "other": "unreachable",
    "network": "unreachable",
    "oversize": "parsed",
}


@dataclass(frozen=True)
class ProfileRules:
    """Everything a profile decides.  See docs/profiles.md for each value."""

    name: str
    #: The vendor, as diagnostics name it.
    vendor: str
    #: Key spellings (lower-case) -> the key they are read as.
    keys: Mapping[str, str]
    #: Google's ``KeyIsDisallow`` & co: a key is read by its prefix.
    prefix_keys: bool = False
    #: A line without a colon reads as ``key value`` between two tokens.
    missing_colon: bool = True
    rank: Rank = "length"
    percent: Percent = "normalize"
    #: ``Disallow:`` with no value: ``inert`` (matches nothing) or
    #: ``allow_all`` (read as ``Allow: /``, Yandex's ``CheckEmptyRule``).
    empty_disallow: Literal["inert", "allow_all"] = "inert"
    #: Google: an Allow of ``.../index.htm(l)`` also allows ``.../``.
    index_html: bool = True
    #: Over this many rules for the agent, everything is allowed (Yandex's
    #: ``IsFull``); ``None``: no limit.
    max_rules: int | None = None
    #: The octets of a body read; past them ``ROBOTS_MAX_BYTES`` applies as
    #: well, whichever is smaller.  ``None``: ROBOTS_MAX_BYTES only.
    max_bytes: int | None = None
    #: The agents it answers for, by lower-cased label; ``None``: any agent,
    #: by its product token (RFC 9309 2.2.1).
    selectors: Mapping[str, Selector] | None = None
    #: HTTP result category (:func:`status_category`, and ``oversize``) ->
    #: the outcome it gives.
    status: Mapping[str, OutcomeKind] = field(default_factory=lambda: _RFC9309_STATUS)
    #: Whether the vendor ignores Crawl-delay and Content-Signal (read all
    #: the same, for the crawl's own use): lint says so.
    ignores_delay: bool = False
    #: Whether a ``Content-Usage`` line is a rule that ends its group (a
    #: User-agent line after it starts a new one), as the aipref attach
    #: draft's grammar makes it; Google's parser does not know the key, so
    #: there it ends nothing (docs/content-usage.md).
    usage_ends_group: bool = True
    #: What ends a group, so that a User-agent line after it starts a new
    #: one: ``rule``, an Allow or Disallow line (RFC 9309 2.2.4, Content-Usage
    #: as ``usage_ends_group`` says); ``line``, any line but a User-agent
    #: line, a blank or comment-only one too: Yandex's ``ParseRules`` clears
    #: its agents at a User-agent line ``if ((prevType != type || wasBlank)
    #: && type == USER_AGENT)`` (a Crawl-delay, Host, Clean-param, Sitemap,
    #: unknown key or blank line before it); other text without a colon is
    #: skipped there and ends nothing.
    group_ends: Literal["rule", "line"] = "rule"

    @property
    def labels(self) -> tuple[str, ...]:
        """The selector labels as the vendor spells them."""
        if self.selectors is None:
            return ()
        return tuple(selector.label for selector in self.selectors.values())


def _spellings(table: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    return {spelling: key for key, spellings in table.items() for spelling in spellings}


# The RFC's three keys, the other records this package reads, and the
# misspellings Google's parser accepts (RFC 9309 section 2.2.4 lets a
# parser accept them).
_LENIENT_KEYS = _spellings(
    {
        "user-agent": ("user-agent", "useragent", "user agent"),
        "allow": ("allow",),
        "disallow": (
            "disallow",
            "dissallow",
            "dissalow",
            "disalow",
            "diasllow",
            "disallaw",
        ),
        "sitemap": ("sitemap", "site-map"),
        "crawl-delay": ("crawl-delay", "crawl delay", "crawldelay"),
        "content-signal": ("content-signal", "content-signals"),
        "content-usage": ("content-usage",),
    }
)
# Yandex (NameToDirType) and Bing (documented keys; typos are an open point,
# read strictly) match key names exactly, case aside.  Content-Signal is
# this package's own (docs/content-signal.md), read in every profile, as is
# Content-Usage (IETF aipref, docs/content-usage.md).
_EXACT_KEYS = {
    key: key
    for key in (
        "user-agent",
        "allow",
        "disallow",
        "sitemap",
        "crawl-delay",
        "content-signal",
        "content-usage",
    )
}

RULES: dict[str, ProfileRules] = {
    RFC9309: ProfileRules(RFC9309, "RFC 9309", _LENIENT_KEYS),
    GOOGLE: ProfileRules(
        GOOGLE,
        "Google",
        _LENIENT_KEYS,
        prefix_keys=True,
        percent="escape",
        ignores_delay=True,
        usage_ends_group=False,
    ),
    YANDEX: ProfileRules(
        YANDEX,
        "Yandex",
        _EXACT_KEYS,
        missing_colon=False,
        rank="specificity",
        percent="verbatim",
        empty_disallow="allow_all",
        index_html=False,
        max_rules=10_000,
        # The library's robots_max = 500_KB (500 KiB); Yandex's help page
        # says "500 KB".  A larger body allows everything.
        max_bytes=512_000,
        selectors={
            # The umbrella label: the main robot, YandexBot/3.0, reads the
            # groups of "Yandex", "YandexBot", "YandexBot/3.0" (the longest
            # wins), else "*".
            "yandex": Selector(
                "Yandex",
                wildcard=True,
                match="name_prefix",
                full_name="yandexbot/3.0",
                required_prefix="yandex",
            ),
            # Its own group only: never "Yandex", never "*" (open: observed
            # only with a group of its own).
            "yandexadditionalbot": Selector(
                "YandexAdditionalBot",
                wildcard=False,
                match="name_prefix",
                full_name="yandexadditionalbot",
                required_prefix="yandexadditionalbot",
            ),
        },
        status={
            # Anything but 200 OK (or a body over 500 KiB): "open for
            # indexing".  Network errors are an open point: read as RFC 9309.
            **dict.fromkeys(_STATUS_CATEGORIES, "unavailable"),
            "200": "parsed",
            "network": "unreachable",
            "oversize": "unavailable",
        },
        ignores_delay=True,
        group_ends="line",
    ),
    BING: ProfileRules(
        BING,
        "Bing",
        _EXACT_KEYS,
        missing_colon=False,
        percent="escape",
        index_html=False,
        selectors={
            # The legacy "msnbot" groups are not read (open: a 2012 post
            # ranked them between "bingbot" and "*"; add ("msnbot",) as a
            # second tier to read them so).
            "bingbot": Selector("bingbot", wildcard=True, tiers=(("bingbot",),)),
            "adidxbot": Selector("AdIdxBot", wildcard=False, tiers=(("adidxbot",),)),
        },
        # Bing documents no status policy: RFC 9309's.
    ),
}


def selector_for(profile: str, token: str) -> Selector | None:
    """The selector of a bounded ``profile`` for the product ``token`` (any
    case); ``None`` for a profile that answers for any agent.

    ``ValueError`` for a token the profile does not answer for: answering
    under another vendor's semantics would be silently wrong.
    """
    rules = RULES[profile]
    if rules.selectors is None:
        return None
    selector = rules.selectors.get(token.lower())
    if selector is None:
        labels = " or ".join(map(repr, rules.labels))
        raise ValueError(
            f"the {profile} profile answers for the group labels {labels} only,"
            f" not {token!r}: a label is the User-agent name in robots.txt that"
            " the vendor's crawler obeys, not its HTTP User-Agent"
        )
    return selector


def status_category(status: int) -> str:
    """The category of an HTTP status in a profile's ``status`` table (a
    status outside 200-599 is ``other``; ``network`` and ``oversize`` are
    not statuses)."""
    if status == 200:
        return "200"
    if status == 429:
        return "429"
    if 200 <= status < 600:
        return f"{status // 100}xx"
    return "other"


def effective_max_bytes(profile: str, max_bytes: int) -> int:
    """The bytes of a robots.txt ``profile`` reads when asked to read
    ``max_bytes``: a profile with a limit of its own (Yandex) reads no more
    than that.  A ``max_bytes`` that is no whole number of bytes (0 or more)
    raises ``TypeError`` or ``ValueError``."""
    refused = f"max_bytes must be a whole number, 0 or more, not {max_bytes!r}"
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(refused)
    if max_bytes < 0:
        raise ValueError(refused)
    limit = RULES[profile].max_bytes
    return max_bytes if limit is None else min(limit, max_bytes)
