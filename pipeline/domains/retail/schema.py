"""The retail world's data model, field-compatible with τ²-bench retail's db.json.

Records keep τ²-bench's field names so that a τ²-bench domain directory loads unchanged and a
replayed end state can be compared with theirs record for record.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pipeline.world import Record

OrderStatus = Literal[
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "pending (item modified)",
    "return requested",
    "exchange requested",
]
ORDER_STATUSES: tuple[str, ...] = OrderStatus.__args__  # type: ignore[attr-defined]

PaymentSource = Literal["credit_card", "paypal", "gift_card"]
CANCEL_REASONS: tuple[str, ...] = ("no longer needed", "ordered by mistake")


class Variant(Record):
    item_id: str = Field(description="Unique item id of this variant (unrelated to product ids).")
    options: dict[str, str] = Field(description="Option name → value, e.g. {'color': 'blue'}.")
    available: bool = Field(description="Whether this variant can be ordered or exchanged into.")
    price: float = Field(description="Unit price in dollars.")


class Product(Record):
    name: str = Field(description="Product type name, e.g. 'T-Shirt'.")
    product_id: str = Field(description="Unique product id.")
    variants: dict[str, Variant] = Field(description="item_id → variant.")


class Name(Record):
    first_name: str
    last_name: str


class Address(Record):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class PaymentMethod(Record):
    source: PaymentSource = Field(description="Kind of payment method.")
    id: str = Field(description="Payment method id, e.g. 'credit_card_7815826'.")
    brand: str | None = Field(default=None, description="Card brand (credit cards only).")
    last_four: str | None = Field(default=None, description="Last four digits (credit cards only).")
    balance: float | None = Field(default=None, description="Remaining balance (gift cards only).")


class User(Record):
    user_id: str
    name: Name
    address: Address = Field(description="Default shipping address.")
    email: str
    payment_methods: dict[str, PaymentMethod] = Field(description="payment method id → method.")
    orders: list[str] = Field(description="Order ids placed by this user.")


class OrderItem(Record):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(Record):
    tracking_id: list[str]
    item_ids: list[str]


class PaymentTransaction(Record):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(Record):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: OrderStatus
    fulfillments: list[Fulfillment]
    payment_history: list[PaymentTransaction]
    cancel_reason: str | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None


class RetailDB(Record):
    """A whole retail database: the three tables keyed by id."""

    products: dict[str, Product]
    users: dict[str, User]
    orders: dict[str, Order]


TABLES: dict[str, type[Record]] = {"products": Product, "users": User, "orders": Order}


def dump_record(record: BaseModel) -> dict:
    """A record as τ²-bench JSON: unset optional fields are omitted, as in db.json."""
    return record.model_dump(mode="json", exclude_none=True)
