"""Retail behind the domain boundary: τ²-bench retail's schema and tools, our policy, generated worlds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pipeline.domains.retail.schema import TABLES
from pipeline.domains.retail.tools import TOOLS
from pipeline.world import Domain, Invariant

_GEN = re.compile(r"^gen-(\d+)(?:-(\d+)x(\d+)x(\d+))?$")


class _Tau2Retail:
    replay_tables: tuple[str, ...] = ("orders", "users", "products")

    def __init__(self, domain: Domain) -> None:
        self.domain = domain

    def load(self, path):
        from pipeline.domains.retail.tau2 import read_tau2_domain

        loaded = read_tau2_domain(path, self.domain)
        return loaded.world, loaded.tasks


class RetailDomain(Domain):
    name = "retail"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str):
        from pipeline.domains.retail.state import RetailWorld, WorldLoadError

        m = _GEN.match(ref)
        if m:
            sizes = dict(n_products=50, n_users=500, n_orders=1000)
            if m.group(2):
                sizes = dict(n_products=int(m.group(2)), n_users=int(m.group(3)), n_orders=int(m.group(4)))
            try:
                return self.generator()(int(m.group(1)), sizes, name=ref)
            except ValidationError as exc:  # e.g. gen-1-0x0x0: a world needs products and users
                err = exc.errors()[0]
                field = ".".join(map(str, err["loc"]))
                raise WorldLoadError(f"world {ref!r}: {field}: {err['msg']}") from None
        path = Path(ref)
        if path.is_dir():
            db = path / "db.json"
            if not db.exists():
                raise WorldLoadError(f"{path}: no db.json in this domain directory")
            policy_file = path / "policy.md"
            policy = policy_file.read_text() if policy_file.exists() else self.policy()
            return RetailWorld.from_json(db, policy=policy, name=path.resolve().name, domain=self)
        if path.suffix == ".json" and path.exists():
            return RetailWorld.from_json(path, policy=self.policy(), name=path.stem, domain=self)
        return None

    def policy(self) -> str:
        from pipeline.domains.retail.policy import load_policy

        return load_policy()

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "user_id", None) if table in ("users", "orders") else None

    def invariants(self) -> list[Invariant]:
        from pipeline.domains.retail.invariants import INVARIANTS

        return INVARIANTS

    def identity_fields(self) -> tuple[str, ...]:
        return ("email", "first_name", "last_name", "zip")

    def tau2_gold(self):
        from pipeline.domains.retail.gold import GOLD

        return GOLD

    def tau2_importer(self) -> _Tau2Retail:
        return _Tau2Retail(self)

    def tau2_quirks(self):
        from pipeline.domains.retail.tau2_quirks import QUIRKS

        return QUIRKS

    def generator(self):
        def generate(seed: int, sizes: dict[str, int], name: str | None = None) -> Any:
            from pipeline.domains.retail.generator import GeneratorConfig, build_world, generated_world_name
            from pipeline.world import WorldLoadError

            unknown = sorted(set(sizes) - {"n_products", "n_users", "n_orders"})
            if unknown:
                raise WorldLoadError(
                    f"retail generator: unknown size(s) {unknown}; known: n_products, n_users, n_orders"
                )
            sizes = {"n_products": 50, "n_users": 500, "n_orders": 1000, **sizes}
            name = name or generated_world_name(seed, **sizes)
            return build_world(GeneratorConfig(seed=seed, name=name, **sizes), self)

        return generate

    def tasks(self):
        from pipeline.authoring import generate_tasks

        return generate_tasks

    def synthesis(self):
        from pipeline.domains.retail.synthesis import RETAIL_KIT

        return RETAIL_KIT

    def oracle(self):
        from pipeline.domains.retail.oracle import OracleAgent

        return OracleAgent

    def flaws(self):
        def make(rates: dict[str, float], seed: int = 0):
            from pipeline.domains.retail.flawed import FlawConfig, FlawedAgent

            return FlawedAgent(FlawConfig(rates=rates, seed=seed))

        return make

    def user_phrasing(self):
        from pipeline.domains.retail.user import PHRASING

        return PHRASING

    def vocabulary(self):
        from pipeline.domains.retail.vocabulary import VOCABULARY

        return VOCABULARY


RETAIL = RetailDomain()
