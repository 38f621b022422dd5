"""Retail grounding: the records every retail template reads, and the helpers they draft with.

Every value a template uses comes from the world's `query` (the `query_data` of the environment protocol),
read once here, so a template never invents an id, an address or a price.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import cast

from pipeline.authoring import Draft
from pipeline.dataset import Action, Request
from pipeline.domains.retail.schema import Address, Order, Product, User
from pipeline.domains.retail.state import RetailWorld

BAD_REASONS = ("I found a better price somewhere else.", "It is taking too long to ship.", "I changed my mind.")
NOT_PENDING = ("processed", "delivered", "cancelled", "return requested", "exchange requested")


def draft(template: str, req: Request, goal: str, reads: list[Action], write: Action, why: str = "") -> Draft:
    """A request the agent carries out, or (expect 'refused') one whose write the policy forbids.

    Its records are the order it is about ('user' for the account itself); its entities that order plus the
    items the write names."""
    orders = (req.order_id,) if req.order_id else ("user",)
    entities = len([o for o in orders if o != "user"]) + len(write.arguments.get("item_ids", []))
    if req.expect == "refused":
        return Draft(template, req, f"{goal}; {why}, so the agent must refuse.", reads, None, write, orders, entities)
    return Draft(template, req, f"{goal}.", reads, write, None, orders, entities)


def address_dict(a: Address) -> dict[str, str]:
    return {k: getattr(a, k) for k in ("address1", "address2", "city", "state", "country", "zip")}


def reason_said(reason: str) -> str:
    return {"no longer needed": "It's no longer needed.", "ordered by mistake": "It was ordered by mistake."}.get(
        reason, reason
    )


class Ctx:
    """The world's records as the templates see them, read through `RetailWorld.query` only."""

    def __init__(self, world: RetailWorld) -> None:
        self.world = world
        self.orders: dict[str, Order] = {o.order_id: o for o in cast("list[Order]", world.query("orders"))}
        self.products: dict[str, Product] = {p.product_id: p for p in cast("list[Product]", world.query("products"))}
        self.user_records: dict[str, User] = {u.user_id: u for u in cast("list[User]", world.query("users"))}
        self.users = sorted(self.user_records)
        self._name_zip = Counter(self.name_zip(u) for u in self.user_records.values())

    # ---- the generic grounding (pipeline.authoring.kit.Grounding) ----------------------------------------------
    @property
    def customers(self) -> list[str]:
        return self.users

    def customer(self, user_id: str) -> User:
        return self.user_records[user_id]

    def identifiable_without_email(self, customer: User) -> bool:
        return self.unique_name_zip(customer)

    # ---- retail look-ups --------------------------------------------------------------------------------------
    @staticmethod
    def name_zip(user: User) -> tuple[str, str, str]:
        return user.name.first_name.lower(), user.name.last_name.lower(), user.address.zip

    def unique_name_zip(self, user: User) -> bool:
        """Whether name + zip identify this customer (so a forgotten email can be recovered)."""
        return self._name_zip[self.name_zip(user)] == 1

    def user_orders(self, user: User, statuses: tuple[str, ...], exclude: set[str]) -> list[Order]:
        return [
            self.orders[o]
            for o in sorted(user.orders)
            if o in self.orders and o not in exclude and self.orders[o].status in statuses
        ]

    def other_address(self, rng: random.Random, avoid: Address) -> Address:
        for uid in rng.sample(self.users, min(20, len(self.users))):
            a = self.user_records[uid].address
            if a.zip != avoid.zip and a.address1 != avoid.address1:
                return a
        return Address(
            address1=f"1 {avoid.address1}",
            address2="",
            city=avoid.city,
            state=avoid.state,
            country=avoid.country,
            zip=avoid.zip,
        )

    def swaps(self, order: Order, rng: random.Random, items: int | None = None) -> list[tuple[int, str]] | None:
        """One or two (item position, new available variant of the same product) pairs, distinct item ids."""
        options: list[tuple[int, str]] = []
        for pos, item in enumerate(order.items):
            product = self.products.get(item.product_id)
            new = (
                [v for v in sorted(product.variants) if v != item.item_id and product.variants[v].available]
                if product
                else []
            )
            if new and item.item_id not in {order.items[p].item_id for p, _ in options}:
                options.append((pos, rng.choice(new)))
        if not options or (items is not None and len(options) < items):
            return None
        k = items if items is not None else (2 if len(options) > 1 and rng.random() < 0.3 else 1)
        return sorted(rng.sample(options, k))
