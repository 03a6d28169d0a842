"""Reading the package's settings, shared by every Scrapy component."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._defaults import DEFAULTS
from .usage import VOCABULARY, governing, purposes_from_content_signals

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.settings import BaseSettings


def setting(settings: BaseSettings, name: str) -> Any:
    """The value of ``name``, or its package default when it is not set."""
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


def positive_int(settings: BaseSettings, name: str, *, minimum: int) -> int:
    """``name`` as an integer of at least ``minimum``; ``ValueError``
    otherwise, since crawling on with a setting ignored would be wrong."""
    value = setting(settings, name)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise ValueError(
            f"{name} must be an integer of at least {minimum}, not {value!r}"
        )
    return number


def robots_user_agent(settings: BaseSettings, spider: Spider | None = None) -> str:
    """The agent whose robots.txt rules apply to this crawl.

    A spider attribute ``robots_user_agent`` wins, then ``ROBOTS_USER_AGENT``,
    ``ROBOTSTXT_USER_AGENT`` and ``USER_AGENT``; its product token is what is
    matched against ``User-agent`` lines.
    """
    for value in (
        getattr(spider, "robots_user_agent", None),
        settings.get("ROBOTS_USER_AGENT"),
        settings.get("ROBOTSTXT_USER_AGENT"),
        settings.get("USER_AGENT"),
    ):
        if value:
            return str(value)
    return "*"


def crawl_purposes(settings: BaseSettings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What this crawl is for, declared once for both signals: the
    Content-Signal keys and the aipref (Content-Usage) purposes in use.

    ``ROBOTS_PURPOSES`` names aipref categories (``["train-ai"]``, or
    ``"search+train-ai"`` for one use in both); each also puts the
    Content-Signal key its category maps to in use.  ``ROBOTS_CONTENT_SIGNALS``
    (``{"ai-train": True}``) still works, and its keys the vocabulary maps
    put their categories in use for Content-Usage too.  ``ValueError`` on a
    malformed value or an unknown category: a typo must not crawl unchecked.
    """
    try:
        signals = settings.getdict("ROBOTS_CONTENT_SIGNALS")
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "ROBOTS_CONTENT_SIGNALS must be a dict of purposes, such as"
            f' {{"ai-train": True}}, not {settings.get("ROBOTS_CONTENT_SIGNALS")!r}'
        ) from exc
    declared = setting(settings, "ROBOTS_PURPOSES")
    if isinstance(declared, str):
        declared = [part for part in declared.split(",") if part.strip()]
    if not isinstance(declared, (list, tuple)) or not all(
        isinstance(purpose, str) for purpose in declared
    ):
        raise ValueError(
            'ROBOTS_PURPOSES must be a list of purposes, such as ["train-ai"],'
            f" not {declared!r}"
        )
    usage: dict[str, None] = {}
    for purpose in declared:
        purpose = purpose.strip().lower()
        unknown = [
            label for label in purpose.split("+") if label not in VOCABULARY.labels
        ]
        if unknown or not purpose:
            raise ValueError(
                f"ROBOTS_PURPOSES: {purpose!r} is not a category of "
                f"{VOCABULARY.revision} ({', '.join(VOCABULARY.labels)}), nor "
                "several of them joined by '+'"
            )
        usage[purpose] = None
    in_use = {str(key).strip().lower(): True for key, value in signals.items() if value}
    usage.update(dict.fromkeys(purposes_from_content_signals(in_use)))
    for purpose in list(usage):
        # Only the labels that decide the use: Content-Signal knows no
        # overrides, so "search+train-ai" asks it about search alone.
        for label in governing(purpose):
            key = VOCABULARY.content_signal.get(label)
            if key is not None:
                in_use[key] = True
    return tuple(in_use), tuple(usage)
