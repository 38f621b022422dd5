"""Resolve a world reference to a loaded world.

A reference is either a domain directory (db.json + optional policy.md, e.g. a τ²-bench domain) or a
generated world `gen-<seed>` / `gen-<seed>-<products>x<users>x<orders>`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pipeline.world.retail.state import RetailWorld, WorldLoadError

_GEN = re.compile(r"^gen-(\d+)(?:-(\d+)x(\d+)x(\d+))?$")


def generated_world_name(seed: int, n_products: int, n_users: int, n_orders: int) -> str:
    if (n_products, n_users, n_orders) == (50, 500, 1000):
        return f"gen-{seed}"
    return f"gen-{seed}-{n_products}x{n_users}x{n_orders}"


@lru_cache(maxsize=16)
def load_world(ref: str) -> RetailWorld:
    """The world a reference names; worlds are immutable, so one copy per process is shared."""
    from pipeline.world.retail.policy import load_policy

    m = _GEN.match(ref)
    if m:
        from pipeline.world.retail.generator import GeneratorConfig, generate_world

        seed = int(m.group(1))
        sizes = dict(n_products=50, n_users=500, n_orders=1000)
        if m.group(2):
            sizes = dict(n_products=int(m.group(2)), n_users=int(m.group(3)), n_orders=int(m.group(4)))
        return generate_world(GeneratorConfig(seed=seed, name=ref, **sizes))
    path = Path(ref)
    if path.is_dir():
        db = path / "db.json"
        if not db.exists():
            raise WorldLoadError(f"{path}: no db.json in this domain directory")
        policy_file = path / "policy.md"
        policy = policy_file.read_text() if policy_file.exists() else load_policy()
        return RetailWorld.from_json(db, policy=policy, name=path.resolve().name)
    if path.suffix == ".json" and path.exists():
        return RetailWorld.from_json(path, policy=load_policy(), name=path.stem)
    raise WorldLoadError(f"unknown world reference {ref!r}: expected a domain directory, a db.json, or gen-<seed>")
