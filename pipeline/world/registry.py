"""Domain choice by name, and world references resolved to loaded worlds.

A domain is named by a built-in name (`retail`, `airline`) or, for a package outside this repository, as
`module:attribute` (the attribute a `Domain` instance, or a class or factory making one; or an environment
class behind the six functions of `pipeline.protocol`, which `ProtocolDomain` adapts), or by the URL of an
environment `agentloop env serve` serves (`http://HOST:PORT`). A world reference is
a domain directory (db.json + policy.md, e.g. a τ²-bench domain), a db.json file, or a name the domain reads
(retail: `gen-<seed>` / `gen-<seed>-<products>x<users>x<orders>`). Without an explicit domain, a directory's
domain is the one whose tables its db.json holds, and a name goes to the one domain that reads it; there is
no fallback.
"""

from __future__ import annotations

import copyreg
import importlib
import inspect
import json
from functools import lru_cache
from pathlib import Path

from pipeline.errors import InputError
from pipeline.world.domain import Domain
from pipeline.world.integrity import check_integrity
from pipeline.world.origin import BUILTIN_DOMAINS, builtin_name, domain_label, origin_of, record_origin
from pipeline.world.protocol_domain import (
    PROTOCOL_METHODS,
    ProtocolDomain,
    is_environment_factory,
    missing_methods,
    takes_a_world,
)
from pipeline.world.shape import returned_problem, shape_problem
from pipeline.world.tables import World, WorldLoadError
from pipeline.world.without_kit import WithoutKit

DEFAULT_DOMAIN = "retail"
"""`world.domain`'s default, and the domain of records made before domains were named."""

_RESOLVED: dict[str, str] = {}
"""A domain resolved from `module:attribute`: its name → that spec, so its name resolves too (trajectories)."""


class UnknownDomainError(InputError, ValueError):
    """A domain name or `module:attribute` that does not resolve to a Domain."""


@lru_cache(maxsize=32)
def resolve_domain(spec: str) -> Domain:
    """The Domain a name or `module:attribute` spec names (or the name of one resolved so before)."""
    if spec.endswith("+generic"):  # the domain with its own kit and scripted participants switched off
        base = resolve_domain(spec.removesuffix("+generic"))
        found = WithoutKit(base)
        origin = record_origin(found, f"{domain_spec(base)}+generic")
        if builtin_name(origin.removesuffix("+generic")) is None:
            _RESOLVED.setdefault(found.name, origin)
        copyreg.pickle(type(found), _reduce_domain)
        return found
    if spec.startswith(("http://", "https://")):  # an environment served by `agentloop env serve`
        return _served(spec)
    target = BUILTIN_DOMAINS.get(spec) or _RESOLVED.get(spec) or spec
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UnknownDomainError(
            f"unknown domain {spec!r}: expected one of {sorted(BUILTIN_DOMAINS)} or module:attribute"
        )
    if attr.isdigit():  # HOST:PORT without its scheme
        raise UnknownDomainError(f"unknown domain {spec!r}: a served environment is named by its URL, http://{spec}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownDomainError(f"domain {spec!r}: cannot import module {module_name!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # the plug-in's own code failed (a Domain missing a part, sys.exit)
        raise UnknownDomainError(f"domain {spec!r}: importing module {module_name!r} failed: {_said(exc)}") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise UnknownDomainError(f"domain {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    own = is_environment_factory(obj) or (
        callable(obj) and not inspect.isclass(obj) and not isinstance(obj, Domain) and takes_a_world(obj)
    )
    if own:  # an environment of your own behind the six functions: its class, or a function of the world's name
        adapted = ProtocolDomain(obj, target)
        copyreg.pickle(ProtocolDomain, _reduce_domain)
        return adapted
    if inspect.isclass(obj) and not issubclass(obj, Domain) and len(missing_methods(obj)) < len(PROTOCOL_METHODS):
        raise UnknownDomainError(
            f"domain {spec!r}: class {obj.__name__} is neither a Domain nor an environment (it lacks"
            f" {', '.join(missing_methods(obj))} of the environment protocol)"
        )
    if not isinstance(obj, Domain) and callable(obj):
        try:
            obj = obj()
        except (Exception, SystemExit) as exc:
            raise UnknownDomainError(f"domain {spec!r}: calling {target} failed: {_said(exc)}") from None
    if not isinstance(obj, Domain):
        raise UnknownDomainError(
            f"domain {spec!r}: {target} is a {type(obj).__name__}, not a pipeline.world.domain.Domain"
        )
    if problem := shape_problem(obj):
        raise UnknownDomainError(f"domain {spec!r}: {problem}")
    origin = record_origin(obj, target)
    if obj.name not in BUILTIN_DOMAINS:
        _RESOLVED.setdefault(obj.name, origin)
    copyreg.pickle(type(obj), _reduce_domain)
    return obj


def _served(url: str) -> Domain:
    """The environment served at `url`, as a domain: its worlds are the ones the service names."""
    from pipeline.protocol.client import ServedEnvironment, served_worlds

    base = url.rstrip("/")
    worlds = served_worlds(base)
    found = ProtocolDomain(lambda world: ServedEnvironment(base, world), url, worlds=worlds)
    copyreg.pickle(ProtocolDomain, _reduce_domain)
    return found


def _said(exc: BaseException) -> str:
    """An exception as one line: its type and message (an abstract method left out names the method)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _reduce_domain(domain: Domain) -> tuple:
    """How a domain of a class the registry resolved pickles (and copies): one it can resolve again travels by its
    spec (to Ray workers, say) and comes back as the same registered instance there, so what it records (a
    trajectory's domain) reads the same in every process; any other pickles as a plain object."""
    spec = domain_spec(domain)
    if isinstance(domain, ProtocolDomain) or spec in BUILTIN_DOMAINS or ":" in spec or spec.endswith("+generic"):
        return resolve_domain, (spec,)
    return object.__reduce_ex__(domain, 2)  # type: ignore[return-value]  # a tuple for any class with state


def domain_spec(domain: Domain) -> str:
    """What names `domain` in any process, by where it came from: its name for a built-in, else the
    `module:attribute` it was resolved by. A domain never resolved through this registry goes by its name, unless
    that name is a built-in's: then by its class (`module:Class`), so it is never taken for the built-in."""
    if isinstance(domain, ProtocolDomain):
        return domain.spec
    origin = origin_of(domain)
    if origin is not None:
        return origin
    if domain.name in BUILTIN_DOMAINS:
        return f"{type(domain).__module__}:{type(domain).__qualname__}"
    return _RESOLVED.get(domain.name, domain.name)


def domain_of_directory(path: Path) -> Domain:
    """The built-in domain whose tables a directory's (or a db.json file's) database holds."""
    db = path / "db.json" if path.is_dir() else path
    if not db.exists():
        raise WorldLoadError(f"{path}: no db.json in this domain directory")
    try:
        keys = set(json.loads(db.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise WorldLoadError(f"{db}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise WorldLoadError(f"{db}: not UTF-8 text (byte {exc.start})") from None
    except (AttributeError, TypeError):
        raise WorldLoadError(f"{db}: expected a JSON object of tables") from None
    matches = [d for d in map(resolve_domain, BUILTIN_DOMAINS) if set(d.tables) == keys]
    if len(matches) != 1:
        known = ", ".join(f"{d.name} ({', '.join(d.tables)})" for d in map(resolve_domain, BUILTIN_DOMAINS))
        raise WorldLoadError(
            f"{db}: tables {sorted(keys)} match no built-in domain ({known}); name the domain (--domain /"
            " world.domain, or module:attribute)"
        )
    return matches[0]


@lru_cache(maxsize=16)
def load_world(ref: str, domain: str | None = None) -> World:
    """The world a reference names; worlds are immutable, so one copy per process is shared.

    `domain` names the domain (see `resolve_domain`); None finds it from the reference. Its records are checked
    against the data model (`pipeline.world.integrity`: owners and references name records, no negative price).
    """
    return checked_world(_load(ref, domain), ref)


def checked_world(world: World, source: str | Path | None = None) -> World:
    """`world`, once its records keep the data model (an environment behind the protocol is not checked)."""
    if not isinstance(world.domain, ProtocolDomain):
        check_integrity(world, str(source) if source is not None else None)
    return world


def _load(ref: str, domain: str | None) -> World:
    if domain is not None:
        d = resolve_domain(domain)
        world = _loaded(d, ref)
        if world is None:
            raise WorldLoadError(f"domain {domain_label(d)!r} cannot read the world reference {ref!r}")
        return world
    path = Path(ref)
    if path.is_dir() or (path.suffix == ".json" and path.exists()):
        d = domain_of_directory(path)
        world = _loaded(d, ref)
        if world is None:  # pragma: no cover - a domain refusing a directory whose tables it declares
            raise WorldLoadError(f"domain {domain_label(d)!r} cannot read {ref!r}")
        return world
    for d in map(resolve_domain, BUILTIN_DOMAINS):
        world = _loaded(d, ref)
        if world is not None:
            return world
    raise WorldLoadError(
        f"unknown world reference {ref!r}: expected a domain directory, a db.json, or a name a domain reads"
        f" (domains: {', '.join(sorted(BUILTIN_DOMAINS))})"
    )


def _loaded(domain: Domain, ref: str) -> World | None:
    """`domain.load(ref)`, checked: what it returns must be a World or None (a dict is refused, naming the part)."""
    world = domain.load(ref)
    if problem := returned_problem("load", world):
        raise WorldLoadError(f"domain {domain_spec(domain)!r}: {problem}")
    return world
