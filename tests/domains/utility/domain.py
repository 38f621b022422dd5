"""A power, gas and water utility: accounts, meters, bills and disputes; ten tools; identity by account number and
PIN; the account holder owns their meters, bills and disputes.

Written from docs/domains.md alone, unlike the library: the customer record has one `name` field and no email,
one write takes a list of bill ids, one takes free text, and some refusals depend on a record of another table
than the one the call names (a bill's meter, a meter's bills)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from pipeline.world.domain import Domain
from pipeline.world.tables import Record, Session, World, WorldLoadError, dump_record
from pipeline.world.tools import ToolError, ToolRegistry

HERE = Path(__file__).parent
Tariff = Literal["standard", "fixed", "green", "night_saver"]


class Account(Record):
    account_number: str
    name: str
    pin: str
    phone: str
    service_address: str
    meters: list[str]


class Meter(Record):
    meter_id: str
    account_number: str
    utility: Literal["electricity", "gas", "water"]
    reading_type: Literal["smart", "manual"]
    status: Literal["active", "disconnected"]
    tariff: Tariff
    last_reading: int


class Bill(Record):
    bill_id: str
    account_number: str
    meter_id: str
    period: str
    amount: float
    status: Literal["unpaid", "paid", "disputed"]


class Dispute(Record):
    dispute_id: str
    account_number: str
    bill_id: str
    reason: str
    status: Literal["open", "resolved"]


TABLES = {"accounts": Account, "meters": Meter, "bills": Bill, "disputes": Dispute}
TOOLS = ToolRegistry()
_PHONE = re.compile(r"^\+?\d[\d -]{6,16}\d$")


def _mine(s: Session, account_number: str) -> None:
    if s.authorize and account_number != s.authenticated_user_id:
        raise ToolError("that belongs to another account than the one verified", "unauthorized")


def _account(s: Session, account_number: str) -> Account:
    account = s.get("accounts", account_number)
    if account is None:
        raise ToolError(f"account {account_number} not found", "not_found")
    _mine(s, account_number)
    return account


def _meter(s: Session, meter_id: str) -> Meter:
    meter = s.get("meters", meter_id)
    if meter is None:
        raise ToolError(f"meter {meter_id} not found", "not_found")
    _mine(s, meter.account_number)
    return meter


def _bill(s: Session, bill_id: str) -> Bill:
    bill = s.get("bills", bill_id)
    if bill is None:
        raise ToolError(f"bill {bill_id} not found", "not_found")
    _mine(s, bill.account_number)
    return bill


@TOOLS.register("identity")
def verify_account_holder(s: Session, account_number: str, pin: str) -> str:
    """Verify the caller as the holder of an account by its number and the account's four-digit PIN; returns the
    account number.

    Args:
        account_number: The account number on the customer's bills, such as 'UA-40213'.
        pin: The account's four-digit telephone PIN, such as '4821'.
    """
    account = s.get("accounts", account_number.strip().upper())
    if account is None or account.pin != pin.strip():
        raise ToolError("no account matches that account number and PIN", "not_found")
    s.authenticated_user_id = account.account_number
    return account.account_number


@TOOLS.register("read", private=True)
def get_account(s: Session, account_number: str) -> str:
    """An account: the holder's name, phone, service address and meter ids (never the PIN).

    Args:
        account_number: The account number, such as 'UA-40213'.
    """
    shown = dump_record(_account(s, account_number))
    shown.pop("pin")
    return json.dumps(shown)


@TOOLS.register("read", private=True)
def get_meter(s: Session, meter_id: str) -> str:
    """A meter: its utility, whether it is smart or read by hand, status, tariff and last reading.

    Args:
        meter_id: The meter id, such as 'MT-0412'.
    """
    return json.dumps(dump_record(_meter(s, meter_id)))


@TOOLS.register("read", private=True)
def get_bill(s: Session, bill_id: str) -> str:
    """A bill: its meter, billing period, amount and status (unpaid, paid or disputed).

    Args:
        bill_id: The bill id, such as 'BL-20931'.
    """
    return json.dumps(dump_record(_bill(s, bill_id)))


@TOOLS.register("write", private=True)
def pay_bills(s: Session, bill_ids: list[str]) -> str:
    """Pay several unpaid bills of the account at once with the card on file.

    Args:
        bill_ids: The ids of the bills to pay, such as ['BL-20931', 'BL-20932'].
    """
    if not bill_ids:
        raise ToolError("name at least one bill to pay", "invalid_arguments")
    if len(set(bill_ids)) != len(bill_ids):
        raise ToolError("a bill is named twice", "invalid_arguments")
    bills = [_bill(s, b) for b in bill_ids]
    for bill in bills:
        if bill.status != "unpaid":
            raise ToolError(f"bill {bill.bill_id} is {bill.status}; only unpaid bills can be paid")
    for bill in bills:
        s.edit("bills", bill.bill_id).status = "paid"
    return json.dumps({"paid": bill_ids, "total": round(sum(b.amount for b in bills), 2)})


@TOOLS.register("write", private=True)
def dispute_bill(s: Session, bill_id: str, reason: str) -> str:
    """Open a dispute on an unpaid bill whose meter is read by hand; the bill is held until the dispute is resolved.

    Args:
        bill_id: The bill id, such as 'BL-20931'.
        reason: Why the customer thinks the bill is wrong, in their words, such as 'the meter was read twice this
            month'.
    """
    bill = _bill(s, bill_id)
    if len(reason.split()) < 3:
        raise ToolError("say in a few words why the bill is wrong", "invalid_arguments")
    if bill.status != "unpaid":
        raise ToolError(f"bill {bill_id} is {bill.status}; only unpaid bills can be disputed")
    meter = s.get("meters", bill.meter_id)
    if meter.reading_type == "smart":
        raise ToolError(f"bill {bill_id} was read by smart meter {meter.meter_id}; smart readings cannot be disputed")
    dispute_id = f"DP-{len(s.keys('disputes')) + 1:04d}"
    dispute = Dispute(dispute_id=dispute_id, account_number=bill.account_number, bill_id=bill_id, reason=reason,
                      status="open")  # fmt: skip
    s.create("disputes", dispute_id, dispute)
    s.edit("bills", bill_id).status = "disputed"
    return json.dumps(dump_record(dispute))


@TOOLS.register("write", private=True)
def change_tariff(s: Session, meter_id: str, tariff: Tariff) -> str:
    """Move an active meter to another tariff; night_saver is for electricity only.

    Args:
        meter_id: The meter id, such as 'MT-0412'.
        tariff: The new tariff.
    """
    meter = _meter(s, meter_id)
    if meter.status != "active":
        raise ToolError(f"meter {meter_id} is {meter.status}; only an active meter's tariff can change")
    if meter.tariff == tariff:
        raise ToolError(f"meter {meter_id} is already on the {tariff} tariff")
    if tariff == "night_saver" and meter.utility != "electricity":
        raise ToolError(f"the night_saver tariff is for electricity meters; meter {meter_id} is {meter.utility}")
    meter = s.edit("meters", meter_id)
    meter.tariff = tariff
    return json.dumps(dump_record(meter))


@TOOLS.register("write", private=True)
def submit_meter_reading(s: Session, meter_id: str, reading: int) -> str:
    """Record a reading the customer took from a meter read by hand; it cannot be below the last reading.

    Args:
        meter_id: The meter id, such as 'MT-0412'.
        reading: The number shown on the meter, such as 10342.
    """
    meter = _meter(s, meter_id)
    if meter.reading_type == "smart":
        raise ToolError(f"meter {meter_id} is a smart meter; it sends its own readings")
    if meter.status != "active":
        raise ToolError(f"meter {meter_id} is {meter.status}; readings are taken only from active meters")
    if reading < meter.last_reading:
        raise ToolError(f"reading {reading} is below meter {meter_id}'s last reading {meter.last_reading}")
    meter = s.edit("meters", meter_id)
    meter.last_reading = reading
    return json.dumps(dump_record(meter))


@TOOLS.register("write", private=True)
def request_reconnection(s: Session, meter_id: str) -> str:
    """Reconnect a disconnected meter once every bill of that meter is paid or disputed.

    Args:
        meter_id: The meter id, such as 'MT-0412'.
    """
    meter = _meter(s, meter_id)
    if meter.status == "active":
        raise ToolError(f"meter {meter_id} is already active")
    owed = sorted(k for k in s.keys("bills") if (b := s.get("bills", k)).meter_id == meter_id and b.status == "unpaid")
    if owed:
        raise ToolError(f"meter {meter_id} has unpaid bill {owed[0]}; it is reconnected once its bills are paid")
    meter = s.edit("meters", meter_id)
    meter.status = "active"
    return json.dumps(dump_record(meter))


@TOOLS.register("write", private=True)
def update_phone(s: Session, account_number: str, phone: str) -> str:
    """Change the contact phone number on an account.

    Args:
        account_number: The account number, such as 'UA-40213'.
        phone: The new phone number, such as '+1 415 555 0142'.
    """
    _account(s, account_number)
    if not _PHONE.match(phone.strip()):
        raise ToolError(f"{phone!r} is not a phone number", "invalid_arguments")
    account = s.edit("accounts", account_number)
    account.phone = phone.strip()
    shown = dump_record(account)
    shown.pop("pin")
    return json.dumps(shown)


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Hand the call to a human agent of the billing team.

    Args:
        summary: What the account holder needs, in one or two sentences.
    """
    return "Transfer successful"


class Utility(Domain):
    name = "utility"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
        path = HERE / "db.json" if ref == "utility" else Path(ref) / "db.json" if Path(ref).is_dir() else None
        if path is None or not path.exists():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{path}: not JSON ({exc})") from None
        if not isinstance(raw, dict) or set(raw) != set(TABLES):
            raise WorldLoadError(f"{path}: expected the tables {sorted(TABLES)}")
        tables: dict[str, dict[str, Record]] = {t: {} for t in TABLES}
        for t, records in raw.items():
            for k, r in records.items():
                try:
                    tables[t][k] = TABLES[t].model_validate(r)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    field = ".".join(str(x) for x in first["loc"])
                    raise WorldLoadError(f"{path}: {t}.{k}.{field}: {first['msg']}") from None
        return World(tables, policy=self.policy(), name=ref, domain=self)

    def policy(self) -> str:
        return (HERE / "policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "account_number", None)


UTILITY = Utility()
