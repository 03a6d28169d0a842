"""Scrapy obeying the Robots Exclusion Protocol (RFC 9309).

The engine (``parse``, ``is_allowed``, ``explain``, ``stringify``, ``lint``,
``Outcome``, ...) is pure Python: importing it does not import Scrapy or
Twisted.  The Scrapy components (``Addon``, ``RobotsMiddleware``,
``DirectivesMiddleware``, ``UsageMiddleware``, ``LicensesMiddleware``,
``TdmMiddleware``, ``TdmItemsMiddleware``, ``RobotsDisallowed``,
``RobotsCancelled``, ``RobotParser``) are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The engine is imported eagerly: it is pure Python, and binding these names
# here keeps ``scrapy_rfc9309.parse`` (and ``lint``, ``stringify``) the
# functions even after their submodules of the same name are imported.
from .directives import (
    DirectiveSet,
    directives_for,
    parse_directives,
    stringify_directives,
)
from .lint import Diagnostic, lint
from .match import (
    Decision,
    Matcher,
    compile,
    content_signals,
    crawl_delay,
    explain,
    is_allowed,
    product_token,
)
from .outcome import Answer, Lifetimes, Outcome, classify, explain_by, is_allowed_by
from .parse import Document, Group, Rule, UsageRule, parse
from .stringify import stringify
from .urls import robots_url
from .usage import usage_explained, usage_preferences

if TYPE_CHECKING:
    from ._closing import RobotsCancelled
    from .addon import Addon
    from .licensemiddleware import LicensesMiddleware
    from .middleware import RobotsDisallowed, RobotsMiddleware
    from .parser import RobotParser
    from .provenancemiddleware import ProvenanceMiddleware
    from .spidermiddleware import DirectivesMiddleware
    from .tdmmiddleware import TdmItemsMiddleware, TdmMiddleware
    from .usagemiddleware import UsageMiddleware

__version__ = "0.1.0"

# The Scrapy components are imported on first access, so that engine users
# never import Scrapy or Twisted.
_LAZY = {
    "Addon": "addon",
    "DirectivesMiddleware": "spidermiddleware",
    "LicensesMiddleware": "licensemiddleware",
    "ProvenanceMiddleware": "provenancemiddleware",
    "RobotParser": "parser",
    "RobotsCancelled": "_closing",
    "RobotsDisallowed": "middleware",
    "RobotsMiddleware": "middleware",
    "TdmItemsMiddleware": "tdmmiddleware",
    "TdmMiddleware": "tdmmiddleware",
    "UsageMiddleware": "usagemiddleware",
}

__all__ = [
    "Addon",
    "Answer",
    "Decision",
    "Diagnostic",
    "DirectiveSet",
    "DirectivesMiddleware",
    "Document",
    "Group",
    "LicensesMiddleware",
    "Lifetimes",
    "Matcher",
    "Outcome",
    "ProvenanceMiddleware",
    "RobotParser",
    "RobotsCancelled",
    "RobotsDisallowed",
    "RobotsMiddleware",
    "Rule",
    "TdmItemsMiddleware",
    "TdmMiddleware",
    "UsageMiddleware",
    "UsageRule",
    "classify",
    "compile",
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
    "usage_explained",
    "usage_preferences",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
