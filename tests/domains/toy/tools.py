"""The studio's tools: identify a member, read members, bookings and classes, cancel a booking, change a zip."""

from __future__ import annotations

import json
import re

from pipeline.world.tables import Session, dump_record
from pipeline.world.tools import ToolError, ToolRegistry

TOOLS = ToolRegistry()
_ZIP = re.compile(r"^\d{5}$")


def _require_member(s: Session, user_id: str, what: str) -> None:
    if s.authorize and user_id != s.authenticated_user_id:
        raise ToolError(f"cannot {what}: it is not the identified member's", "unauthorized")


@TOOLS.register("identity")
def find_user_id_by_email(s: Session, email: str) -> str:
    """Find a member's user id by email and identify that member for this conversation.

    Args:
        email: The member's email, such as 'ann@studio.example'.
    """
    found = [k for k in s.keys("users") if s.get("users", k).email == email.strip().lower()]
    if not found:
        raise ToolError("member not found", "not_found")
    s.authenticated_user_id = found[0]
    return found[0]


@TOOLS.register("read", private=True)
def get_user_details(s: Session, user_id: str) -> str:
    """Get a member's details: name, email, zip code and booking ids.

    Args:
        user_id: The member's user id, such as 'm003'.
    """
    member = s.get("users", user_id)
    if member is None:
        raise ToolError(f"member {user_id} not found", "not_found")
    _require_member(s, user_id, "read this member")
    return json.dumps(dump_record(member))


@TOOLS.register("read", private=True)
def get_booking_details(s: Session, booking_id: str) -> str:
    """Get a booking: its class and its status (booked, attended or cancelled).

    Args:
        booking_id: The booking id, such as 'BK0007'.
    """
    booking = s.get("bookings", booking_id)
    if booking is None:
        raise ToolError(f"booking {booking_id} not found", "not_found")
    _require_member(s, booking.user_id, "read this booking")
    return json.dumps(dump_record(booking))


@TOOLS.register("read")
def get_class_details(s: Session, class_id: str) -> str:
    """Get a class: its name and its open spots.

    Args:
        class_id: The class id, such as 'yoga'.
    """
    found = s.get("classes", class_id)
    if found is None:
        raise ToolError(f"class {class_id} not found", "not_found")
    return json.dumps(dump_record(found))


@TOOLS.register("write", private=True)
def cancel_booking(s: Session, booking_id: str) -> str:
    """Cancel a booked class; its spot opens again. Only a booking with status 'booked' can be cancelled.

    Args:
        booking_id: The booking id, such as 'BK0007'.
    """
    booking = s.get("bookings", booking_id)
    if booking is None:
        raise ToolError(f"booking {booking_id} not found", "not_found")
    _require_member(s, booking.user_id, "cancel this booking")
    if booking.status != "booked":
        raise ToolError(f"booking {booking_id} is {booking.status}; only booked classes can be cancelled")
    booking = s.edit("bookings", booking_id)
    booking.status = "cancelled"
    s.edit("classes", booking.class_id).open_spots += 1
    return json.dumps(dump_record(booking))


@TOOLS.register("write", private=True)
def modify_user_zip(s: Session, user_id: str, zip: str) -> str:
    """Change the zip code on a member's account.

    Args:
        user_id: The member's user id, such as 'm003'.
        zip: The new five-digit zip code, such as '12345'.
    """
    if s.get("users", user_id) is None:
        raise ToolError(f"member {user_id} not found", "not_found")
    _require_member(s, user_id, "change this member")
    if not _ZIP.match(zip):
        raise ToolError(f"zip {zip!r} is not five digits")
    member = s.edit("users", user_id)
    member.zip = zip
    return json.dumps(dump_record(member))
