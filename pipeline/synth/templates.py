"""Task templates: every retail write and every refusal, grounded only in one world's data.

A template looks at one customer of the world and, if it applies, drafts one request: what the customer
says, the reads an agent needs to ground every value it will write, and the write itself (or, for a
refusal, the write the customer asks for and the policy forbids). `generate_tasks` combines drafts into
tasks (one request, or two of the same customer), turns on messes, and keeps a task only if replaying its
gold actions in the world succeeds and each forbidden write is refused at its point in the conversation.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.agents.phrases import describe_item, describe_options, describe_payment, format_address
from pipeline.dataset.task import (
    Action,
    KnownInfo,
    Messes,
    NoWritesCheck,
    OrderStatusCheck,
    Provenance,
    Request,
    Task,
    TaskCheck,
    UserScript,
)
from pipeline.world.retail.replay import replay_actions
from pipeline.world.retail.schema import CANCEL_REASONS, Address, Order, User
from pipeline.world.retail.state import RetailWorld
from pipeline.world.retail.tools import execute

log = logging.getLogger(__name__)

BAD_REASONS = ("I found a better price somewhere else.", "It is taking too long to ship.", "I changed my mind.")
NOT_PENDING = ("processed", "delivered", "cancelled", "return requested", "exchange requested")
ITEM_INTENTS = ("modify_items", "return", "exchange")


@dataclass
class Draft:
    """One request of one customer, with the actions that serve it."""

    template: str
    request: Request
    goal: str
    reads: list[Action] = field(default_factory=list)
    write: Action | None = None
    forbidden: Action | None = None  # refusals: the write asked for, which the tools must refuse
    orders: tuple[str, ...] = ()


@dataclass
class GenerationResult:
    tasks: list[Task]
    skipped: Counter = field(default_factory=Counter)  # template → tasks dropped (no fit, or replay failed)


def _act(name: str, **arguments) -> Action:
    return Action(name=name, arguments=arguments)


def _addr(a: Address) -> dict[str, str]:
    return {k: getattr(a, k) for k in ("address1", "address2", "city", "state", "country", "zip")}


class _Ctx:
    def __init__(self, world: RetailWorld) -> None:
        self.world = world
        self.orders = world.db.orders
        self.products = world.db.products
        self.users = sorted(world.db.users)

    def user_orders(self, user: User, statuses: tuple[str, ...], exclude: set[str]) -> list[Order]:
        return [
            self.orders[o]
            for o in sorted(user.orders)
            if o in self.orders and o not in exclude and self.orders[o].status in statuses
        ]

    def other_address(self, rng: random.Random, avoid: Address) -> Address:
        for uid in rng.sample(self.users, min(20, len(self.users))):
            a = self.world.db.users[uid].address
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

    def swaps(self, order: Order, rng: random.Random) -> list[tuple[int, str]] | None:
        """One or two (item position, new available variant of the same product) pairs, distinct item ids."""
        options = []
        for pos, item in enumerate(order.items):
            product = self.products.get(item.product_id)
            new = (
                [v for v in sorted(product.variants) if v != item.item_id and product.variants[v].available]
                if product
                else []
            )
            if new and item.item_id not in {order.items[p].item_id for p, _ in options}:
                options.append((pos, rng.choice(new)))
        if not options:
            return None
        return sorted(rng.sample(options, 2 if len(options) > 1 and rng.random() < 0.3 else 1))


# ---- the templates ---------------------------------------------------------------------------------------
def _draft(template: str, req: Request, goal: str, reads: list[Action], write: Action, why: str = "") -> Draft:
    """A request the agent carries out, or (expect 'refused') one whose write the policy forbids."""
    orders = (req.order_id,) if req.order_id else ("user",)
    if req.expect == "refused":
        return Draft(template, req, f"{goal}; {why}, so the agent must refuse.", reads, None, write, orders)
    return Draft(template, req, f"{goal}.", reads, write, None, orders)


def _reason_said(reason: str) -> str:
    return {"no longer needed": "It's no longer needed.", "ordered by mistake": "It was ordered by mistake."}.get(
        reason, reason
    )


def _cancel(ctx, user, rng, exclude, *, statuses=("pending",), bad_reason=False, template="cancel"):
    orders = ctx.user_orders(user, statuses, exclude)
    if not orders:
        return None
    o = rng.choice(orders)
    reason = rng.choice(BAD_REASONS) if bad_reason else rng.choice(CANCEL_REASONS)
    req = Request(
        intent="cancel",
        utterance=f"I'd like to cancel my order {o.order_id}.",
        order_id=o.order_id,
        details={"reason": _reason_said(reason)},
        expect="done" if template == "cancel" else "refused",
    )
    goal = f"Cancel order {o.order_id} (reason: {_reason_said(reason)})"
    why = "that reason is not accepted" if bad_reason else f"it is {o.status}"
    write = _act("cancel_pending_order", order_id=o.order_id, reason=reason)
    return _draft(template, req, goal, [_act("get_order_details", order_id=o.order_id)], write, why)


def _cancel_wrong_status(ctx, user, rng, exclude):
    return _cancel(ctx, user, rng, exclude, statuses=NOT_PENDING, template="cancel_wrong_status")


def _bad_cancel_reason(ctx, user, rng, exclude):
    return _cancel(ctx, user, rng, exclude, bad_reason=True, template="bad_cancel_reason")


def _other_customer(ctx, user, rng, exclude):
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
        details={"reason": _reason_said(reason)},
        expect="refused",
    )
    write = _act("cancel_pending_order", order_id=oid, reason=reason)
    reads = [_act("get_user_details", user_id=user.user_id)]
    return _draft("other_customer", req, f"Cancel order {oid}", reads, write, "it belongs to another customer")


def _modify_address(ctx, user, rng, exclude, *, statuses=("pending",), template="modify_address"):
    orders = ctx.user_orders(user, statuses, exclude)
    if not orders:
        return None
    o = rng.choice(orders)
    new = _addr(ctx.other_address(rng, o.address))
    req = Request(
        intent="modify_address",
        utterance=f"I need to change the shipping address of my order {o.order_id}.",
        order_id=o.order_id,
        details={"address": f"The new address is {format_address(new)}."},
        expect="done" if template == "modify_address" else "refused",
    )
    write = _act("modify_pending_order_address", order_id=o.order_id, **new)
    reads = [_act("get_order_details", order_id=o.order_id)]
    return _draft(template, req, f"Ship order {o.order_id} to {format_address(new)}", reads, write, f"it is {o.status}")


def _modify_wrong_status(ctx, user, rng, exclude):
    return _modify_address(ctx, user, rng, exclude, statuses=NOT_PENDING, template="modify_wrong_status")


def _modify_payment(ctx, user, rng, exclude, *, short=False):
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
    write = _act("modify_pending_order_payment", order_id=o.order_id, payment_method_id=m)
    reads = [_act("get_order_details", order_id=o.order_id), _act("get_user_details", user_id=user.user_id)]
    template = "gift_card_short" if short else "modify_payment"
    return _draft(template, req, f"Pay order {o.order_id} with your {said}", reads, write, "its balance is too low")


def _gift_card_short(ctx, user, rng, exclude):
    return _modify_payment(ctx, user, rng, exclude, short=True)


def _change_items(ctx, user, rng, exclude, *, intent="modify_items", statuses=("pending",), template="modify_items"):
    orders = [o for o in ctx.user_orders(user, statuses, exclude) if ctx.swaps(o, random.Random(0))]
    if not orders:
        return None
    o = rng.choice(orders)
    swaps = ctx.swaps(o, rng)
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
    write = _act(
        tool,
        order_id=o.order_id,
        item_ids=[it.item_id for it in olds],
        new_item_ids=[v.item_id for v in news],
        payment_method_id=m,
    )
    reads = [_act("get_order_details", order_id=o.order_id)]
    if not refused:  # the new item ids come from the product, the payment method id from the user
        reads.append(_act("get_user_details", user_id=user.user_id))
        reads += [_act("get_product_details", product_id=p) for p in dict.fromkeys(it.product_id for it in olds)]
    goal = f"{verb.capitalize()} items of order {o.order_id}: the {items} Pay or get refunded with your {said}"
    return _draft(template, req, goal, reads, write, f"the order is {o.status}")


def _exchange(ctx, user, rng, exclude):
    return _change_items(ctx, user, rng, exclude, intent="exchange", statuses=("delivered",), template="exchange")


def _second_modification(ctx, user, rng, exclude):
    return _change_items(ctx, user, rng, exclude, statuses=("pending (item modified)",), template="second_modification")


def _return(ctx, user, rng, exclude, *, statuses=("delivered",), template="return"):
    orders = ctx.user_orders(user, statuses, exclude)
    if not orders:
        return None
    o = rng.choice(orders)
    distinct = list(dict.fromkeys(it.item_id for it in o.items))
    chosen = sorted(rng.sample(distinct, 1 if len(distinct) == 1 or rng.random() < 0.6 else 2))
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
    write = _act("return_delivered_order_items", order_id=o.order_id, item_ids=chosen, payment_method_id=m)
    reads = [_act("get_order_details", order_id=o.order_id)]
    if m != original and req.expect == "done":  # a gift card id is only in the user's details
        reads.append(_act("get_user_details", user_id=user.user_id))
    goal = f"Return the {items} of order {o.order_id}. {said.rstrip('.')}"
    return _draft(template, req, goal, reads, write, f"the order is {o.status}")


def _return_wrong_status(ctx, user, rng, exclude):
    statuses = ("pending", "processed", "cancelled")
    return _return(ctx, user, rng, exclude, statuses=statuses, template="return_wrong_status")


def _modify_user_address(ctx, user, rng, exclude):
    if "user" in exclude:
        return None
    new = _addr(ctx.other_address(rng, user.address))
    req = Request(
        intent="modify_user_address",
        utterance="I've moved and need to update the default address on my account.",
        details={"address": f"The new address is {format_address(new)}."},
    )
    write = _act("modify_user_address", user_id=user.user_id, **new)
    return _draft("modify_user_address", req, f"Change your default address to {format_address(new)}", [], write)


Template = Callable[..., Draft | None]
TEMPLATES: dict[str, Template] = {
    "cancel": _cancel,
    "modify_address": _modify_address,
    "modify_payment": _modify_payment,
    "modify_items": _change_items,
    "return": _return,
    "exchange": _exchange,
    "modify_user_address": _modify_user_address,
    "cancel_wrong_status": _cancel_wrong_status,
    "modify_wrong_status": _modify_wrong_status,
    "return_wrong_status": _return_wrong_status,
    "other_customer": _other_customer,
    "bad_cancel_reason": _bad_cancel_reason,
    "gift_card_short": _gift_card_short,
    "second_modification": _second_modification,
}
PAIR = "two_requests"
ALL_TEMPLATES: tuple[str, ...] = (*TEMPLATES, PAIR)
# The default cycle: every template once, and two-request tasks a fifth of the time.
DEFAULT_CYCLE: tuple[str, ...] = (*TEMPLATES, PAIR, PAIR, PAIR)


# ---- tasks from drafts ------------------------------------------------------------------------------------
def generate_tasks(world: RetailWorld, n: int, seed: int = 0, templates: list[str] | None = None) -> list[Task]:
    """`n` tasks cycling over `templates` (default `DEFAULT_CYCLE`); same world and seed, same tasks.

    A template that fits no customer, or a candidate whose gold replay fails, is skipped and counted
    (see `generate`), so fewer than `n` tasks come back only when the world cannot supply them.
    """
    return generate(world, n, seed, templates).tasks


def generate(world: RetailWorld, n: int, seed: int = 0, templates: list[str] | None = None) -> GenerationResult:
    """Like `generate_tasks`, also counting per template the candidates dropped and why."""
    names = list(templates or DEFAULT_CYCLE)
    unknown = sorted(set(names) - set(ALL_TEMPLATES))
    if unknown:
        raise ValueError(f"unknown template(s) {unknown}; known: {list(ALL_TEMPLATES)}")
    ctx = _Ctx(world)
    result = GenerationResult(tasks=[])
    attempt = 0
    while len(result.tasks) < n and attempt < 4 * n + len(names):
        name = names[attempt % len(names)]
        rng = random.Random(f"{world.name}:{seed}:{attempt}")
        task, why = _make_task(ctx, name, rng, f"{world.name}-s{seed}-{len(result.tasks):04d}-{name}")
        if task is None:
            result.skipped[f"{name}:{why}"] += 1
        else:
            result.tasks.append(task)
        attempt += 1
    if result.skipped:
        log.info("generate_tasks(%s, n=%d, seed=%d): skipped %s", world.name, n, seed, dict(result.skipped))
    return result


def _make_task(ctx: _Ctx, name: str, rng: random.Random, task_id: str) -> tuple[Task | None, str]:
    users = list(ctx.users)
    rng.shuffle(users)
    pair = rng.sample(sorted(TEMPLATES), 2) if name == PAIR else None
    replay_failed = False
    for uid in users[:200]:
        user = ctx.world.db.users[uid]
        if pair:
            first = TEMPLATES[pair[0]](ctx, user, rng, set())
            second = TEMPLATES[pair[1]](ctx, user, rng, set(first.orders)) if first else None
            drafts = [first, second] if second else None
        else:
            one = TEMPLATES[name](ctx, user, rng, set())
            drafts = [one] if one else None
        if drafts is None:
            continue
        task = _assemble(ctx, user, drafts, name, rng, task_id)
        if task is not None:
            return task, ""
        replay_failed = True
    return None, "replay_failed" if replay_failed else "no_fit"


def _assemble(ctx: _Ctx, user: User, drafts: list[Draft], name: str, rng: random.Random, task_id: str) -> Task | None:
    world = ctx.world
    first, last, zip_ = user.name.first_name, user.name.last_name, user.address.zip
    unique = world.user_by_name_zip.get((first.lower(), last.lower(), zip_)) == user.user_id
    requests = [d.request for d in drafts]
    messes = Messes(
        forgot_email=unique and rng.random() < 0.3,
        vague_item=any(r.vague_utterance for r in requests) and rng.random() < 0.5,
        also_request=len(requests) > 1 and rng.random() < 0.5,
        pushback=any(r.expect == "refused" for r in requests) and rng.random() < 0.5,
    )
    auth = (
        _act("find_user_id_by_name_zip", first_name=first, last_name=last, zip=zip_)
        if messes.forgot_email
        else _act("find_user_id_by_email", email=user.email)
    )
    gold, ends, seen = [auth], [], set()
    for i, d in enumerate(drafts):
        for read in d.reads:
            key = (read.name, tuple(sorted(read.arguments.items())))
            if key not in seen:
                seen.add(key)
                gold.append(read.model_copy(update={"request": i}))
        if d.write is not None:
            gold.append(d.write.model_copy(update={"request": i}))
            seen.clear()  # later requests read fresh state
        ends.append(len(gold))
    session = replay_actions(world, gold)
    if not all(e.ok for e in session.log):
        log.debug("%s: gold action refused in replay: %s", task_id, [e.error for e in session.log if not e.ok])
        return None
    for d, end in zip(drafts, ends, strict=True):
        if d.forbidden is not None:
            probe = replay_actions(world, gold[:end])
            if execute(probe, d.forbidden.name, d.forbidden.arguments).ok:
                log.debug("%s: forbidden %s would succeed", task_id, d.forbidden.name)
                return None
    checks: list[TaskCheck] = [
        OrderStatusCheck(order_id=d.request.order_id, status=session.order(d.request.order_id).status)
        for d in drafts
        if d.write is not None and d.request.order_id
    ]
    if not any(d.write for d in drafts):
        checks = [NoWritesCheck()]
    notes = [
        "You do not remember your email address; you can give your name and zip code." if messes.forgot_email else "",
        "At first you describe the items only vaguely." if messes.vague_item else "",
        "You bring up your last request only after the others are done." if messes.also_request else "",
        "When the agent refuses, you push back once." if messes.pushback else "",
    ]
    goal = f"You are {first} {last}. " + " Then: ".join(d.goal for d in drafts) + " " + " ".join(x for x in notes if x)
    dials: dict[str, int | bool | str] = {
        **messes.model_dump(),
        "requests": len(drafts),
        "writes": sum(d.write is not None for d in drafts),
    }
    if len(drafts) > 1:
        dials["parts"] = "+".join(d.template for d in drafts)
    return Task(
        id=task_id,
        world=world.name,
        customer_user_id=user.user_id,
        user_script=UserScript(
            goal=goal.strip(),
            known=KnownInfo(email=user.email, first_name=first, last_name=last, zip=zip_),
            requests=requests,
            messes=messes,
        ),
        gold_actions=gold,
        checks=checks,
        provenance=Provenance(source="synthesized", template=name, dials=dials, depth=0),
    )
