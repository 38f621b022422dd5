"""A domain known by where it came from, not by its name: a domain of your own named `retail` is not the built-in
retail (it must not be exported as τ²-bench's retail, nor send a Ray worker to the built-in one).

The registry records the spec each domain object was resolved by (a built-in name, `module:attribute`, a URL,
`<spec>+generic`); `origin_of` reads it back. A built-in domain is one the registry's built-in table names: its
origin is that name, whichever way it was reached. Tool calls of a domain that is not built in are bounded
(`pipeline.world.bounds`).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

BUILTIN_DOMAINS: dict[str, str] = {
    "retail": "pipeline.domains.retail.domain:RETAIL",
    "airline": "pipeline.domains.airline.domain:AIRLINE",
    "telecom": "pipeline.domains.telecom.domain:TELECOM",
}
"""name → "module:attribute"; imported only when asked for, so the core imports no domain."""

GENERIC_SUFFIX = "+generic"

_ORIGINS: dict[int, tuple[Any, str]] = {}  # id(domain) → (domain, spec); the domain is held so its id stays its own
_lock = threading.Lock()


def builtin_name(target: str) -> str | None:
    """The built-in name a `module:attribute` (or a built-in name) stands for, or None."""
    if target in BUILTIN_DOMAINS:
        return target
    return next((name for name, spec in BUILTIN_DOMAINS.items() if spec == target), None)


def record_origin(domain: Any, spec: str) -> str:
    """Remember where `domain` came from (the first spec it was resolved by wins); its origin."""
    spec = builtin_name(spec) or spec
    with _lock:
        found = _ORIGINS.get(id(domain))
        if found is not None and found[0] is domain:
            return found[1]
        _ORIGINS[id(domain)] = (domain, spec)
    return spec


def origin_of(domain: Any) -> str | None:
    """The spec `domain` was resolved by (a built-in's name for a built-in), or None for a domain never resolved
    through the registry (one built in code); a built-in's own object counts as built in however it was reached."""
    found = _ORIGINS.get(id(domain))
    if found is not None and found[0] is domain:
        return found[1]
    name = getattr(domain, "name", None)
    target = BUILTIN_DOMAINS.get(name) if isinstance(name, str) else None
    if target is not None:
        module, _, attribute = target.partition(":")
        if getattr(sys.modules.get(module), attribute, None) is domain:  # not imported: it cannot be this object
            return name
    return None


def domain_label(domain: Any) -> str:
    """How an error names a domain: where it came from (a plug-in named `retail` is not called 'retail'), its name
    for a domain never resolved through the registry."""
    return origin_of(domain) or str(getattr(domain, "name", type(domain).__name__))


def is_builtin(domain: Any) -> bool:
    """Whether `domain` is one of the package's own (or its `+generic` form): its tools run unbounded."""
    origin = origin_of(domain)
    return origin is not None and origin.removesuffix(GENERIC_SUFFIX) in BUILTIN_DOMAINS
