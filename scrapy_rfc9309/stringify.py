"""Writing a :class:`~scrapy_rfc9309.parse.Document` back as robots.txt."""

from __future__ import annotations

from .parse import Document, Group, Rule, UsageRule

__all__ = ["rule_line", "signal_text", "stringify", "usage_line"]


def rule_line(rule: Rule) -> str:
    """``rule`` as its robots.txt line: ``Disallow: /private/``."""
    return f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}"


def usage_line(rule: UsageRule) -> str:
    """A Content-Usage rule as its robots.txt line:
    ``Content-Usage: /ai-ok/ train-ai=y``."""
    path = f"{rule.path} " if rule.path else ""
    return f"Content-Usage: {path}{rule.preference}".rstrip()


def signal_text(value: bool | str) -> str:
    """A Content-Signal value as written: ``yes``, ``no`` or the text."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return value


def _group_lines(group: Group) -> list[str]:
    lines = [f"User-agent: {agent}" for agent in group.user_agents]
    if group.crawl_delay is not None:
        lines.append(f"Crawl-delay: {group.crawl_delay!r}")
    if group.content_signals:
        signals = ", ".join(
            f"{key}={signal_text(value)}"
            for key, value in group.content_signals.items()
        )
        lines.append(f"Content-Signal: {signals}")
    lines.extend(map(rule_line, group.rules))
    lines.extend(map(usage_line, group.content_usage))
    return lines


def stringify(document: Document) -> str:
    """``document`` as robots.txt text: groups, then sitemaps, then the other
    records, with LF line ends.

    ``parse(stringify(d))`` equals ``d`` but for line numbers (compare with
    :meth:`~scrapy_rfc9309.parse.Document.without_lines`) for any ``d`` that
    :func:`~scrapy_rfc9309.parse.parse` returned, with the same profile.
    """
    blocks = [_group_lines(group) for group in document.groups]
    blocks.append([f"Sitemap: {url}" for url in document.sitemaps])
    blocks.append([f"{record.name}: {record.value}" for record in document.records])
    text = "\n\n".join("\n".join(block) for block in blocks if block)
    return text + "\n" if text else ""
