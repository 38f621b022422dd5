"""JSON from a model or an endpoint, read with a bound on its nesting.

Python's `json` parser recurses once per level, so a reply nested 100,000 deep ends in `RecursionError`, which no
caller expects (they catch `ValueError`). `loads` and `raw_decode` refuse anything nested deeper than `MAX_DEPTH`
with `json.JSONDecodeError` (a `ValueError`) at the bracket that goes too deep, before the parser sees it, so a
reply that deep is one more unreadable reply. A bottom-layer module (standard library only).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "loads", "raw_decode"]
MAX_DEPTH = 100  # far deeper than any tool call's arguments or a judge's answer; far below Python's recursion limit


def _check(text: str, start: int = 0) -> None:
    """Raise JSONDecodeError where `text` (from `start`) nests deeper than MAX_DEPTH (brackets in strings count:
    a bound that errs on the safe side)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, i)
        elif ch in "]}":
            depth -= 1
            if depth <= 0 and i > start:
                return


def loads(text: str) -> Any:
    """`json.loads(text)` for a value nested at most MAX_DEPTH deep."""
    _check(text)
    return json.loads(text)


def raw_decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """`json.JSONDecoder().raw_decode(text, pos)` for a value nested at most MAX_DEPTH deep."""
    _check(text, pos)
    return json.JSONDecoder().raw_decode(text, pos)
