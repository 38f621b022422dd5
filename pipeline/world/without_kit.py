"""A domain with its own kit switched off: the generic path run on a domain that has a kit.

`<domain>+generic` in `world.domain` / `--domain` names it. Its worlds are the base domain's, re-homed under it;
its tasks, synthesis kit, scripted agents and customer phrasing are the generic ones (`Domain.capability` falls
back to `pipeline.explore.generic` for each).
"""

from __future__ import annotations

import copy
from typing import Any

from pipeline.world.domain import Domain

SUFFIX = "+generic"


def _rehomed(world: Any, domain: Domain) -> Any:
    """The same world (its class and records) under another domain object."""
    clone = copy.copy(world)
    clone.domain = domain
    return clone


class WithoutKit(Domain):
    """A domain with its hand-written tasks, kit, scripted agents and phrasing switched off: the generic path."""

    def __init__(self, base: Domain) -> None:
        self.base = base
        self.name = base.name + SUFFIX
        self.tables = base.tables
        self.tools = base.tools

    def load(self, ref: str):
        world = self.base.load(ref)
        return None if world is None else _rehomed(world, self)

    def policy(self) -> str:
        return self.base.policy()

    def owner(self, table, record):
        return self.base.owner(table, record)

    def invariants(self):
        return self.base.invariants()

    def identity_fields(self):
        return self.base.identity_fields()

    def generator(self):
        make = self.base.generator()
        if make is None:
            return None

        def generate(*args: Any, **kwargs: Any):
            return _rehomed(make(*args, **kwargs), self)

        return generate

    def vocabulary(self):
        return self.base.vocabulary()

    def tau2_importer(self):
        return None

    def tau2_gold(self):
        return self.base.tau2_gold()

    def tau2_quirks(self):
        return self.base.tau2_quirks()
