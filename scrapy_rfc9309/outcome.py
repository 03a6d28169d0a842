"""What fetching an origin's robots.txt gave, and how long it holds.

An :class:`Outcome` is plain data: one of ``parsed`` (with its
:class:`~scrapy_rfc9309.parse.Document`), ``unavailable`` (everything
allowed) or ``unreachable`` (everything but ``/robots.txt`` disallowed), with
the times that decide when it is fetched again and, for an unreachable
origin, what the 30-day rule falls back to.  Everything here is pure: the
caller does the fetching and passes the result and the current time in.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._checks import expect
from .match import ROBOTS_TXT, Decision, compile
from .parse import Document, parse
from .profiles import (
    RFC9309,
    RULES,
    OutcomeKind,
    effective_max_bytes,
    status_category,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .match import Matcher

__all__ = [
    "FORMAT",
    "PARSED",
    "UNAVAILABLE",
    "UNREACHABLE",
    "Answer",
    "Lifetimes",
    "Outcome",
    "OutcomeKind",
    "classify",
    "explain_by",
    "explain_compiled",
    "is_allowed_by",
    "kind_of_status",
    "lifetime",
    "max_age",
    "one_value",
    "parsed",
    "unavailable",
    "unreachable",
]

PARSED: OutcomeKind = "parsed"
UNAVAILABLE: OutcomeKind = "unavailable"
UNREACHABLE: OutcomeKind = "unreachable"
_KINDS = (PARSED, UNAVAILABLE, UNREACHABLE)

#: Version of the ``to_dict()`` form.  Readers ignore keys they do not know,
#: so optional keys can be added without a new version; a reader refuses a
#: version it does not know, and stores then treat the entry as missing.
FORMAT = 1

_ALLOW_UNAVAILABLE = Decision(True, "unavailable", None)
_DISALLOW_UNREACHABLE = Decision(False, "unreachable", None)


@dataclass(frozen=True)
class Lifetimes:
    """How long outcomes hold, in seconds (the ``ROBOTS_*`` settings)."""

    #: ``ROBOTS_CACHE_LIFETIME``: parsed and unavailable outcomes.
    cache: float = 86_400
    #: ``ROBOTS_UNREACHABLE_LIFETIME``: unreachable outcomes, then fetch again.
    unreachable: float = 600
    #: ``ROBOTS_UNREACHABLE_GRACE``: how long an origin may stay unreachable
    #: before it is judged by its last parsed robots.txt (or as unavailable).
    grace: float = 2_592_000
    #: The floor of a lifetime shortened by ``Cache-Control``.
    minimum: float = 600


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of fetching one origin's robots.txt.

    Times are seconds since the epoch.  ``retain_until`` is how long a store
    keeps the entry past ``expires_at``: a parsed outcome is still needed
    after it expires, as the fallback of the 30-day rule.
    """

    kind: OutcomeKind
    fetched_at: float
    expires_at: float
    retain_until: float
    http_status: int | None = None
    #: The parsed robots.txt (``parsed`` only).
    document: Document | None = None
    #: Why, in words: ``"HTTP 404"``, ``"DNS lookup failed"``, ...
    detail: str = ""
    #: ``unreachable`` only: when this run of failures began, when the 30-day
    #: rule takes over, and the last parsed robots.txt it then falls back to.
    unreachable_since: float | None = None
    grace_ends_at: float | None = None
    fallback: Document | None = field(default=None, repr=False)
    #: ``unreachable`` only: ``ROBOTS_SSRF_GUARD`` refused the address, so
    #: every URL stays disallowed whatever the 30-day rule would say.
    guard_refused: bool = False
    #: ``parsed`` only: the SHA-256 (hex) of the body read, decoded, up to
    #: ``ROBOTS_MAX_BYTES``: what the rules came from, computed once when
    #: fetched (``None`` for outcomes stored by earlier versions).
    body_sha256: str | None = None
    #: ``unreachable`` only: the ``body_sha256`` of ``fallback``.
    fallback_sha256: str | None = None

    @property
    def rules(self) -> Document | None:
        """The robots.txt this outcome is judged by, once it is in force.

        The document of a parsed outcome; for an unreachable one, the last
        parsed document, used only after ``grace_ends_at``.
        """
        return self.document if self.kind == PARSED else self.fallback

    def disallows_all(self, now: float) -> bool:
        """Whether this is an unreachable origin still within its grace, or
        one the SSRF guard refused."""
        return self.kind == UNREACHABLE and (
            self.guard_refused
            or (self.grace_ends_at is not None and now < self.grace_ends_at)
        )

    def slimmed(self, user_agent: str) -> Outcome:
        """This outcome with only what answers for ``user_agent`` kept."""
        return replace(
            self,
            document=None
            if self.document is None
            else self.document.for_agent(user_agent),
            fallback=None
            if self.fallback is None
            else self.fallback.for_agent(user_agent),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form, read back by :meth:`from_dict`."""
        data = {
            "format": FORMAT,
            "kind": self.kind,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "retain_until": self.retain_until,
            "http_status": self.http_status,
            "document": None if self.document is None else self.document.to_dict(),
            "detail": self.detail,
            "unreachable_since": self.unreachable_since,
            "grace_ends_at": self.grace_ends_at,
            "fallback": None if self.fallback is None else self.fallback.to_dict(),
        }
        if self.guard_refused:
            # Only when set: entries stay as small (and as readable by
            # earlier versions, which ignore it) as before.
            data["guard_refused"] = True
        for key in ("body_sha256", "fallback_sha256"):
            digest = getattr(self, key)
            if digest is not None:
                data[key] = digest
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Outcome:
        """Read :meth:`to_dict`'s form back.

        Raises ``ValueError`` (or ``TypeError`` / ``KeyError`` for a wrong
        shape) for data this version cannot read, including a newer format,
        and for values no outcome of this package holds: times that are not
        finite or out of order, an HTTP status outside 100-999.
        """
        if not isinstance(data, dict):
            raise TypeError(f"an outcome is a JSON object, not {type(data).__name__}")
        version = data.get("format")
        if version != FORMAT:
            raise ValueError(f"unsupported outcome format {version!r}")
        kind = data["kind"]
        if kind not in _KINDS:
            raise ValueError(f"unknown outcome kind {kind!r}")
        document = _document(data.get("document"))
        if kind == PARSED and document is None:
            raise ValueError("a parsed outcome without its document")
        status = data.get("http_status")
        if status is not None and not (
            isinstance(status, int) and 100 <= status <= 999
        ):
            raise ValueError(f"not an HTTP status: {status!r}")
        fetched_at = _time(data["fetched_at"])
        expires_at = _time(data["expires_at"])
        retain_until = _time(data["retain_until"])
        if not fetched_at <= expires_at <= retain_until:
            raise ValueError("fetched_at <= expires_at <= retain_until does not hold")
        guard_refused = data.get("guard_refused", False)
        if not isinstance(guard_refused, bool):
            raise TypeError(f"guard_refused: {guard_refused!r}")
        return cls(
            body_sha256=_digest(data.get("body_sha256")),
            fallback_sha256=_digest(data.get("fallback_sha256")),
            kind=kind,
            fetched_at=fetched_at,
            expires_at=expires_at,
            retain_until=retain_until,
            http_status=status,
            document=document,
            detail=str(data.get("detail") or ""),
            unreachable_since=_optional_time(data.get("unreachable_since")),
            grace_ends_at=_optional_time(data.get("grace_ends_at")),
            fallback=_document(data.get("fallback")),
            guard_refused=guard_refused,
        )


_SHA256 = re.compile("[0-9a-f]{64}")


def _digest(value: Any) -> str | None:
    """A stored SHA-256: 64 lower-case hex digits, or absent (older entries)."""
    if value is None:
        return None
    if not (isinstance(value, str) and _SHA256.fullmatch(value)):
        raise ValueError(f"not a SHA-256 digest: {value!r}")
    return value


def _document(data: Any) -> Document | None:
    return None if data is None else Document.from_dict(data)


# Stored times are seconds since the epoch: anything past year 5000 either
# way is no time this package wrote.
_TIME_BOUND = 1e11


def _time(value: Any) -> float:
    """A stored time: a finite number within :data:`_TIME_BOUND`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a time is a number, not {value!r}")
    seconds = float(value)
    if not (math.isfinite(seconds) and abs(seconds) < _TIME_BOUND):
        raise ValueError(f"not a time: {value!r}")
    return seconds


def _optional_time(value: Any) -> float | None:
    return None if value is None else _time(value)


def kind_of_status(status: int, profile: str = RFC9309) -> OutcomeKind:
    """The outcome an HTTP status gives, once redirects have been followed,
    under ``profile``'s status policy (:mod:`scrapy_rfc9309.profiles`).

    RFC 9309 (and Google, and Bing, which documents none): a 3xx left over
    (no ``Location``, or too many hops) means no robots.txt was found:
    ``unavailable``, as for 4xx.  429 is a 4xx but says "come back later",
    so it counts as unreachable, like 5xx, as Google does.  Anything outside
    200-599 is no usable answer at all: ``unreachable``.  Yandex: anything
    but 200 is ``unavailable``.
    """
    return RULES[profile].status[status_category(status)]


#: The largest ``max-age`` taken as given: RFC 9111 (1.2.2) reads any larger
#: delta-seconds, however many digits it has, as 2**31.
_MAX_DELTA_SECONDS = 2**31


def one_value(lines: Iterable[bytes]) -> str | None:
    """A header's field lines as one value (``Cache-Control: max-age=900``
    then ``Cache-Control: public`` say ``max-age=900, public``, RFC 9110
    5.3); ``None`` without any."""
    joined = b", ".join(lines)
    return joined.decode("latin-1") if joined else None


def max_age(cache_control: str | None) -> float | None:
    """The freshness lifetime a ``Cache-Control`` header value asks for.

    ``no-cache`` and ``no-store`` ask for none (0); the smallest of several
    directives wins; ``None`` when the header says nothing about it.  A
    ``max-age`` that is not a run of ASCII digits is ignored, a negative one
    counts as 0 and one larger than :data:`_MAX_DELTA_SECONDS` as that.
    """
    if not cache_control:
        return None
    ages: list[float] = []
    for directive in cache_control.split(","):
        name, _, value = directive.partition("=")
        name = name.strip().lower()
        if name in ("no-cache", "no-store"):
            ages.append(0.0)
        elif name == "max-age":
            digits = value.strip().strip('"')
            negative = digits.startswith("-")
            if negative:
                digits = digits[1:]
            if not (digits.isascii() and digits.isdigit()):
                continue
            if negative:  # not delta-seconds, but clearly "not fresh"
                ages.append(0.0)
                continue
            digits = digits.lstrip("0") or "0"
            # More than ten digits is past the cap: never int() thousands of
            # digits (slow, refused past 4300, too large for a float).
            seconds = int(digits) if len(digits) <= 10 else _MAX_DELTA_SECONDS
            ages.append(float(min(seconds, _MAX_DELTA_SECONDS)))
    return min(ages) if ages else None


def lifetime(lifetimes: Lifetimes, cache_max_age: float | None) -> float:
    """How long a parsed or unavailable outcome holds.

    ``Cache-Control: max-age`` may shorten ``lifetimes.cache`` but not below
    ``lifetimes.minimum``; it never lengthens it.
    """
    if cache_max_age is None:
        return lifetimes.cache
    return min(lifetimes.cache, max(cache_max_age, lifetimes.minimum))


def _detail(detail: str, http_status: int | None) -> str:
    """What ``detail`` says, else the HTTP status."""
    if detail or http_status is None:
        return detail
    # One string per status, shared by the outcomes of every origin a
    # crawl keeps in memory.
    return sys.intern(f"HTTP {http_status}")


def parsed(
    document: Document,
    *,
    now: float,
    lifetimes: Lifetimes,
    http_status: int | None = 200,
    cache_max_age: float | None = None,
    detail: str = "",
    body_sha256: str | None = None,
) -> Outcome:
    """A robots.txt that was fetched and parsed; ``body_sha256`` is the
    SHA-256 of the body it was parsed from."""
    expires_at = now + lifetime(lifetimes, cache_max_age)
    return Outcome(
        kind=PARSED,
        fetched_at=now,
        expires_at=expires_at,
        # Kept past expiry: the fallback if the origin becomes unreachable.
        retain_until=expires_at + lifetimes.grace,
        http_status=http_status,
        document=document,
        detail=_detail(detail, http_status),
        body_sha256=body_sha256,
    )


def unavailable(
    *,
    now: float,
    lifetimes: Lifetimes,
    http_status: int | None = None,
    cache_max_age: float | None = None,
    detail: str = "",
) -> Outcome:
    """No robots.txt (4xx, too many redirects): everything is allowed."""
    expires_at = now + lifetime(lifetimes, cache_max_age)
    return Outcome(
        kind=UNAVAILABLE,
        fetched_at=now,
        expires_at=expires_at,
        retain_until=expires_at,
        http_status=http_status,
        detail=_detail(detail, http_status),
    )


def unreachable(
    *,
    now: float,
    lifetimes: Lifetimes,
    previous: Outcome | None = None,
    http_status: int | None = None,
    detail: str = "",
    guard_refused: bool = False,
) -> Outcome:
    """The origin could not be asked (5xx, 429, network error).

    ``previous`` is the origin's last outcome, fresh or stale: a run of
    failures continues from an earlier unreachable outcome, and the last
    parsed robots.txt is carried along for the 30-day rule.  A successful
    answer of "no robots.txt" (unavailable) ends what there was to fall
    back to.  ``guard_refused``: ``ROBOTS_SSRF_GUARD`` refused the
    address, which the 30-day rule never turns into "allowed".
    """
    since = now
    fallback = None
    fallback_sha256 = None
    if previous is not None and previous.retain_until > now:
        if previous.kind == UNREACHABLE:
            since = (
                previous.fetched_at
                if previous.unreachable_since is None
                else previous.unreachable_since
            )
            fallback = previous.fallback
            fallback_sha256 = previous.fallback_sha256
        elif previous.kind == PARSED:
            fallback = previous.document
            fallback_sha256 = previous.body_sha256
    expires_at = now + lifetimes.unreachable
    grace_ends_at = since + lifetimes.grace
    return Outcome(
        kind=UNREACHABLE,
        fetched_at=now,
        expires_at=expires_at,
        # A run of failures carries on from one outcome to the next as long
        # as the entry is kept, so it is kept as long as a parsed one.
        retain_until=expires_at + lifetimes.grace,
        http_status=http_status,
        detail=_detail(detail, http_status),
        unreachable_since=since,
        grace_ends_at=grace_ends_at,
        fallback=None if guard_refused else fallback,
        guard_refused=guard_refused,
        fallback_sha256=None if guard_refused else fallback_sha256,
    )


@dataclass(frozen=True, slots=True)
class Answer:
    """What a server sent for a robots.txt, once redirects were followed,
    as the fetcher read it (decoded, within the byte limit)."""

    status: int
    #: The body decoded, at most one byte past the limit.
    body: bytes = b""
    #: The ``Cache-Control`` header's value.
    cache_control: str | None = None
    #: The connection closed before the body was complete.
    truncated: bool = False
    #: The decoder stopped at the byte limit ...
    cut: bool = False
    #: ... or before it, and why (stacked encodings).
    overrun: str | None = None
    #: Why the body could not be decoded at all.
    error: str | None = None


def classify(
    answer: Answer | str,
    *,
    profile: str,
    max_bytes: int,
    now: float,
    lifetimes: Lifetimes,
    previous: Outcome | None = None,
) -> Outcome:
    """The outcome ``profile`` gives one robots.txt answer (RFC 9309 2.3.1).

    ``answer`` is what the server sent, or, when nothing complete came (DNS,
    refused, reset, timeout), the reason why.  A truncated body counts as
    no answer; a status as :func:`kind_of_status` says; a 2xx whose body
    cannot be decoded as a 5xx; a 2xx body is parsed up to ``max_bytes``
    (Yandex: a body over its limit is no robots.txt).  ``previous`` is the
    origin's last outcome, carried for the 30-day rule.
    """
    if isinstance(answer, str) or answer.truncated:
        status = None if isinstance(answer, str) else answer.status
        detail = answer if isinstance(answer, str) else "truncated body"
        if RULES[profile].status["network"] == UNAVAILABLE:
            return unavailable(
                now=now, lifetimes=lifetimes, http_status=status, detail=detail
            )
        return unreachable(
            now=now,
            lifetimes=lifetimes,
            previous=previous,
            http_status=status,
            detail=detail,
        )
    status = answer.status
    kind = kind_of_status(status, profile)
    if kind == UNREACHABLE or (kind == PARSED and answer.error is not None):
        return unreachable(
            now=now,
            lifetimes=lifetimes,
            previous=previous,
            http_status=status,
            detail=(answer.error or "") if kind == PARSED else "",
        )
    cache_max_age = max_age(answer.cache_control)
    limit = effective_max_bytes(profile, max_bytes)
    oversize = answer.cut or len(answer.body) > limit
    if kind == UNAVAILABLE or (
        oversize and RULES[profile].status["oversize"] == UNAVAILABLE
    ):
        return unavailable(
            now=now,
            lifetimes=lifetimes,
            http_status=status,
            cache_max_age=cache_max_age,
            detail=""
            if kind == UNAVAILABLE
            else f"HTTP {status}, body over {limit} bytes",
        )
    detail = f"HTTP {status}"
    if answer.cut:
        detail += f", cut at {max_bytes} bytes"
        if answer.overrun is not None:
            detail += f" ({answer.overrun})"
    return parsed(
        parse(answer.body, profile=profile, max_bytes=max_bytes),
        now=now,
        lifetimes=lifetimes,
        http_status=status,
        cache_max_age=cache_max_age,
        detail=detail,
        # The evidence of which file the rules came from (ROBOTS_PROVENANCE,
        # ROBOTS_REPORT), stored with the outcome.
        body_sha256=hashlib.sha256(answer.body[:max_bytes]).hexdigest(),
    )


def _is_robots_txt(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"


def explain_compiled(
    outcome: Outcome, matcher: Matcher | None, url: str, now: float
) -> Decision:
    """:func:`explain_by` with ``matcher`` compiled from ``outcome.rules``.

    This is the per-request path of the middleware, which keeps a compiled
    matcher per origin: it must stay a couple of comparisons and one call.
    """
    if outcome.kind == UNREACHABLE and outcome.disallows_all(now):
        return ROBOTS_TXT if _is_robots_txt(url) else _DISALLOW_UNREACHABLE
    if matcher is None:
        return _ALLOW_UNAVAILABLE
    return matcher.explain(url)


def explain_by(
    outcome: Outcome, user_agent: str, url: str, *, now: float | None = None
) -> Decision:
    """Whether ``outcome`` lets ``user_agent`` fetch ``url``, and why.

    Reasons are those of :func:`~scrapy_rfc9309.match.explain`, plus
    ``unavailable`` (no robots.txt: allowed) and ``unreachable`` (disallowed
    while the origin is unreachable).  An origin unreachable past its grace
    (``now``, default the current time) is judged by its last parsed
    robots.txt, or as unavailable.
    """
    expect(outcome, Outcome, "outcome", "an Outcome (from classify())")
    if now is None:
        now = time.time()
    rules = outcome.rules
    matcher = None if rules is None else compile(rules, user_agent)
    return explain_compiled(outcome, matcher, url, now)


def is_allowed_by(
    outcome: Outcome, user_agent: str, url: str, *, now: float | None = None
) -> bool:
    """Whether ``outcome`` lets ``user_agent`` fetch ``url``."""
    return explain_by(outcome, user_agent, url, now=now).allowed
