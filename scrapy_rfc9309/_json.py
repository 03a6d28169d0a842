"""JSON from outside the process (a stored entry, a ``tdmrep.json``), read
with its nesting bounded.

``json.loads`` recurses once per level of nesting, up to Python's recursion
limit: ``"[" * 100_000`` raises ``RecursionError`` there, but first the
whole stack is used, and any finalizer the garbage collector runs meanwhile
(a Deferred's, a generator's) fails on it too ("Exception ignored in ...",
its work lost).  So the nesting is measured first, at C speed and in
linear time: escapes taken out, then strings, the brackets alone kept, and
the innermost pairs taken away :data:`MAX_DEPTH` times; what is left is
deeper (or unbalanced).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_DEPTH", "loads"]

#: The deepest nesting read: an outcome's JSON is 6 deep at most, a TDMRep
#: file 2.
MAX_DEPTH = 32

# Escapes first: a string is then from one quote to the next (no regular
# expression that backtracks: a hostile body of quotes and backslashes
# would take quadratic time).
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def loads(data: str | bytes) -> Any:
    """``json.loads(data)``; ``ValueError`` for JSON nested more than
    :data:`MAX_DEPTH` deep, which is not parsed."""
    # Latin-1 keeps each byte as one character: no UTF-8 sequence holds
    # an ASCII bracket or quote.
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    for _ in range(MAX_DEPTH):
        inner = brackets.replace("[]", "").replace("{}", "")
        if len(inner) == len(brackets):
            break  # empty, or no pair left: unbalanced
        brackets = inner
    if brackets:
        raise ValueError(f"nested more than {MAX_DEPTH} deep, or unbalanced")
    return json.loads(data)
