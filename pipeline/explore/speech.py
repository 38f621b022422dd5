"""How a customer says a value: text as it is, a list as its items ('BL0012 and BL0013', never JSON), an object
as its fields in words. The task keeps the exact value (gold arguments, a request's details); the customer's
sentences and answers are spoken with these."""

from __future__ import annotations

import json
import re
from typing import Any

_STRUCTURED = re.compile(r"^\s*[\[{]")


def words(name: str) -> str:
    return name.replace("_", " ").strip()


def series(items: list[str], joiner: str = ", ") -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return f"{joiner.join(items[:-1])} and {items[-1]}"


def number(value: float) -> str:
    """A number as a person says it: a whole one without its point ('1046.0' → '1046'), else as short as it is
    exact ('12.5')."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def speak(value: Any) -> str:
    """A value as the customer says it (a boolean as its JSON, which is what a tool's output shows, a number as a
    person says it)."""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{words(k)} {speak(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, (list, tuple)):
        parts = [speak(v) for v in value]
        return series(parts, "; " if any(isinstance(v, dict) for v in value) else ", ")
    return json.dumps(value)


def phrase(name: str, value: Any) -> str:
    """An argument and its value in words: 'reason the meter reading is wrong', 'bill ids BL1 and BL2', and for a
    one-item list the name in the singular ('bill id BL1')."""
    said = words(name)
    if isinstance(value, (list, tuple)) and len(value) == 1 and said.endswith("s"):
        said = said[:-1]
    return f"{said} {speak(value)}"


def spoken(detail: str) -> str:
    """A request's detail as the customer answers with it: a JSON list or object spoken, anything else as is."""
    if not _STRUCTURED.match(detail):
        return detail
    try:
        return speak(json.loads(detail))
    except json.JSONDecodeError:
        return detail


def pieces(detail: str) -> list[str]:
    """The values a detail says, one by one: a JSON list's or object's scalars, else the detail itself."""
    if not _STRUCTURED.match(detail):
        return [detail]
    try:
        value = json.loads(detail)
    except json.JSONDecodeError:
        return [detail]
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif v is not None:
            out.append(speak(v))

    walk(value)
    return out
