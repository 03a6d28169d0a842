"""Differential tests: where two readings of robots.txt disagree, and why.

1. The ``rfc9309`` and ``google`` profiles over the conformance vectors:
   every vector they answer differently is explained by a named cause.
2. This package (``rfc9309`` profile) against Protego 0.7.0, the parser
   behind Scrapy's built-in middleware, over real robots.txt files: Protego's
   corpus of 4,231 files when it is in ``.cache/`` (``bash scripts/test.sh``
   fetches it, see ``benchmarks/_corpus.py``), else a built-in sample of
   tricky files, with a warning (a failure when ``SCRAPY_RFC9309_CORPUS`` is
   ``required``, as CI sets it), so that a machine without network still
   runs it.  Every disagreement is explained by a named cause.

A cause is found by a *neutraliser*: a rewrite of the input that removes one
known difference between the two readings (drop the lines that are not
user-agent or rule lines, cut lines at NUL, ...).  The first cause whose
rewrite makes both sides agree explains the disagreement.  The user-agent
causes are found by looking at which group each side picked.

``python -m tests.test_differential`` prints the table of causes over the
whole corpus (downloading it into ``.cache/`` first if needed).
"""

from __future__ import annotations

import base64
import os
import re
import string
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import pytest
from protego import Protego

from scrapy_rfc9309._agents import agent_token, applicable_groups, product_token
from scrapy_rfc9309._bytes import MAX_LINE_BYTES, cap_line, cut
from scrapy_rfc9309.match import Matcher, compile, explain
from scrapy_rfc9309.parse import Document, parse
from tests.conftest import load_vectors

# -- 1. the two profiles over the conformance vectors -------------------------------

_VECTOR_FILES = (
    "google_robots_test.json",
    "rfc9309_examples.json",
    "google_spec_test.json",
)


class Vector(NamedTuple):
    id: str
    body: str | bytes
    agent: str
    url: str


def _vectors() -> Iterator[Vector]:
    for name in _VECTOR_FILES:
        for index, vector in enumerate(load_vectors(name)):
            body = vector.get("robots_txt")
            if body is None:
                body = base64.b64decode(vector["robots_txt_b64"])
            yield Vector(
                f"{name}#{index}:{vector['name']}",
                body,
                vector["user_agent"],
                vector["url"],
            )


def _answers(body: str | bytes, agent: str, url: str) -> tuple[bool, bool]:
    return (
        explain(parse(body, profile="rfc9309"), agent, url).allowed,
        explain(parse(body, profile="google"), agent, url).allowed,
    )


_UNRESERVED_ESCAPE = re.compile(
    r"%(4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|3[0-9]|2D|2E|5F|7E)", re.I
)
_RESERVED_ESCAPE = re.compile(
    r"%(3A|2F|3F|23|5B|5D|40|21|26|27|28|29|2B|2C|3B|3D)", re.I
)


def _unescape(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda found: chr(int(found[1], 16)), text)


def _encode_non_ascii(url: str) -> str:
    return quote(url, safe=string.printable)


# Each profile cause but the first: a rewrite of (body, url) that removes
# one difference between the profiles, or None where it does not apply.
_ProfileRewrite = Callable[[str, str], "tuple[str, str] | None"]


def _raw_non_ascii_url(body: str, url: str) -> tuple[str, str] | None:
    encoded = _encode_non_ascii(url)
    return None if encoded == url else (body, encoded)


def _escaped_star_dollar(body: str, url: str) -> tuple[str, str] | None:
    rewritten = re.sub("%2[Aa4]", "-", body)
    url = url.replace("*", "-").replace("$", "-")
    return None if rewritten == body else (rewritten, url)


def _unreserved_escapes(body: str, url: str) -> tuple[str, str] | None:
    new_body = _unescape(_UNRESERVED_ESCAPE, body)
    new_url = _unescape(_UNRESERVED_ESCAPE, url)
    if (new_body, new_url) == (body, url):
        return None
    return new_body, new_url


def _reserved_escapes(body: str, url: str) -> tuple[str, str] | None:
    new_url = _unescape(_RESERVED_ESCAPE, url)
    return None if new_url == url else (body, new_url)


PROFILE_CAUSES: dict[str, _ProfileRewrite] = {
    "raw_non_ascii_url_encoded": _raw_non_ascii_url,
    "literal_star_dollar": _escaped_star_dollar,
    "percent_unreserved_normalised": _unreserved_escapes,
    "reserved_query_normalised": _reserved_escapes,
}


def profile_cause(vector: Vector) -> str | None:
    """Why the two profiles answer ``vector`` differently: ``None`` when they
    agree, ``"unexplained"`` when no known cause explains it."""
    rfc, google = _answers(vector.body, vector.agent, vector.url)
    if rfc == google:
        return None
    # RFC 9309 section 2.2.2: /robots.txt is implicitly allowed; Google's
    # matcher has no such exception.
    if explain(parse(vector.body), vector.agent, vector.url).reason == "robots_txt":
        return "robots_txt_implicit_allow"
    body = vector.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "surrogateescape")
    for cause, rewrite in PROFILE_CAUSES.items():
        rewritten = rewrite(body, vector.url)
        if rewritten is None:
            continue
        rfc, google = _answers(rewritten[0], vector.agent, rewritten[1])
        if rfc == google:
            return cause
    return "unexplained"


#: Vectors on which the profiles disagree, by file and cause.  The RFC file
#: documents its 6 (``google_allowed != allowed``); the Google files hold the
#: checks that rely on Google's own behaviour (see tests/data/conformance).
PROFILE_DISAGREEMENTS = {
    ("google_robots_test.json", "raw_non_ascii_url_encoded"): 2,
    ("google_robots_test.json", "percent_unreserved_normalised"): 1,
    ("rfc9309_examples.json", "robots_txt_implicit_allow"): 1,
    ("rfc9309_examples.json", "reserved_query_normalised"): 1,
    ("rfc9309_examples.json", "percent_unreserved_normalised"): 2,
    ("rfc9309_examples.json", "literal_star_dollar"): 2,
    ("google_spec_test.json", "raw_non_ascii_url_encoded"): 2,
    ("google_spec_test.json", "percent_unreserved_normalised"): 1,
    ("google_spec_test.json", "robots_txt_implicit_allow"): 5,
}


def test_profile_disagreements_are_all_explained() -> None:
    found: Counter[tuple[str, str]] = Counter()
    for vector in _vectors():
        cause = profile_cause(vector)
        if cause is not None:
            found[(vector.id.split("#", 1)[0], cause)] += 1
    assert dict(found) == PROFILE_DISAGREEMENTS


def test_rfc_file_documents_every_profile_disagreement() -> None:
    # The vectors whose google_allowed differs from allowed are exactly those
    # the profiles disagree on, and the google profile gives google_allowed.
    for index, vector in enumerate(load_vectors("rfc9309_examples.json")):
        rfc, google = _answers(
            vector["robots_txt"], vector["user_agent"], vector["url"]
        )
        assert (rfc, google) == (vector["allowed"], vector["google_allowed"]), index


# -- 2. this package against Protego -------------------------------------------------

#: User agents every file is probed with: Scrapy's default, a browser-like
#: full string with a known bot token inside, and a bot no file names.
PROBE_AGENTS = (
    "Scrapy/2.19.0 (+https://scrapy.org)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "examplebot",
)
#: Paths every file is probed with, besides those its rules suggest.
PROBE_PATHS = ("/", "/index.html", "/robots.txt", "/search?q=1")
_MAX_AGENTS = 7
_MAX_PATHS = 40
# What a crawler's URL keeps as it is; everything else is percent-encoded,
# as Scrapy's safe_url_string does.
_URL_SAFE = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?%#[]"
#: What Protego is handed: the body decoded as Scrapy's ProtegoRobotParser
#: decodes it (scrapy.robotstxt.decode_robotstxt).
_PROTEGO_DECODING = ("utf-8-sig", "ignore")


class Probe(NamedTuple):
    body: bytes
    agent: str
    url: str


def probes(body: bytes) -> Iterator[Probe]:
    """The (agent, URL) pairs a file is compared on: the fixed ones, the
    file's own user agents (as bare tokens), and for each rule a URL it
    matches and one just longer."""
    document = _ours(body)
    agents = list(PROBE_AGENTS)
    paths = list(PROBE_PATHS)
    patterns: list[str] = []
    for group in document.groups:
        for agent in group.user_agents:
            agent = agent.lower()
            if agent != "*" and agent not in agents and len(agents) < _MAX_AGENTS:
                agents.append(agent)
        patterns.extend(rule.pattern for rule in group.rules)
    # Protego's reading too, so that rules only it sees are probed as well.
    for rule_set in _protego(body)._user_agents.values():
        patterns.extend(rule.value._pattern for rule in rule_set._rules)
    for pattern in patterns:
        path = pattern.replace("*", "x").rstrip("$")
        if not path.startswith("/"):
            path = "/" + path
        for candidate in (path, path + "x"):
            if candidate not in paths and len(paths) < _MAX_PATHS:
                paths.append(candidate)
    urls = [
        "https://example.com"
        + quote(path.encode("utf-8", "surrogateescape"), safe=_URL_SAFE)
        for path in paths
    ]
    for agent in agents:
        for url in urls:
            yield Probe(body, agent, url)


@lru_cache(maxsize=32)
def _ours(body: bytes) -> Document:
    return parse(body)


@lru_cache(maxsize=256)
def _ours_for(body: bytes, agent: str) -> Matcher:
    return compile(_ours(body), agent)


@lru_cache(maxsize=32)
def _protego(body: bytes) -> Protego:
    return Protego.parse(body.decode(*_PROTEGO_DECODING))


def ours_allows(probe: Probe) -> bool:
    return _ours_for(probe.body, probe.agent).is_allowed(probe.url)


def protego_allows(probe: Probe) -> bool:
    return bool(_protego(probe.body).can_fetch(probe.url, probe.agent))


def _agree(probe: Probe) -> bool:
    return ours_allows(probe) == protego_allows(probe)


def _protego_group(probe: Probe) -> str | None:
    rule_set = _protego(probe.body)._get_matching_rule_set(probe.agent)
    return None if rule_set is None else rule_set.user_agent


# The user-agent causes: which group each side picked.


def _ua_prefix(probe: Probe) -> bool:
    # Protego takes a group whose name starts the agent's string, whatever
    # follows it: "google" for "googlebot", "bot-x*" for "bot-xyz".
    picked = _protego_group(probe)
    token = product_token(probe.agent)
    return picked not in (None, "*", token) and token.startswith(picked)


def _ua_substring(probe: Probe) -> bool:
    # Protego finds a group's name anywhere in the User-Agent string (at a
    # word boundary), this package matches its product token only: for
    # "Mozilla/5.0 (compatible; Googlebot/2.1)" Protego picks "googlebot".
    picked = _protego_group(probe)
    return picked not in (None, "*", product_token(probe.agent))


def _ua_value_token(probe: Probe) -> bool:
    # A group written "User-agent: Googlebot/2.1" or "Googlebot News" is read
    # by its product token (googlebot) here, as Google does; Protego compares
    # the whole value.
    token = product_token(probe.agent)
    for group in applicable_groups(_ours(probe.body), token):
        for agent in group.user_agents:
            written = agent.strip().lower()
            if agent_token(agent) == token and token not in (
                written,
                written.replace("*", ""),
            ):
                return True
    return False


# The reading causes: a rewrite of the body (or URL) that removes one
# difference; it explains the disagreement if both sides then agree.

_LINE_END = re.compile(rb"\r\n|\r|\n")
_GROUP_LINE = re.compile(
    rb"\s*(user[- ]?agent|allow|disallow|dissallow|dissalow|disalow|diasllow"
    rb"|disallaw)\b",
    re.I,
)
_UNROOTED_RULE = re.compile(
    rb"^(\s*(?:allow|disallow|dissallow|dissalow|disalow|diasllow|disallaw)"
    rb"\s*(?::|\s)\s*)"
    rb"[^/*\s#][^\r\n]*?(?=\r?$)",
    re.I | re.M,
)
_INDEX_ALLOW = re.compile(rb"^\s*allow\s*:?\s*\S*/index\.html?\s*(?=\r?$)", re.I | re.M)
# What str.splitlines() ends a line at and RFC 9309 does not.
_OTHER_BREAKS = re.compile(b"[\x0b\x0c\x1c\x1d\x1e]|\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9")
_ESCAPED_SLASH = re.compile(r"%2F", re.I)


def _lines(body: bytes) -> list[bytes]:
    return _LINE_END.split(body)


def _only_group_lines(probe: Probe) -> Probe:
    # Protego ends a group at a user-agent line after any other directive
    # (Crawl-delay, Sitemap, Host, unknown ones); RFC 9309 only after a rule.
    lines = [line for line in _lines(probe.body) if _GROUP_LINE.match(line)]
    return probe._replace(body=b"\n".join(lines))


def _other_breaks(probe: Probe) -> Probe:
    return probe._replace(body=_OTHER_BREAKS.sub(b"\n", probe.body))


def _cut_at_nul(probe: Probe) -> Probe:
    lines = [line.partition(b"\0")[0] for line in _lines(probe.body)]
    return probe._replace(body=b"\n".join(lines))


def _drop_invalid_utf8(probe: Probe) -> Probe:
    return probe._replace(body=probe.body.decode(*_PROTEGO_DECODING).encode())


def _cut_at_size_limit(probe: Probe) -> Probe:
    return probe._replace(body=cut(probe.body, 512_000))


def _cap_lines(probe: Probe) -> Probe:
    lines = [
        cap_line(line.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape"
        )
        for line in _lines(probe.body)
    ]
    return probe._replace(body=b"\n".join(lines))


def _drop_unrooted_patterns(probe: Probe) -> Probe:
    return probe._replace(body=_UNROOTED_RULE.sub(rb"\1", probe.body))


def _drop_index_allows(probe: Probe) -> Probe:
    return probe._replace(body=_INDEX_ALLOW.sub(b"", probe.body))


def _no_dollar_in_url(probe: Probe) -> Probe:
    return probe._replace(url=probe.url.replace("$", "-").replace("%24", "-"))


def _no_replacement_char_in_url(probe: Probe) -> Probe:
    return probe._replace(url=re.sub("%EF%BF%BD", "-", probe.url, flags=re.I))


def _decode_escaped_slashes(probe: Probe) -> Probe:
    body = _ESCAPED_SLASH.sub("/", probe.body.decode("utf-8", "surrogateescape"))
    return Probe(
        body.encode("utf-8", "surrogateescape"),
        probe.agent,
        _ESCAPED_SLASH.sub("/", probe.url),
    )


@dataclass(frozen=True)
class Cause:
    """A named reason for this package and Protego to disagree."""

    name: str
    #: What differs, for the README.
    what: str
    #: Whether it explains a disagreeing probe.
    explains: Callable[[Probe], bool]


def _rewrite(rewrite: Callable[[Probe], Probe]) -> Callable[[Probe], bool]:
    def explains(probe: Probe) -> bool:
        rewritten = rewrite(probe)
        return rewritten != probe and _agree(rewritten)

    return explains


PROTEGO_CAUSES = (
    Cause(
        "ua_prefix_match",
        "Protego picks a group whose name only starts the crawler's token"
        " (`google` for `googlebot`, `bot-x*` for `bot-xyz`); RFC 9309 matches"
        " the whole product token",
        _ua_prefix,
    ),
    Cause(
        "ua_substring_match",
        "Protego finds a group's name anywhere in the User-Agent string"
        " (`Mozilla/5.0 (compatible; Googlebot/2.1)` gets the `googlebot`"
        " group); RFC 9309 matches the product token (`mozilla`)",
        _ua_substring,
    ),
    Cause(
        "ua_value_product_token",
        "a group written `User-agent: Googlebot/2.1` or `Googlebot News` is"
        " read by its product token here, as Google does; Protego compares the"
        " whole value and never matches it",
        _ua_value_token,
    ),
    Cause(
        "size_limit",
        "only the first 512,000 bytes are read here (ROBOTS_MAX_BYTES);"
        " Protego reads everything",
        _rewrite(_cut_at_size_limit),
    ),
    Cause(
        "line_length_cap",
        f"a line keeps at most {MAX_LINE_BYTES} bytes here, as in Google's"
        " parser; Protego keeps it whole",
        _rewrite(_cap_lines),
    ),
    Cause(
        "group_boundary_non_rule_line",
        "Protego ends a group at a user-agent line that follows any other"
        " directive (Crawl-delay, Host, unknown lines); RFC 9309 only at one"
        " that follows a rule, so `User-agent: a / Crawl-delay: 5 /"
        " User-agent: b / Disallow: /` is one group for a and b",
        _rewrite(_only_group_lines),
    ),
    Cause(
        "other_line_breaks",
        "Protego (str.splitlines) also ends lines at VT, FF, FS, GS, RS, NEL,"
        " U+2028 and U+2029; RFC 9309 only at CR and LF",
        _rewrite(_other_breaks),
    ),
    Cause(
        "nul_ends_line",
        "a NUL byte ends its line here (as in Google's parser); Protego keeps"
        " what follows",
        _rewrite(_cut_at_nul),
    ),
    Cause(
        "invalid_utf8_dropped",
        "Scrapy decodes the body for Protego with errors='ignore', so invalid"
        " UTF-8 bytes vanish (`User-agent: *\\xa0` becomes `*`); here they stay"
        " as the octets they are",
        _rewrite(_drop_invalid_utf8),
    ),
    Cause(
        "unrooted_pattern",
        "a rule not starting with `/` or `*` (`Disallow: https://example.com/x/`)"
        " matches nothing here, as in Google's matcher; Protego reads it as"
        " `/https://example.com/x/`",
        _rewrite(_drop_unrooted_patterns),
    ),
    Cause(
        "index_htm_allow",
        "`Allow: /dir/index.htm` also allows `/dir/` here (Google allows both"
        " index.htm and index.html); Protego only for index.html",
        _rewrite(_drop_index_allows),
    ),
    Cause(
        "dollar_also_literal",
        "Protego reads `Disallow: /a$` both as anchored and as a literal `$`,"
        " so it also blocks `/a$`; here a final `$` is only the anchor",
        _rewrite(_no_dollar_in_url),
    ),
    Cause(
        "invalid_escape_replaced",
        "Protego decodes an escape that is not UTF-8 (`%81`, `%E9`) to U+FFFD,"
        " so `Disallow: /caf%E9` blocks any URL with `/caf%EF%BF%BD`; here"
        " `%E9` only matches `%E9`",
        _rewrite(_no_replacement_char_in_url),
    ),
    Cause(
        "escaped_slash_decoded",
        "`%2F` and `/` compare equal here (every escape is decoded before"
        " comparing); Protego keeps `%2F` apart",
        _rewrite(_decode_escaped_slashes),
    ),
)
PROTEGO_CAUSE_NAMES = tuple(cause.name for cause in PROTEGO_CAUSES)


def protego_cause(probe: Probe) -> str | None:
    """Why this package and Protego answer ``probe`` differently; ``None``
    when they agree, ``"unexplained"`` when no known cause explains it."""
    if _agree(probe):
        return None
    for cause in PROTEGO_CAUSES:
        if cause.explains(probe):
            return cause.name
    return "unexplained"


@dataclass(frozen=True)
class Comparison:
    files: int = 0
    probes: int = 0
    #: Disagreeing probes by cause, and the files they come from.
    causes: Counter[str] = field(default_factory=Counter)
    files_by_cause: Counter[str] = field(default_factory=Counter)
    #: One disagreeing probe per cause.
    examples: dict[str, Probe] = field(default_factory=dict)


def compare(files: Iterable[tuple[str, bytes]]) -> Comparison:
    """Compare this package with Protego over ``(name, body)`` pairs."""
    causes: Counter[str] = Counter()
    files_by_cause: Counter[str] = Counter()
    examples: dict[str, Probe] = {}
    count = total = 0
    for _, body in files:
        count += 1
        seen: set[str] = set()
        for probe in probes(body):
            total += 1
            cause = protego_cause(probe)
            if cause is not None:
                causes[cause] += 1
                seen.add(cause)
                examples.setdefault(cause, probe)
        files_by_cause.update(seen)
    return Comparison(count, total, causes, files_by_cause, examples)


#: Tricky robots.txt files, each showing one cause (or none: files both
#: read alike), for machines without the corpus.
SAMPLE: dict[str, tuple[bytes, str | None]] = {
    "agree-plain": (
        b"User-agent: *\nDisallow: /private/\nAllow: /private/public\n"
        b"Disallow: /*.php\nDisallow: /search?\nSitemap: https://e.com/s.xml\n",
        None,
    ),
    "agree-crlf-bom-comments": (
        b"\xef\xbb\xbfUser-agent: *   # everyone\r\nDisallow: /tmp/ # temp\r\n"
        b"\r\nUser-agent: examplebot\r\nDisallow: /\r\n",
        None,
    ),
    "agree-escapes": (
        b"User-agent: *\nDisallow: /%7Euser/\nDisallow: /caf\xc3\xa9\n"
        b"Disallow: /a%3Db\nDisallow: /%E3%83%84\n",
        None,
    ),
    "ua_prefix_match": (
        b"User-agent: example\nDisallow: /\n\nUser-agent: *\nAllow: /\n",
        "ua_prefix_match",
    ),
    "ua_substring_match": (
        b"User-agent: googlebot\nDisallow: /g/\n\nUser-agent: *\nDisallow: /all/\n",
        "ua_substring_match",
    ),
    "ua_value_product_token": (
        b"User-agent: ExampleBot/2.1\nDisallow: /private/\n",
        "ua_value_product_token",
    ),
    "group_boundary_non_rule_line": (
        b"User-agent: examplebot\nCrawl-delay: 10\n\nUser-agent: otherbot\n"
        b"Disallow: /\n",
        "group_boundary_non_rule_line",
    ),
    "other_line_breaks": (
        b"User-agent: *\nAllow: /\x0cDisallow: /private/\n",
        "other_line_breaks",
    ),
    "nul_ends_line": (
        b"User-agent: *\nDisallow: /a\x00bc\n",
        "nul_ends_line",
    ),
    "invalid_utf8_dropped": (
        b"User-Agent: *\xa0\r\nDisallow: /private/\r\n",
        "invalid_utf8_dropped",
    ),
    "size_limit": (
        b"User-agent: *\nDisallow: /early/\n"
        + b"# padding\n" * 52_000
        + b"Disallow: /late/\n",
        "size_limit",
    ),
    "line_length_cap": (
        b"User-agent: *\nDisallow: /" + b"a" * 20_000 + b"\n",
        "line_length_cap",
    ),
    "unrooted_pattern": (
        b"User-agent: *\nDisallow: https://example.com/private/\n",
        "unrooted_pattern",
    ),
    "index_htm_allow": (
        b"User-agent: *\nDisallow: /docs/\nAllow: /docs/index.htm\n",
        "index_htm_allow",
    ),
    "dollar_also_literal": (
        b"User-agent: *\nDisallow: /price$\nDisallow: /cost$\n",
        "dollar_also_literal",
    ),
    "invalid_escape_replaced": (
        b"User-agent: *\nDisallow: /caf%E9\n",
        "invalid_escape_replaced",
    ),
    "escaped_slash_decoded": (
        b"User-agent: *\nDisallow: /a%2Fb\n",
        "escaped_slash_decoded",
    ),
}

_EXTRA_PROBES = {
    # URLs a file's own rules do not suggest.
    "dollar_also_literal": ["/price$", "/cost%24"],
    "escaped_slash_decoded": ["/a/b"],
    "line_length_cap": ["/" + "a" * 17_000],
}


def _sample_probes(name: str) -> Iterator[Probe]:
    body, _ = SAMPLE[name]
    yield from probes(body)
    for path in _EXTRA_PROBES.get(name, ()):
        for agent in PROBE_AGENTS:
            yield Probe(body, agent, "https://example.com" + path)


@pytest.mark.parametrize("name", SAMPLE)
def test_protego_sample(name: str) -> None:
    _, expected = SAMPLE[name]
    causes = {protego_cause(probe) for probe in _sample_probes(name)} - {None}
    assert causes == ({expected} if expected else set())


def test_every_protego_cause_has_a_sample() -> None:
    assert {cause for _, cause in SAMPLE.values()} - {None} == set(PROTEGO_CAUSE_NAMES)


def _cached_corpus() -> list[tuple[str, bytes]] | None:
    from benchmarks import _corpus

    if not _corpus.DATA.is_dir():
        return None
    return _corpus.corpus()


#: Set to "required" (as .ci/run does), a missing corpus fails the test.
CORPUS_REQUIRED = "SCRAPY_RFC9309_CORPUS"


def test_protego_corpus_disagreements_are_all_explained() -> None:
    files = _cached_corpus()
    if files is None:
        from benchmarks import _corpus

        missing = (
            f"Protego's robots.txt corpus is not in {_corpus.DATA}"
            " (bash scripts/test.sh or python -m benchmarks._corpus fetches"
            f" it): compared over the {len(SAMPLE)} files of the built-in"
            " sample only"
        )
        if os.environ.get(CORPUS_REQUIRED) == "required":
            pytest.fail(missing)
        warnings.warn(missing, stacklevel=1)
        files = [(name, body) for name, (body, _) in SAMPLE.items()]
    result = compare(files)
    assert result.probes > 0
    assert "unexplained" not in result.causes, result.examples
    assert set(result.causes) <= set(PROTEGO_CAUSE_NAMES)


def main() -> None:
    """Print the table of causes over the whole corpus (Markdown)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import _corpus

    files = _corpus.corpus()
    result = compare(files)
    disagreeing = sum(result.causes.values())
    print(
        f"{result.files} files, {result.probes} probes,"
        f" {disagreeing} disagreements"
        f" ({100 * disagreeing / max(result.probes, 1):.2f} %)\n"
    )
    print("| cause | probes | files | what differs |")
    print("| --- | ---: | ---: | --- |")
    for cause in (*PROTEGO_CAUSES, Cause("unexplained", "", bool)):
        if result.causes[cause.name]:
            print(
                f"| `{cause.name}` | {result.causes[cause.name]}"
                f" | {result.files_by_cause[cause.name]} | {cause.what} |"
            )


if __name__ == "__main__":
    main()
