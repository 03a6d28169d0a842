"""Reading the package's settings, shared by every Scrapy component.

One reader per kind of setting (flag, seconds, count, choice, purposes,
text). Each returns the value ready to use or raises :class:`SettingError`
(a ``ValueError``) naming the setting, the value given and what is
accepted: a component that read a bad value as its default, or switched
itself off, would crawl on without the rules the user asked for.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

import scrapy
from scrapy.exceptions import NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from ._defaults import DEFAULTS
from .parse import PROFILES, product_token
from .usage import VOCABULARY, governing, purposes_from_content_signals

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
# Where Scrapy's modules are: a task running one of its coroutines is one
# Scrapy made.
_SCRAPY = str(Path(scrapy.__file__).parent) + os.sep

# The crawls whose "ROBOTSTXT_OBEY = False" was logged (INFO when it turns
# the package off, WARNING when it does not): one line per crawl, whichever
# of the package's components is built first.
_told: WeakSet[Crawler] = WeakSet()

#: The values ``BaseSettings.getbool`` documents, and nothing else: it also
#: takes 2 or "7" as True and 0.5 as False, which are typos here.
_FLAGS: dict[Any, bool] = {
    True: True,
    False: False,
    "1": True,
    "0": False,
    "true": True,
    "false": False,
    "True": True,
    "False": False,
}
_FLAGS_ACCEPTED = "True or False (or 1/0, 'true'/'false' as text)"


def setting(settings: BaseSettings, name: str) -> Any:
    """The value of ``name``, or its package default when it is not set."""
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


class SettingError(ValueError):
    """A setting the package cannot use: the message names it, and says what
    it accepts and what was given."""


def _refused(name: str, value: Any, accepted: str) -> SettingError:
    return SettingError(f"{name} must be {accepted}, not {value!r}")


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, (bool, int, float, str)) and value in _FLAGS:
        return _FLAGS[value]
    raise _refused(name, value, _FLAGS_ACCEPTED)


def flag(settings: BaseSettings, name: str) -> bool:
    """``name`` as a boolean (``ROBOTS_ENABLED``, ``ROBOTS_SITEMAPS``, ...)."""
    return _flag(name, setting(settings, name))


def _number(value: Any) -> float | None:
    # Text comes from the command line (-s NAME=VALUE); a bool is a typo.
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an int past any float
            return None
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


#: The longest duration a setting may give: about 31 years.
MAX_SECONDS = 10**9


def seconds(settings: BaseSettings, name: str, *, positive: bool = False) -> float:
    """``name`` as a finite number of seconds, 0 or more (lifetimes, caps);
    more than 0 when ``positive`` (a wait that could never end is not a
    wait of 0)."""
    value = setting(settings, name)
    number = _number(value)
    # Written so that nan fails too.  Outcomes carry times computed from
    # these, which stores write and read back as finite numbers.
    if number is None or not (
        0 < number <= MAX_SECONDS if positive else 0 <= number <= MAX_SECONDS
    ):
        low = "more than 0, up to" if positive else "from 0 to"
        raise _refused(
            name,
            value,
            f"a number of seconds {low} {MAX_SECONDS:,} (such as {DEFAULTS[name]})",
        )
    return number


def positive_int(settings: BaseSettings, name: str, *, minimum: int) -> int:
    """``name`` as a whole number of at least ``minimum`` (sizes, counts)."""
    value = setting(settings, name)
    number = _number(value)
    if number is None or not number.is_integer() or number < minimum:
        raise _refused(
            name,
            value,
            f"a whole number, {minimum} or more (such as {DEFAULTS[name]})",
        )
    return int(number)


def _choice(name: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    key = value.strip().lower() if isinstance(value, str) else None
    if key in choices:
        return key
    raise _refused(name, value, "one of " + ", ".join(map(repr, choices)))


def choice(settings: BaseSettings, name: str, choices: Iterable[str]) -> str:
    """``name`` as one of ``choices`` (lower-cased, spaces around ignored)."""
    return _choice(name, setting(settings, name), choices)


def robots_profile(settings: BaseSettings, given: str | None = None) -> str:
    """The matching profile: ``ROBOTS_PROFILE``, or ``given`` by the command
    line's ``--profile`` when it is not ``None``."""
    if given is None:
        return _choice("ROBOTS_PROFILE", setting(settings, "ROBOTS_PROFILE"), PROFILES)
    return _choice("--profile", given, PROFILES)


def purposes(settings: BaseSettings, name: str) -> tuple[str, ...]:
    """``name`` (``ROBOTS_CONTENT_SIGNALS``) as the purposes set true.

    A dict of purpose names to flags, or that dict as a JSON object (how
    ``-s NAME='{"ai-train": true}'`` gives it); purposes lower-cased.
    """
    value = setting(settings, name)
    accepted = (
        'a dict of purposes set to True or False, such as {"ai-train": True}'
        " (or that dict as a JSON object)"
    )
    found = value
    if isinstance(value, str):
        try:
            found = json.loads(value)
        except ValueError:
            raise _refused(name, value, accepted) from None
    if not isinstance(found, Mapping):
        raise _refused(name, value, accepted)
    in_use = []
    for purpose, wanted in found.items():
        if not isinstance(purpose, str) or not purpose.strip():
            raise _refused(name, value, accepted)
        try:
            if _flag(name, wanted):
                in_use.append(purpose.strip().lower())
        except ValueError:
            raise _refused(name, value, accepted) from None
    return tuple(in_use)


def text(settings: BaseSettings, name: str) -> str | None:
    """``name`` as text (a URL, a prefix), ``None`` when not set."""
    value = setting(settings, name)
    if value is None or isinstance(value, str):
        return value
    raise _refused(name, value, "text")


def robots_user_agent(settings: BaseSettings, spider: Spider | None = None) -> str:
    """The agent whose robots.txt rules apply to this crawl (see
    :func:`robots_user_agent_from`)."""
    return robots_user_agent_from(settings, spider)[0]


def robots_user_agent_from(
    settings: BaseSettings, spider: Spider | None = None
) -> tuple[str, str]:
    """The agent whose robots.txt rules apply to this crawl, and where it
    comes from (a setting's name, the spider's attribute).

    A spider attribute ``robots_user_agent`` wins, then ``ROBOTS_USER_AGENT``,
    ``ROBOTSTXT_USER_AGENT`` and ``USER_AGENT``; its product token is what is
    matched against ``User-agent`` lines.  The first one set is the agent,
    refused (naming where it came from) without a product token: only the
    ``*`` groups would ever apply to it.  ``"*"`` when none is set.
    """
    name = getattr(spider, "name", None)
    sources = [
        (
            f"the robots_user_agent attribute of spider {name!r}",
            getattr(spider, "robots_user_agent", None),
        ),
        *((setting, settings.get(setting)) for setting in _AGENT_SETTINGS),
    ]
    for source, value in sources:
        if value is None or value == "":
            continue
        if isinstance(value, str) and product_token(value):
            return value, source
        error = _refused(source, value, _AGENT_ACCEPTED)
        if source == "USER_AGENT":
            # Also the User-Agent header, which may have to stay as it is.
            error.args = (f"{error}{AGENT_HINT}",)
        raise error
    return "*", "the default agent"


#: What to do with an agent taken from ``USER_AGENT`` (also the header) that
#: cannot be the robots.txt agent.
AGENT_HINT = " (ROBOTS_USER_AGENT sets the robots.txt agent alone)"
#: Where the crawl's agent comes from when no spider attribute names it.
_AGENT_SETTINGS = ("ROBOTS_USER_AGENT", "ROBOTSTXT_USER_AGENT", "USER_AGENT")
_AGENT_ACCEPTED = (
    "a user agent starting with its product token (letters, '_' and '-',"
    " such as 'MyBot/1.0')"
)


def ensure_enabled(crawler: Crawler, *, quiet: bool = False) -> None:
    """Raise ``NotConfigured`` when robots.txt handling is switched off.

    ``ROBOTS_ENABLED`` off, or ``ROBOTSTXT_OBEY = False`` set above the
    project's settings (``-s`` on the command line, a spider's
    ``custom_settings``).  At project priority ``ROBOTSTXT_OBEY`` is what
    Scrapy's project template wrote for its built-in middleware: enabling
    this package is the consent that counts there, and a ``False`` there is
    answered by a WARNING (once per crawl) naming what does turn it off.
    ``quiet``: no reason for Scrapy to log at WARNING when
    ``ROBOTS_ENABLED`` is off.
    """
    settings = crawler.settings
    if not flag(settings, "ROBOTS_ENABLED"):
        raise NotConfigured() if quiet else NotConfigured("ROBOTS_ENABLED is off")
    priority = settings.getpriority("ROBOTSTXT_OBEY")
    # Scrapy's own default is False: only a False someone wrote counts.
    if not priority or settings.getbool("ROBOTSTXT_OBEY"):
        return
    told = crawler in _told
    _told.add(crawler)
    names = [k for k, v in SETTINGS_PRIORITIES.items() if v == priority]
    source = names[0] if names else f"priority {priority}"
    if priority <= SETTINGS_PRIORITIES["project"]:
        if not told and _addon_enabled(crawler):
            # Silence here would read as "robots.txt is off" to whoever set
            # it, while every URL is still judged by robots.txt.  (Enabled
            # by hand, the middleware replaced the built-in this False was
            # written for: getting-started shows it so.)
            logger.warning(
                "ROBOTSTXT_OBEY = False (%(source)s settings) does not turn"
                " scrapy-rfc9309 off: robots.txt is still fetched and obeyed."
                " ROBOTS_ENABLED = False turns it off, as does ROBOTSTXT_OBEY ="
                " False on the command line (-s) or in a spider's custom_settings",
                {"source": source},
                extra={"crawler": crawler},
            )
        return
    if not told:
        logger.info(
            "ROBOTSTXT_OBEY = False (%(source)s settings): robots.txt is"
            " neither fetched nor obeyed in this crawl",
            {"source": source},
            extra={"crawler": crawler},
        )
    # No message: Scrapy would log it again, per component, at WARNING.
    raise NotConfigured


def _addon_enabled(crawler: Crawler) -> bool:
    # Imported here: the add-on imports the components, which import this.
    from .addon import Addon

    return any(isinstance(addon, Addon) for addon in crawler.addons.addons)


def crawl_purposes(settings: BaseSettings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What this crawl is for, declared once for both signals: the
    Content-Signal keys and the aipref (Content-Usage) purposes in use.

    ``ROBOTS_PURPOSES`` names aipref categories (``["train-ai"]``, or
    ``"search+train-ai"`` for one use in both, or their comma-separated
    text); each also puts in use the Content-Signal key its deciding
    category maps to.  ``ROBOTS_CONTENT_SIGNALS`` (``{"ai-train": True}``)
    still works, and the categories its keys map to are in use for
    Content-Usage too.
    """
    signals = purposes(settings, "ROBOTS_CONTENT_SIGNALS")
    name = "ROBOTS_PURPOSES"
    value = setting(settings, name)
    accepted = (
        f"a list of {VOCABULARY.revision} categories"
        f" ({', '.join(VOCABULARY.labels)}; several joined by '+' for one use),"
        " such as ['train-ai'] (or their comma-separated text)"
    )
    declared = value.split(",") if isinstance(value, str) else value
    if not isinstance(declared, (list, tuple)):
        raise _refused(name, value, accepted)
    usage: dict[str, None] = {}
    for purpose in declared:
        if not isinstance(purpose, str):
            raise _refused(name, value, accepted)
        purpose = purpose.strip().lower()
        if not purpose and isinstance(value, str):
            continue
        if not all(label in VOCABULARY.labels for label in purpose.split("+")):
            raise _refused(name, value, accepted)
        usage[purpose] = None
    in_use = dict.fromkeys(signals)
    usage.update(dict.fromkeys(purposes_from_content_signals(signals)))
    for purpose in list(usage):
        # Only the labels that decide the use: Content-Signal knows no
        # overrides, so "search+train-ai" asks it about search alone.
        for label in governing(purpose):
            key = VOCABULARY.content_signal.get(label)
            if key is not None:
                in_use[key] = None
    return tuple(in_use), tuple(usage)


#: Set by a caller that says itself why a crawl could not start
#: (``scrapy robots``): the components then leave the refusal to it.
refusals_reported: ContextVar[bool] = ContextVar("refusals_reported", default=False)


@contextmanager
def refusals_logged(crawler: Crawler) -> Iterator[None]:
    """Around building a component: a setting it refuses
    (:class:`SettingError`) is logged in one ERROR line, and still stops the
    crawl, without the traceback asyncio would print under it."""
    try:
        yield
    except SettingError as exc:
        if not refusals_reported.get():
            _log_refusal(crawler, exc)
        raise


def _log_refusal(crawler: Crawler, exc: SettingError) -> None:
    logger.error(
        "The crawl cannot start: %(error)s", {"error": exc}, extra={"crawler": crawler}
    )
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop running: another Twisted reactor
        return
    if task is not None and _made_by_scrapy(task):
        # Scrapy runs each crawl in a task of its own and leaves a crawl
        # that fails to start to asyncio, which prints the exception under
        # every frame of Scrapy's ("Task exception was never retrieved")
        # once the task is gone: the line above says all of it.  A task of
        # a script's own (awaiting crawl_async()) gets the exception back.
        task.add_done_callback(partial(_retrieve, exc))


def _made_by_scrapy(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` runs a coroutine of Scrapy's."""
    code = getattr(task.get_coro(), "cr_code", None)
    module = getattr(code, "co_filename", "")
    return module.startswith(_SCRAPY)


def _retrieve(exc: SettingError, task: asyncio.Task[Any]) -> None:
    error = None if task.cancelled() else task.exception()
    if error is not None and error is not exc:
        # The task ended on something else: asyncio's report of it stays.
        task.get_loop().call_exception_handler(
            {
                "message": "Task exception was never retrieved",
                "exception": error,
                "future": task,
            }
        )


def enabled_components(crawler: Crawler, chain: str) -> list[type] | None:
    """The classes ``chain`` (``SPIDER_MIDDLEWARES``, ...) enables; ``None``
    when Scrapy will refuse it itself (a duplicate, a path that does not
    import): it says so better."""
    settings = crawler.settings
    # As Scrapy builds it: from 2.15, a class key replaces the import path of
    # the same class in the _BASE setting (None disables a built-in).
    with_base = getattr(settings, "get_component_priority_dict_with_base", None)
    try:
        components = with_base(chain) if with_base else settings.getwithbase(chain)
        return [
            load_object(key) if isinstance(key, str) else key
            for key in build_component_list(components)
        ]
    except Exception:  # Scrapy reports the same error when it builds them
        return None
