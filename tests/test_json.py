"""JSON from outside the process, read with its nesting bounded
(scrapy_rfc9309._json): a stored entry, a tdmrep.json."""

from __future__ import annotations

import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_rfc9309._json import MAX_DEPTH, loads
from scrapy_rfc9309.stores._codec import (
    COMPACT,
    DICTIONARY,
    legacy_encode,
    pack,
    unpack,
)
from scrapy_rfc9309.tdmrep import parse_file
from tests.support.utils import stored_outcome

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "text",
    [
        DEEP,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "[" * 5_000_000,  # unbalanced: looked at once, not MAX_DEPTH times
    ],
)
def test_json_nested_too_deep_is_refused_before_it_is_parsed(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Parsed, it would recurse to Python's limit, where any finalizer the
    # collector runs meanwhile fails too: it is never parsed.
    def parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(json, "loads", parsed)
    with pytest.raises(ValueError, match="nested more than 32 deep"):
        loads(text)
    with pytest.raises(ValueError, match="nested more than 32 deep"):
        loads(text.encode())


def test_brackets_in_strings_and_escapes_are_not_nesting() -> None:
    text = '{"a": ["x[[[", "\\"]{", "\\\\", {"b": [[1]]}], "c": "\u00e9{"}'
    assert loads(text) == {"a": ["x[[[", '"]{', "\\", {"b": [[1]]}], "c": "\u00e9{"}
    assert loads(text.encode()) == loads(text)
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(nested) == loads(nested.encode())


@given(st.recursive(st.none() | st.text(), lambda inner: st.lists(inner, max_size=3)))
def test_what_json_reads_within_the_depth_is_read_alike(value: object) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)


def test_a_stored_entry_nested_too_deep_is_not_parsed() -> None:
    with pytest.raises(ValueError, match="nested more than"):
        unpack(DEEP)
    compressor = zlib.compressobj(9, zdict=DICTIONARY)
    compact = COMPACT + compressor.compress(DEEP.encode()) + compressor.flush()
    with pytest.raises(ValueError, match="nested more than"):
        unpack(compact)
    # An outcome's own JSON reads, both forms.
    entry = stored_outcome()
    assert unpack(legacy_encode(entry)) == entry.to_dict()
    assert unpack(pack(entry.to_dict())) == entry.to_dict()


def test_a_tdmrep_file_nested_too_deep_is_no_usable_file() -> None:
    found = parse_file(DEEP.encode())
    assert found.rules == ()
    assert found.problems == (
        "not JSON (ValueError: nested more than 32 deep, or unbalanced)",
    )
