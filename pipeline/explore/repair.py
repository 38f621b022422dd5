"""Calls adjusted by what the tool said: a refusal that quotes an amount of the call beside another number.

A tool that refuses "payments add up to 350, but the total price is 1200" says what it wants. When a refusal
quotes the value of a numeric argument (or the sum of same-named numbers in a list of objects, as payment
amounts) together with another number, the call is tried again with the numbers set to add up to that other
number, or to one more or one less than it (a refusal naming a bound: 'below the last reading 49669') — once as
they are (the first adjusted), once cut down to a single element. At most `ROUNDS` rounds, and
every call made is kept, so exploration sees the refusals as well as the call that succeeded.
"""

from __future__ import annotations

import copy
import random
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.explore.learn import Call
    from pipeline.explore.probe import Explorer

ROUNDS = 2
_NUMBER = re.compile(r"(?<![\w.\-])\d+(?:\.\d+)?(?![\w\-]|\.\d)")


def numbers(text: str) -> list[float]:
    """The standalone numbers of a message (not the digits of ids or dates)."""
    return [float(m) for m in _NUMBER.findall(text)]


def leaves(args: dict) -> dict[str, list[tuple]]:
    """Paths to the numeric values of an argument set, grouped by the name they sit under."""
    out: dict[str, list[tuple]] = defaultdict(list)

    def walk(obj: Any, path: tuple) -> None:
        if isinstance(obj, bool):
            return
        if isinstance(obj, (int, float)):
            out[str(path[-1]) if not isinstance(path[-1], int) else str(path[0])].append(path)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, (*path, k))
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, (*path, i))

    for k, v in args.items():
        walk(v, (k,))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 0.005


def _as(old: Any, value: float) -> Any:
    return int(value) if isinstance(old, int) and float(value).is_integer() else round(value, 2)


def repairs(args: dict, message: str) -> list[dict]:
    """Argument sets whose numbers add up to a number the refusal names beside one of the call's own."""
    said = numbers(message)
    out: list[dict] = []
    for paths in leaves(args).values():
        values = [_get(args, p) for p in paths]
        total = sum(values)
        if not any(_close(total, n) or any(_close(v, n) for v in values) for n in said):
            continue
        for n in said:
            if _close(n, total) or any(_close(n, v) for v in values):
                continue
            first = paths[0]
            rest = total - values[0]
            for target in (n, n + 1, n - 1):  # the number itself, then just past it either way ('below 49669')
                if target - rest > 0:
                    fixed = copy.deepcopy(args)
                    _set(fixed, first, _as(values[0], target - rest))
                    out.append(fixed)
            if len(paths) > 1 and len(first) == 3 and isinstance(first[1], int):  # a list of objects: one left
                single = copy.deepcopy(args)
                single[first[0]] = [single[first[0]][first[1]]]
                _set(single, (first[0], 0, first[2]), _as(values[0], n))
                out.append(single)
    return [a for i, a in enumerate(out) if a not in out[:i]][:6]


def attempt(ex: Explorer, tool: str, user: str, key: str | None, rng: random.Random) -> list[Call] | None:
    """One argument set formed for the customer and record, run; then adjusted as the refusals say. Every call
    made, in order (the last is the one that succeeded, if any); None when no argument set could be formed."""
    args = ex.arguments(tool, user, key, rng)
    if args is None:
        return None
    calls = [ex.call(tool, user, args)]
    for _ in range(ROUNDS):
        last = calls[-1]
        if last.ok or last.category in ("unauthorized", "not_found"):
            break
        tried = [ex.call(tool, user, a) for a in repairs(last.arguments, last.error or "")]
        if not tried:
            break
        ok = next((c for c in tried if c.ok), None)
        calls += [c for c in tried if c is not ok] + ([ok] if ok else [])
    return calls
