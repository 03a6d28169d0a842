"""Helpers shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any

from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.reactor import is_reactor_installed


def coroutine_test(
    coro_f: Callable[..., Coroutine[Any, Any, Any]],
) -> Callable[..., Any]:
    """Run an ``async def`` test under pytest-twisted (or pytest-asyncio
    when no reactor is installed), as Scrapy's own test suite does.

    ``@pytest_twisted.ensureDeferred`` breaks real crawls under the asyncio
    reactor, so the coroutine is wrapped in a Deferred instead.
    """
    if not is_reactor_installed():
        import pytest

        return pytest.mark.asyncio(coro_f)  # type: ignore[no-any-return]

    @wraps(coro_f)
    def f(*args: Any, **kwargs: Any) -> Any:
        return deferred_from_coro(coro_f(*args, **kwargs))

    return f
