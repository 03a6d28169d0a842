"""benchmarks/compare.py: another revision's engine unpacked beside this one
answers the same, and a changed answer is seen."""

from __future__ import annotations

import random
import sys
from types import ModuleType

import pytest

from benchmarks import compare


@pytest.fixture(scope="module")
def engines() -> tuple[dict[str, ModuleType], dict[str, ModuleType]]:
    folder = compare.unpack("HEAD")
    assert not any(
        f"{compare.NEW}." in path.read_text()
        for path in (folder / compare.BASE).rglob("*.py")
    )
    sys.path.insert(0, str(folder))
    try:
        return compare.modules(compare.NEW), compare.modules(compare.BASE)
    finally:
        sys.path.remove(str(folder))


def _answers(engine: dict[str, ModuleType], seed: int) -> list[str]:
    rng = random.Random(seed)
    found = []
    for profile in compare.PROFILES:
        body = compare.generated(rng) + b"\nUser-agent: *\nDisallow: /*.pdf$\n"
        urls = ["/a.pdf", "/a.pdfx", "/b/c.pdf", "/"]
        found += map(repr, compare.answers(engine, body, profile, urls))
    return found


def test_the_revision_unpacked_answers_as_this_checkout(
    engines: tuple[dict[str, ModuleType], dict[str, ModuleType]],
) -> None:
    new, base = engines
    assert new["match"] is not base["match"]
    for seed in range(20):
        assert _answers(new, seed) == _answers(base, seed)


def test_a_changed_answer_is_seen(
    engines: tuple[dict[str, ModuleType], dict[str, ModuleType]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    new, base = engines
    monkeypatch.setattr(base["match"].Matcher, "is_allowed", lambda self, url: False)
    assert _answers(new, 0) != _answers(base, 0)
