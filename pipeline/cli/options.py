"""Command-line options generated from a config class, as TRL makes its command line from its config dataclasses.

A command that runs a job with a pydantic config names the class and the fields it exposes; each field becomes an
option: its name from the field's (underscores to dashes, or a name or declarations given per command), its type
from the annotation (int, float, str, Path, a bool as `--x/--no-x`, a Literal as a choice, a list as a repeatable
option; None allowed is the option left out), its default the config's, its help the field's description, its
range the field's bounds. The command receives the values as one mapping (nested for a dotted field such as
`limits.max_turns`) and builds its config with `Config.model_validate`, so the class stays the one place that says
what a setting means, what it may be and what it is when not given.

The config classes import pydantic and their packages, which `agentloop --help` must not: a command declares its
class by import path, and `ConfigCommand` makes the options the first time the command's own parameters are read
(parsing its arguments, its --help), never when the whole command tree is built.
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import typer
from typer.core import TyperCommand

F = TypeVar("F", bound=Callable[..., Any])
SCALARS = (bool, int, float, str, Path)
SOURCES = "__config_options__"
ORDER = "__config_order__"


@dataclass(frozen=True)
class Source:
    """One config class's part of a command's options, and the command parameter that receives its values."""

    model: str
    """The class as `package.module:Class` (imported only when the options are made)."""
    into: str
    fields: tuple[str, ...] | None = None
    """The fields exposed, in option order (dotted for a nested class's field); None: every field not excluded, a
    nested class's fields each (`limits.max_turns`)."""
    exclude: frozenset[str] = frozenset()
    names: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    """Field → the option's name (`lr`) or its declarations (`("--ray-address", "--address")`)."""
    required: frozenset[str] = frozenset()
    """Fields the command requires though the class has a default (a run's inputs)."""
    help: Mapping[str, str] = field(default_factory=dict)
    """Field → the command's own help, where the field's description speaks of params.yaml."""

    def config_class(self) -> Any:
        module, _, name = self.model.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Generated:
    """One generated option: the command-function parameter typer makes it from, and where its value goes."""

    parameter: inspect.Parameter
    into: str
    path: tuple[str, ...]


def config_options(
    model: str,
    *,
    into: str = "settings",
    fields: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    names: Mapping[str, str | tuple[str, ...]] | None = None,
    required: Iterable[str] = (),
    help: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Give the command the options of `model`'s fields; they arrive as one mapping in its parameter `into`
    (declared `into: dict[str, Any]`, keyword-only, where the options go in --help). Register the command with
    `cls=ConfigCommand`. Stack one per config class."""
    source = Source(
        model, into, None if fields is None else tuple(fields), frozenset(exclude), dict(names or {}),
        frozenset(required), dict(help or {}),
    )  # fmt: skip

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        if into not in signature.parameters:
            raise TypeError(f"{func.__name__} has no parameter {into!r} to receive {model}'s options")
        if not hasattr(func, ORDER):
            setattr(func, ORDER, tuple(signature.parameters))
        setattr(func, SOURCES, (*getattr(func, SOURCES, ()), source))
        # what typer sees: the options written by hand (the generated ones come with ConfigCommand)
        func.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p for name, p in signature.parameters.items() if name != into]
        )
        return func

    return decorate


def generate(source: Source) -> list[Generated]:
    """The command-function parameters (typer's declarations) of `source`'s fields."""
    model = source.config_class()
    paths = source.fields if source.fields is not None else _paths(model, source.exclude)
    out = []
    for dotted in paths:
        path = tuple(dotted.split("."))
        info, default = _field(model, path)
        where = f"{model.__name__}.{dotted}"
        annotation, options = cli_type(info.annotation, where), _bounds(info)
        if dotted in source.required or default is _REQUIRED:
            default = ...
        name, decls = _name(source.names.get(dotted, path[-1]))
        option = typer.Option(default, *decls, help=source.help.get(dotted, info.description), **options)
        parameter = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        out.append(Generated(parameter, source.into, path))
    return out


def cli_type(annotation: Any, where: str = "field") -> Any:
    """The type typer parses an option as: the annotation without None, Annotated metadata or type aliases."""
    annotation = _strip(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [_strip(a) for a in get_args(annotation) if a is not type(None)]
        if len(kinds) == 1:
            return cli_type(kinds[0], where)
    elif get_origin(annotation) is list:
        (item,) = get_args(annotation)
        item = cli_type(item, where)
        if get_origin(item) is not list:
            return list[item]  # type: ignore[valid-type]
    elif get_origin(annotation) is Literal or annotation in SCALARS:
        return annotation
    raise TypeError(f"{where}: {annotation!r} has no command-line form (leave the field out of the options)")


class ConfigCommand(TyperCommand):
    """A typer command some of whose options are generated from config classes (`config_options`).

    The options are made the first time the command's parameters are read, so building the command tree for
    `agentloop --help` imports no config class; the command's function gets each class's values as one mapping."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._generated: list[Generated] | None = None
        super().__init__(*args, **kwargs)
        function = self.callback.__wrapped__  # type: ignore[union-attr]  # typer's wrapper around the command
        self.function: Callable[..., Any] = function
        self.sources: tuple[Source, ...] = getattr(function, SOURCES)

    @property
    def params(self) -> list[Any]:
        if self._generated is None and "sources" in self.__dict__:
            self._params = self._merge()
        return self._params

    @params.setter
    def params(self, value: list[Any]) -> None:
        self._params = value

    def _merge(self) -> list[Any]:
        """The hand-written options and the generated ones, in the order of the function's parameters."""
        generated: list[Generated] = []
        made: dict[str, list[Any]] = {}
        for source in self.sources:
            options = generate(source)
            generated += options
            made[source.into] = _typer_options([g.parameter for g in options])
        by_name = {p.name: p for p in self._params}
        names = [g.parameter.name for g in generated] + list(by_name)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise TypeError(f"{self.name}: options {twice} are declared twice (by hand or by two config classes)")
        out: list[Any] = []
        for name in getattr(self.function, ORDER):
            out += made.get(name) or ([by_name.pop(name)] if name in by_name else [])
        self._generated = generated
        return out + list(by_name.values())

    def fields(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Generated option name → (the parameter receiving it, the field's path)."""
        self.params  # noqa: B018  (makes the options)
        return {g.parameter.name: (g.into, g.path) for g in self._generated or ()}

    def invoke(self, ctx: Any) -> Any:
        _rich_traceback_guard = True  # noqa: F841  (as in typer's own wrapper: a bug's traceback starts here)
        params = {p.name: p for p in self.params}
        values = {name: _plain(params[name], value) for name, value in ctx.params.items()}
        for source in self.sources:
            values[source.into] = {}
        for name, (into, path) in self.fields().items():
            target = values[into]
            for part in path[:-1]:
                target = target.setdefault(part, {})
            target[path[-1]] = values.pop(name)
        return ctx.invoke(self.function, **values)


_REQUIRED = object()


def _field(model: Any, path: tuple[str, ...]) -> tuple[Any, Any]:
    """The pydantic FieldInfo at `path` and its default: a nested field's default is its parent default's own
    (`GRPOConfig.limits` is Limits(max_tool_calls=20)), or its class's where the parent defaults to None."""
    from pydantic_core import PydanticUndefined

    value: Any = None
    for depth, name in enumerate(path):
        if name not in model.model_fields:
            raise TypeError(f"{model.__name__} has no field {name!r}")
        info = model.model_fields[name]
        if depth and value is not None:
            value = getattr(value, name)
        else:
            value = info.get_default(call_default_factory=True)
            value = _REQUIRED if value is PydanticUndefined else value
        if depth < len(path) - 1:
            model = _model(info.annotation)
    return info, value


def _paths(model: Any, exclude: frozenset[str], prefix: str = "") -> tuple[str, ...]:
    """Every field of `model` not excluded, a nested config class's fields dotted (`limits.max_turns`)."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        dotted = prefix + name
        if dotted in exclude:
            continue
        nested = _model(info.annotation, strict=False)
        out += _paths(nested, exclude, dotted + ".") if nested else [dotted]
    return tuple(out)


def _model(annotation: Any, strict: bool = True) -> Any:
    """The pydantic model a field holds (`Limits`, or `LoraSpec` of `LoraSpec | None`)."""
    from pydantic import BaseModel

    annotation = _strip(annotation)
    for kind in get_args(annotation) or (annotation,):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind
    if strict:
        raise TypeError(f"{annotation!r} is not a config class")
    return None


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return getattr(annotation, "__value__", annotation)  # a `type X = ...` alias


def _bounds(info: Any) -> dict[str, Any]:
    """typer's min/max from the field's bounds: ge/le, and gt/lt for a whole number (a float's open bound stays
    the config's to check, typer has none)."""
    import annotated_types as at

    whole = cli_type(info.annotation) is int
    out: dict[str, Any] = {}
    for bound in info.metadata:
        if isinstance(bound, at.Ge):
            out["min"] = bound.ge
        elif isinstance(bound, at.Le):
            out["max"] = bound.le
        elif isinstance(bound, at.Gt) and whole:
            out["min"] = int(bound.gt) + 1  # type: ignore[call-overload]
        elif isinstance(bound, at.Lt) and whole:
            out["max"] = int(bound.lt) - 1  # type: ignore[call-overload]
    return out


def _name(given: str | tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(the parameter's name, its option declarations): `lr` → ("lr", ()), typer then declares `--lr` (and
    `--x/--no-x` for a bool); declarations are kept as given."""
    if isinstance(given, str):
        return given.replace("-", "_"), ()
    return given[0].lstrip("-").replace("-", "_"), given


def _typer_options(parameters: list[inspect.Parameter]) -> list[Any]:
    """typer's options for these parameters, made as typer makes any command's."""

    def command(**_: Any) -> None: ...

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    app = typer.Typer(add_completion=False)
    app.command()(command)
    return list(typer.main.get_command(app).params)


def _plain(param: Any, value: Any) -> Any:
    """A value as typer hands it to a command: a repeated option's tuple as a list."""
    if getattr(param, "multiple", False) and value is not None:
        return None if param.default is None and not value else list(value)
    return value
