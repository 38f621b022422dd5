"""A home insurer: policyholders, their policies and their claims. What the generic path has no fixed word for: a
name kept in two fields (`given_name`, `surname`), a table whose plural ends in -ies (`policies`), amounts kept as
floats (a claim of 1046.0 pounds), and a claim that names its policy by the policy's key (`policy_number`). The
world is built from a seed, so the fixture is a few lines of data rather than a file."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pipeline.world.domain import Domain
from pipeline.world.tables import Record, Session, World, dump_record
from pipeline.world.tools import ToolError, ToolRegistry

HERE = Path(__file__).parent
GIVEN = ("Olga", "Tomasz", "Ines", "Kwame", "Saoirse", "Mateo", "Yuki", "Priya")
SURNAMES = ("Petrova", "Nowak", "Ferreira", "Mensah", "Byrne", "Alvarez", "Tanaka", "Raman")
DESCRIPTIONS = ("burst pipe in the kitchen", "storm damage to the roof", "bicycle stolen from the shed",
                "smoke damage in the hallway")  # fmt: skip


class Policyholder(Record):
    holder_id: str
    given_name: str
    surname: str
    email: str
    date_of_birth: str


class Policy(Record):
    policy_number: str
    holder_id: str
    cover: Literal["buildings", "contents", "buildings and contents"]
    status: Literal["active", "lapsed"]
    premium: float


class Claim(Record):
    claim_id: str
    policy_number: str
    holder_id: str
    peril: Literal["water", "storm", "theft", "fire"]
    description: str
    amount: float
    status: Literal["open", "settled", "withdrawn"]


TABLES = {"policyholders": Policyholder, "policies": Policy, "claims": Claim}


def build(seed: int = 0) -> dict[str, dict[str, Record]]:
    """Eight policyholders with one or two policies each, and one to three claims per policy."""
    rng = random.Random(seed)
    out: dict[str, dict[str, Record]] = {t: {} for t in TABLES}
    for i, (given, surname) in enumerate(zip(GIVEN, SURNAMES, strict=True)):
        holder = f"PH-{101 + i}"
        born = f"19{rng.randint(50, 99)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        out["policyholders"][holder] = Policyholder(holder_id=holder, given_name=given, surname=surname,
                                                    email=f"{given}.{surname}@mail.example".lower(),
                                                    date_of_birth=born)  # fmt: skip
        for _ in range(rng.randint(1, 2)):
            number = f"HP-{rng.randint(100000, 999999)}"
            out["policies"][number] = Policy(policy_number=number, holder_id=holder,
                                             cover=rng.choice(Policy.model_fields["cover"].annotation.__args__),
                                             status=rng.choice(("active", "active", "lapsed")),
                                             premium=rng.choice((312.0, 287.5, 405.0)))  # fmt: skip
            for _ in range(rng.randint(1, 3)):
                cid = f"CL-{3001 + len(out['claims'])}"
                out["claims"][cid] = Claim(claim_id=cid, policy_number=number, holder_id=holder,
                                           peril=rng.choice(("water", "storm", "theft", "fire")),
                                           description=rng.choice(DESCRIPTIONS),
                                           amount=rng.choice((1046.0, 412.5, 2300.0, 95.0)),
                                           status=rng.choice(("open", "open", "settled", "withdrawn")))  # fmt: skip
    return out


def _mine(s: Session, holder_id: str) -> None:
    if s.authorize and holder_id != s.authenticated_user_id:
        raise ToolError("that belongs to another policyholder than the one identified", "unauthorized")


def _get(s: Session, table: str, key: str) -> Record:
    record = s.get(table, key)
    if record is None:
        raise ToolError(f"{key} not found", "not_found")
    _mine(s, record.holder_id)
    return record


def verify_policyholder(s: Session, email: str, date_of_birth: str) -> str:
    """Identify the policyholder by their email and date of birth; returns their holder id.

    Args:
        email: The policyholder's email, such as 'olga.petrova@mail.example'.
        date_of_birth: The policyholder's date of birth, such as '1971-03-09'.
    """
    found = [h for h in s.keys("policyholders") if (r := s.get("policyholders", h)).email == email.strip().lower()
             and r.date_of_birth == date_of_birth.strip()]  # fmt: skip
    if not found:
        raise ToolError("no policyholder matches that email and date of birth", "not_found")
    s.authenticated_user_id = found[0]
    return found[0]


def get_policyholder(s: Session, holder_id: str) -> str:
    """A policyholder: their name, email and date of birth.

    Args:
        holder_id: The holder id, such as 'PH-101'.
    """
    return json.dumps(dump_record(_get(s, "policyholders", holder_id)))


def get_policy(s: Session, policy_number: str) -> str:
    """A policy: its cover, status (active or lapsed) and yearly premium in pounds.

    Args:
        policy_number: The policy number, such as 'HP-254937'.
    """
    return json.dumps(dump_record(_get(s, "policies", policy_number)))


def get_claim(s: Session, claim_id: str) -> str:
    """A claim: its policy, peril, description, amount in pounds and status (open, settled or withdrawn).

    Args:
        claim_id: The claim id, such as 'CL-3001'.
    """
    return json.dumps(dump_record(_get(s, "claims", claim_id)))


def amend_claim_amount(s: Session, claim_id: str, amount: float) -> str:
    """Change the amount claimed on an open claim.

    Args:
        claim_id: The claim id, such as 'CL-3001'.
        amount: The new amount in pounds, above zero.
    """
    claim = _get(s, "claims", claim_id)
    if claim.status != "open":
        raise ToolError(f"claim {claim_id} is {claim.status}; only an open claim can be amended")
    if amount <= 0:
        raise ToolError("an amount must be above zero", "invalid_arguments")
    s.edit("claims", claim_id).amount = amount
    return json.dumps(dump_record(s.get("claims", claim_id)))


def withdraw_claim(s: Session, claim_id: str) -> str:
    """Withdraw an open claim.

    Args:
        claim_id: The claim id, such as 'CL-3001'.
    """
    claim = _get(s, "claims", claim_id)
    if claim.status != "open":
        raise ToolError(f"claim {claim_id} is {claim.status}; only an open claim can be withdrawn")
    s.edit("claims", claim_id).status = "withdrawn"
    return json.dumps(dump_record(s.get("claims", claim_id)))


def renew_policy(s: Session, policy_number: str) -> str:
    """Renew a lapsed policy.

    Args:
        policy_number: The policy number, such as 'HP-254937'.
    """
    policy = _get(s, "policies", policy_number)
    if policy.status != "lapsed":
        raise ToolError(f"policy {policy_number} is {policy.status}; only a lapsed policy can be renewed")
    s.edit("policies", policy_number).status = "active"
    return json.dumps(dump_record(s.get("policies", policy_number)))


def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Hand the conversation to a person at the insurer.

    Args:
        summary: What the policyholder needs, in one or two sentences.
    """
    return "Transfer successful"


def _tools() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register("identity")(verify_policyholder)
    for f in (get_policyholder, get_policy, get_claim):
        tools.register("read", private=True)(f)
    for f in (amend_claim_amount, withdraw_claim, renew_policy):
        tools.register("write", private=True)(f)
    tools.register("transfer")(transfer_to_human_agents)
    return tools


class HomeInsure(Domain):
    name = "homeinsure"
    tables = TABLES

    def __init__(self) -> None:
        self.tools = _tools()

    def load(self, ref: str) -> World | None:
        if ref != "homeinsure":
            return None
        return World(build(), policy=self.policy(), name="homeinsure", domain=self)

    def policy(self) -> str:
        return (HERE / "policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "holder_id", None)


HOMEINSURE = HomeInsure()
