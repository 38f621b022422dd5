"""The capabilities every domain has without writing them: grown from its tools and its world by execution.

A domain that does not provide `tasks`, `synthesis`, `oracle`, `flaws` or `user_phrasing` gets the generic one
(`Domain.capability`): plain generation over the generic kit (`pipeline.explore.kit`), the generic scripted
agents (`pipeline.explore.agents`) and the generic customer phrasing (`pipeline.explore.phrasing`). A domain's own
capability, where it has one, is a refinement and wins; `pipeline.world.without_kit.WithoutKit` hides a domain's
own ones, to run the generic path on a domain that has a kit (`<domain>+generic` in `world.domain` / `--domain`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.world import Domain

GENERIC: tuple[str, ...] = ("tasks", "synthesis", "oracle", "flaws", "user_phrasing")
_KITS: dict[int, Any] = {}


NEEDED_KINDS: tuple[str, ...] = ("identity", "write")
"""The tool kinds the generic path grows from: who the customer is, and what a request changes."""


def generic_gap(domain: Domain, name: str) -> str | None:
    """Why the generic path grows no `name` for `domain` (the tool kinds it lacks), or None when it would, or when
    `name` is not one it grows."""
    if name not in GENERIC:
        return None
    missing = [kind for kind in NEEDED_KINDS if not domain.tools.of_kind(kind)]
    if not missing:
        return None
    lacks = " and ".join(f"no tool of kind {kind!r}" for kind in missing)
    needs = " and ".join(f"an {kind} tool" if kind[0] in "aeiou" else f"a {kind} tool" for kind in NEEDED_KINDS)
    return f"it has none of its own, and the generic one needs {needs}, but the domain has {lacks}"


def generic_capability(domain: Domain, name: str) -> Any:
    """The generic `name` for `domain`; None when it has no identity tool or no write tool to grow it from."""
    if name not in GENERIC or generic_gap(domain, name) is not None:
        return None
    if name == "tasks":
        from pipeline.authoring import generate_tasks

        return generate_tasks
    if name == "synthesis":
        from pipeline.explore.generic_kit import GenericKit

        return _KITS.setdefault(id(domain), GenericKit(domain.tools))
    if name == "oracle":
        from pipeline.explore.agents import GenericOracle

        return lambda: GenericOracle(domain.tools)
    if name == "flaws":
        from pipeline.agents import FlawConfig
        from pipeline.explore.agents import GenericFlawed

        return lambda rates, seed=0: GenericFlawed(domain.tools, FlawConfig(rates=rates, seed=seed))
    if name == "user_phrasing":
        from pipeline.explore.phrasing import generic_phrasing

        return generic_phrasing(domain.tools)
    return None
