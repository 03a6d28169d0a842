"""Scrapy obeying the Robots Exclusion Protocol (RFC 9309).

The engine (``parse``, ``is_allowed``, ``explain``, ``stringify``, ``lint``,
``Outcome``, ...) is pure Python: importing it does not import Scrapy or
Twisted.  The Scrapy components (``Addon``, ``RobotsMiddleware``,
``DirectivesMiddleware``, ``RobotsDisallowed``) are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .addon import Addon
    from .directives import (
        DirectiveSet,
        directives_for,
        parse_directives,
        stringify_directives,
    )
    from .lint import Diagnostic, lint
    from .match import (
        Decision,
        content_signals,
        crawl_delay,
        explain,
        is_allowed,
        product_token,
    )
    from .middleware import (
        RobotsDisallowed,
        RobotsMiddleware,
    )
    from .outcome import (
        Outcome,
        explain_by,
        is_allowed_by,
    )
    from .parse import (
        Document,
        Group,
        Rule,
        parse,
    )
    from .spidermiddleware import DirectivesMiddleware
    from .stringify import stringify
    from .urls import robots_url

__version__ = "0.1.0"

# Where each public name lives; modules are imported on first access so that
# ``import scrapy_rfc9309`` stays cheap and free of Scrapy for engine users.
_EXPORTS = {
    "Addon": "addon",
    "Decision": "match",
    "Diagnostic": "lint",
    "DirectiveSet": "directives",
    "DirectivesMiddleware": "spidermiddleware",
    "Document": "parse",
    "Group": "parse",
    "Outcome": "outcome",
    "RobotsDisallowed": "middleware",
    "RobotsMiddleware": "middleware",
    "Rule": "parse",
    "content_signals": "match",
    "crawl_delay": "match",
    "directives_for": "directives",
    "explain": "match",
    "explain_by": "outcome",
    "is_allowed": "match",
    "is_allowed_by": "outcome",
    "lint": "lint",
    "parse": "parse",
    "parse_directives": "directives",
    "product_token": "match",
    "robots_url": "urls",
    "stringify": "stringify",
    "stringify_directives": "directives",
}

__all__ = [
    "Addon",
    "Decision",
    "Diagnostic",
    "DirectiveSet",
    "DirectivesMiddleware",
    "Document",
    "Group",
    "Outcome",
    "RobotsDisallowed",
    "RobotsMiddleware",
    "Rule",
    "content_signals",
    "crawl_delay",
    "directives_for",
    "explain",
    "explain_by",
    "is_allowed",
    "is_allowed_by",
    "lint",
    "parse",
    "parse_directives",
    "product_token",
    "robots_url",
    "stringify",
    "stringify_directives",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
