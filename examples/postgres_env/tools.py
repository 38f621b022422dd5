"""The subscriptions service's tools: SQL against the episode's tables (psycopg 3), nothing of agentloop's format.

Each tool is a function `(cursor, caller, **arguments) -> result` that reads and writes the episode's own copies of
the tables (unqualified names: the episode's transaction puts its temporary tables first on the search path) and
raises `Refusal` when the request is not allowed; the environment runs every call inside a savepoint and rolls it
back on a refusal, so a refused call changes nothing. `caller.authorize` is False for a task's set-up actions (the
world's doing, not a party's): ownership is not checked then.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from psycopg import Cursor

from examples.postgres_env.world import MAX_PAUSES
from pipeline.errors import WorldError


class Refusal(WorldError):
    """The tool ran, found the request not allowed or not possible; the call changes nothing."""

    def __init__(self, message: str, category: str = "precondition") -> None:
        super().__init__(message)
        self.category = category


@dataclass
class Caller:
    """Who is calling, as the episode's own `episode` row says (read inside the call's savepoint)."""

    authenticated_user_id: str | None
    transferred: bool
    authorize: bool = True


@dataclass(frozen=True)
class Param:
    type: str  # JSON Schema type: string or integer
    description: str
    enum: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    kind: str  # read, write, identity, transfer
    description: str
    params: dict[str, Param]
    func: Callable[..., Any]
    setup_only: bool = field(default=False)

    def schema(self) -> dict[str, Any]:
        """OpenAI-style function schema."""
        properties: dict[str, Any] = {}
        for name, p in self.params.items():
            prop: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.enum:
                prop["enum"] = list(p.enum)
            properties[name] = prop
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": list(self.params),
                    "additionalProperties": False,
                },
            },
        }

    def validate(self, arguments: Any) -> dict[str, Any]:
        """The arguments, checked against the parameters; a Refusal ('invalid_arguments') names what is wrong."""
        if not isinstance(arguments, dict):
            raise Refusal(f"arguments for {self.name} must be a JSON object", "invalid_arguments")
        if unknown := sorted(set(arguments) - set(self.params)):
            raise Refusal(
                f"{self.name}: unknown argument {unknown[0]!r}; its arguments are {', '.join(self.params) or 'none'}",
                "invalid_arguments",
            )
        for name, p in self.params.items():
            if name not in arguments:
                raise Refusal(f"{self.name}: missing argument {name!r}", "invalid_arguments")
            value = arguments[name]
            ok = (
                isinstance(value, str) if p.type == "string" else isinstance(value, int) and not isinstance(value, bool)
            )
            if not ok:
                raise Refusal(f"{self.name}: argument {name!r} must be a {p.type}, got {value!r}", "invalid_arguments")
            if p.enum and value not in p.enum:
                raise Refusal(
                    f"{self.name}: argument {name!r} must be one of {', '.join(p.enum)}, got {value!r}",
                    "invalid_arguments",
                )
        return dict(arguments)


def _one(cur: Cursor, query: str, *params: Any) -> dict[str, Any] | None:
    cur.execute(query, params)
    row = cur.fetchone()
    return row[0] if row else None


def _owned(caller: Caller, owner: str, what: str) -> None:
    if not caller.authorize:
        return
    if caller.authenticated_user_id is None:
        raise Refusal(
            f"identify the customer first (find_customer_by_email) before reading or changing {what}", "unauthorized"
        )
    if owner != caller.authenticated_user_id:
        raise Refusal(f"{what} does not belong to the identified customer", "unauthorized")


def _subscription(cur: Cursor, caller: Caller, subscription_id: str, *, lock: bool = False) -> dict[str, Any]:
    row = _one(
        cur,
        "SELECT to_jsonb(s) FROM subscriptions s WHERE subscription_id = %s" + (" FOR UPDATE" if lock else ""),
        subscription_id,
    )
    if row is None:
        raise Refusal(f"no subscription {subscription_id!r}", "not_found")
    _owned(caller, row["customer_id"], f"subscription {subscription_id}")
    return row


# ---- identity ---------------------------------------------------------------------------------------------------
def find_customer_by_email(cur: Cursor, caller: Caller, email: str) -> dict[str, Any]:
    row = _one(cur, "SELECT to_jsonb(c) FROM customers c WHERE lower(email) = lower(%s)", email.strip())
    if row is None:
        raise Refusal(f"no customer with email {email!r}", "not_found")
    cur.execute("UPDATE episode SET authenticated_user_id = %s", (row["customer_id"],))
    return {"customer_id": row["customer_id"], "name": row["name"]}


# ---- reads ------------------------------------------------------------------------------------------------------
def get_customer(cur: Cursor, caller: Caller, customer_id: str) -> dict[str, Any]:
    row = _one(cur, "SELECT to_jsonb(c) FROM customers c WHERE customer_id = %s", customer_id)
    if row is None:
        raise Refusal(f"no customer {customer_id!r}", "not_found")
    _owned(caller, row["customer_id"], f"customer {customer_id}")
    cur.execute(
        "SELECT coalesce(jsonb_agg(subscription_id ORDER BY subscription_id), '[]') FROM subscriptions"
        " WHERE customer_id = %s",
        (customer_id,),
    )
    row["subscriptions"] = cur.fetchone()[0]  # type: ignore[index]
    return row


def get_subscription(cur: Cursor, caller: Caller, subscription_id: str) -> dict[str, Any]:
    return _subscription(cur, caller, subscription_id)


def list_plans(cur: Cursor, caller: Caller) -> list[dict[str, Any]]:
    cur.execute("SELECT to_jsonb(p) FROM plans p WHERE on_sale ORDER BY monthly_price_cents, plan_id")
    return [r[0] for r in cur.fetchall()]


# ---- writes -----------------------------------------------------------------------------------------------------
def change_plan(cur: Cursor, caller: Caller, subscription_id: str, plan_id: str) -> dict[str, Any]:
    sub = _subscription(cur, caller, subscription_id, lock=True)
    plan = _one(cur, "SELECT to_jsonb(p) FROM plans p WHERE plan_id = %s", plan_id)
    if plan is None:
        raise Refusal(f"no plan {plan_id!r}", "not_found")
    if sub["status"] != "active":
        raise Refusal(f"subscription {subscription_id} is {sub['status']}: only an active one can change plan")
    if not plan["on_sale"]:
        raise Refusal(f"plan {plan_id} is not on sale")
    if sub["plan_id"] == plan_id:
        raise Refusal(f"subscription {subscription_id} is already on plan {plan_id}")
    if sub["devices"] > plan["max_devices"]:
        raise Refusal(
            f"subscription {subscription_id} has {sub['devices']} devices; plan {plan_id} allows {plan['max_devices']}"
        )
    balance = _one(cur, "SELECT to_jsonb(balance_cents) FROM customers WHERE customer_id = %s", sub["customer_id"])
    if balance:
        raise Refusal(f"customer {sub['customer_id']} has an overdue balance of {balance} cents: settle it first")
    return (
        _one(
            cur,
            "UPDATE subscriptions s SET plan_id = %s WHERE subscription_id = %s RETURNING to_jsonb(s)",
            plan_id,
            subscription_id,
        )
        or {}
    )


def pause_subscription(cur: Cursor, caller: Caller, subscription_id: str) -> dict[str, Any]:
    sub = _subscription(cur, caller, subscription_id, lock=True)
    if sub["status"] != "active":
        raise Refusal(f"subscription {subscription_id} is {sub['status']}: only an active one can be paused")
    if sub["pauses_used"] >= MAX_PAUSES:
        raise Refusal(f"subscription {subscription_id} has used its {MAX_PAUSES} pauses this year")
    return (
        _one(
            cur,
            "UPDATE subscriptions s SET status = 'paused', pauses_used = pauses_used + 1 WHERE subscription_id = %s"
            " RETURNING to_jsonb(s)",
            subscription_id,
        )
        or {}
    )


def cancel_subscription(cur: Cursor, caller: Caller, subscription_id: str, reason: str) -> dict[str, Any]:
    sub = _subscription(cur, caller, subscription_id, lock=True)
    if sub["status"] == "cancelled":
        raise Refusal(f"subscription {subscription_id} is already cancelled")
    if not reason.strip():
        raise Refusal("cancel_subscription: give the customer's reason", "invalid_arguments")
    return (
        _one(
            cur,
            "UPDATE subscriptions s SET status = 'cancelled', cancel_reason = %s WHERE subscription_id = %s"
            " RETURNING to_jsonb(s)",
            reason.strip(),
            subscription_id,
        )
        or {}
    )


# ---- transfer -----------------------------------------------------------------------------------------------------
def transfer_to_human_agents(cur: Cursor, caller: Caller, summary: str) -> str:
    cur.execute("UPDATE episode SET transferred = true")
    return "Transfer successful"


# ---- set-up only (a task's initial_state.initialization_actions) -------------------------------------------------
def set_subscription_status(cur: Cursor, caller: Caller, subscription_id: str, status: str) -> dict[str, Any]:
    _subscription(cur, caller, subscription_id, lock=True)
    return (
        _one(
            cur,
            "UPDATE subscriptions s SET status = %s WHERE subscription_id = %s RETURNING to_jsonb(s)",
            status,
            subscription_id,
        )
        or {}
    )


def set_balance(cur: Cursor, caller: Caller, customer_id: str, balance_cents: int) -> dict[str, Any]:
    row = _one(
        cur,
        "UPDATE customers c SET balance_cents = %s WHERE customer_id = %s RETURNING to_jsonb(c)",
        balance_cents,
        customer_id,
    )
    if row is None:
        raise Refusal(f"no customer {customer_id!r}", "not_found")
    return row


_SUB = Param("string", "The subscription's id, e.g. 'S0003'.")
TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "find_customer_by_email",
            "identity",
            "Find the customer by their email address; identifies them for the rest of the conversation.",
            {"email": Param("string", "The customer's email address.")},
            find_customer_by_email,
        ),
        Tool(
            "get_customer",
            "read",
            "The identified customer's details and their subscription ids.",
            {"customer_id": Param("string", "The customer's id, e.g. 'C001'.")},
            get_customer,
        ),
        Tool(
            "get_subscription",
            "read",
            "One subscription of the identified customer.",
            {"subscription_id": _SUB},
            get_subscription,
        ),
        Tool("list_plans", "read", "The plans on sale, cheapest first.", {}, list_plans),
        Tool(
            "change_plan",
            "write",
            "Move an active subscription to another plan on sale (no overdue balance; its devices must fit).",
            {"subscription_id": _SUB, "plan_id": Param("string", "The new plan's id, e.g. 'family'.")},
            change_plan,
        ),
        Tool(
            "pause_subscription",
            "write",
            f"Pause an active subscription (at most {MAX_PAUSES} pauses a year).",
            {"subscription_id": _SUB},
            pause_subscription,
        ),
        Tool(
            "cancel_subscription",
            "write",
            "Cancel a subscription that is not cancelled yet, recording the customer's reason.",
            {"subscription_id": _SUB, "reason": Param("string", "Why the customer cancels.")},
            cancel_subscription,
        ),
        Tool(
            "transfer_to_human_agents",
            "transfer",
            "Hand the conversation to a human agent, with a summary of the customer's request.",
            {"summary": Param("string", "What the customer wants and why it needs a human.")},
            transfer_to_human_agents,
        ),
    )
}
"""The agent's tools, in the order the agent is given them."""

SETUP_FUNCTIONS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "set_subscription_status",
            "write",
            "Set-up only: put a subscription in a status.",
            {"subscription_id": _SUB, "status": Param("string", "The status.", ("active", "paused", "cancelled"))},
            set_subscription_status,
            setup_only=True,
        ),
        Tool(
            "set_balance",
            "write",
            "Set-up only: set a customer's overdue balance.",
            {"customer_id": Param("string", "The customer's id."), "balance_cents": Param("integer", "In cents.")},
            set_balance,
            setup_only=True,
        ),
    )
}
"""What a task's set-up actions may call beyond the agent's tools."""


def content(result: Any) -> str:
    """What the caller sees of a tool's result."""
    return result if isinstance(result, str) else json.dumps(result, sort_keys=True, ensure_ascii=False)
