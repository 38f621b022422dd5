"""The airline domain behind the domain boundary."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ValidationError

from pipeline.domains.airline.schema import TABLES, AirlineDB
from pipeline.domains.airline.tools import TOOLS
from pipeline.world import Domain, Invariant, World, WorldLoadError

POLICY_PATH = Path(__file__).with_name("policy.md")
_GEN = re.compile(r"^gen-(\d+)(?:-(\d+)x(\d+)x(\d+))?$")


class AirlineDomain(Domain):
    name = "airline"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
        """A domain directory, a db.json, or a generated world's name: gen-<seed>[-<flights>x<users>x<reservations>]."""
        m = _GEN.match(ref)
        if m:
            sizes = {}
            if m.group(2):
                sizes = dict(zip(("n_flights", "n_users", "n_reservations"), map(int, m.groups()[1:]), strict=True))
            return self.generator()(int(m.group(1)), sizes, name=ref)
        path = Path(ref)
        if path.is_dir():
            db, policy_file = path / "db.json", path / "policy.md"
            policy = policy_file.read_text(encoding="utf-8") if policy_file.exists() else self.policy()
            return self.from_json(db, policy, path.resolve().name)
        if path.suffix == ".json" and path.exists():
            return self.from_json(path, self.policy(), path.stem)
        return None

    def from_json(self, db: Path, policy: str, name: str) -> World:
        try:
            data = json.loads(db.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WorldLoadError(f"{db}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{db}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return self.from_dict(data, policy, name, str(db))

    def from_dict(self, data: dict, policy: str, name: str, source: str = "<dict>") -> World:
        try:
            parsed = AirlineDB.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise WorldLoadError(f"{source}: field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        return World({t: getattr(parsed, t) for t in TABLES}, policy=policy, name=name, domain=self)

    def policy(self) -> str:
        return _policy()

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "user_id", None) if table in ("users", "reservations") else None

    def invariants(self) -> list[Invariant]:
        from pipeline.domains.airline.invariants import INVARIANTS

        return INVARIANTS

    def identity_fields(self) -> tuple[str, ...]:
        return ("user_id",)

    def vocabulary(self):
        from pipeline.domains.airline.vocabulary import VOCABULARY

        return VOCABULARY

    def generator(self):
        def generate(seed: int, sizes: dict[str, int], name: str | None = None) -> World:
            """A fresh world; `sizes` holds any of n_flights, n_users, n_reservations (τ²-bench's by default)."""
            from pipeline.domains.airline.generator import SIZES, AirlineGeneratorConfig, generate_world

            unknown = sorted(set(sizes) - set(SIZES))
            if unknown:
                raise WorldLoadError(f"airline generator: unknown size(s) {unknown}; known: {list(SIZES)}")
            try:
                config = AirlineGeneratorConfig(seed=seed, name=name, **sizes)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise WorldLoadError(f"airline generator: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
            return generate_world(config, self.policy(), self)

        return generate

    def tasks(self):
        from pipeline.domains.airline.tasks import generate_tasks

        return generate_tasks

    def synthesis(self):
        from pipeline.domains.airline.synthesis import AIRLINE_KIT

        return AIRLINE_KIT

    def oracle(self):
        from pipeline.domains.airline.oracle import AirlineOracle

        return AirlineOracle

    def flaws(self):
        def make(rates: dict[str, float], seed: int = 0):
            from pipeline.agents import FlawConfig
            from pipeline.domains.airline.flawed import AirlineFlawedAgent

            return AirlineFlawedAgent(FlawConfig(rates=rates, seed=seed))

        return make

    def user_phrasing(self):
        from pipeline.domains.airline.user import PHRASING

        return PHRASING

    def tau2_gold(self):
        from pipeline.domains.airline.gold import GOLD

        return GOLD

    def tau2_importer(self):
        from pipeline.domains.airline.tau2 import Tau2Airline

        return Tau2Airline(self)


@cache
def _policy() -> str:
    return POLICY_PATH.read_text(encoding="utf-8")


AIRLINE = AirlineDomain()
