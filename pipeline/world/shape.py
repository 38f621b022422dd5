"""A plug-in domain checked for shape when it is loaded: every part the `Domain` boundary declares, against its
declared type, so a part missing or of another type is refused in one line naming it, not a traceback later.

One checker over the declarations, no case by case: the attributes `Domain` annotates (`name`, `tables`, `tools`,
`user_tools`, `user_tables`) are validated by pydantic against their annotations, and so, inside them, are the
attributes a plain class of the world annotates (a `ToolRegistry`'s `tools`: each a `ToolSpec` of a known kind);
every method `Domain` declares must be callable; and what a method returns where the registry calls it (`load`)
is checked against its return annotation.
"""

from __future__ import annotations

import dataclasses
import inspect
from functools import cache
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from pipeline.world import domain as domain_module
from pipeline.world.domain import Domain
from pipeline.world.tables import Session, World
from pipeline.world.tools import ToolRegistry
from pipeline.world.vocabulary import Vocabulary

_STRICT = ConfigDict(arbitrary_types_allowed=True, strict=True, revalidate_instances="always")
_NAMES = {**vars(domain_module), "World": World, "Session": Session, "ToolRegistry": ToolRegistry}
_NAMES["Vocabulary"] = Vocabulary


@cache
def _adapter(annotation: Any) -> TypeAdapter:
    return TypeAdapter(annotation, config=_STRICT)


_DECLARED: dict[type, dict[str, Any]] = {}


def _declared(cls: type) -> dict[str, Any]:
    """The attributes a class annotates at class level (its bases' too), by name → type."""
    if cls not in _DECLARED:
        _DECLARED[cls] = get_type_hints(cls, localns=_NAMES)
    return _DECLARED[cls]


def _methods() -> list[str]:
    return [n for n, v in vars(Domain).items() if inspect.isfunction(v) and not n.startswith("_")]


def _problem(value: Any, annotation: Any, where: str) -> str | None:
    """What is wrong with `value` as a `where` of type `annotation`, or None; a plain object of the world's own
    classes is checked inside too."""
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        inner = ".".join(str(p) for p in first["loc"])
        got = type(first["input"]).__name__
        return f"part {where + ('.' + inner if inner else '')!r}: {first['msg']} (got {got})"
    cls = type(value)
    own = cls.__module__.startswith("pipeline.world.")
    if own and not dataclasses.is_dataclass(cls) and not issubclass(cls, BaseModel):
        for name, inner_type in _declared(cls).items():
            if not hasattr(value, name):
                return f"part {where}.{name!r} is missing"
            if problem := _problem(getattr(value, name), inner_type, f"{where}.{name}"):
                return problem
    return None


def shape_problem(domain: Domain) -> str | None:
    """The first part of `domain` that is missing or not of the type `Domain` declares, or None."""
    for name, annotation in _declared(Domain).items():
        if not hasattr(domain, name):
            return f"part {name!r} is missing ({_type_name(annotation)})"
        if problem := _problem(getattr(domain, name), annotation, name):
            return problem
    for name in _methods():
        if not callable(getattr(domain, name, None)):
            return f"part {name!r} is not a method (got {type(getattr(domain, name, None)).__name__})"
    return None


def returned_problem(method: str, value: Any) -> str | None:
    """What is wrong with `value` as what `Domain.<method>` returns, or None."""
    annotation = get_type_hints(getattr(Domain, method), localns=_NAMES).get("return", Any)
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError:
        return f"{method}() returned a {type(value).__name__}, not {_type_name(annotation)}"
    return None


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("pipeline.world.tables.", "")
