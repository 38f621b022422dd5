"""Seeded retail worlds of the τ²-bench schema, at any size, so training data never comes from the eval world.

Everything is drawn from one `random.Random(seed)` in a fixed order over ordered pools, so a seed always
gives the same world (same fingerprint) on any machine. Entities are fresh by construction: τ²-bench draws
order numbers, user-id suffixes and email suffixes from 1000000–9999999 / 1000–9999, while this generator
gives them (and payment-method numbers) a leading zero ('#W0…', 'noah_brown_0421',
'noah.brown0733@example.com', 'paypal_0…'), so a generated entity can never be one of the evaluation world's.

Every order is internally consistent with how the tools would have produced it: payments minus refunds
equal the item total (zero for a cancelled order), a modified order carries the price-difference
transaction, processed and later orders have a fulfilment with a tracking id, and exchanges point at
available variants of the same product.
"""

from __future__ import annotations

import logging
import random
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from pipeline.domains.retail.catalog import (
    CARD_BRANDS,
    CITIES,
    FIRST_NAMES,
    LAST_NAMES,
    PRODUCT_LINES,
    PRODUCT_TYPES,
    STREETS,
    ProductType,
)
from pipeline.domains.retail.policy import load_policy
from pipeline.domains.retail.schema import CANCEL_REASONS, ORDER_STATUSES
from pipeline.domains.retail.state import RetailWorld
from pipeline.errors import InputError

if TYPE_CHECKING:
    from pipeline.world import Domain

logger = logging.getLogger(__name__)


def generated_world_name(seed: int, n_products: int, n_users: int, n_orders: int) -> str:
    """A generated world's reference: `gen-<seed>` at the default sizes, else `gen-<seed>-<products>x<users>x<orders>`
    (what `RetailDomain.load` reads back)."""
    if (n_products, n_users, n_orders) == (50, 500, 1000):
        return f"gen-{seed}"
    return f"gen-{seed}-{n_products}x{n_users}x{n_orders}"


PAYMENT_SOURCES: tuple[str, ...] = ("credit_card", "paypal", "gift_card")
# Payment-method mixes per user and their weights (roughly τ²-bench's).
_WALLETS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("gift_card",), 25),
    (("paypal",), 23),
    (("credit_card",), 20),
    (("paypal", "gift_card"), 9),
    (("credit_card", "gift_card"), 8),
    (("credit_card", "paypal"), 8),
    (("credit_card", "paypal", "gift_card"), 3),
    (("credit_card", "credit_card"), 2),
    (("credit_card", "credit_card", "paypal", "gift_card"), 2),
)
# Weights of the statuses drawn once each status has appeared (see `_statuses`).
_STATUS_WEIGHTS: dict[str, int] = {
    "pending": 36,
    "processed": 10,
    "delivered": 30,
    "cancelled": 9,
    "pending (item modified)": 5,
    "return requested": 5,
    "exchange requested": 5,
}
_SHIPPED = ("processed", "delivered", "return requested", "exchange requested")


class GeneratorConfig(BaseModel, extra="forbid"):
    """How big a world to generate and from which seed."""

    seed: int = Field(default=0, description="Seed of the world's random stream; same seed, same world.")
    n_products: int = Field(default=50, ge=1, description="Number of products (each with 5-20 variants).")
    n_users: int = Field(default=500, ge=1, description="Number of users.")
    n_orders: int = Field(default=1000, ge=0, description="Number of orders, spread over the users.")
    name: str | None = Field(default=None, description="World name; default 'gen-<seed>'.")


def build_world(config: GeneratorConfig | None, domain: Domain, **overrides: Any) -> RetailWorld:
    """A fresh retail world under `domain`; `overrides` replace fields of `config` (e.g. `seed=3`). Callers outside
    the domain use `pipeline.domains.retail.worlds.generate_world`."""
    base = config or GeneratorConfig()
    cfg = GeneratorConfig.model_validate({**base.model_dump(), **overrides}) if overrides else base
    started = time.perf_counter()
    data = _Builder(cfg).build()
    world = RetailWorld.from_dict(
        data,
        policy=load_policy(),
        name=cfg.name or generated_world_name(cfg.seed, cfg.n_products, cfg.n_users, cfg.n_orders),
        source=f"generator(seed={cfg.seed})",
        domain=domain,
    )
    logger.debug("generated world %s in %.3f s", world.name, time.perf_counter() - started)
    return world


class _Builder:
    """One generation run: the random stream plus the id spaces already used."""

    def __init__(self, cfg: GeneratorConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.used: set[str] = set()
        self.name_zip: set[tuple[str, str, str]] = set()

    def build(self) -> dict:
        products = self._products()
        users = self._users()
        orders = self._orders(products, users)
        return {"products": products, "users": users, "orders": orders}

    # ---- ids -------------------------------------------------------------------------------------
    def _fresh(self, make) -> str:
        while True:
            value = make()
            if value not in self.used:
                self.used.add(value)
                return value

    def _digits(self, n: int, leading_zero: bool = False) -> str:
        if leading_zero:
            return "0" + f"{self.rng.randrange(10 ** (n - 1)):0{n - 1}d}"
        return str(self.rng.randrange(10 ** (n - 1), 10**n))

    # ---- products --------------------------------------------------------------------------------
    def _products(self) -> dict[str, dict]:
        kinds = _product_kinds(self.rng, self.cfg.n_products)
        products: dict[str, dict] = {}
        for name, ptype in kinds:
            product_id = self._fresh(lambda: self._digits(10))
            products[product_id] = {"name": name, "product_id": product_id, "variants": self._variants(ptype)}
        return products

    def _variants(self, ptype: ProductType) -> dict[str, dict]:
        rng = self.rng
        dims = list(ptype.options.items())
        combos = 1
        for _, values in dims:
            combos *= len(values)
        count = rng.randint(min(5, combos), min(20, combos))
        base = rng.uniform(*ptype.price)
        variants: dict[str, dict] = {}
        for index in sorted(rng.sample(range(combos), count)):
            options = {}
            for key, values in dims:  # mixed-radix decode of the combination index
                index, digit = divmod(index, len(values))
                options[key] = values[digit]
            item_id = self._fresh(lambda: self._digits(10))
            price = round(base * rng.uniform(0.85, 1.15), 2)
            variants[item_id] = {
                "item_id": item_id,
                "options": options,
                "available": rng.random() < 0.7,
                "price": price,
            }
        # at least two variants stay available, so items can always be modified or exchanged
        ordered = list(variants.values())
        rng.shuffle(ordered)
        for variant in ordered:
            if sum(v["available"] for v in variants.values()) >= min(2, count):
                break
            variant["available"] = True
        return variants

    # ---- users -----------------------------------------------------------------------------------
    def _address(self) -> dict:
        rng = self.rng
        city, state, zip3 = rng.choice(CITIES)
        roll = rng.random()
        address2 = f"Suite {rng.randint(100, 999)}" if roll < 0.75 else f"Apt {rng.randint(1, 40)}"
        address2 = address2 if roll < 0.9 else ""
        return {
            "address1": f"{rng.randint(100, 999)} {rng.choice(STREETS)}",
            "address2": address2,
            "city": city,
            "country": "USA",
            "state": state,
            "zip": zip3 + f"{rng.randrange(100):02d}",
        }

    def _users(self) -> dict[str, dict]:
        rng = self.rng
        users: dict[str, dict] = {}
        for _ in range(self.cfg.n_users):
            first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
            f, la = first.lower(), last.lower()
            while True:  # name + zip identifies a customer, so it must be unique
                address = self._address()
                if (f, la, address["zip"]) not in self.name_zip:
                    self.name_zip.add((f, la, address["zip"]))
                    break
            user_id = self._fresh(lambda f=f, la=la: f"{f}_{la}_{self._digits(4, leading_zero=True)}")
            email = self._fresh(lambda f=f, la=la: f"{f}.{la}{self._digits(4, leading_zero=True)}@example.com")
            wallet = rng.choices([w for w, _ in _WALLETS], weights=[n for _, n in _WALLETS])[0]
            methods: dict[str, dict] = {}
            for source in wallet:
                method = self._payment_method(source)
                methods[method["id"]] = method
            users[user_id] = {
                "user_id": user_id,
                "name": {"first_name": first, "last_name": last},
                "address": address,
                "email": email,
                "payment_methods": methods,
                "orders": [],
            }
        present = {m["source"] for u in users.values() for m in u["payment_methods"].values()}
        ids = list(users)
        for source in PAYMENT_SOURCES:  # every kind of payment exists in every world
            if source not in present:
                method = self._payment_method(source)
                users[rng.choice(ids)]["payment_methods"][method["id"]] = method
        return users

    def _payment_method(self, source: str) -> dict:
        rng = self.rng
        method: dict[str, Any] = {"source": source, "id": self._fresh(lambda: f"{source}_{self._digits(7, True)}")}
        if source == "credit_card":
            method["brand"] = rng.choice(CARD_BRANDS)
            method["last_four"] = f"{rng.randrange(10000):04d}"
        elif source == "gift_card":
            method["balance"] = float(rng.randint(0, 200))
        return method

    # ---- orders ----------------------------------------------------------------------------------
    def _statuses(self) -> list[str]:
        """Every status once (as far as the size allows), the rest drawn by weight, shuffled."""
        n = self.cfg.n_orders
        rest = self.rng.choices(list(_STATUS_WEIGHTS), weights=list(_STATUS_WEIGHTS.values()), k=max(0, n - 7))
        statuses = (list(ORDER_STATUSES) + rest)[:n]
        self.rng.shuffle(statuses)
        return statuses

    def _orders(self, products: dict[str, dict], users: dict[str, dict]) -> dict[str, dict]:
        rng = self.rng
        product_list = list(products.values())
        user_ids = list(users)
        orders: dict[str, dict] = {}
        for status in self._statuses():
            user = users[rng.choice(user_ids)]
            order_id = self._fresh(lambda: f"#W{self._digits(7, leading_zero=True)}")
            items = []
            for _ in range(rng.randint(1, 5)):
                product = rng.choice(product_list)
                variant = rng.choice(list(product["variants"].values()))
                items.append(_item(product, variant))
            order = self._order(order_id, user, items, status, products)
            orders[order_id] = order
            user["orders"].append(order_id)
        return orders

    def _order(self, order_id: str, user: dict, items: list[dict], status: str, products: dict[str, dict]) -> dict:
        rng = self.rng
        methods = list(user["payment_methods"])
        paid_with = rng.choice(methods)
        order: dict[str, Any] = {
            "order_id": order_id,
            "user_id": user["user_id"],
            "address": dict(user["address"]) if rng.random() < 0.8 else self._address(),
            "items": items,
            "status": status,
            "fulfillments": [],
            "payment_history": [_txn("payment", _total(items), paid_with)],
        }
        if status == "cancelled":
            order["cancel_reason"] = rng.choice(CANCEL_REASONS)
            order["payment_history"].append(_txn("refund", _total(items), paid_with))
        elif status == "pending (item modified)":
            old, new = self._swap(items, products)
            diff = round(sum(v["price"] for v in new) - sum(i["price"] for i in old), 2)
            for item, variant in zip(old, new, strict=True):
                item.update(item_id=variant["item_id"], price=variant["price"], options=dict(variant["options"]))
            if diff != 0:
                kind = "payment" if diff > 0 else "refund"
                order["payment_history"].append(_txn(kind, abs(diff), rng.choice(methods)))
        if status in _SHIPPED:
            tracking = self._fresh(lambda: self._digits(12))
            order["fulfillments"] = [{"tracking_id": [tracking], "item_ids": [i["item_id"] for i in items]}]
        if status == "return requested":
            chosen = rng.sample(items, rng.randint(1, len(items)))
            gift_cards = [m for m in methods if user["payment_methods"][m]["source"] == "gift_card"]
            order["return_items"] = sorted(i["item_id"] for i in chosen)
            order["return_payment_method_id"] = rng.choice([paid_with, *gift_cards])
        elif status == "exchange requested":
            old, new = self._swap(items, products)
            order["exchange_items"] = sorted(i["item_id"] for i in old)
            order["exchange_new_items"] = sorted(v["item_id"] for v in new)
            order["exchange_payment_method_id"] = rng.choice(methods)
            order["exchange_price_difference"] = round(sum(v["price"] for v in new) - sum(i["price"] for i in old), 2)
        return order

    def _swap(self, items: list[dict], products: dict[str, dict]) -> tuple[list[dict], list[dict]]:
        """Some of the order's items and, for each, another available variant of the same product."""
        rng = self.rng
        old = [items[i] for i in sorted(rng.sample(range(len(items)), rng.randint(1, len(items))))]
        new = []
        for item in old:
            variants = products[item["product_id"]]["variants"].values()
            choices = [v for v in variants if v["available"] and v["item_id"] != item["item_id"]]
            new.append(rng.choice(choices))
        return old, new


def _product_kinds(rng: random.Random, n: int) -> list[tuple[str, ProductType]]:
    """`n` distinct product names: every type once before any type gets a second line ('Pro Laptop')."""
    capacity = len(PRODUCT_TYPES) * (1 + len(PRODUCT_LINES))
    if n > capacity:
        raise InputError(f"n_products={n} exceeds the catalog's {capacity} distinct product names")
    plain = [(t.name, t) for t in PRODUCT_TYPES]
    rng.shuffle(plain)
    if n <= len(plain):
        return plain[:n]
    lines = [(f"{line} {t.name}", t) for line in PRODUCT_LINES for t in PRODUCT_TYPES]
    rng.shuffle(lines)
    return plain + lines[: n - len(plain)]


def _item(product: dict, variant: dict) -> dict:
    return {
        "name": product["name"],
        "product_id": product["product_id"],
        "item_id": variant["item_id"],
        "price": variant["price"],
        "options": dict(variant["options"]),
    }


def _total(items: list[dict]) -> float:
    return round(sum(i["price"] for i in items), 2)


def _txn(kind: str, amount: float, method_id: str) -> dict:
    return {"transaction_type": kind, "amount": amount, "payment_method_id": method_id}
