"""Retail's invariants for the static checks: legal order status changes and money ceilings.

Each reads the grader's StaticInput (world, world log, final state delta) and returns a ComponentResult.
"""

from __future__ import annotations

from pipeline.grading import ComponentResult
from pipeline.world import Invariant

# (base status, final status) pairs an episode may leave an order in; an untouched order is not checked.
LEGAL_TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    {
        ("pending", "cancelled"),
        ("pending", "pending (item modified)"),
        ("pending", "pending"),  # address or payment method changed
        ("delivered", "return requested"),
        ("delivered", "exchange requested"),
    }
)
_CENT = 0.005


def _result(name: str, problems: list[str]) -> ComponentResult:
    return ComponentResult(name=name, passed=not problems, details=problems)


def check_status_transitions(inp) -> ComponentResult:
    """Every changed order went from its base status to one the tools allow (see LEGAL_TRANSITIONS)."""
    problems = []
    base_orders = inp.world.table("orders")
    for order_id, record in sorted((inp.final_changed.get("orders") or {}).items()):
        base = base_orders.get(order_id)
        if base is None:
            problems.append(f"order {order_id} does not exist in the base world")
            continue
        final = record.get("status")
        if (base.status, final) not in LEGAL_TRANSITIONS:
            problems.append(f"order {order_id}: illegal change {base.status!r} -> {final!r}")
    return _result("status_transitions", problems)


def check_refund_ceiling(inp) -> ComponentResult:
    """No changed order has refunded more than was paid for it."""
    problems = []
    for order_id, record in sorted((inp.final_changed.get("orders") or {}).items()):
        paid = sum(p["amount"] for p in record.get("payment_history", []) if p["transaction_type"] == "payment")
        refunded = sum(p["amount"] for p in record.get("payment_history", []) if p["transaction_type"] == "refund")
        if refunded > paid + _CENT:
            problems.append(f"order {order_id}: refunds {refunded:.2f} exceed payments {paid:.2f}")
    return _result("refund_ceiling", problems)


def check_gift_card_balances(inp) -> ComponentResult:
    """No changed user has a gift card with a negative balance."""
    problems = []
    for user_id, record in sorted((inp.final_changed.get("users") or {}).items()):
        for method_id, method in sorted(record.get("payment_methods", {}).items()):
            balance = method.get("balance")
            if method.get("source") == "gift_card" and balance is not None and balance < -_CENT:
                problems.append(f"user {user_id}: gift card {method_id} balance {balance:.2f} is negative")
    return _result("gift_card_balance", problems)


INVARIANTS: list[Invariant] = [
    Invariant("status_transitions", check_status_transitions),
    Invariant("refund_ceiling", check_refund_ceiling),
    Invariant("gift_card_balance", check_gift_card_balances),
]
