"""Argument values for a customer, from the tool schema and the customer's own records (never from tool code).

A key argument takes the keys of the customer's records of its table; an enumerated one the schema's values;
others the values of the same-named field anywhere in the customer's records (lists of objects cut down to the
fields the argument's schema has), numbers nearby within what is valid for it (the schema's bounds, a range or
sign its docstring and records show: never 0 extra days where every known value is positive), and for text only
what a customer would say: the docstring's examples as written, and the values of that field that several of the
world's records share — the domain's own words for it (a reason, a city), never one record's identifier (another
customer's email). Text is never made up letter by letter: a random string is nothing a customer says, and an
invented id names no record.
"""

from __future__ import annotations

import random
import re
import types
import typing
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from pipeline.world import domain_spec, dump_record

if TYPE_CHECKING:
    from pipeline.world import World

_EXAMPLE = re.compile(r"(?:such as|e\.g\.|for example)[:,]?\s*'([^']+)'")


def examples(description: str | None) -> list[str]:
    """The quoted examples an argument's docstring gives ('such as ...')."""
    found = _EXAMPLE.findall(description or "")
    return found or re.findall(r"'([^']+)'", (description or "").split("such as")[-1])[:1]


_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?!\w|\.\d)")
_RANGE = re.compile(r"\b(?:from|between)\s+(-?\d+(?:\.\d+)?)\s+(?:to|and)\s+(-?\d+(?:\.\d+)?)\b")


def numbers(description: str | None) -> list[float]:
    """The numbers an argument's docstring states (an example, a range), as written."""
    return [float(n) for n in _NUMBER.findall(description or "")]


def valid_range(schema: dict, description: str | None, known: list[float]) -> Callable[[float], bool]:
    """Which numbers an argument may take: within the schema's bounds and a range its docstring states ("from 1 to
    5"), and of the sign of every value known for it (the docstring's numbers, the records' values): positive when
    they all are, never negative when none is. A number varied past them (0 extra days, -1 items) is no request
    a customer makes."""
    low = [(schema[k], k == "exclusiveMinimum") for k in ("minimum", "exclusiveMinimum") if k in schema]
    high = [(schema[k], k == "exclusiveMaximum") for k in ("maximum", "exclusiveMaximum") if k in schema]
    for start, end in _RANGE.findall(description or ""):
        low.append((min(float(start), float(end)), False))
        high.append((max(float(start), float(end)), False))
    if known and min(known) > 0:
        low.append((0, True))
    elif known and min(known) >= 0:
        low.append((0, False))

    def valid(value: float) -> bool:
        above = all(value > b if strict else value >= b for b, strict in low)
        return above and all(value < b if strict else value <= b for b, strict in high)

    return valid


def harvest(records: list[dict]) -> dict[str, list[Any]]:
    """Every value under every field name, walking nested objects and lists of objects, first seen first."""
    out: dict[str, list[Any]] = defaultdict(list)

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if v not in out[k]:
                    out[k].append(v)
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    for r in records:
        walk(r)
    return out


def vary(example: str, rng: random.Random) -> str:
    """The same shape with fresh characters: digits stay digits, letters letters, the rest as is."""
    out = []
    for ch in example:
        if ch.isdigit():
            out.append(str(rng.randrange(10)))
        elif ch.isalpha():
            pick = rng.choice("abcdefghijklmnopqrstuvwxyz")
            out.append(pick.upper() if ch.isupper() else pick)
        else:
            out.append(ch)
    return "".join(out)


def item_fields(annotation: Any) -> set[str] | None:
    """The fields of `list[Model]` / `Model` arguments (None for any other type)."""
    for t in (annotation, *typing.get_args(annotation)):
        if isinstance(t, type) and issubclass(t, BaseModel):
            return set(t.model_fields)
    return None


def project(value: Any, fields: set[str] | None) -> Any:
    """A harvested value cut down to the fields the argument's schema takes."""
    if fields is None:
        return value
    if isinstance(value, list):
        return [{k: v for k, v in x.items() if k in fields} if isinstance(x, dict) else x for x in value]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k in fields}
    return value


def base_type(annotation: Any) -> Any:
    """The type an optional argument takes when given: `Optional[X]` and `X | None` alike are X."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return base_type(args[0]) if union and args else annotation


def candidates(
    annotation: Any,
    schema: dict,
    description: str | None,
    harvested: list[Any],
    rng: random.Random,
    shared: list[Any] | None = None,
) -> list[Any]:
    """Values to try for one non-key argument, most plausible first; `shared`: the field's `shared_values`."""
    shared = shared or []
    if "enum" in schema:
        return list(schema["enum"])
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    t = base_type(annotation)
    fields = item_fields(annotation)
    shaped = [project(v, fields) for v in harvested if _fits(v, t)]
    if t is bool:
        return [True, False]
    if t is int or t is float:
        nums = [v for v in shaped if isinstance(v, (int, float)) and not isinstance(v, bool)]
        near = [n + d for n in nums[:3] for d in (1, 2, -1)]
        said = [n for n in [*numbers(description), *shared] if _fits(n, float)]
        valid = valid_range(schema, description, [*nums, *said])
        return [v for v in _dedupe([*nums, *near, 1, 2, 3, 50, 100, 0]) if valid(v)]
    if t is str:
        said = [v for v in [*shaped, *examples(description), *shared] if isinstance(v, str) and v.strip()]
        return _dedupe(said)
    return shaped


_SHARED: dict[tuple[str, str, str, str], list[Any]] = {}


def shared_values(world: World, name: str) -> list[Any]:
    """The scalar values of field `name`, or of a field named for it (`dispute_reason` for `reason`), at any depth,
    that two or more of the world's records hold, most shared first: the domain's own words for that field."""
    key = (domain_spec(world.domain), world.name, world.fingerprint, name)
    if key not in _SHARED:
        held: Counter[Any] = Counter()
        for t in world.table_names:
            for record in world.query(t):
                found = harvest([dump_record(record)])
                held.update({v for f, vs in found.items() if f == name or f.endswith(f"_{name}") for v in vs
                             if _scalar(v)})  # fmt: skip
        _SHARED[key] = [v for v, n in held.most_common() if n > 1]
    return _SHARED[key]


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool) and value != ""


def _fits(value: Any, t: Any) -> bool:
    if t is str:
        return isinstance(value, str)
    if t in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t is bool:
        return isinstance(value, bool)
    return isinstance(value, (list, dict))


def _dedupe(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out
