"""The studio's tables: members, classes, bookings."""

from __future__ import annotations

from typing import Literal

from pipeline.world.tables import Record

BookingStatus = Literal["booked", "attended", "cancelled"]


class Member(Record):
    user_id: str
    first_name: str
    last_name: str
    email: str
    zip: str
    bookings: list[str]


class StudioClass(Record):
    class_id: str
    name: str
    open_spots: int


class Booking(Record):
    booking_id: str
    user_id: str
    class_id: str
    status: BookingStatus


TABLES = {"users": Member, "classes": StudioClass, "bookings": Booking}
