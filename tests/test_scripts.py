"""The developer scripts' usage errors: one line, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.utils import usage_error

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args", [["--scrapy"], ["--scrapy", ""], ["--scrapy", "-x"]])
def test_test_sh_scrapy_without_a_version(args: list[str]) -> None:
    # Refused before anything is set up or run.
    assert usage_error(["bash", str(ROOT / "scripts" / "test.sh"), *args]) == [
        "error: --scrapy takes a Scrapy version, as in --scrapy 2.18.0"
    ]
