"""Which environment a domain reference names, as a factory the service (or any driver) makes episodes with.

`environment_factory(domain, worlds)` reads `domain` as either

- a `Domain`: a built-in name (`retail`, `airline`, `telecom`, `retail+generic`) or `module:attribute` resolving to
  one (`pipeline.world.resolve_domain`); each world is a reference that domain reads (a τ²-bench directory, a
  db.json, `gen-3`), loaded once and served under its name (`World.name`); each episode is an in-memory
  `Environment(domain, world)`;
- or `module:attribute` naming an environment of one's own: a class whose instances implement
  `EnvironmentProtocol`, or a function making one, called with the world's name (`factory(world)`); the worlds are
  names, and each environment's `get_metadata().world` must equal the name it was made for. A domain the registry
  resolves to an environment behind the six functions (`pipeline.world.ProtocolDomain`: another service's URL,
  `http://HOST:PORT`) is served the same way, through its factory.

It is a Domain when the object is a `Domain` instance or subclass, or a callable that takes no argument (the
registry calls it); an environment when it is a class with the protocol's methods, or a callable that takes the
world's name. Anything else is one line naming the reference.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from pipeline.environment.memory import Environment
from pipeline.errors import AgentloopError, InputError
from pipeline.protocol import EnvironmentFactory, EnvironmentProtocol
from pipeline.world import (
    Domain,
    ProtocolDomain,
    World,
    domain_spec,
    is_environment_factory,
    load_world,
    resolve_domain,
)
from pipeline.world.protocol_domain import PROTOCOL_METHODS


class EnvironmentReferenceError(InputError, ValueError):
    """A domain reference that names neither a Domain nor an environment, or worlds it cannot serve."""


def environment_factory(domain: str, worlds: list[str]) -> tuple[EnvironmentFactory, dict[str, str]]:
    """The factory making one environment per episode for `domain`, and world name → the reference it came from
    (see the module docstring). `worlds` must not be empty; two references naming one world are an error."""
    if not isinstance(domain, str) or not domain.strip():
        raise EnvironmentReferenceError(f"domain: expected a domain name or module:attribute, got {domain!r}")
    if not worlds:
        raise EnvironmentReferenceError(f"worlds: name at least one world to serve for {domain!r}")
    made = _environment_maker(domain)
    if made is not None:
        return _own_factory(domain, made, worlds)
    found = resolve_domain(domain)
    if isinstance(found, ProtocolDomain):  # one behind the six functions already (a served one: http://HOST:PORT)
        return _own_factory(domain, found.factory, worlds)
    return _domain_factory(domain, found, worlds)


def is_environment_reference(domain: str) -> bool:
    """Whether `domain` names an environment of one's own rather than a Domain (importing its module)."""
    return _environment_maker(domain) is not None


def _environment_maker(spec: str) -> Callable[[str], Any] | None:
    """The class or function `spec` names when it makes environments from a world's name; None when it is a
    Domain (or left to the registry to say what else it is)."""
    base = spec.removesuffix("+generic")
    module_name, sep, attr = base.partition(":")
    if base != spec or not sep or not module_name or not attr:
        return None
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return None  # the registry names what is missing
    if isinstance(obj, Domain) or (inspect.isclass(obj) and issubclass(obj, Domain)):
        return None
    if inspect.isclass(obj):
        if not is_environment_factory(obj):
            missing = [m for m in PROTOCOL_METHODS if not callable(getattr(obj, m, None))]
            raise EnvironmentReferenceError(
                f"domain {spec!r}: class {obj.__name__} is neither a Domain nor an environment (it lacks"
                f" {', '.join(missing)} of the environment protocol)"
            )
        return obj
    if callable(obj) and _takes_one_argument(obj):
        return obj
    if callable(obj):
        return None  # a factory taking no argument: a Domain's, which the registry calls
    raise EnvironmentReferenceError(
        f"domain {spec!r}: {type(obj).__name__} is neither a Domain nor an environment class or factory"
        " (a class implementing EnvironmentProtocol, or a function of the world's name making one)"
    )


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    required = [p for p in positional if p.default is p.empty and p.kind != p.VAR_POSITIONAL]
    return bool(required) or any(p.kind == p.VAR_POSITIONAL for p in positional)


def _own_factory(spec: str, make: Callable[[str], Any], worlds: list[str]) -> tuple[EnvironmentFactory, dict[str, str]]:
    names = list(dict.fromkeys(worlds))

    def factory(world: str) -> EnvironmentProtocol:
        try:
            env = make(world)
        except AgentloopError:
            raise
        except Exception as exc:  # noqa: BLE001 - the environment's own constructor: named, typed
            raise EnvironmentReferenceError(
                f"domain {spec!r}: making world {world!r} failed: {type(exc).__name__}: {exc}"
            ) from None
        if not is_environment_factory(env):
            missing = [m for m in PROTOCOL_METHODS if not callable(getattr(env, m, None))]
            raise EnvironmentReferenceError(
                f"domain {spec!r}: it made a {type(env).__name__}, not an environment (it lacks {', '.join(missing)})"
            )
        return env

    return factory, {name: name for name in names}


def _domain_factory(spec: str, domain: Domain, refs: list[str]) -> tuple[EnvironmentFactory, dict[str, str]]:
    loaded: dict[str, World] = {}
    origin: dict[str, str] = {}
    for ref in refs:
        world = load_world(ref, domain_spec(domain) if ":" not in spec else spec)
        if world.name in origin and origin[world.name] != ref:
            raise EnvironmentReferenceError(
                f"worlds: {origin[world.name]!r} and {ref!r} are both world {world.name!r}; serve one of them"
            )
        loaded[world.name], origin[world.name] = world, ref

    def factory(world: str) -> EnvironmentProtocol:
        if world not in loaded:
            raise EnvironmentReferenceError(f"world {world!r} is not one of {', '.join(loaded)} ({spec})")
        return Environment(domain, loaded[world])

    return factory, origin
