"""W3C TDMRep (TDM Reservation Protocol, Community Group Final Report,
2024-05-10): is the right of text and data mining reserved for a URL?

Pure: no Scrapy, no I/O.  Three techniques, read in the report's priority
order (section 6.7), each superseding the one before and none resetting a
property it does not give:

1. the origin's ``/.well-known/tdmrep.json`` (:func:`parse_file`, then
   :meth:`TdmFile.rule_for` per URL: the first matching rule wins);
2. the response's ``tdm-reservation`` / ``tdm-policy`` header fields
   (:func:`header_values`);
3. an HTML document's ``<meta name="tdm-reservation">`` /
   ``<meta name="tdm-policy">`` (:func:`meta_values`).

A reservation is ``1`` (reserved), ``0`` (not reserved) or ``None``
(unset: the rightsholder said nothing usable).  A policy URL is kept, never
fetched.  Every decision the report leaves open is listed in docs/rights.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple
from urllib.parse import urljoin

from ._json import loads
from .directives import meta_contents
from .match import wildcards_match
from .stringify import readable
from .urls import normalize_path, normalize_pattern, request_path

__all__ = [
    "FILE_PATH",
    "POLICY",
    "RESERVATION",
    "SOURCES",
    "Step",
    "TdmFile",
    "TdmRule",
    "TdmState",
    "from_file",
    "header_values",
    "meta_values",
    "parse_file",
    "resolve",
]

#: Where an origin's file is (TDMRep section 6.1, RFC 8615).
FILE_PATH = "/.well-known/tdmrep.json"
#: The names TDMRep gives its two properties, in a file, a header and an HTML
#: ``<meta>`` alike (TDMRep sections 4-6).
RESERVATION = "tdm-reservation"
POLICY = "tdm-policy"
#: The problems of a file said (and logged, and stored); the rest counted.
_MAX_PROBLEMS = 10
#: Where a state's reservation came from.
SOURCES = ("tdmrep.json", "header", "meta")


def _reservation_value(value: Any) -> int | None:
    """``1`` or ``0`` for a valid ``tdm-reservation`` value, else ``None``
    (unset, as section 5.1 says of any other value; a legacy ``2`` too).

    The integers ``0`` and ``1`` and their text (``"1"``, ``" 0 "``) are
    valid; booleans, other numbers and other text are not.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str | bytes):
        text = value.strip()
        if text in ("0", "1", b"0", b"1"):
            return int(text)
    return None


class TdmRule(NamedTuple):
    """One rule of a ``tdmrep.json``; ``position``: its place in the array
    (0-based)."""

    position: int
    location: str
    #: ``1``, ``0``, or ``None`` for a value that is neither (unset).
    reservation: int | None
    policy: str | None = None

    def describe(self) -> str:
        """The rule as its file writes it, for log lines."""
        text = f'rule {self.position + 1}: "location": {json.dumps(self.location)}'
        return f'{text}, "tdm-reservation": {self.reservation}'


class TdmFile(NamedTuple):
    """An origin's ``tdmrep.json`` as read: its usable rules, in order, and
    what was left out (``problems``, one per rule or for the whole file)."""

    rules: tuple[TdmRule, ...] = ()
    problems: tuple[str, ...] = ()
    #: Each rule's location, normalised and split at its ``*`` (what
    #: :func:`parse_file` prepares once, so a request costs no more).
    patterns: tuple[_Pattern, ...] = ()

    def rule_for(self, url: str) -> TdmRule | None:
        """The rule that applies to ``url``: the first one matching its path
        and query (section 6.1, "the first in sequence")."""
        path = normalize_path(request_path(url))
        patterns = self.patterns or tuple(_pattern(r.location) for r in self.rules)
        for rule, (head, parts, anchored) in zip(self.rules, patterns, strict=True):
            if not path.startswith(head):
                continue
            if not parts:
                if not anchored or len(path) == len(head):
                    return rule
            elif wildcards_match(path, len(head), parts, anchored):
                return rule
        return None

    def to_list(self) -> list[dict[str, Any]]:
        """The rules as the file writes them (the stores' form)."""
        return [
            {"location": rule.location, RESERVATION: rule.reservation}
            | ({POLICY: rule.policy} if rule.policy is not None else {})
            for rule in self.rules
        ]


class _Pattern(NamedTuple):
    head: str
    parts: tuple[str, ...]
    anchored: bool


def _pattern(location: str) -> _Pattern:
    """A ``location`` ready to match normalised paths: a prefix match, ``*``
    any run of characters, a final ``$`` the end of the path (section
    6.1.1, the robots.txt syntax), escapes in RFC 9309's canonical form."""
    pattern = normalize_pattern(location)
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    head, *parts = pattern.split("*")
    return _Pattern(head, tuple(parts), anchored)


def parse_file(body: bytes | str, base: str = "") -> TdmFile:
    """Read a ``tdmrep.json`` body, whatever its media type (section 6.1).

    Never raises: a body that is no JSON array is a file without rules (its
    problem said); an element without a usable ``location`` is left out,
    and one whose ``tdm-reservation`` is missing or invalid keeps matching
    and gives unset.  A policy is resolved against ``base`` (the file's URL).
    """
    try:
        # UTF-8 only (a JSON text "MUST be encoded using UTF-8", RFC 8259,
        # which lets a reader skip a byte-order mark): json.loads would take
        # UTF-16 and UTF-32 bytes too.
        text = body.decode("utf-8-sig") if isinstance(body, bytes) else body
        data = loads(text)
    # Bytes not UTF-8, bad JSON, or nested too deep (_json.loads): the
    # file is from outside, so any failure means "no usable file".
    except Exception as exc:
        return TdmFile(problems=(f"not JSON ({type(exc).__name__}: {exc})",))
    if not isinstance(data, list):
        return TdmFile(problems=(f"not a JSON array but a {type(data).__name__}",))
    rules: list[TdmRule] = []
    problems: list[str] = []
    for index, element in enumerate(data):
        rule, problem = _rule(index, element, base)
        if rule is not None:
            rules.append(rule)
        if problem:
            problems.append(f"rule {index + 1}: {problem}")
    patterns = tuple(_pattern(rule.location) for rule in rules)
    if len(problems) > _MAX_PROBLEMS:
        more = len(problems) - _MAX_PROBLEMS
        problems[_MAX_PROBLEMS:] = [f"and {more} more"]
    return TdmFile(tuple(rules), tuple(problems), patterns)


def _rule(index: int, element: Any, base: str) -> tuple[TdmRule | None, str]:
    if not isinstance(element, dict):
        return None, f"not an object, left out ({type(element).__name__})"
    location = element.get("location")
    if not isinstance(location, str) or not location.startswith(("/", "*")):
        return None, f"no location starting with / or *, left out ({location!r})"
    problem = ""
    raw = element.get(RESERVATION)
    reservation = _reservation_value(raw)
    if reservation is None:
        problem = f"tdm-reservation {raw!r} is not 0 or 1: unset"
    policy = element.get(POLICY)
    policy = _policy_url(policy, base) if isinstance(policy, str) else None
    return TdmRule(index, location, reservation, policy), problem


def _policy_url(value: str | bytes, base: str) -> str | None:
    """A ``tdm-policy`` value as an absolute URL (``None`` when empty)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if not text:
        return None
    try:
        return urljoin(base, text) if base else text
    except ValueError:
        return text


class Step(NamedTuple):
    """What one technique says: each property, or ``None`` when it says
    nothing valid about it (absent or invalid)."""

    reservation: int | None = None
    policy: str | None = None
    #: Whether a ``tdm-reservation`` was given but invalid.
    invalid: bool = False


def header_values(
    reservations: Sequence[bytes], policies: Sequence[bytes], base: str
) -> Step:
    """The ``tdm-reservation`` and ``tdm-policy`` header fields of a
    response (section 6.2; field names are case-insensitive).

    Repeated fields are read as one comma-separated list: one value given
    (however often) is that value; ``0`` and ``1`` together, or anything
    else, is invalid.
    """
    values = {piece.strip() for field in reservations for piece in field.split(b",")}
    values.discard(b"")
    reservation = _reservation_value(values.pop()) if len(values) == 1 else None
    policy = _policy_url(policies[0], base) if policies else None
    return Step(reservation, policy, bool(reservations) and reservation is None)


def meta_values(html: str, base: str) -> Step:
    """The TDMRep ``<meta>`` tags of an HTML document (section 6.3): the
    first of each name, matched ASCII case-insensitively."""
    reservations = list(meta_contents(html, RESERVATION, first=True))
    policies = list(meta_contents(html, POLICY, first=True))
    reservation = _reservation_value(reservations[0]) if reservations else None
    policy = _policy_url(policies[0], base) if policies else None
    return Step(reservation, policy, bool(reservations) and reservation is None)


class TdmState(NamedTuple):
    """What TDMRep says of one URL, after the techniques read so far."""

    #: ``1`` reserved, ``0`` not reserved, ``None`` unset.
    reservation: int | None = None
    #: The policy URL, recorded, never fetched; ``None`` with reservation
    #: ``0`` (section 5.2: agents should not process it).
    policy: str | None = None
    #: Which technique gave the reservation (one of :data:`SOURCES`).
    source: str | None = None
    #: The file's URL, when the origin's file was read.
    file: str | None = None
    #: The file's rule that matched, when one did.
    rule: TdmRule | None = None
    #: Invalid values met (each ignored: the earlier value stands).
    problems: tuple[str, ...] = ()
    #: What came of the origin's file (``parsed``, ``missing``, ``invalid``,
    #: ``unreachable``), when it was asked for.
    file_status: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``robots_tdm`` meta value and item field: the file's text
        :func:`~scrapy_rfc9309.stringify.readable`, which a UTF-8 feed
        can write: a lone surrogate the file's JSON escapes (``"\\ud800"``)
        shown as ``%ED%A0%80``."""
        rule = self.rule
        return {
            "reservation": self.reservation,
            "policy": None if self.policy is None else readable(self.policy),
            "source": self.source,
            "file": None if self.file is None else readable(self.file),
            "rule": None
            if rule is None
            else {"index": rule.position, "location": readable(rule.location)},
            "problems": list(self.problems),
            "file_status": self.file_status,
        }


def from_file(tdm_file: TdmFile | None, file_url: str, url: str) -> TdmState:
    """The state of ``url`` after its origin's file (``None``: none read)."""
    if tdm_file is None:
        return TdmState()
    rule = tdm_file.rule_for(url)
    if rule is None:
        return TdmState(file=file_url)
    return TdmState(
        rule.reservation,
        rule.policy if rule.reservation == 1 else None,
        "tdmrep.json" if rule.reservation is not None else None,
        file_url,
        rule,
    )


def resolve(state: TdmState, steps: Iterable[tuple[str, Step]]) -> TdmState:
    """``state`` after each ``(source, step)`` in order (section 6.7): a
    property given supersedes the earlier one, an absent or invalid one
    leaves it as it was."""
    reservation, policy, source = state.reservation, state.policy, state.source
    problems = list(state.problems)
    for name, step in steps:
        if step.reservation is not None:
            reservation, source = step.reservation, name
        elif step.invalid:
            problems.append(f"{name}: invalid tdm-reservation, ignored")
        if step.policy is not None:
            policy = step.policy
    if reservation != 1:
        # Section 5.2: a policy with no reservation is not to be processed.
        policy = None
    return state._replace(
        reservation=reservation,
        policy=policy,
        source=source,
        problems=tuple(problems),
    )
