"""The library: members, books, loans and holds; eight tools; identity by email; members own their loans."""

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


class Member(Record):
    member_id: str
    first_name: str
    last_name: str
    email: str
    loans: list[str]


class Book(Record):
    book_id: str
    title: str
    author: str
    copies_available: int


class Loan(Record):
    loan_id: str
    member_id: str
    book_id: str
    due: str
    renewals: int
    status: Literal["active", "overdue", "returned"]


class Hold(Record):
    hold_id: str
    member_id: str
    book_id: str


TABLES = {"members": Member, "books": Book, "loans": Loan, "holds": Hold}
TOOLS = ToolRegistry()
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")


def _mine(s: Session, member_id: str) -> None:
    if s.authorize and member_id != s.authenticated_user_id:
        raise ToolError("that belongs to another member than the one identified", "unauthorized")


def _loan(s: Session, loan_id: str) -> Loan:
    loan = s.get("loans", loan_id)
    if loan is None:
        raise ToolError(f"loan {loan_id} not found", "not_found")
    _mine(s, loan.member_id)
    return loan


@TOOLS.register("identity")
def find_member_by_email(s: Session, email: str) -> str:
    """Find a member by email and identify them for this conversation; returns their member id.

    Args:
        email: The member's email, such as 'ada@library.example'.
    """
    found = [k for k in s.keys("members") if s.get("members", k).email == email.strip().lower()]
    if not found:
        raise ToolError("no member has that email", "not_found")
    s.authenticated_user_id = found[0]
    return found[0]


@TOOLS.register("read", private=True)
def get_member_details(s: Session, member_id: str) -> str:
    """A member's name, email and loan ids.

    Args:
        member_id: The member id, such as 'M007'.
    """
    member = s.get("members", member_id)
    if member is None:
        raise ToolError(f"member {member_id} not found", "not_found")
    _mine(s, member_id)
    return json.dumps(dump_record(member))


@TOOLS.register("read", private=True)
def get_loan_details(s: Session, loan_id: str) -> str:
    """A loan: its book, due date, renewals so far and status (active, overdue or returned).

    Args:
        loan_id: The loan id, such as 'L0042'.
    """
    return json.dumps(dump_record(_loan(s, loan_id)))


@TOOLS.register("read")
def get_book_details(s: Session, book_id: str) -> str:
    """A book: title, author and copies on the shelf.

    Args:
        book_id: The book id, such as 'B012'.
    """
    book = s.get("books", book_id)
    if book is None:
        raise ToolError(f"book {book_id} not found", "not_found")
    return json.dumps(dump_record(book))


@TOOLS.register("write", private=True)
def renew_loan(s: Session, loan_id: str) -> str:
    """Renew an active loan by two weeks; a loan is renewed at most twice.

    Args:
        loan_id: The loan id, such as 'L0042'.
    """
    loan = _loan(s, loan_id)
    if loan.status != "active":
        raise ToolError(f"loan {loan_id} is {loan.status}; only active loans can be renewed")
    if loan.renewals >= 2:
        raise ToolError(f"loan {loan_id} was already renewed {loan.renewals} times")
    loan = s.edit("loans", loan_id)
    loan.renewals += 1
    day = int(loan.due[-2:]) + 14
    loan.due = f"{loan.due[:-2]}{min(day, 28):02d}"
    return json.dumps(dump_record(loan))


@TOOLS.register("write", private=True)
def return_loan(s: Session, loan_id: str) -> str:
    """Record a loan's book as returned; its copy goes back on the shelf.

    Args:
        loan_id: The loan id, such as 'L0042'.
    """
    loan = _loan(s, loan_id)
    if loan.status == "returned":
        raise ToolError(f"loan {loan_id} is already returned")
    loan = s.edit("loans", loan_id)
    loan.status = "returned"
    s.edit("books", loan.book_id).copies_available += 1
    return json.dumps(dump_record(loan))


@TOOLS.register("write", private=True)
def place_hold(s: Session, member_id: str, book_id: str) -> str:
    """Place a hold on a book with no copy available, for the member.

    Args:
        member_id: The member id, such as 'M007'.
        book_id: The book id, such as 'B012'.
    """
    if s.get("members", member_id) is None:
        raise ToolError(f"member {member_id} not found", "not_found")
    _mine(s, member_id)
    book = s.get("books", book_id)
    if book is None:
        raise ToolError(f"book {book_id} not found", "not_found")
    if book.copies_available > 0:
        raise ToolError(f"book {book_id} has {book.copies_available} copies available; borrow it at the desk")
    hold_id = f"H{len(s.keys('holds')):04d}"
    s.create("holds", hold_id, Hold(hold_id=hold_id, member_id=member_id, book_id=book_id))
    return json.dumps({"hold_id": hold_id, "book_id": book_id})


@TOOLS.register("write", private=True)
def update_member_email(s: Session, member_id: str, email: str) -> str:
    """Change the email on a member's account.

    Args:
        member_id: The member id, such as 'M007'.
        email: The new email, such as 'ada.l@library.example'.
    """
    if s.get("members", member_id) is None:
        raise ToolError(f"member {member_id} not found", "not_found")
    _mine(s, member_id)
    if not _EMAIL.match(email):
        raise ToolError(f"{email!r} is not an email address", "invalid_arguments")
    member = s.edit("members", member_id)
    member.email = email.lower()
    return json.dumps(dump_record(member))


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Hand the conversation to a librarian.

    Args:
        summary: What the member needs, in one or two sentences.
    """
    return "Transfer successful"


class Library(Domain):
    name = "library"
    tables = TABLES
    tools = TOOLS

    def load(self, ref: str) -> World | None:
        path = HERE / "db.json" if ref == "library" else Path(ref) / "db.json" if Path(ref).is_dir() else None
        if path is None or not path.exists():
            return None
        raw = json.loads(path.read_text(encoding="utf-8"))
        try:
            tables = {t: {k: TABLES[t].model_validate(r) for k, r in raw[t].items()} for t in TABLES}
        except (KeyError, ValueError) as exc:
            raise WorldLoadError(f"{path}: {exc}") from None
        return World(tables, policy=self.policy(), name="library", domain=self)

    def policy(self) -> str:
        return (HERE / "policy.md").read_text(encoding="utf-8")

    def owner(self, table: str, record: BaseModel) -> str | None:
        return getattr(record, "member_id", None) if table in ("members", "loans", "holds") else None


LIBRARY = Library()
