"""The retail tools. Each docstring is exactly what the agent model is shown.

Authorization lives here, not in the prompt: private look-ups and writes are allowed only for the
customer authenticated in this conversation (by email, or by name + zip code). Every precondition is
checked before anything is changed, and `execute` rolls back a call that fails part-way, so a refused
call never changes the world.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, cast

from pipeline.agents import TRANSFER
from pipeline.domains.retail.schema import (
    CANCEL_REASONS,
    Address,
    Order,
    PaymentTransaction,
    Product,
    User,
    dump_record,
)
from pipeline.domains.retail.state import Session, ToolEvent, email_key, name_zip_key
from pipeline.world import ExpressionError, ToolError, ToolRegistry, evaluate
from pipeline.world import execute as _execute

TOOLS = ToolRegistry()
TRANSFER_MESSAGE = TRANSFER  # what the agent says when it hands the customer over


# ---- helpers --------------------------------------------------------------------------------
def _require_auth(s: Session, user_id: str, what: str) -> None:
    if not s.authorize:
        return
    if s.authenticated_user_id is None:
        raise ToolError(
            f"cannot {what}: no customer is authenticated yet; find the user id by email or by name + zip first",
            "unauthorized",
        )
    if user_id != s.authenticated_user_id:
        raise ToolError(
            f"cannot {what}: it belongs to another customer than the one authenticated in this conversation",
            "unauthorized",
        )


def _authenticate(s: Session, user_id: str) -> str:
    if s.authorize and s.authenticated_user_id not in (None, user_id):
        raise ToolError(
            "this conversation is already authenticated as another customer; only one customer can be helped"
            " per conversation",
            "unauthorized",
        )
    s.authenticated_user_id = user_id
    return user_id


def _order(s: Session, order_id: str, what: str) -> Order:
    order = s.order(order_id)
    if order is None:
        raise ToolError(f"order {order_id} not found", "not_found")
    _require_auth(s, order.user_id, what)
    return order


def _payment_method(s: Session, user_id: str, payment_method_id: str):
    user = s.user(user_id)
    method = user.payment_methods.get(payment_method_id) if user else None
    if method is None:
        raise ToolError(f"payment method {payment_method_id} not found for this customer", "not_found")
    return method


def _check_items_in_order(order: Order, item_ids: list[str]) -> None:
    have = Counter(i.item_id for i in order.items)
    for item_id, n in Counter(item_ids).items():
        if have[item_id] < n:
            raise ToolError(f"item {item_id} not found in order {order.order_id} (or listed too often)", "not_found")


def _price_difference(s: Session, order: Order, item_ids: list[str], new_item_ids: list[str]) -> tuple[float, list]:
    """Validate each old → new pair and return the summed (unrounded) price difference and the new variants."""
    if len(item_ids) != len(new_item_ids):
        raise ToolError("item_ids and new_item_ids must have the same length", "invalid_arguments")
    if not item_ids:
        raise ToolError("no items given", "invalid_arguments")
    _check_items_in_order(order, item_ids)
    diff = 0.0
    variants = []
    for old_id, new_id in zip(item_ids, new_item_ids, strict=True):
        old = next(i for i in order.items if i.item_id == old_id)
        product = s.product(old.product_id)
        variant = product.variants.get(new_id) if product else None
        if variant is None:
            raise ToolError(f"new item {new_id} is not a variant of product {old.product_id} ({old.name})", "not_found")
        if not variant.available:
            raise ToolError(f"new item {new_id} is not available", "precondition")
        if new_id == old_id:
            raise ToolError(f"new item {new_id} is the same as the old item", "invalid_arguments")
        diff += variant.price - old.price
        variants.append(variant)
    return diff, variants


def _credit(s: Session, user_id: str, payment_method_id: str, amount: float) -> None:
    """Add `amount` (may be negative) to a gift card's balance; other methods hold no balance."""
    # the order's owner; cast, not checked, so a missing one fails exactly as it always has
    if cast("User", s.user(user_id)).payment_methods[payment_method_id].source != "gift_card":
        return  # no edit, so the user is not logged as touched
    method = s.edit("users", user_id).payment_methods[payment_method_id]
    method.balance = round((method.balance or 0.0) + amount, 2)


def _json(record: Any) -> str:
    return json.dumps(record if isinstance(record, dict | list) else dump_record(record))


# ---- look-ups -------------------------------------------------------------------------------
@TOOLS.register("identity")
def find_user_id_by_email(s: Session, email: str) -> str:
    """Find a user id by email and authenticate that user for this conversation.

    Args:
        email: The email of the user, such as 'something@example.com'.
    """
    user_id = s.world.user_by_email.get(email_key(email))
    if user_id is None:
        raise ToolError("user not found", "not_found")
    return _authenticate(s, user_id)


@TOOLS.register("identity")
def find_user_id_by_name_zip(s: Session, first_name: str, last_name: str, zip: str) -> str:
    """Find a user id by first name, last name and zip code, and authenticate that user.

    Use this when the user does not remember their email.

    Args:
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    user_id = s.world.user_by_name_zip.get(name_zip_key(first_name, last_name, zip))
    if user_id is None:
        raise ToolError("user not found", "not_found")
    return _authenticate(s, user_id)


@TOOLS.register("read", private=True)
def get_user_details(s: Session, user_id: str) -> str:
    """Get the details of a user: name, address, email, payment methods and order ids.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    user = s.user(user_id)
    if user is None:
        raise ToolError(f"user {user_id} not found", "not_found")
    _require_auth(s, user_id, "read this user's details")
    return _json(user)


@TOOLS.register("read", private=True)
def get_order_details(s: Session, order_id: str) -> str:
    """Get the status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful: there is a '#' before the number.
    """
    return _json(_order(s, order_id, "read this order"))


@TOOLS.register("read")
def get_product_details(s: Session, product_id: str) -> str:
    """Get the inventory details of a product: its variants, their options, availability and price.

    Args:
        product_id: The product id, such as '6086499569'. Product ids and item ids are unrelated.
    """
    product = s.product(product_id)
    if product is None:
        raise ToolError(f"product {product_id} not found", "not_found")
    return _json(product)


@TOOLS.register("read")
def get_item_details(s: Session, item_id: str) -> str:
    """Get the details of one item variant: its options, availability and price.

    Args:
        item_id: The item id, such as '1008292230'.
    """
    product_id = s.world.product_by_item.get(item_id)
    if product_id is None:
        raise ToolError(f"item {item_id} not found", "not_found")
    return _json(cast("Product", s.product(product_id)).variants[item_id])  # the product that lists the item


@TOOLS.register("read")
def list_all_product_types(s: Session) -> str:
    """List the name and product id of every product type the store sells."""
    products = s.world.db.products
    return json.dumps(dict(sorted((p.name, pid) for pid, p in products.items())))


@TOOLS.register("generic")
def calculate(s: Session, expression: str) -> str:
    """Calculate the result of an arithmetic expression (numbers, + - * /, parentheses).

    Args:
        expression: The expression to calculate, such as '2 + 2'.
    """
    try:
        return str(round(evaluate(expression), 2))
    except ExpressionError as exc:
        raise ToolError(str(exc), "invalid_arguments") from None


@TOOLS.register("transfer")
def transfer_to_human_agents(s: Session, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only transfer if the user explicitly asks for a human agent, or the request cannot be handled
    within the scope of your actions.

    Args:
        summary: A summary of the user's issue.
    """
    s.transferred = True
    return "Transfer successful"


# ---- writes ---------------------------------------------------------------------------------
@TOOLS.register("write", private=True)
def cancel_pending_order(s: Session, order_id: str, reason: str) -> str:
    """Cancel a pending order. Every payment is refunded: at once to a gift card, otherwise in 5-7 days.

    The agent must first list the order id and the reason and get the user's explicit confirmation.

    Args:
        order_id: The order id, such as '#W0000000'.
        reason: Either 'no longer needed' or 'ordered by mistake'.
    """
    order = _order(s, order_id, "cancel this order")
    if order.status != "pending":
        raise ToolError(f"order {order_id} is {order.status}; only pending orders can be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError(f"invalid cancel reason {reason!r}; use 'no longer needed' or 'ordered by mistake'")
    order = s.edit("orders", order_id)
    # Refund what each method still holds (payments minus refunds): after a payment change only the new
    # method is refunded. With a single payment (every τ²-bench gold case) this equals τ²-bench.
    net: dict[str, float] = {}
    for p in order.payment_history:
        sign = 1 if p.transaction_type == "payment" else -1
        net[p.payment_method_id] = net.get(p.payment_method_id, 0.0) + sign * p.amount
    refunds = [
        PaymentTransaction(transaction_type="refund", amount=round(amount, 2), payment_method_id=method_id)
        for method_id, amount in net.items()
        if round(amount, 2) > 0
    ]
    for refund in refunds:
        _payment_method(s, order.user_id, refund.payment_method_id)
        _credit(s, order.user_id, refund.payment_method_id, refund.amount)
    order.status = "cancelled"
    order.cancel_reason = reason
    order.payment_history = order.payment_history + refunds
    return _json(order)


@TOOLS.register("write", private=True)
def modify_pending_order_address(
    s: Session, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> str:
    """Change the shipping address of a pending order, after the user's explicit confirmation.

    Args:
        order_id: The order id, such as '#W0000000'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = _order(s, order_id, "modify this order")
    if order.status != "pending":
        raise ToolError(f"order {order_id} is {order.status}; only pending orders can be modified")
    order = s.edit("orders", order_id)
    order.address = Address(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
    return _json(order)


@TOOLS.register("write", private=True)
def modify_pending_order_payment(s: Session, order_id: str, payment_method_id: str) -> str:
    """Pay a pending order with another of the user's payment methods, after explicit confirmation.

    The original payment is refunded (at once to a gift card). A gift card must cover the whole total.

    Args:
        order_id: The order id, such as '#W0000000'.
        payment_method_id: The new payment method id, such as 'gift_card_0000000' or 'credit_card_0000000'.
    """
    order = _order(s, order_id, "modify this order")
    if order.status != "pending":
        raise ToolError(f"order {order_id} is {order.status}; only pending orders can be modified")
    method = _payment_method(s, order.user_id, payment_method_id)
    if len(order.payment_history) != 1 or order.payment_history[0].transaction_type != "payment":
        raise ToolError("the payment can only be changed for an order with exactly one payment")
    old = order.payment_history[0]
    if old.payment_method_id == payment_method_id:
        raise ToolError("the new payment method must differ from the current one")
    if method.source == "gift_card" and (method.balance or 0.0) < old.amount:
        raise ToolError(f"insufficient gift card balance ({method.balance}) to pay {old.amount}")
    order = s.edit("orders", order_id)
    order.payment_history = order.payment_history + [
        PaymentTransaction(transaction_type="payment", amount=old.amount, payment_method_id=payment_method_id),
        PaymentTransaction(transaction_type="refund", amount=old.amount, payment_method_id=old.payment_method_id),
    ]
    _credit(s, order.user_id, payment_method_id, -old.amount)
    _credit(s, order.user_id, old.payment_method_id, old.amount)
    return _json(order)


@TOOLS.register("write", private=True)
def modify_pending_order_items(
    s: Session, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Swap items of a pending order for available variants of the same products. Once per order.

    The price difference is paid with, or refunded to, the given payment method (a gift card must cover
    it). The order becomes 'pending (item modified)' and can no longer be modified or cancelled, so
    collect every item to change first and get the user's explicit confirmation.

    Args:
        order_id: The order id, such as '#W0000000'.
        item_ids: The item ids to be modified, such as ['1008292230']; may repeat an id the order holds twice.
        new_item_ids: The new item ids, position by position, such as ['1008292230'].
        payment_method_id: The payment method id to pay or receive the price difference.
    """
    order = _order(s, order_id, "modify this order")
    if order.status != "pending":
        raise ToolError(f"order {order_id} is {order.status}; only pending orders can have items modified")
    diff, variants = _price_difference(s, order, item_ids, new_item_ids)
    method = _payment_method(s, order.user_id, payment_method_id)
    if method.source == "gift_card" and (method.balance or 0.0) < diff:
        raise ToolError(f"insufficient gift card balance ({method.balance}) to pay the difference {diff}")
    order = s.edit("orders", order_id)
    # As τ²-bench: always one entry (a zero difference is a 0 refund), amount not rounded.
    kind = "payment" if diff > 0 else "refund"
    order.payment_history = order.payment_history + [
        PaymentTransaction(transaction_type=kind, amount=abs(diff), payment_method_id=payment_method_id)
    ]
    _credit(s, order.user_id, payment_method_id, -diff)
    replaced: set[int] = set()
    for old_id, variant in zip(item_ids, variants, strict=True):
        idx = next(i for i, it in enumerate(order.items) if it.item_id == old_id and i not in replaced)
        replaced.add(idx)
        item = order.items[idx]
        item.item_id, item.price, item.options = variant.item_id, variant.price, dict(variant.options)
    order.status = "pending (item modified)"
    return _json(order)


@TOOLS.register("write", private=True)
def return_delivered_order_items(s: Session, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
    """Request a return of items of a delivered order, after the user's explicit confirmation.

    The refund goes to the original payment method or to one of the user's gift cards. The order
    becomes 'return requested' and the user gets an email on how to send the items back.

    Args:
        order_id: The order id, such as '#W0000000'.
        item_ids: The item ids to return, such as ['1008292230'].
        payment_method_id: The payment method id for the refund: the original one or a gift card.
    """
    order = _order(s, order_id, "return items of this order")
    if order.status != "delivered":
        raise ToolError(f"order {order_id} is {order.status}; only delivered orders can be returned")
    method = _payment_method(s, order.user_id, payment_method_id)
    if method.source != "gift_card" and payment_method_id != order.payment_history[0].payment_method_id:
        raise ToolError("the refund must go to the original payment method or a gift card")
    if not item_ids:
        raise ToolError("no items given", "invalid_arguments")
    _check_items_in_order(order, item_ids)
    order = s.edit("orders", order_id)
    order.status = "return requested"
    order.return_items = sorted(item_ids)
    order.return_payment_method_id = payment_method_id
    return _json(order)


@TOOLS.register("write", private=True)
def exchange_delivered_order_items(
    s: Session, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Exchange items of a delivered order for available variants of the same products. Once per order.

    The price difference is paid with, or refunded to, the given payment method (a gift card must cover
    it). The order becomes 'exchange requested'. Collect every item to exchange first and get the
    user's explicit confirmation.

    Args:
        order_id: The order id, such as '#W0000000'.
        item_ids: The item ids to be exchanged, such as ['1008292230'].
        new_item_ids: The new item ids, position by position, such as ['1008292230'].
        payment_method_id: The payment method id to pay or receive the price difference.
    """
    order = _order(s, order_id, "exchange items of this order")
    if order.status != "delivered":
        raise ToolError(f"order {order_id} is {order.status}; only delivered orders can be exchanged")
    diff = round(_price_difference(s, order, item_ids, new_item_ids)[0], 2)
    method = _payment_method(s, order.user_id, payment_method_id)
    if method.source == "gift_card" and (method.balance or 0.0) < diff:
        raise ToolError(f"insufficient gift card balance ({method.balance}) to pay the difference {diff}")
    order = s.edit("orders", order_id)
    order.status = "exchange requested"
    order.exchange_items = sorted(item_ids)
    order.exchange_new_items = sorted(new_item_ids)
    order.exchange_payment_method_id = payment_method_id
    order.exchange_price_difference = diff
    return _json(order)


@TOOLS.register("write", private=True)
def modify_user_address(
    s: Session, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> str:
    """Change a user's default address, after the user's explicit confirmation.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    if s.user(user_id) is None:
        raise ToolError(f"user {user_id} not found", "not_found")
    _require_auth(s, user_id, "modify this user")
    user = s.edit("users", user_id)
    user.address = Address(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
    return _json(user)


WRITE_TOOLS = frozenset(n for n, t in TOOLS.tools.items() if t.kind == "write")


def execute(s: Session, name: str, arguments: Any) -> ToolEvent:
    """Run one retail tool call against a session, atomically, and append it to the world's log."""
    return _execute(s, name, arguments)
