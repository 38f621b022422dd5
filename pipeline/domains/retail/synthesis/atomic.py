"""The atomic templates: every retail write and every refusal, each drafting one request of one customer.

A template looks at one customer and, if it applies, drafts what the customer says, the reads an agent
needs to ground every value it will write, and the write itself (or, for a refusal, the write the customer
asks for and the policy forbids). It returns None when the customer has nothing it fits.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pipeline.authoring import Draft, Want, act
from pipeline.dataset import Request
from pipeline.domains.retail.phrases import describe_item, describe_options, describe_payment, format_address
from pipeline.domains.retail.schema import CANCEL_REASONS, User
from pipeline.domains.retail.synthesis.grounding import BAD_REASONS, NOT_PENDING, Ctx, address_dict, draft, reason_said

# (ctx, customer, rng, order ids already used, what a harder variant wants) → a draft, or None if nothing fits
Template = Callable[..., Draft | None]
_ANY = Want()


def cancel(ctx, user, rng, exclude, want=_ANY, *, statuses=("pending",), bad_reason=False, template="cancel"):
    orders = ctx.user_orders(user, statuses, exclude)
    if not orders:
        return None
    o = rng.choice(orders)
    reason = rng.choice(BAD_REASONS) if bad_reason else rng.choice(CANCEL_REASONS)
    req = Request(
        intent="cancel",
        utterance=f"I'd like to cancel my order {o.order_id}.",
        order_id=o.order_id,
        details={"reason": reason_said(reason)},
        expect="done" if template == "cancel" else "refused",
    )
    goal = f"Cancel order {o.order_id} (reason: {reason_said(reason)})"
    why = "that reason is not accepted" if bad_reason else f"it is {o.status}"
    write = act("cancel_pending_order", order_id=o.order_id, reason=reason)
    return draft(template, req, goal, [act("get_order_details", order_id=o.order_id)], write, why)


def cancel_wrong_status(ctx, user, rng, exclude, want=_ANY):
    return cancel(ctx, user, rng, exclude, statuses=NOT_PENDING, template="cancel_wrong_status")


def bad_cancel_reason(ctx, user, rng, exclude, want=_ANY):
    return cancel(ctx, user, rng, exclude, bad_reason=True, template="bad_cancel_reason")


def other_customer(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY) -> Draft | None:
    others = [
        o
        for o in sorted(ctx.orders)
        if ctx.orders[o].user_id != user.user_id and ctx.orders[o].status == "pending" and o not in exclude
    ]
    if not others:
        return None
    oid, reason = rng.choice(others), rng.choice(CANCEL_REASONS)
    req = Request(
        intent="cancel",
        utterance=f"I'd like to cancel my order {oid}.",
        order_id=oid,
        details={"reason": reason_said(reason)},
        expect="refused",
    )
    write = act("cancel_pending_order", order_id=oid, reason=reason)
    reads = [act("get_user_details", user_id=user.user_id)]
    return draft("other_customer", req, f"Cancel order {oid}", reads, write, "it belongs to another customer")


def modify_address(ctx, user, rng, exclude, want=_ANY, *, statuses=("pending",), template="modify_address"):
    orders = ctx.user_orders(user, statuses, exclude)
    if not orders:
        return None
    o = rng.choice(orders)
    new = address_dict(ctx.other_address(rng, o.address))
    req = Request(
        intent="modify_address",
        utterance=f"I need to change the shipping address of my order {o.order_id}.",
        order_id=o.order_id,
        details={"address": f"The new address is {format_address(new)}."},
        expect="done" if template == "modify_address" else "refused",
    )
    write = act("modify_pending_order_address", order_id=o.order_id, **new)
    reads = [act("get_order_details", order_id=o.order_id)]
    return draft(template, req, f"Ship order {o.order_id} to {format_address(new)}", reads, write, f"it is {o.status}")


def modify_wrong_status(ctx, user, rng, exclude, want=_ANY):
    return modify_address(ctx, user, rng, exclude, statuses=NOT_PENDING, template="modify_wrong_status")


def modify_payment(
    ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY, *, short=False
) -> Draft | None:
    fits = []
    for o in ctx.user_orders(user, ("pending",), exclude):
        if len(o.payment_history) != 1:
            continue
        paid = o.payment_history[0]
        for m in sorted(user.payment_methods):
            pm = user.payment_methods[m]
            if m == paid.payment_method_id or (short and pm.source != "gift_card"):
                continue
            if (pm.source == "gift_card" and (pm.balance or 0.0) < paid.amount) == short:
                fits.append((o, m))
    if not fits:
        return None
    o, m = rng.choice(fits)
    said = describe_payment(user.payment_methods[m], user.payment_methods)
    req = Request(
        intent="modify_payment",
        utterance=f"I'd like to pay for my order {o.order_id} with a different payment method.",
        order_id=o.order_id,
        details={"payment_method": f"Please use my {said}."},
        expect="refused" if short else "done",
    )
    write = act("modify_pending_order_payment", order_id=o.order_id, payment_method_id=m)
    reads = [act("get_order_details", order_id=o.order_id), act("get_user_details", user_id=user.user_id)]
    template = "gift_card_short" if short else "modify_payment"
    return draft(template, req, f"Pay order {o.order_id} with your {said}", reads, write, "its balance is too low")


def gift_card_short(ctx, user, rng, exclude, want=_ANY):
    return modify_payment(ctx, user, rng, exclude, short=True)


def change_items(ctx, user, rng, exclude, want=_ANY, *, intent="modify_items", statuses=("pending",), template=None):
    template = template or intent
    orders = [o for o in ctx.user_orders(user, statuses, exclude) if ctx.swaps(o, random.Random(0), want.items)]
    if not orders:
        return None
    o = rng.choice(orders)
    swaps = ctx.swaps(o, rng, want.items)
    olds = [o.items[p] for p, _ in swaps]
    news = [ctx.products[it.product_id].variants[v] for it, (_, v) in zip(olds, swaps, strict=True)]
    diff = round(sum(v.price for v in news) - sum(it.price for it in olds), 2)
    pms = user.payment_methods
    methods = [m for m in sorted(pms) if pms[m].source != "gift_card" or (pms[m].balance or 0.0) >= diff]
    if not methods:
        return None
    m = rng.choice(methods)
    items = " And the ".join(
        f"{describe_item(it.name, it.options)}: I'd like it with {describe_options(v.options)} instead."
        for it, v in zip(olds, news, strict=True)
    )
    verb = "exchange" if intent == "exchange" else "change"
    said = describe_payment(pms[m], pms)
    refused = template not in ("modify_items", "exchange")
    req = Request(
        intent=intent,
        utterance=f"I'd like to {verb} some items of my order {o.order_id}. The {items}",
        vague_utterance=f"I'd like to {verb} something in my order {o.order_id}.",
        order_id=o.order_id,
        details={"items": f"The {items}", "payment_method": f"Please use my {said}."},
        expect="refused" if refused else "done",
    )
    tool = "exchange_delivered_order_items" if intent == "exchange" else "modify_pending_order_items"
    write = act(
        tool,
        order_id=o.order_id,
        item_ids=[it.item_id for it in olds],
        new_item_ids=[v.item_id for v in news],
        payment_method_id=m,
    )
    reads = [act("get_order_details", order_id=o.order_id)]
    if not refused:  # the new item ids come from the product, the payment method id from the user
        reads.append(act("get_user_details", user_id=user.user_id))
        reads += [act("get_product_details", product_id=p) for p in dict.fromkeys(it.product_id for it in olds)]
    goal = f"{verb.capitalize()} items of order {o.order_id}: the {items} Pay or get refunded with your {said}"
    return draft(template, req, goal, reads, write, f"the order is {o.status}")


def exchange(ctx, user, rng, exclude, want=_ANY):
    return change_items(ctx, user, rng, exclude, want, intent="exchange", statuses=("delivered",), template="exchange")


def second_modification(ctx, user, rng, exclude, want=_ANY):
    return change_items(
        ctx, user, rng, exclude, want, statuses=("pending (item modified)",), template="second_modification"
    )


def return_items(ctx, user, rng, exclude, want=_ANY, *, statuses=("delivered",), template="return"):
    orders = [
        o
        for o in ctx.user_orders(user, statuses, exclude)
        if want.items is None or len({it.item_id for it in o.items}) >= want.items
    ]
    if not orders:
        return None
    o = rng.choice(orders)
    distinct = list(dict.fromkeys(it.item_id for it in o.items))
    k = want.items or (1 if len(distinct) == 1 or rng.random() < 0.6 else 2)
    chosen = sorted(rng.sample(distinct, k))
    olds = [next(it for it in o.items if it.item_id == i) for i in chosen]
    original = o.payment_history[0].payment_method_id
    pms = user.payment_methods
    m = rng.choice([original, *(k for k in sorted(pms) if pms[k].source == "gift_card" and k != original)])
    said = (
        "Please refund it to the original payment method."
        if m == original
        else f"Please put the refund on my {describe_payment(pms[m], pms)}."
    )
    items = " and the ".join(describe_item(it.name, it.options) for it in olds)
    req = Request(
        intent="return",
        utterance=f"I'd like to return the {items} from my order {o.order_id}.",
        vague_utterance=f"I'd like to return some things from my order {o.order_id}.",
        order_id=o.order_id,
        details={"items": f"The {items}.", "payment_method": said},
        expect="done" if template == "return" else "refused",
    )
    write = act("return_delivered_order_items", order_id=o.order_id, item_ids=chosen, payment_method_id=m)
    reads = [act("get_order_details", order_id=o.order_id)]
    if m != original and req.expect == "done":  # a gift card id is only in the user's details
        reads.append(act("get_user_details", user_id=user.user_id))
    goal = f"Return the {items} of order {o.order_id}. {said.rstrip('.')}"
    return draft(template, req, goal, reads, write, f"the order is {o.status}")


def return_wrong_status(ctx, user, rng, exclude, want=_ANY):
    statuses = ("pending", "processed", "cancelled")
    return return_items(ctx, user, rng, exclude, want, statuses=statuses, template="return_wrong_status")


def modify_user_address(ctx: Ctx, user: User, rng: random.Random, exclude: set[str], want: Want = _ANY):
    if "user" in exclude:
        return None
    new = address_dict(ctx.other_address(rng, user.address))
    req = Request(
        intent="modify_user_address",
        utterance="I've moved and need to update the default address on my account.",
        details={"address": f"The new address is {format_address(new)}."},
    )
    write = act("modify_user_address", user_id=user.user_id, **new)
    return draft("modify_user_address", req, f"Change your default address to {format_address(new)}", [], write)


TEMPLATES: dict[str, Template] = {
    "cancel": cancel,
    "modify_address": modify_address,
    "modify_payment": modify_payment,
    "modify_items": change_items,
    "return": return_items,
    "exchange": exchange,
    "modify_user_address": modify_user_address,
    "cancel_wrong_status": cancel_wrong_status,
    "modify_wrong_status": modify_wrong_status,
    "return_wrong_status": return_wrong_status,
    "other_customer": other_customer,
    "bad_cancel_reason": bad_cancel_reason,
    "gift_card_short": gift_card_short,
    "second_modification": second_modification,
}
