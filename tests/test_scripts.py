"""The developer scripts' usage errors: one line, exit status 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args", [["--scrapy"], ["--scrapy", ""], ["--scrapy", "-x"]])
def test_test_sh_scrapy_without_a_version(args: list[str]) -> None:
    # Refused before anything is set up or run.
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: --scrapy takes a Scrapy version, as in --scrapy 2.18.0"
    ]
