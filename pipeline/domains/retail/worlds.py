"""Retail worlds under the retail domain, for callers outside it: generated worlds, τ²-bench retail directories and
their replay. The makers below take the domain they bind their worlds to (`generator.build_world`,
`tau2.read_tau2_domain`, `RetailWorld(..., domain=)`); these hand them `RETAIL`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.dataset import write_lines
from pipeline.domains.retail.domain import RETAIL
from pipeline.domains.retail.generator import GeneratorConfig, build_world
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tau2 import Tau2Domain, read_tau2_domain, replay_task


def generate_world(config: GeneratorConfig | None = None, **overrides: Any) -> RetailWorld:
    """A fresh retail world; `overrides` replace fields of `config` (e.g. `generate_world(seed=3)`)."""
    return build_world(config, RETAIL, **overrides)


def load_tau2_domain(path: str | Path, name: str | None = None) -> Tau2Domain:
    """Load a τ²-bench retail domain directory; the world is named `name` or after the directory."""
    return read_tau2_domain(path, RETAIL, name)


def world_from_dict(data: dict, policy: str = "", name: str = "retail", source: str = "<dict>") -> RetailWorld:
    """A retail world from a database as τ²-bench's db.json holds it; `source` names it in errors."""
    return RetailWorld.from_dict(data, policy=policy, name=name, source=source, domain=RETAIL)


def world_from_json(path: str | Path, policy: str = "", name: str | None = None) -> RetailWorld:
    """A retail world from a db.json file, named `name` or after its directory."""
    return RetailWorld.from_json(path, policy=policy, name=name, domain=RETAIL)


def replay_domain(path: str | Path | Tau2Domain) -> list[dict]:
    """Replay every task of a domain on a fresh session each, in task-file order."""
    domain = path if isinstance(path, Tau2Domain) else load_tau2_domain(path)
    return [replay_task(domain.world, task) for task in domain.tasks]


def write_replay(path: str | Path | Tau2Domain, out_file: str | Path) -> list[dict]:
    """Replay a domain and write one JSON line per task, atomically (temp file + rename); returns the lines."""
    return write_lines(out_file, replay_domain(path))
