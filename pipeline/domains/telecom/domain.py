"""The telecom domain behind the domain boundary: dual control.

The agent holds the carrier's tools over the carrier's tables; the customer holds their phone's tools over the
customer-side tables (`device`, `surroundings`). After every call and every set-up step the synchronisation copies
the carrier's facts about the customer's line onto their side (line active, roaming allowed, allowance exceeded)
and settles payment requests between the two.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ValidationError

from pipeline.domains.telecom.phone import PHONE_ASSERTIONS, PHONE_SETUP, PHONE_TOOLS, surroundings
from pipeline.domains.telecom.schema import (
    PHONE,
    TABLES,
    USER_TABLES,
    Bill,
    Customer,
    PaymentRequest,
    TelecomDB,
    TelecomUserDB,
)
from pipeline.domains.telecom.tools import (
    ASSERTIONS,
    SETUP,
    TOOLS,
    awaiting_payment,
    customer_by_phone,
    line_by_phone,
)
from pipeline.errors import WorldError
from pipeline.world import Domain, Session, World, WorldLoadError

POLICY_PATH = Path(__file__).with_name("policy.md")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorldLoadError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise WorldLoadError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def _validate(model: type[BaseModel], data, source: Path):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise WorldLoadError(f"{source}: field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


class TelecomDomain(Domain):
    name = "telecom"
    tables = {name: record for name, (record, _) in TABLES.items()}
    tools = TOOLS
    user_tools = PHONE_TOOLS
    user_tables = USER_TABLES

    def load(self, ref: str) -> World | None:
        """A domain directory (db.json, user_db.json, policy.md) or a db.json beside its user_db.json."""
        path = Path(ref)
        if path.is_dir():
            policy_file = path / "policy.md"
            policy = policy_file.read_text(encoding="utf-8") if policy_file.exists() else self.policy()
            return self.from_files(path / "db.json", path / "user_db.json", policy, path.resolve().name)
        if path.suffix == ".json" and path.exists():
            return self.from_files(path, path.with_name("user_db.json"), self.policy(), path.stem)
        return None

    def from_files(self, db: Path, user_db: Path, policy: str, name: str) -> World:
        carrier = _validate(TelecomDB, _read_json(db), db)
        phone = _validate(TelecomUserDB, _read_json(user_db), user_db)
        tables: dict[str, dict[str, BaseModel]] = {}
        for table, (_, key) in TABLES.items():
            records = getattr(carrier, table)
            keyed = {getattr(r, key): r for r in records}
            if len(keyed) != len(records):
                raise WorldLoadError(f"{db}: field {table}: duplicate {key}")
            tables[table] = keyed
        tables["device"] = {PHONE: phone.device}
        tables["surroundings"] = {PHONE: phone.surroundings}
        world = World(tables, policy=policy, name=name, domain=self)
        world.directory = db.resolve().parent  # where its tasks files lie (pipeline.domains.telecom.tasks)
        return world

    def policy(self) -> str:
        return _policy()

    def owner(self, table: str, record: BaseModel) -> str | None:
        if table == "customers":
            return cast(Customer, record).customer_id
        if table == "bills":
            return cast(Bill, record).customer_id
        return None

    def identity_fields(self) -> tuple[str, ...]:
        return ("phone_number", "customer_id")

    def synchronise(self, session: Session) -> None:
        """Carry the carrier's facts about the customer's line to their side, and settle payment requests."""
        where = surroundings(session)
        if where.phone_number is None:
            return
        line = line_by_phone(session, where.phone_number)
        if line is None:
            raise WorldError(f"no line has the customer's phone number {where.phone_number}")
        plan = session.get("plans", line.plan_id)
        if plan is None:
            raise WorldError(f"line {line.line_id}: unknown plan {line.plan_id}")
        facts = {
            "line_active": line.status == "Active",
            "roaming_allowed": line.roaming_enabled,
            "mobile_data_usage_exceeded": line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb,
        }
        if any(getattr(where, k) != v for k, v in facts.items()):
            edited = session.edit("surroundings", PHONE)
            for k, v in facts.items():
                setattr(edited, k, v)
        request = surroundings(session).payment_request
        if request is not None and request.paid:
            session.edit("bills", request.bill_id).status = "Paid"
            session.edit("surroundings", PHONE).payment_request = None
            request = None
        if request is None:
            customer = customer_by_phone(session, where.phone_number)
            waiting = awaiting_payment(session, customer) if customer is not None else []
            if waiting:
                bill = waiting[0]
                session.edit("surroundings", PHONE).payment_request = PaymentRequest(
                    bill_id=bill.bill_id, amount_due=bill.total_due
                )

    def setup_functions(self):
        return {"assistant": SETUP, "user": PHONE_SETUP}

    def env_assertions(self):
        return {"assistant": ASSERTIONS, "user": PHONE_ASSERTIONS}

    def user_phrasing(self):
        from pipeline.domains.telecom.customer import start
        from pipeline.users.phrasing import Phrasing

        return Phrasing(episode=start)

    def oracle(self):
        from pipeline.domains.telecom.oracle import TelecomOracle

        return TelecomOracle

    def vocabulary(self):
        from pipeline.domains.telecom.vocabulary import VOCABULARY

        return VOCABULARY

    def flaws(self):
        def make(rates: dict[str, float], seed: int = 0):
            """A dual-control mode given no rate of its own is planted at its mode's (`flawed:misread=0.2` plants
            wrong instructions at 0.2)."""
            from pipeline.agents import FlawConfig
            from pipeline.domains.telecom.flawed import TelecomFlawedAgent
            from pipeline.grading import PARENT

            inherited = {m: rates[p] for m, p in PARENT.items() if m not in rates and p in rates}
            return TelecomFlawedAgent(FlawConfig(rates={**rates, **inherited}, seed=seed))

        return make

    def tasks(self):
        from pipeline.domains.telecom.tasks import generate_tasks

        return generate_tasks

    def synthesis(self):
        from pipeline.domains.telecom.synthesis import TELECOM_KIT

        return TELECOM_KIT

    def tau2_importer(self):
        from pipeline.domains.telecom.tau2 import Tau2Telecom

        return Tau2Telecom(self)


@cache
def _policy() -> str:
    return POLICY_PATH.read_text(encoding="utf-8")


TELECOM = TelecomDomain()
