"""A water board: account holders and their bills. Its holder record has one `name` field, and it identifies a
holder by what the generic path has no fixed word for: a member number and a PIN (`WATERBOARD`), or an email and a
date of birth (`WATERBOARD_DOB`). One write takes a list of bill ids, one a reason in the holder's own words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pipeline.world.domain import Domain
from pipeline.world.tables import Record, Session, World, WorldLoadError, dump_record
from pipeline.world.tools import ToolError, ToolRegistry

HERE = Path(__file__).parent
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")


class Account(Record):
    member_number: str
    name: str
    pin: str
    email: str
    date_of_birth: str
    bill_ids: list[str]


class Bill(Record):
    bill_id: str
    member_number: str
    period: str
    amount: float
    status: Literal["unpaid", "paid", "disputed"]
    dispute_reason: str


TABLES = {"accounts": Account, "bills": Bill}


def _mine(s: Session, member_number: str) -> None:
    if s.authorize and member_number != s.authenticated_user_id:
        raise ToolError("that belongs to another account holder than the one identified", "unauthorized")


def _bill(s: Session, bill_id: str) -> Bill:
    bill = s.get("bills", bill_id)
    if bill is None:
        raise ToolError(f"bill {bill_id} not found", "not_found")
    _mine(s, bill.member_number)
    return bill


def verify_account(s: Session, member_number: str, pin: str) -> str:
    """Identify the account holder by their member number and PIN; returns their member number.

    Args:
        member_number: The member number on the holder's card, such as 'WA-1007'.
        pin: The holder's four-digit PIN, such as '0420'.
    """
    account = s.get("accounts", member_number.strip())
    if account is None or account.pin != pin.strip():
        raise ToolError("no account matches that member number and PIN", "not_found")
    s.authenticated_user_id = account.member_number
    return account.member_number


def find_account(s: Session, email: str, date_of_birth: str) -> str:
    """Identify the account holder by their email and date of birth; returns their member number.

    Args:
        email: The holder's email, such as 'ada.lovelace@mail.example'.
        date_of_birth: The holder's date of birth, such as '1985-07-14'.
    """
    found = [a for a in s.keys("accounts") if (r := s.get("accounts", a)).email == email.strip().lower()
             and r.date_of_birth == date_of_birth.strip()]  # fmt: skip
    if not found:
        raise ToolError("no account matches that email and date of birth", "not_found")
    s.authenticated_user_id = found[0]
    return found[0]


def get_account(s: Session, member_number: str) -> str:
    """An account: the holder's name, email and bill ids.

    Args:
        member_number: The member number, such as 'WA-1007'.
    """
    account = s.get("accounts", member_number)
    if account is None:
        raise ToolError(f"account {member_number} not found", "not_found")
    _mine(s, member_number)
    return json.dumps(dump_record(account))


def get_bill(s: Session, bill_id: str) -> str:
    """A bill: its period, amount, status (unpaid, paid or disputed) and any dispute reason.

    Args:
        bill_id: The bill id, such as 'BL0012'.
    """
    return json.dumps(dump_record(_bill(s, bill_id)))


def pay_bills(s: Session, bill_ids: list[str]) -> str:
    """Pay one or more unpaid bills of the holder's in one payment.

    Args:
        bill_ids: The ids of the bills to pay, such as ['BL0012', 'BL0013'].
    """
    if not bill_ids:
        raise ToolError("name at least one bill to pay", "invalid_arguments")
    for bill_id in bill_ids:
        bill = _bill(s, bill_id)
        if bill.status != "unpaid":
            raise ToolError(f"bill {bill_id} is {bill.status}; only unpaid bills can be paid")
    for bill_id in bill_ids:
        s.edit("bills", bill_id).status = "paid"
    return json.dumps({"paid": bill_ids})


def dispute_bill(s: Session, bill_id: str, reason: str) -> str:
    """Dispute an unpaid bill; it is not due while the dispute is open.

    Args:
        bill_id: The bill id, such as 'BL0012'.
        reason: Why the holder disputes it, in their words, such as 'the meter reading is wrong'.
    """
    bill = _bill(s, bill_id)
    if bill.status != "unpaid":
        raise ToolError(f"bill {bill_id} is {bill.status}; only unpaid bills can be disputed")
    if not reason.strip():
        raise ToolError("say why the bill is disputed", "invalid_arguments")
    bill = s.edit("bills", bill_id)
    bill.status, bill.dispute_reason = "disputed", reason.strip()
    return json.dumps(dump_record(bill))


def update_email(s: Session, member_number: str, email: str) -> str:
    """Change the email on the holder's account.

    Args:
        member_number: The member number, such as 'WA-1007'.
        email: The new email, such as 'ada.l@mail.example'.
    """
    if s.get("accounts", member_number) is None:
        raise ToolError(f"account {member_number} not found", "not_found")
    _mine(s, member_number)
    if not _EMAIL.match(email):
        raise ToolError(f"{email!r} is not an email address", "invalid_arguments")
    s.edit("accounts", member_number).email = email.lower()
    return json.dumps(dump_record(s.get("accounts", member_number)))


def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Hand the conversation to a person at the utility.

    Args:
        summary: What the holder needs, in one or two sentences.
    """
    return "Transfer successful"


def _tools(identity) -> ToolRegistry:
    tools = ToolRegistry()
    tools.register("identity")(identity)
    for f in (get_account, get_bill):
        tools.register("read", private=True)(f)
    for f in (pay_bills, dispute_bill, update_email):
        tools.register("write", private=True)(f)
    tools.register("transfer")(transfer_to_human_agents)
    return tools


class Waterboard(Domain):
    tables = TABLES

    def __init__(self, name: str, tools: ToolRegistry) -> None:
        self.name, self.tools = name, tools

    def load(self, ref: str) -> World | None:
        path = HERE / "db.json" if ref == "waterboard" else Path(ref) / "db.json" if Path(ref).is_dir() else None
        if path is None or not path.exists():
            return None
        raw = json.loads(path.read_text(encoding="utf-8"))
        try:
            tables = {t: {k: TABLES[t].model_validate(r) for k, r in raw[t].items()} for t in TABLES}
        except (KeyError, ValueError) as exc:
            raise WorldLoadError(f"{path}: {exc}") from None
        return World(tables, policy=self.policy(), name="waterboard", domain=self)

    def policy(self) -> str:
        return (HERE / "policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "member_number", None)


WATERBOARD = Waterboard("waterboard", _tools(verify_account))
WATERBOARD_DOB = Waterboard("waterboard_dob", _tools(find_account))
