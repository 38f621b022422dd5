"""The salon: clients, stylists, slots, appointments and invoices; identity by email; a seeded world built in code.

A test domain for exploration: slots of several stylists (listed stylist by stylist), a refusal that depends on
two records together (the slot's stylist against the appointment's), a refusal that depends on a field of the
record the named one refers to (an invoice's appointment), two writes on appointments whose preconditions are
complementary (cancel a booked one, rate a completed one) and a write about several records (`pay_invoices`
takes a list of invoice ids)."""

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
NAMES = ["Ines", "Jonas", "Kemal", "Lotte", "Marek", "Nadia", "Oskar", "Priya", "Quinn", "Rosa", "Sven", "Tara"]
SURNAMES = ["Abbott", "Berg", "Costa", "Dahl", "Engel", "Fischer", "Gruber", "Holm", "Iqbal", "Janssen"]


class Client(Record):
    client_id: str
    first_name: str
    last_name: str
    email: str


class Stylist(Record):
    stylist_id: str
    name: str


class Slot(Record):
    slot_id: str
    stylist_id: str
    day: str
    taken: bool


class Appointment(Record):
    appointment_id: str
    client_id: str
    stylist_id: str
    slot_id: str
    status: Literal["booked", "completed", "cancelled"]
    stars: int | None = None


class Invoice(Record):
    invoice_id: str
    client_id: str
    appointment_id: str
    amount: int
    status: Literal["open", "paid", "void", "disputed"]


TABLES = {"clients": Client, "stylists": Stylist, "slots": Slot, "appointments": Appointment, "invoices": Invoice}
TOOLS = ToolRegistry()


def _get(s: Session, table: str, key: str, what: str) -> BaseModel:
    rec = s.get(table, key)
    if rec is None:
        raise ToolError(f"{what} {key} not found", "not_found")
    client = getattr(rec, "client_id", None)
    if s.authorize and client is not None and client != s.authenticated_user_id:
        raise ToolError("that belongs to another client than the one identified", "unauthorized")
    return rec


@TOOLS.register("identity")
def find_client_by_email(s: Session, email: str) -> str:
    """Find a client by email and identify them for this conversation; returns their client id.

    Args:
        email: The client's email, such as 'ines.abbott@salon.example'.
    """
    found = [k for k in s.keys("clients") if s.get("clients", k).email == email.strip().lower()]
    if not found:
        raise ToolError("no client has that email", "not_found")
    s.authenticated_user_id = found[0]
    return found[0]


@TOOLS.register("read", private=True)
def get_client_details(s: Session, client_id: str) -> str:
    """A client's name and email.

    Args:
        client_id: The client id, such as 'C007'.
    """
    return json.dumps(dump_record(_get(s, "clients", client_id, "client")))


@TOOLS.register("read", private=True)
def get_appointment_details(s: Session, appointment_id: str) -> str:
    """An appointment: its stylist, slot, status (booked, completed or cancelled) and rating.

    Args:
        appointment_id: The appointment id, such as 'A0042'.
    """
    return json.dumps(dump_record(_get(s, "appointments", appointment_id, "appointment")))


@TOOLS.register("read")
def get_slot_details(s: Session, slot_id: str) -> str:
    """A slot: its stylist, day and whether it is taken.

    Args:
        slot_id: The slot id, such as 'S012'.
    """
    return json.dumps(dump_record(_get(s, "slots", slot_id, "slot")))


@TOOLS.register("read", private=True)
def get_invoice_details(s: Session, invoice_id: str) -> str:
    """An invoice: its amount and status (open, paid or void).

    Args:
        invoice_id: The invoice id, such as 'I0042'.
    """
    return json.dumps(dump_record(_get(s, "invoices", invoice_id, "invoice")))


def _booked(s: Session, appointment_id: str, doing: str) -> Appointment:
    appt = _get(s, "appointments", appointment_id, "appointment")
    assert isinstance(appt, Appointment)
    if appt.status != "booked":
        raise ToolError(f"appointment {appointment_id} is {appt.status}; only booked appointments can be {doing}")
    return appt


@TOOLS.register("write", private=True)
def reschedule_appointment(s: Session, appointment_id: str, slot_id: str) -> str:
    """Move a booked appointment to a free slot with the same stylist.

    Args:
        appointment_id: The appointment id, such as 'A0042'.
        slot_id: The new slot id, such as 'S012'.
    """
    appt = _booked(s, appointment_id, "moved")
    slot = _get(s, "slots", slot_id, "slot")
    assert isinstance(slot, Slot)
    if slot.stylist_id != appt.stylist_id:
        raise ToolError(f"slot {slot_id} is with another stylist")
    if slot.taken:
        raise ToolError(f"slot {slot_id} is taken")
    s.edit("slots", appt.slot_id).taken = False
    s.edit("slots", slot_id).taken = True
    s.edit("appointments", appointment_id).slot_id = slot_id
    return json.dumps(dump_record(s.get("appointments", appointment_id)))


@TOOLS.register("write", private=True)
def cancel_appointment(s: Session, appointment_id: str) -> str:
    """Cancel a booked appointment; its slot is freed.

    Args:
        appointment_id: The appointment id, such as 'A0042'.
    """
    appt = _booked(s, appointment_id, "cancelled")
    s.edit("slots", appt.slot_id).taken = False
    s.edit("appointments", appointment_id).status = "cancelled"
    return json.dumps(dump_record(s.get("appointments", appointment_id)))


@TOOLS.register("write", private=True)
def rate_appointment(s: Session, appointment_id: str, stars: int) -> str:
    """Rate a completed appointment from 1 to 5 stars.

    Args:
        appointment_id: The appointment id, such as 'A0042'.
        stars: The rating, from 1 to 5.
    """
    appt = _get(s, "appointments", appointment_id, "appointment")
    assert isinstance(appt, Appointment)
    if appt.status != "completed":
        raise ToolError(f"appointment {appointment_id} is {appt.status}; only completed appointments can be rated")
    if not 1 <= stars <= 5:
        raise ToolError(f"{stars} is not a rating from 1 to 5", "invalid_arguments")
    s.edit("appointments", appointment_id).stars = stars
    return json.dumps(dump_record(s.get("appointments", appointment_id)))


@TOOLS.register("write", private=True)
def pay_invoices(s: Session, invoice_ids: list[str]) -> str:
    """Pay one or more open invoices of the client.

    Args:
        invoice_ids: The invoice ids, such as ['I0042'].
    """
    invoices = [_get(s, "invoices", i, "invoice") for i in invoice_ids]
    for i, inv in zip(invoice_ids, invoices, strict=True):
        if getattr(inv, "status", None) != "open":
            raise ToolError(f"invoice {i} is {getattr(inv, 'status', None)}; only open invoices can be paid")
    for i in invoice_ids:
        s.edit("invoices", i).status = "paid"
    return json.dumps({"paid": invoice_ids})


@TOOLS.register("write", private=True)
def dispute_invoice(s: Session, invoice_id: str) -> str:
    """Dispute an open invoice for an appointment that took place.

    Args:
        invoice_id: The invoice id, such as 'I0042'.
    """
    inv = _get(s, "invoices", invoice_id, "invoice")
    assert isinstance(inv, Invoice)
    if inv.status != "open":
        raise ToolError(f"invoice {invoice_id} is {inv.status}; only open invoices can be disputed")
    appt = s.get("appointments", inv.appointment_id)
    if appt.status != "completed":
        raise ToolError(f"invoice {invoice_id} is for an appointment that is {appt.status}, not completed")
    s.edit("invoices", invoice_id).status = "disputed"
    return json.dumps(dump_record(s.get("invoices", invoice_id)))


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Hand the conversation to the salon manager.

    Args:
        summary: What the client needs, in one or two sentences.
    """
    return "Transfer successful"


def build(seed: int = 0, clients: int = 32, stylists: int = 4, slots_each: int = 30) -> dict[str, dict]:
    """A seeded salon: slots listed stylist by stylist, every client with appointments and invoices."""
    rng = random.Random(seed)
    tables: dict[str, dict] = {t: {} for t in TABLES}
    for j in range(stylists):
        sid = f"T{j + 1}"
        tables["stylists"][sid] = Stylist(stylist_id=sid, name=f"{NAMES[-1 - j]} {SURNAMES[-1 - j]}")
        for d in range(slots_each):
            key = f"S{j * slots_each + d + 1:03d}"
            tables["slots"][key] = Slot(slot_id=key, stylist_id=sid, day=f"2026-03-{d + 1:02d}", taken=False)
    free = sorted(tables["slots"])
    for c in range(clients):
        cid = f"C{c:03d}"
        first, last = NAMES[c % len(NAMES)], SURNAMES[(c * 7) % len(SURNAMES)]
        email = f"{first}.{last}.{c}@salon.example".lower()
        tables["clients"][cid] = Client(client_id=cid, first_name=first, last_name=last, email=email)
        for _ in range(3):
            slot = free.pop(rng.randrange(len(free)))
            status = rng.choice(["booked", "completed", "cancelled"])
            tables["slots"][slot].taken = status == "booked"
            aid = f"A{len(tables['appointments']):04d}"
            tables["appointments"][aid] = Appointment(appointment_id=aid, client_id=cid, slot_id=slot, status=status,
                                                      stylist_id=tables["slots"][slot].stylist_id)  # fmt: skip
        for _ in range(rng.choice([2, 3])):
            iid = f"I{len(tables['invoices']):04d}"
            appt = f"A{len(tables['appointments']) - 1 - rng.randrange(3):04d}"  # one of the client's
            tables["invoices"][iid] = Invoice(invoice_id=iid, client_id=cid, appointment_id=appt,
                                              amount=rng.randrange(20, 120),
                                              status=rng.choice(["open", "open", "paid", "void"]))  # fmt: skip
    return tables


class Salon(Domain):
    name = "salon"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
        if ref != "salon":
            return None
        return World(build(), policy=self.policy(), name="salon", domain=self)

    def policy(self) -> str:
        return (HERE / "policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "client_id", None)


SALON = Salon()
