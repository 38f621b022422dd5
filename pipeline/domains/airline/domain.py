"""The airline domain behind the domain boundary."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ValidationError

from pipeline.domains.airline.schema import TABLES, AirlineDB
from pipeline.domains.airline.tools import TOOLS
from pipeline.world.domain import Domain, Invariant
from pipeline.world.tables import World, WorldLoadError

POLICY_PATH = Path(__file__).with_name("policy.md")


class AirlineDomain(Domain):
    name = "airline"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
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
            from pipeline.agents.flaws import FlawConfig
            from pipeline.domains.airline.flawed import AirlineFlawedAgent

            return AirlineFlawedAgent(FlawConfig(rates=rates, seed=seed))

        return make

    def user_phrasing(self):
        from pipeline.domains.airline.user import PHRASING

        return PHRASING

    def tau2_importer(self):
        from pipeline.domains.airline.tau2 import Tau2Airline

        return Tau2Airline()


@cache
def _policy() -> str:
    return POLICY_PATH.read_text(encoding="utf-8")


AIRLINE = AirlineDomain()
