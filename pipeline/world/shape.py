"""A plug-in domain checked for shape when it is loaded: every part the `Domain` boundary declares, against its
declared type, so a part missing or of another type is refused in one line naming it, not a traceback later.

One checker over the declarations, no case by case: the attributes `Domain` annotates (`name`, `tables`, `tools`,
`user_tools`, `user_tables`) are validated by pydantic against their annotations, and so, inside them, are the
attributes a plain class of the world annotates (a `ToolRegistry`'s `tools`: each a `ToolSpec` of a known kind);
every method `Domain` declares must be callable; each one that takes no argument (`policy`, `invariants`,
`identity_fields`, `setup_functions`, ...) is called once and what it returns checked against its return annotation
(a `policy()` returning 42 is refused at load, not written into every trajectory); and what `load` returns is
checked where the registry calls it. A method whose annotation names a type above the world (an agent, a task) is
left to its caller; one that raises is left to the place that uses it.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import reprlib
import types
from collections.abc import Callable
from functools import cache
from typing import Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, InstanceOf, TypeAdapter, ValidationError

from pipeline.world import domain as domain_module
from pipeline.world.domain import Domain
from pipeline.world.tables import Session, World
from pipeline.world.tools import ToolRegistry
from pipeline.world.vocabulary import Vocabulary

log = logging.getLogger(__name__)
_STRICT = ConfigDict(arbitrary_types_allowed=True, strict=True, revalidate_instances="always")
_NAMES = {**vars(domain_module), "World": World, "Session": Session, "ToolRegistry": ToolRegistry}
_NAMES["Vocabulary"] = Vocabulary


_LAX = ConfigDict(arbitrary_types_allowed=True)


@cache
def _adapter(annotation: Any, strict: bool = True) -> TypeAdapter:
    return TypeAdapter(annotation, config=_STRICT if strict else _LAX)


_DECLARED: dict[type, dict[str, Any]] = {}


def _declared(cls: type) -> dict[str, Any]:
    """The attributes a class annotates at class level (its bases' too), by name → type."""
    if cls not in _DECLARED:
        _DECLARED[cls] = get_type_hints(cls, localns=_NAMES)
    return _DECLARED[cls]


def _methods() -> list[str]:
    return [n for n, v in vars(Domain).items() if inspect.isfunction(v) and not n.startswith("_")]


@cache
def _declarations() -> dict[str, Any]:
    """The methods `Domain` declares that take no argument, by name → return annotation; those whose annotation
    names a type the world cannot see (an upper layer's) are left out."""
    found: dict[str, Any] = {}
    for name in _methods():
        method = getattr(Domain, name)
        if list(inspect.signature(method).parameters) != ["self"]:
            continue
        try:
            found[name] = _outer(get_type_hints(method, localns=_NAMES)["return"])
        except (NameError, KeyError):
            continue
    return found


def _outer(annotation: Any) -> Any:
    """`annotation` with each class of the loop's own (a dataclass, a model) checked as an instance, not field by
    field (their fields may name types above the world), and a protocol not checked at all (`isinstance` cannot
    read it): what a method returns is checked for its container shape and the kinds of what it holds."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None:
        if getattr(annotation, "_is_protocol", False):
            return Any
        if inspect.isclass(annotation) and (dataclasses.is_dataclass(annotation) or issubclass(annotation, BaseModel)):
            return InstanceOf[annotation]  # type: ignore[misc]
        return annotation
    if origin in (Union, types.UnionType):
        return Union[tuple(_outer(a) for a in args)]  # noqa: UP007 - built from a tuple
    if origin is Callable or not args:
        return annotation
    return origin[tuple(a if a is Ellipsis else _outer(a) for a in args)]


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_SCALARS = (str, int, float, bool, type(None))


def _shown(value: Any) -> str:
    """A value as an error shows it: its repr, cut short; with its type where the repr does not say it."""
    shown = _REPR.repr(value)
    return shown if isinstance(value, _SCALARS) else f"{type(value).__name__} {shown}"


def _path(where: str, loc: tuple) -> str:
    """`where` and pydantic's location, a part named as the one holding it not repeated (a registry's `tools`
    inside the domain's `tools` is `tools.<name>`, not `tools.tools.<name>`)."""
    parts = where.split(".") + [str(p) for p in loc]
    return ".".join(p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1])


def _problem(value: Any, annotation: Any, where: str, strict: bool = True) -> str | None:
    """What is wrong with `value` as a `where` of type `annotation`, or None; a plain object of the world's own
    classes is checked inside too. Not `strict`: what a method returns may be of a type that reads as the declared
    one (a list for a tuple), never of another kind (a number for a string)."""
    try:
        _adapter(annotation, strict).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"part {_path(where, tuple(first['loc']))!r}: {first['msg']} (got {_shown(first['input'])})"
    cls = type(value)
    own = cls.__module__.startswith("pipeline.world.")
    if own and not dataclasses.is_dataclass(cls) and not issubclass(cls, BaseModel):
        for name, inner_type in _declared(cls).items():
            if not hasattr(value, name):
                return f"part {_path(where, (name,))!r} is missing"
            if problem := _problem(getattr(value, name), inner_type, _path(where, (name,))):
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
    for name, annotation in _declarations().items():
        try:
            value = getattr(domain, name)()
        except Exception as exc:  # the place that uses it reports it, with its context
            log.debug("shape check: %s() raised %s; left to its caller", name, type(exc).__name__)
            continue
        if problem := _problem(value, annotation, f"{name}()", strict=False):
            return problem
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
