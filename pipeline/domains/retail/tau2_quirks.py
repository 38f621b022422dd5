"""τ²-bench retail tool behaviour that ours does not copy, reproduced on request for the τ²-compatible reward.

`modify_pending_order_items` in τ²-bench gives every replaced item the price and options of the *last* new
variant in the call (its loop reuses the variable of the price check), not each item its own. Both sides of its
database comparison go through the same tool, so a multi-item modification still matches gold when it lists the
pairs in gold's order, and fails when it lists the same pairs in another order. Our tool gives each item its own
variant; with `tau2.upstream_tools` on, this quirk turns the end state into the one τ²-bench's tool leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.world import Session, ToolEvent


def _positions(item_ids: list[str], old_ids: list[str]) -> list[int]:
    """The order positions τ²-bench's tool rewrites: for each old id, the first item still holding it."""
    ids, out = list(item_ids), []
    for old in old_ids:
        i = next((k for k, x in enumerate(ids) if x == old), None)
        if i is None:
            return []
        ids[i] = f"\0{old}"  # rewritten: no longer matches the old id
        out.append(i)
    return out


def modify_items_last_variant(session: Session, arguments: dict[str, Any], run: Callable[[], ToolEvent]) -> ToolEvent:
    order_id = arguments.get("order_id")
    before = session.get("orders", order_id) if isinstance(order_id, str) else None
    item_ids = [it.item_id for it in before.items] if before is not None else []
    event = run()
    old, new = arguments.get("item_ids"), arguments.get("new_item_ids")
    if (
        not event.ok
        or not isinstance(old, list)
        or not isinstance(new, list)
        or not new
        or not isinstance(order_id, str)
    ):
        return event
    positions = _positions(item_ids, old)
    order = session.get("orders", order_id)
    if not positions or order is None:
        return event
    product = session.get("products", order.items[positions[-1]].product_id)
    variant = product.variants.get(new[-1]) if product is not None else None
    if variant is None:
        return event
    order = session.edit("orders", order_id)
    for i in positions:
        order.items[i].price, order.items[i].options = variant.price, dict(variant.options)
    return event


QUIRKS: dict[str, Callable[..., ToolEvent]] = {"modify_pending_order_items": modify_items_last_variant}
