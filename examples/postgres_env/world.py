"""The subscriptions service's world: three tables, their seed rows (generated from the world's seed), its policy.

A world is named `pg-<seed>` (seed 0 … 999999). Its rows are a pure function of the seed, so every process (and
every machine) that names the same world builds the same base schema; the world's digest is a hash of the rows, the
table definitions and the policy, and names the base schema (`world_pg_<seed>_<digest prefix>`), so a change to any
of them is a new schema, never an old one edited in place.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from pipeline.digest import sha256_json

WORLD_NAME = re.compile(r"^pg-(\d{1,6})$")
"""A world's name: 'pg-' and its seed."""
SCHEMA_VERSION = 1
"""Bumped when the tables or the rules change meaning (it is part of the digest)."""

POLICY = """\
# Streamline subscriptions: customer service policy

You help customers of Streamline, a streaming service, with their subscriptions. Be accurate and brief.

- Identify the customer first: find them by the email address they give (find_customer_by_email). Act only on the
  identified customer's own records; never on another customer's.
- Before any change (change_plan, pause_subscription, cancel_subscription), state what you will do and get the
  customer's explicit confirmation ("yes").
- A plan change needs an active subscription, a plan that is on sale, and no overdue balance on the account; the
  subscription's devices must fit the new plan's device limit.
- A subscription can be paused only while active, at most twice a year (pauses_used counts them).
- A cancelled subscription stays cancelled: it cannot be paused, changed or cancelled again.
- Hand the conversation to a human (transfer_to_human_agents) when the customer asks for something these tools cannot
  do (refunds, billing disputes) or insists on something the policy forbids.
"""


@dataclass(frozen=True)
class Column:
    name: str
    sql: str  # the column's SQL type (and constraints)
    json: str  # the JSON Schema type of its value
    description: str
    nullable: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: str
    owner: str | None  # the column naming the customer who owns a row; None: the rows are public

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def record_schema(self) -> dict[str, Any]:
        """JSON Schema of one row as the environment shows it."""
        return {
            "type": "object",
            "properties": {
                c.name: {"type": [c.json, "null"] if c.nullable else c.json, "description": c.description}
                for c in self.columns
            },
            "required": list(self.column_names),
            "additionalProperties": False,
        }


TABLES: tuple[Table, ...] = (
    Table(
        "customers",
        (
            Column("customer_id", "text PRIMARY KEY", "string", "The customer's id, e.g. 'C003'."),
            Column("name", "text NOT NULL", "string", "Full name."),
            Column("email", "text NOT NULL UNIQUE", "string", "Email address (identifies the customer)."),
            Column("balance_cents", "integer NOT NULL", "integer", "Overdue balance in cents (0: none)."),
        ),
        key="customer_id",
        owner="customer_id",
    ),
    Table(
        "plans",
        (
            Column("plan_id", "text PRIMARY KEY", "string", "The plan's id, e.g. 'family'."),
            Column("name", "text NOT NULL", "string", "The plan's name."),
            Column("monthly_price_cents", "integer NOT NULL", "integer", "Price per month in cents."),
            Column("max_devices", "integer NOT NULL", "integer", "How many devices may stream at once."),
            Column("on_sale", "boolean NOT NULL", "boolean", "Whether customers can move to this plan."),
        ),
        key="plan_id",
        owner=None,
    ),
    Table(
        "subscriptions",
        (
            Column("subscription_id", "text PRIMARY KEY", "string", "The subscription's id, e.g. 'S0007'."),
            Column("customer_id", "text NOT NULL", "string", "The customer who owns it."),
            Column("plan_id", "text NOT NULL", "string", "The plan it is on."),
            Column(
                "status",
                "text NOT NULL CHECK (status IN ('active', 'paused', 'cancelled'))",
                "string",
                "active, paused or cancelled.",
            ),
            Column("devices", "integer NOT NULL", "integer", "Devices registered on it."),
            Column("pauses_used", "integer NOT NULL", "integer", "Pauses used this year (at most 2)."),
            Column("renews_on", "text NOT NULL", "string", "Next renewal date (YYYY-MM-DD)."),
            Column("cancel_reason", "text", "string", "Why it was cancelled (null unless cancelled).", nullable=True),
        ),
        key="subscription_id",
        owner="customer_id",
    ),
)
TABLE_BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}

_PLANS = (
    ("basic", "Basic", 799, 1, True),
    ("standard", "Standard", 1299, 2, True),
    ("premium", "Premium", 2499, 4, True),
    ("family", "Family", 1999, 5, True),
    ("legacy", "Legacy Unlimited", 999, 3, False),
)
_FIRST = ("Ada", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas", "Kemal", "Lena")
_LAST = ("Moreau", "Okafor", "Lindqvist", "Haddad", "Novak", "Sato", "Reyes", "Keller", "Adeyemi", "Ferreira")
MAX_PAUSES = 2


def seed_of(world: str) -> int | None:
    """The seed a world name carries, or None when it is not a world's name."""
    match = WORLD_NAME.match(world) if isinstance(world, str) else None
    return int(match.group(1)) if match else None


def rows(seed: int) -> dict[str, list[dict[str, Any]]]:
    """The base world's rows, table by table, in key order: a pure function of the seed (26–36 rows)."""
    rng = random.Random(f"postgres-env:{seed}")
    plans = [
        {
            "plan_id": plan_id,
            "name": name,
            "monthly_price_cents": price + 100 * rng.randrange(3),
            "max_devices": devices,
            "on_sale": on_sale,
        }
        for plan_id, name, price, devices, on_sale in _PLANS
    ]
    limits = {p["plan_id"]: p["max_devices"] for p in plans}
    customers, subscriptions = [], []
    names = rng.sample([(f, last) for f in _FIRST for last in _LAST], 8 + rng.randrange(5))
    for i, (first, last) in enumerate(names, start=1):
        customer_id = f"C{i:03d}"
        customers.append(
            {
                "customer_id": customer_id,
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower()}@example.com",
                "balance_cents": rng.choice((0, 0, 0, 1299, 2450)),
            }
        )
        for _ in range(1 + (rng.random() < 0.4)):
            plan_id = rng.choice(list(limits))
            status = rng.choices(("active", "paused", "cancelled"), weights=(6, 2, 1))[0]
            subscriptions.append(
                {
                    "subscription_id": f"S{len(subscriptions) + 1:04d}",
                    "customer_id": customer_id,
                    "plan_id": plan_id,
                    "status": status,
                    "devices": rng.randint(1, limits[plan_id]),
                    "pauses_used": rng.randint(0, MAX_PAUSES) if status != "paused" else rng.randint(1, MAX_PAUSES),
                    "renews_on": f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "cancel_reason": "too expensive" if status == "cancelled" else None,
                }
            )
    return {"customers": customers, "plans": plans, "subscriptions": subscriptions}


def digest(seed: int) -> str:
    """The base world's digest: its rows, the tables' definitions and the policy."""
    tables = [[t.name, [[c.name, c.sql] for c in t.columns], t.key, t.owner] for t in TABLES]
    return sha256_json({"version": SCHEMA_VERSION, "tables": tables, "rows": rows(seed), "policy": POLICY})


def base_schema(seed: int, world_digest: str) -> str:
    """The name of the base world's schema in the database."""
    return f"world_pg_{seed}_{world_digest[:12]}"
