"""The carrier's tools (the agent's side of telecom), with τ²-bench telecom's semantics, and the carrier-side set-up
functions and env assertions its tasks name. Each tool docstring is exactly what the agent model is shown.

Authorization, as in retail and airline: a customer look-up (by phone, id, or name and date of birth) identifies
the customer the conversation serves; private records (the customer, their lines, bills and devices) may then be
read and written for that customer only. Every precondition is checked before anything changes, and the generic
`execute` rolls back a call that fails part-way, so a refused call changes nothing. "Today" is 2025-02-25.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, timedelta

from pydantic import BaseModel

from pipeline.domains.telecom.schema import Bill, Customer, Line, LineItem
from pipeline.world import Session, ToolError, ToolRegistry, dump_record

TOOLS = ToolRegistry()
SETUP = ToolRegistry()
TODAY = date(2025, 2, 25)
MAX_REFUEL_GB = 2.0  # "The maximum amount of data that can be refueled is 2GB." (the policy)
PREFIXES = {"L": "lines", "D": "devices", "B": "bills", "C": "customers", "P": "plans"}


def _json(value) -> str:
    if isinstance(value, BaseModel):
        value = dump_record(value)
    elif isinstance(value, list):
        value = [dump_record(v) if isinstance(v, BaseModel) else v for v in value]
    return json.dumps(value)


def _digits(phone: str) -> str:
    return "".join(ch for ch in phone if ch.isdigit())


# ---- helpers --------------------------------------------------------------------------------------------------
def _require_auth(s: Session, customer_id: str, what: str) -> None:
    if not s.authorize:
        return
    if s.authenticated_user_id is None:
        raise ToolError(f"cannot {what}: no customer is identified yet; look the customer up first", "unauthorized")
    if customer_id != s.authenticated_user_id:
        raise ToolError(
            f"cannot {what}: it belongs to another customer than the one identified in this conversation",
            "unauthorized",
        )


def _identify(s: Session, customer: Customer) -> None:
    if s.authorize and s.authenticated_user_id not in (None, customer.customer_id):
        raise ToolError(
            "this conversation already serves another customer; only one customer can be helped per conversation",
            "unauthorized",
        )
    s.authenticated_user_id = customer.customer_id


def customer(s: Session, customer_id: str) -> Customer:
    found = s.get("customers", customer_id)
    if found is None:
        raise ToolError(f"customer {customer_id} not found", "not_found")
    return found


def owner_of_line(s: Session, line_id: str) -> str | None:
    return next((c for c in s.keys("customers") if line_id in s.get("customers", c).line_ids), None)


def owner_of_device(s: Session, device_id: str) -> str | None:
    for line_id in s.keys("lines"):
        if s.get("lines", line_id).device_id == device_id:
            return owner_of_line(s, line_id)
    return None


def _line(s: Session, customer_id: str, line_id: str, what: str) -> Line:
    """The customer's line (τ²-bench's check: the line is among the customer's lines), for that customer only."""
    customer(s, customer_id)
    _require_auth(s, customer_id, what)
    if line_id not in s.get("customers", customer_id).line_ids:
        raise ToolError(f"line {line_id} not found for customer {customer_id}", "not_found")
    line = s.get("lines", line_id)
    if line is None:
        raise ToolError(f"line {line_id} not found", "not_found")
    return line


def line_by_phone(s: Session, phone_number: str) -> Line | None:
    wanted = _digits(phone_number)
    return next(
        (s.get("lines", k) for k in s.keys("lines") if wanted and _digits(s.get("lines", k).phone_number) == wanted),
        None,
    )


def customer_by_phone(s: Session, phone_number: str) -> Customer | None:
    wanted = _digits(phone_number)
    if not wanted:
        return None
    for cid in s.keys("customers"):
        c = s.get("customers", cid)
        if _digits(c.phone_number) == wanted:
            return c
        for line_id in c.line_ids:
            line = s.get("lines", line_id)
            if line is not None and _digits(line.phone_number) == wanted:
                return c
    return None


def awaiting_payment(s: Session, c: Customer) -> list[Bill]:
    return [b for b in (s.get("bills", i) for i in c.bill_ids) if b is not None and b.status == "Awaiting Payment"]


def _charge(s: Session, customer_id: str, amount: float, description: str) -> None:
    """A one-time charge on the customer's Draft bill (a new Draft bill for next month when they have none)."""
    c = customer(s, customer_id)
    draft = next((b for b in (s.get("bills", i) for i in c.bill_ids) if b is not None and b.status == "Draft"), None)
    if draft is None:
        start = (TODAY.replace(day=1) + timedelta(days=32)).replace(day=1)
        end = (start.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        digest = hashlib.sha256(f"{customer_id}/{len(s.keys('bills'))}".encode()).hexdigest()[:8]
        bill_id = f"B{digest}"
        draft = Bill(
            bill_id=bill_id,
            customer_id=customer_id,
            period_start=start.isoformat(),
            period_end=end.isoformat(),
            issue_date=start.isoformat(),
            total_due=0.0,
            due_date=(start + timedelta(days=14)).isoformat(),
            line_items=[],
            status="Draft",
        )
        s.create("bills", bill_id, draft)
        s.edit("customers", customer_id).bill_ids.append(bill_id)
    bill = s.edit("bills", draft.bill_id)
    item = LineItem(
        description=description, amount=amount, date=TODAY.isoformat(), item_type="Credit" if amount < 0 else "Charge"
    )
    bill.line_items = [*bill.line_items, item]
    bill.total_due = bill.total_due + amount


# ---- look-ups -------------------------------------------------------------------------------------------------
@TOOLS.register("identity", private=True)
def get_customer_by_phone(s: Session, phone_number: str) -> str:
    """Find a customer by their contact phone number or the number of any of their lines. This identifies the
    customer you are serving.

    Args:
        phone_number: The phone number, such as '555-123-2002'.
    """
    found = customer_by_phone(s, phone_number)
    if found is None:
        raise ToolError(f"customer with phone number {phone_number} not found", "not_found")
    _identify(s, found)
    return _json(found)


@TOOLS.register("identity", private=True)
def get_customer_by_id(s: Session, customer_id: str) -> str:
    """Get a customer by their customer id. This identifies the customer you are serving.

    Args:
        customer_id: The customer id, such as 'C1001'.
    """
    found = customer(s, customer_id)
    _identify(s, found)
    return _json(found)


@TOOLS.register("identity", private=True)
def get_customer_by_name(s: Session, full_name: str, dob: str) -> str:
    """Find customers by full name (any case) and date of birth. Identifies the customer when exactly one matches.

    Args:
        full_name: The customer's full name.
        dob: Their date of birth, 'YYYY-MM-DD'.
    """
    wanted = full_name.strip().casefold()
    found = [
        s.get("customers", c)
        for c in s.keys("customers")
        if s.get("customers", c).full_name.casefold() == wanted and s.get("customers", c).date_of_birth == dob
    ]
    if len(found) == 1:
        _identify(s, found[0])
    return _json(found)


@TOOLS.register("read", private=True)
def get_details_by_id(s: Session, id: str) -> str:
    """Get the record an id names: a line (L...), device (D...), bill (B...), customer (C...) or plan (P...).

    Args:
        id: The id, such as 'L1002'.
    """
    table = PREFIXES.get(id[:1])
    if table is None:
        raise ToolError(f"unknown id format {id!r}: expected an id starting with L, D, B, C or P", "invalid_arguments")
    record = s.get(table, id)
    if record is None:
        raise ToolError(f"{table[:-1]} {id} not found", "not_found")
    owner = {
        "customers": lambda: id,
        "bills": lambda: record.customer_id,
        "lines": lambda: owner_of_line(s, id),
        "devices": lambda: owner_of_device(s, id),
        "plans": lambda: None,
    }[table]()
    if owner is not None:
        _require_auth(s, owner, f"read {id}")
    return _json(record)


@TOOLS.register("read", private=True)
def get_bills_for_customer(s: Session, customer_id: str, limit: int = 12) -> str:
    """Get a customer's bills, newest issue date first.

    Args:
        customer_id: The customer id.
        limit: How many bills at most.
    """
    c = customer(s, customer_id)
    _require_auth(s, customer_id, "read this customer's bills")
    bills = sorted((s.get("bills", b) for b in c.bill_ids), key=lambda b: b.issue_date, reverse=True)
    return _json(bills[: max(limit, 0)])


@TOOLS.register("read", private=True)
def get_data_usage(s: Session, customer_id: str, line_id: str) -> str:
    """Get a line's data use this billing cycle: used, plan limit, refuelled, and the cycle's end date.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line id.
    """
    line = _line(s, customer_id, line_id, "read this line's usage")
    plan = s.get("plans", line.plan_id)
    if plan is None:
        raise ToolError(f"plan {line.plan_id} not found", "not_found")
    cycle_end = (TODAY.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    return json.dumps(
        {
            "line_id": line_id,
            "data_used_gb": line.data_used_gb,
            "data_limit_gb": plan.data_limit_gb,
            "data_refueling_gb": line.data_refueling_gb,
            "cycle_end_date": cycle_end.isoformat(),
        }
    )


# ---- writes ---------------------------------------------------------------------------------------------------
@TOOLS.register("write", private=True)
def suspend_line(s: Session, customer_id: str, line_id: str, reason: str) -> str:
    """Suspend an active line (at most 6 months; a $5/month holding fee applies).

    Args:
        customer_id: The customer who owns the line.
        line_id: The line to suspend.
        reason: Why it is suspended.
    """
    line = _line(s, customer_id, line_id, "suspend this line")
    if line.status != "Active":
        raise ToolError(f"line {line_id} is {line.status}; only an active line can be suspended")
    edited = s.edit("lines", line_id)
    edited.status, edited.suspension_start_date = "Suspended", TODAY.isoformat()
    return _json(
        {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": dump_record(edited)}
    )


@TOOLS.register("write", private=True)
def resume_line(s: Session, customer_id: str, line_id: str) -> str:
    """Resume a suspended (or pending-activation) line.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line to resume.
    """
    line = _line(s, customer_id, line_id, "resume this line")
    if line.status not in ("Suspended", "Pending Activation"):
        raise ToolError(f"line {line_id} is {line.status}; only a suspended line can be resumed")
    edited = s.edit("lines", line_id)
    edited.status, edited.suspension_start_date = "Active", None
    return _json({"message": "Line resumed successfully", "line": dump_record(edited)})


@TOOLS.register("write", private=True)
def send_payment_request(s: Session, customer_id: str, bill_id: str) -> str:
    """Send the customer a payment request for one of their bills; it appears on their phone. Refused while another
    of their bills awaits payment. It does not check that the bill is unpaid: check its status first.

    Args:
        customer_id: The customer who owns the bill.
        bill_id: The bill to request payment for.
    """
    c = customer(s, customer_id)
    _require_auth(s, customer_id, "request a payment from this customer")
    if awaiting_payment(s, c):
        raise ToolError("a bill is already awaiting payment for this customer")
    if bill_id not in c.bill_ids or s.get("bills", bill_id) is None:
        raise ToolError(f"bill {bill_id} not found for customer {customer_id}", "not_found")
    s.edit("bills", bill_id).status = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill_id}"


@TOOLS.register("write", private=True)
def refuel_data(s: Session, customer_id: str, line_id: str, gb_amount: float) -> str:
    """Add data to a line for this billing cycle, charged at the plan's refuelling price on the customer's next
    bill.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line to refuel.
        gb_amount: How many GB to add (more than 0).
    """
    line = _line(s, customer_id, line_id, "refuel this line")
    if not 0 < gb_amount <= MAX_REFUEL_GB:  # also refuses NaN and infinity
        raise ToolError(
            f"the refuel amount must be more than 0 and at most {MAX_REFUEL_GB:g} GB (the policy's maximum), not"
            f" {gb_amount}",
            "invalid_arguments",
        )
    plan = s.get("plans", line.plan_id)
    if plan is None:
        raise ToolError(f"plan {line.plan_id} not found", "not_found")
    charge = gb_amount * plan.data_refueling_price_per_gb
    edited = s.edit("lines", line_id)
    edited.data_refueling_gb = edited.data_refueling_gb + gb_amount
    _charge(s, customer_id, charge, f"Data refueling: {gb_amount} GB at ${plan.data_refueling_price_per_gb}/GB")
    return _json(
        {
            "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": edited.data_refueling_gb,
            "charge": charge,
        }
    )


def _set_roaming(s: Session, customer_id: str, line_id: str, on: bool) -> str:
    line = _line(s, customer_id, line_id, "change this line's roaming")
    word = "enabled" if on else "disabled"
    if line.roaming_enabled == on:
        return f"Roaming was already {word}"
    s.edit("lines", line_id).roaming_enabled = on
    return f"Roaming {word} successfully"


@TOOLS.register("write", private=True)
def enable_roaming(s: Session, customer_id: str, line_id: str) -> str:
    """Allow international roaming on a line.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line.
    """
    return _set_roaming(s, customer_id, line_id, True)


@TOOLS.register("write", private=True)
def disable_roaming(s: Session, customer_id: str, line_id: str) -> str:
    """Stop international roaming on a line.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line.
    """
    return _set_roaming(s, customer_id, line_id, False)


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Transfer the customer to a human agent, with a summary of their issue. Transfer only when the customer asks
    for a human, or when the policy and your tools cannot solve the issue.

    Args:
        summary: A summary of the customer's issue.
    """
    return "Transfer successful"


# ---- set-up functions (task initialisation; not tools) --------------------------------------------------------
@SETUP.register("write")
def set_data_usage(s: Session, customer_id: str, line_id: str, data_used_gb: float) -> str:
    """Set a line's data used this cycle.

    Args:
        customer_id: The customer who owns the line.
        line_id: The line.
        data_used_gb: GB used.
    """
    _line(s, customer_id, line_id, "set usage")
    s.edit("lines", line_id).data_used_gb = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


@SETUP.register("write")
def suspend_line_for_overdue_bill(
    s: Session, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
) -> str:
    """Add an overdue bill for last month's plan charge and suspend the line for it.

    Args:
        customer_id: The customer.
        line_id: The line to suspend.
        new_bill_id: The overdue bill's id.
        contract_ended: Whether the line's contract ended last month.
    """
    line = s.get("lines", line_id)
    if line is None:
        raise ToolError(f"line {line_id} not found", "not_found")
    if line.status != "Active":
        raise ToolError(f"line {line_id} is {line.status}; only an active line can be suspended for an unpaid bill")
    plan = s.get("plans", line.plan_id)
    c = customer(s, customer_id)
    if any(s.get("bills", b).status == "Overdue" for b in c.bill_ids):
        raise ToolError(f"customer {customer_id} already has an overdue bill")
    if s.get("bills", new_bill_id) is not None:
        raise ToolError(f"bill {new_bill_id} already exists")
    last_day = TODAY.replace(day=1) - timedelta(days=1)
    first_day = last_day.replace(day=1)
    item = LineItem(
        description=f"Charge for line {line_id}",
        amount=plan.price_per_month,
        date=TODAY.isoformat(),
        item_type="Charge",
    )
    bill = Bill(
        bill_id=new_bill_id,
        customer_id=customer_id,
        period_start=first_day.isoformat(),
        period_end=last_day.isoformat(),
        issue_date=first_day.isoformat(),
        total_due=0.0 + plan.price_per_month,
        due_date=(first_day + timedelta(days=14)).isoformat(),
        line_items=[item],
        status="Overdue",
    )
    s.create("bills", new_bill_id, bill)
    s.edit("customers", customer_id).bill_ids.append(new_bill_id)
    edited = s.edit("lines", line_id)
    edited.status, edited.suspension_start_date = "Suspended", TODAY.isoformat()
    if contract_ended:
        edited.contract_end_date = last_day.isoformat()
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


# ---- env assertions (carrier side) ----------------------------------------------------------------------------
def assert_data_refueling_amount(s: Session, customer_id: str, line_id: str, expected_amount: float) -> bool:
    line = s.get("lines", line_id)
    if line is None or line_id not in customer(s, customer_id).line_ids:
        raise ToolError(f"line {line_id} not found for customer {customer_id}", "not_found")
    return abs(line.data_refueling_gb - expected_amount) < 1e-6


def assert_line_status(s: Session, customer_id: str, line_id: str, expected_status: str) -> bool:
    line = s.get("lines", line_id)
    if line is None or line_id not in customer(s, customer_id).line_ids:
        raise ToolError(f"line {line_id} not found for customer {customer_id}", "not_found")
    return line.status == expected_status


def assert_no_overdue_bill(s: Session, overdue_bill_id: str) -> bool:
    bill = s.get("bills", overdue_bill_id)
    return bill is None or bill.status == "Paid"


ASSERTIONS = {
    "assert_data_refueling_amount": assert_data_refueling_amount,
    "assert_line_status": assert_line_status,
    "assert_no_overdue_bill": assert_no_overdue_bill,
}
