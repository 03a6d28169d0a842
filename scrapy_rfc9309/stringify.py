"""Writing a :class:`~scrapy_rfc9309.parse.Document` back as robots.txt."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import zip_longest
from reprlib import Repr

from ._bytes import MAX_LINE_BYTES, encode
from ._checks import DOCUMENT, expect
from .parse import Document, Group, Rule, UsageRule, parse
from .profiles import MAX_BYTES, effective_max_bytes

__all__ = ["readable", "rule_line", "signal_text", "stringify", "usage_line"]

# A lone surrogate: an undecodable octet kept as a surrogate escape (U+DC80
# to U+DCFF), or one a str given by hand holds.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _octets(match: re.Match[str]) -> str:
    return "".join(f"%{octet:02X}" for octet in encode(match.group()))


def readable(text: str) -> str:
    """``text`` as people and files are shown robots.txt text: each octet
    that was not UTF-8 (kept by the reader as a surrogate escape,
    ``'\\udce9'``) written as its percent escape, ``%E9``, which is how URLs
    match it; any other lone surrogate as the octets ``surrogatepass`` makes
    of it (``%ED%A0%80``).  The result encodes as strict UTF-8, for a log
    file, a feed, a report.  :func:`stringify`, :func:`rule_line` and
    :func:`usage_line` keep the text as read: robots.txt written back holds
    the octets themselves."""
    if text.isascii():
        return text
    return _SURROGATE.sub(_octets, text)


def _line(key: str, value: str, space: str = " ") -> str:
    """``key: value``; ``key:value`` where the space would take the line
    past the length a reader keeps (a value read up to that length), or
    with ``space`` empty (a file written as short as it can be)."""
    line = f"{key}:{space}{value}"
    if space and len(line) * 4 > MAX_LINE_BYTES and len(encode(line)) > MAX_LINE_BYTES:
        return f"{key}:{value}"
    return line


def rule_line(rule: Rule) -> str:
    """``rule`` as its robots.txt line: ``Disallow: /private/``."""
    return _line("Allow" if rule.allow else "Disallow", rule.pattern)


def usage_line(rule: UsageRule) -> str:
    """A Content-Usage rule as its robots.txt line:
    ``Content-Usage: /ai-ok/ train-ai=y``."""
    path = f"{rule.path} " if rule.path else ""
    return _line("Content-Usage", f"{path}{rule.preference}").rstrip()


def signal_text(value: bool | str) -> str:
    """A Content-Signal value as written: ``yes``, ``no`` or the text."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return value


def _group_lines(group: Group, space: str) -> list[str]:
    lines = [_line("User-agent", agent, space) for agent in group.user_agents]
    if group.crawl_delay is not None:
        lines.append(_line("Crawl-delay", repr(group.crawl_delay), space))
    lines.extend(_signal_lines(group.content_signals, space))
    lines.extend(
        _line("Allow" if rule.allow else "Disallow", rule.pattern, space)
        for rule in group.rules
    )
    lines.extend(map(usage_line, group.content_usage))
    return lines


def _signal_lines(signals: dict[str, bool | str], space: str) -> list[str]:
    """Content-Signal lines saying ``signals``: one, or as many as keep each
    within the length a reader keeps (the values of a group's lines merge,
    each key said once)."""
    lines: list[str] = []
    parts: list[str] = []
    for key, value in signals.items():
        part = f"{key}={signal_text(value)}"
        line = _line("Content-Signal", ", ".join([*parts, part]), space)
        if parts and len(encode(line)) > MAX_LINE_BYTES:
            lines.append(_line("Content-Signal", ", ".join(parts), space))
            parts = []
        parts.append(part)
    if parts:
        lines.append(_line("Content-Signal", ", ".join(parts), space))
    return lines


def _text(document: Document, space: str, gap: str) -> str:
    """The lines of ``document``: each record where its line number puts it
    (before the groups, or in the group whose first line is the last before
    it: an RSL ``License`` line applies to that group's agents only), the
    sitemaps last; blocks apart by ``gap``."""
    starts = [group.line for group in document.groups]
    blocks: list[list[str]] = [[] for _ in range(len(starts) + 1)]
    for record in document.records:
        index = bisect_right(starts, record.line) if record.line else 0
        blocks[index].append(_line(record.name, record.value, space))
    for index, group in enumerate(document.groups, 1):
        blocks[index][:0] = _group_lines(group, space)
    blocks.append([_line("Sitemap", url, space) for url in document.sitemaps])
    text = gap.join("\n".join(block) for block in blocks if block)
    return text + "\n" if text else ""


def stringify(document: Document) -> str:
    """``document`` as robots.txt text: groups, each record where its line
    number puts it (before the groups, or in a group: an RSL ``License``
    line applies to its group's agents), then sitemaps, with LF line ends;
    written as short as it can be (``key:value``, no blank lines) when it
    would be over what the profile reads (512,000 bytes by default).

    ``parse(stringify(d))`` equals ``d`` but for line numbers (compare with
    :meth:`~scrapy_rfc9309.parse.Document.without_lines`), with the same
    profile.  A document that no robots.txt can say raises
    :class:`ValueError` naming what: one built by hand (or by
    ``from_dict``) with a value holding a line break, a NUL or a ``#``, or
    starting or ending with a space, a group without user-agents, a
    rule-less group before another (their lines would read as one group);
    of the documents ``parse`` returns, one with a line read up to the
    length a reader keeps under a misspelt key (``Disalow``), which the
    right spelling takes past that length, and one read with a larger
    ``max_bytes`` that no file of the profile's size can say.
    """
    expect(document, Document, "document", DOCUMENT)
    limit = effective_max_bytes(document.profile, MAX_BYTES)
    text = _text(document, " ", "\n\n")
    if len(encode(text)) > limit:
        # As short as it can be written, rather than cut by every reader.
        text = _text(document, "", "\n")
        if len(encode(text)) > limit:
            raise ValueError(
                f"robots.txt cannot say this document in {limit:,} bytes, what"
                f" the {document.profile} profile reads: it takes"
                f" {len(encode(text)):,}"
            )
    # What the text says, read back as the document's profile reads it: the
    # one check that holds for every field and every profile.
    said = document.without_lines()
    back = parse(text, profile=document.profile).without_lines()
    if back != said:
        raise ValueError(
            f"robots.txt cannot say {_unsaid(said, back)}: written, it reads"
            " back otherwise (no value can hold a line break, a NUL or a '#',"
            " start or end with a space, or take its line past"
            f" {MAX_LINE_BYTES:,} bytes)"
        )
    return text


# Values in messages: a line may be 16 KB long.
_SHOWN = Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80


def _unsaid(document: Document, back: Document) -> str:
    """The first part of ``document`` that ``back`` (its text read again)
    does not hold alike (both without line numbers)."""
    shown = _SHOWN.repr
    groups = zip(document.groups, back.groups, strict=False)
    for number, (group, read) in enumerate(groups, 1):
        what = f"group {number} (User-agent: {shown(', '.join(group.user_agents))})"
        if group.user_agents != read.user_agents:
            return f"the user-agents of {what}"
        for rule, other in zip_longest(group.rules, read.rules):
            if rule is not None and rule != other:
                return f"{shown(rule_line(rule))} of {what}"
        for field in ("crawl_delay", "content_signals", "content_usage", "rules"):
            if getattr(group, field) != getattr(read, field):
                return f"the {field.replace('_', ' ')} of {what}"
    if len(document.groups) != len(back.groups):
        return f"its {len(document.groups)} groups (read back: {len(back.groups)})"
    for url, other in zip_longest(document.sitemaps, back.sitemaps):
        if url is not None and url != other:
            return f"the sitemap {shown(url)}"
    for record, read_record in zip_longest(document.records, back.records):
        if record is not None and record != read_record:
            return f"the record {shown(_line(record.name, record.value))}"
    return "its lines"
