"""What _compat.py gives every supported Scrapy release alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from inspect import isasyncgenfunction, iscoroutinefunction
from typing import Any

import pytest

from scrapy_rfc9309 import _compat
from scrapy_rfc9309._compat import spider_argument
from tests.support.utils import coroutine_test


class Hooks:
    def process_spider_input(self, response: str) -> str:
        return f"input {response}"

    async def process_request(self, request: str) -> str:
        return f"request {request}"

    async def process_spider_output(
        self, response: str, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for item in result:
            yield f"{response} {item}"

    def helper(self, value: str) -> str:
        return value


async def _items() -> AsyncIterator[str]:
    for item in ("a", "b"):
        yield item


async def _outputs(hooks: Any, **spider: Any) -> list[str]:
    return [
        item
        async for item in hooks.process_spider_output(
            response="page", result=_items(), **spider
        )
    ]


@pytest.fixture
def scrapy_2_13(monkeypatch: pytest.MonkeyPatch) -> None:
    """spider_argument as on Scrapy 2.13, whatever release runs the tests."""
    monkeypatch.setattr(_compat, "version_info", (2, 13, 4))


@pytest.mark.usefixtures("scrapy_2_13")
@coroutine_test
async def test_middleware_methods_take_the_spider_argument_of_scrapy_2_13() -> None:
    # Scrapy 2.13 calls every hook with spider=...; the package's take none.
    wrapped = spider_argument(type("Wrapped", (Hooks,), dict(vars(Hooks))))
    hooks = wrapped()
    assert hooks.process_spider_input(response="page", spider=object()) == "input page"
    assert await hooks.process_request(request="r", spider=None) == "request r"
    assert await _outputs(hooks, spider=None) == ["page a", "page b"]
    # Scrapy tells the kinds apart; the wrappers keep each method's kind.
    assert iscoroutinefunction(wrapped.process_request)
    assert isasyncgenfunction(wrapped.process_spider_output)
    assert not iscoroutinefunction(wrapped.process_spider_input)
    assert wrapped.process_request.__name__ == "process_request"
    # Not a hook: left as it is.
    assert wrapped.helper is Hooks.helper


@coroutine_test
async def test_newer_releases_get_the_class_itself() -> None:
    # Scrapy 2.14 and newer pass no spider: nothing is wrapped.
    if _compat.version_info < (2, 14):
        pytest.skip("Scrapy 2.13 wraps the hooks")
    cls = type("Plain", (Hooks,), dict(vars(Hooks)))
    assert spider_argument(cls) is cls
    assert vars(cls)["process_request"] is vars(Hooks)["process_request"]
    with pytest.raises(TypeError, match="spider"):
        await _outputs(cls(), spider=None)


@pytest.mark.usefixtures("scrapy_2_13")
@coroutine_test
async def test_a_subclass_of_a_wrapped_middleware_is_wrapped_alike() -> None:
    # A user's override, written for Scrapy 2.14 on (no spider), of a
    # package middleware: on 2.13 its hooks are wrapped when it is made.
    base = spider_argument(type("Base", (Hooks,), dict(vars(Hooks))))

    class Override(base):  # type: ignore[valid-type,misc]
        async def process_request(self, request: str) -> str:
            return "override " + await super().process_request(request)

    class Written213(base):  # type: ignore[valid-type,misc]
        # Written for Scrapy 2.13: takes the spider, passes it on by position.
        async def process_request(self, request: str, spider: Any) -> str:
            return "2.13 " + await super().process_request(request, spider)

    assert await Override().process_request(request="r", spider=None) == (
        "override request r"
    )
    assert await Written213().process_request(request="r", spider=None) == (
        "2.13 request r"
    )
    assert vars(Written213)["process_request"].__qualname__.endswith(
        "Written213.process_request"
    )

    class Mixin:
        async def process_request(self, request: str) -> str:
            return "mixin " + await super().process_request(request)  # type: ignore[misc]

    class Mixed(Mixin, base):  # type: ignore[valid-type,misc]
        pass

    assert await Mixed().process_request(request="r", spider=None) == (
        "mixin request r"
    )
    # The mixin itself is left as it is; the wrapper is the subclass's.
    mixin = vars(Mixin)["process_request"]
    assert not hasattr(mixin, "__wrapped__")
    assert vars(Mixed)["process_request"].__wrapped__ is mixin
    # A decorated subclass (its hooks wrapped when it was made): not twice.
    decorated = spider_argument(type("Decorated", (base,), dict(vars(Hooks))))
    wrapper = vars(decorated)["process_request"]
    assert wrapper.__wrapped__ is vars(Hooks)["process_request"]
