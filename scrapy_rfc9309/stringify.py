"""Writing a :class:`~scrapy_rfc9309.parse.Document` back as robots.txt."""

from __future__ import annotations

import re
from itertools import zip_longest
from reprlib import Repr

from ._bytes import MAX_LINE_BYTES, encode
from ._checks import DOCUMENT, expect
from .parse import Document, Group, Rule, UsageRule, parse

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


def _line(key: str, value: str) -> str:
    """``key: value``; ``key:value`` where the space would take the line
    past the length a reader keeps (a value read up to that length)."""
    line = f"{key}: {value}"
    if len(line) * 4 > MAX_LINE_BYTES and len(encode(line)) > MAX_LINE_BYTES:
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


def _group_lines(group: Group) -> list[str]:
    lines = [_line("User-agent", agent) for agent in group.user_agents]
    if group.crawl_delay is not None:
        lines.append(f"Crawl-delay: {group.crawl_delay!r}")
    if group.content_signals:
        signals = ", ".join(
            f"{key}={signal_text(value)}"
            for key, value in group.content_signals.items()
        )
        lines.append(_line("Content-Signal", signals))
    lines.extend(map(rule_line, group.rules))
    lines.extend(map(usage_line, group.content_usage))
    return lines


def stringify(document: Document) -> str:
    """``document`` as robots.txt text: groups, then sitemaps, then the other
    records, with LF line ends.

    ``parse(stringify(d))`` equals ``d`` but for line numbers (compare with
    :meth:`~scrapy_rfc9309.parse.Document.without_lines`), with the same
    profile.  A document that no robots.txt can say raises
    :class:`ValueError` naming what: one built by hand (or by
    ``from_dict``) with a value holding a line break, a NUL or a ``#``, or
    starting or ending with a space, a group without user-agents, a
    rule-less group before another (their lines would read as one group);
    of the documents ``parse`` returns, only one with a line read up to the
    length a reader keeps under a misspelt key (``Disalow``), which the
    right spelling takes past that length.
    """
    expect(document, Document, "document", DOCUMENT)
    blocks = [_group_lines(group) for group in document.groups]
    blocks.append([_line("Sitemap", url) for url in document.sitemaps])
    blocks.append([_line(record.name, record.value) for record in document.records])
    text = "\n\n".join("\n".join(block) for block in blocks if block)
    text = text + "\n" if text else ""
    # What the text says, read back as the document's profile reads it: the
    # one check that holds for every field and every profile.
    said = document.without_lines()
    back = parse(text, profile=document.profile, max_bytes=4 * len(text) + 1)
    back = back.without_lines()
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
