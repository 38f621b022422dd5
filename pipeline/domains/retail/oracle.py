"""Retail's oracle agent: follows the policy and solves every solvable generated task, with no model.

It may read the task (gold actions, user script) to know what to do, but every value it writes has
appeared earlier in the conversation, in a user message or a tool result, and every figure it states
comes from a tool result. It authenticates first, makes one tool call per message and never mixes a call
with text, checks each policy precondition from what the tools showed, lists the details and waits for
an explicit yes before each write, and refuses out-of-policy requests with the reason.

The episode is a generator that yields assistant messages; the hook methods (`_order_status`, `_confirm`,
`_write_action`, `_perform`) are where `pipeline.domains.retail.flawed` plants its failure modes. The primitives
(one tool call, one message, closing a request) are the generic `pipeline.agents.scripted.script.ScriptedEpisode`'s.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pipeline.agents import YES as _YES
from pipeline.agents import ScriptedEpisode, Steps, appears_in, evidence
from pipeline.agents.scripted import phrases as P
from pipeline.dataset import Action, Request
from pipeline.domains.retail import phrases as R
from pipeline.domains.retail.schema import CANCEL_REASONS, PaymentMethod
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.rollout import EpisodeInfo, Message

log = logging.getLogger(__name__)
__all__ = ["OracleAgent", "OracleEpisode", "Steps", "appears_in", "evidence"]

EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
REQUIRED_STATUS = {
    "cancel": "pending",
    "modify_address": "pending",
    "modify_payment": "pending",
    "modify_items": "pending",
    "return": "delivered",
    "exchange": "delivered",
}
DONE_AS = {
    "cancel": "cancelled",
    "modify_address": "modified",
    "modify_payment": "modified",
    "modify_items": "modified",
    "return": "returned",
    "exchange": "exchanged",
}
TOOL_INTENT = {
    "cancel_pending_order": "cancel",
    "modify_pending_order_address": "modify_address",
    "modify_pending_order_payment": "modify_payment",
    "modify_pending_order_items": "modify_items",
    "return_delivered_order_items": "return",
    "exchange_delivered_order_items": "exchange",
    "modify_user_address": "modify_user_address",
}
TOPICS = {
    "cancel": ["reason"],
    "modify_address": ["address"],
    "modify_payment": ["payment_method"],
    "modify_items": ["items", "payment_method"],
    "return": ["items", "payment_method"],
    "exchange": ["items", "payment_method"],
    "modify_user_address": ["address"],
}


class OracleAgent:
    name = "oracle"

    def start(self, info: EpisodeInfo) -> OracleEpisode:
        return OracleEpisode(info)


class OracleEpisode(ScriptedEpisode):
    def __init__(self, info: EpisodeInfo) -> None:
        self.not_theirs: set[str] = set()  # order ids the world refused to show: another customer's
        super().__init__(info)

    def _observe(self, name: str, arguments: dict[str, Any], result: Message) -> None:
        if result.error and name == "get_order_details" and "another customer" in (result.content or ""):
            self.not_theirs.add(arguments.get("order_id", ""))

    def _authenticate(self, question: str = R.ASK_EMAIL) -> Steps:
        gold = self.task.gold_actions[0] if self.task.gold_actions else None
        by_name = gold.arguments if gold is not None and gold.name == "find_user_id_by_name_zip" else None
        reply = yield from self._say(question)
        for _ in range(5):
            email = EMAIL_RE.search(reply)
            if email:
                call = ("find_user_id_by_email", {"email": email.group(0)})
            elif by_name and appears_in(list(by_name.values()), [reply]):
                call = ("find_user_id_by_name_zip", dict(by_name))
            else:
                reply = yield from self._say(R.ASK_NAME_ZIP)
                continue
            result = yield from self._call(*call)
            if not result.error:
                self.user_id = result.content
                return
            reply = yield from self._say(P.NOT_FOUND_IDENTITY)

    def _write(self, i: int) -> Action | None:
        return next((a for a in self._actions(i) if a.name in WRITE_TOOLS), None)

    def _reads(self, i: int, req: Request, after_details: bool) -> Steps:
        """The request's reads: the order's before its status fact; products, and the account when whether it is
        needed depends on the customer's answer, only after that answer."""
        if not after_details:
            yield from self._look_up_order(i, req)
        for a in self._actions(i):
            if a.name in WRITE_TOOLS:
                continue
            later = a.name == "get_product_details" or (a.name == "get_user_details" and self._pays_later(req))
            if later == after_details:
                yield from self._call(a.name, dict(a.arguments))

    def _look_up_order(self, i: int, req: Request) -> Steps:
        """Read the order the customer named even when the plan needs nothing from it (another customer's order):
        the world's refusal is how an agent finds out whose it is. Deciding between reading the order and reading
        the account from the task alone would act on what only the task knows."""
        oid = req.order_id
        planned = any(a.name == "get_order_details" and a.arguments.get("order_id") == oid for a in self._actions(i))
        if oid and not planned and self._order(oid) is None and oid not in self.not_theirs:
            yield from self._call("get_order_details", {"order_id": oid})

    def _pays_later(self, req: Request) -> bool:
        # A refund to a gift card reads the account, one to the original method does not: reading it before the
        # customer answers would act on what the task says they will answer. A new payment method always comes
        # from the account. The order must have been readable (another customer's order is refused by the world).
        return (
            req.intent != "modify_payment"
            and "payment_method" in self._topics(req)
            and self._order(req.order_id) is not None
        )

    def _topics(self, req: Request) -> list[str]:
        topics = list(TOPICS.get(req.intent, []))
        if "items" in topics and not (self.script.messes.vague_item and req.vague_utterance):
            topics.remove("items")  # already named in the request
        return topics

    def _handle(self, i: int, req: Request, details: str | None = None, confirmed: bool = False) -> Steps:
        write = self._write(i)
        if req.order_id and not any(req.order_id in (m.content or "") for m in self.messages if m.role == "user"):
            yield from self._say(R.ASK_ORDER)  # an under-specified request: never look up an order nobody named
        yield from self._reads(i, req, after_details=False)
        self._fact = self._status_fact(req)
        reason = self._check_order(req)
        if reason:
            return (yield from self._refuse(reason))
        topics = self._topics(req)
        if details is None and topics:
            details = yield from self._say(R.ask_details(req.intent, topics))
        yield from self._reads(i, req, after_details=True)
        yield from self._conclude(i, req, write, details or "", confirmed)

    # ---- policy checks, from what the tools showed -------------------------------------------------------
    def _order(self, order_id: str | None) -> dict | None:
        return self.seen.get(("get_order_details", order_id or ""))

    def _user(self) -> dict | None:
        return self.seen.get(("get_user_details", self.user_id or ""))

    def _order_status(self, order: dict) -> str:
        return order["status"]

    def _owns(self, req: Request) -> bool:
        if req.order_id in self.not_theirs:
            return False
        user = self._user()
        return user is None or req.order_id in user["orders"]

    def _status_fact(self, req: Request, as_status: str | None = None) -> str | None:
        """The order's status (or `as_status`, a misread) and the status the request needs, for an order of this
        customer the tools showed."""
        order, need = self._order(req.order_id), REQUIRED_STATUS.get(req.intent)
        if not req.order_id or order is None or need is None or not self._owns(req):
            return None
        return R.status_fact(req.order_id, as_status or self._order_status(order), need, DONE_AS[req.intent])

    def _refuse(self, reason: str) -> Steps:
        """After a status fact the refusal is short (the fact said why); otherwise it states the reason."""
        return (yield from self._finish(P.REFUSED_AFTER_FACT if self._fact else P.refusal(reason), reason))

    def _check_order(self, req: Request) -> str | None:
        if not req.order_id:
            return None
        if not self._owns(req):
            return (
                f"order {req.order_id} is not one of the orders on your account, and I can only help with the "
                "account I have verified in this conversation."
            )
        order = self._order(req.order_id)
        need = REQUIRED_STATUS.get(req.intent)
        if order is None or need is None:
            return None
        status = self._order_status(order)
        if status == need:
            return None
        if status == "pending (item modified)":
            return (
                f"the items of order {req.order_id} have already been modified (status '{status}'), so it "
                "can no longer be modified or cancelled."
            )
        return f"order {req.order_id} is '{status}', and only {need} orders can be {DONE_AS[req.intent]}."

    def _check_details(self, req: Request, details: str) -> str | None:
        if req.intent == "cancel" and not any(r in details.lower() for r in CANCEL_REASONS):
            return "a cancellation reason must be either 'no longer needed' or 'ordered by mistake'."
        if req.intent == "modify_payment":
            order = self._order(req.order_id)
            method = self._named_method(details)
            if order and method and method.source == "gift_card":
                total = order["payment_history"][0]["amount"]
                if (method.balance or 0.0) < total:
                    return (
                        f"the balance of your gift card {method.id} is {P.money(method.balance or 0.0)}, which "
                        f"does not cover the order total of {P.money(total)}."
                    )
        return None

    def _named_method(self, text: str) -> PaymentMethod | None:
        user = self._user()
        if user is None:
            return None
        methods = {k: PaymentMethod.model_validate(v) for k, v in user["payment_methods"].items()}
        return next((m for m in methods.values() if R.describe_payment(m, methods) in text), None)

    # ---- confirmation, write and report --------------------------------------------------------------------
    def _confirm_action(self, i: int, write: Action) -> Action:
        return write

    def _write_action(self, i: int, write: Action) -> Action:
        return write

    def _confirm(self, i: int, req: Request, write: Action) -> Steps:
        action = self._confirm_action(i, write)
        intent = TOOL_INTENT[action.name]
        once = intent in ("modify_items", "exchange")
        text = R.confirm(intent, action.arguments.get("order_id"), self._lines(action), once)
        reply = yield from self._say(text)
        return bool(_YES.search(reply)) and not reply.lower().lstrip().startswith("no")

    def _perform(self, i: int, req: Request, write: Action) -> Steps:
        action = self._write_action(i, write)
        missing = [k for k, v in action.arguments.items() if not appears_in(v, evidence(self.messages))]
        if missing:
            log.warning(
                "task %s: write %s argument(s) %s not grounded in the conversation", self.task.id, action.name, missing
            )
        result = yield from self._call(action.name, dict(action.arguments))
        if result.error:  # a write the tool refused is a refusal the customer may push back on
            error = (result.content or "").removeprefix("Error: ").rstrip(".") + "."
            return (yield from self._finish(P.failed(result.content or ""), error))
        yield from self._finish(self._report(action, json.loads(result.content)))

    def _item(self, order: dict | None, item_id: str) -> str:
        item = next((it for it in (order or {}).get("items", []) if it["item_id"] == item_id), None)
        return R.name_item(item["name"], item["options"], item_id) if item else f"item {item_id}"

    def _variant(self, new_id: str) -> str:
        for (tool, _), product in self.seen.items():
            if tool == "get_product_details" and new_id in product.get("variants", {}):
                v = product["variants"][new_id]
                return f"({R.describe_options(v['options'])}) item {new_id} at {P.money(v['price'])}"
        return f"item {new_id}"

    def _method(self, method_id: str) -> str:
        """A payment method as the account shows it (`gift card gift_card_0880141`), when the account was read."""
        methods = (self._user() or {}).get("payment_methods", {})
        return R.name_payment(methods[method_id], methods) if method_id in methods else method_id

    def _lines(self, action: Action) -> list[str]:
        a, order = action.arguments, self._order(action.arguments.get("order_id"))
        if action.name == "cancel_pending_order":
            return [f"reason: '{a['reason']}'", "every payment is refunded to the method it was paid with"]
        if action.name in ("modify_pending_order_address", "modify_user_address"):
            return [f"new address: {R.format_address(a)}"]
        if action.name == "modify_pending_order_payment":
            paid = (order or {}).get("payment_history", [{}])[0]
            return [
                f"new payment method: {self._method(a['payment_method_id'])}",
                f"the original payment of {P.money(paid.get('amount', 0.0))} is refunded to "
                f"{paid.get('payment_method_id')}",
            ]
        if action.name == "return_delivered_order_items":
            refund = self._method(a["payment_method_id"])
            return [*(f"return {self._item(order, x)}" for x in a["item_ids"]), f"refund to: {refund}"]
        pairs = [
            f"{self._item(order, old)} -> {self._variant(new)}"
            for old, new in zip(a["item_ids"], a["new_item_ids"], strict=False)
        ]
        return [*pairs, f"price difference paid with or refunded to: {self._method(a['payment_method_id'])}"]

    def _report(self, action: Action, rec: dict) -> str:
        """What was done, in figures taken from the tool's result only."""
        name, oid = action.name, rec.get("order_id")
        if name == "cancel_pending_order":
            refunds = [p for p in rec["payment_history"] if p["transaction_type"] == "refund"]
            money = "; ".join(f"{P.money(p['amount'])} is refunded to {p['payment_method_id']}" for p in refunds)
            text = (
                f"Order {oid} has been cancelled. {money}. A gift card is refunded at once, other methods "
                "in 5 to 7 business days."
            )
        elif name == "modify_pending_order_address":
            text = f"The shipping address of order {oid} is now {R.format_address(rec['address'])}."
        elif name == "modify_user_address":
            text = f"Your default address has been updated to {R.format_address(rec['address'])}."
        elif name == "modify_pending_order_payment":
            pay, refund = rec["payment_history"][-2], rec["payment_history"][-1]
            text = (
                f"Order {oid} is now paid with {pay['payment_method_id']} ({P.money(pay['amount'])}), and "
                f"{P.money(refund['amount'])} has been refunded to {refund['payment_method_id']}."
            )
        elif name == "modify_pending_order_items":
            last = rec["payment_history"][-1]
            text = (
                f"The items of order {oid} have been modified and its status is now '{rec['status']}'. "
                f"A {last['transaction_type']} of {P.money(last['amount'])} has been made with "
                f"{last['payment_method_id']}."
            )
        elif name == "return_delivered_order_items":
            text = (
                f"The return of item(s) {', '.join(rec['return_items'])} of order {oid} has been requested; "
                f"the refund will go to {rec['return_payment_method_id']}. You will receive an email "
                "explaining how to send the items back."
            )
        else:
            text = (
                f"The exchange of item(s) {', '.join(rec['exchange_items'])} of order {oid} for "
                f"{', '.join(rec['exchange_new_items'])} has been requested, with a price difference of "
                f"{P.money(rec['exchange_price_difference'])} settled with {rec['exchange_payment_method_id']}. "
                "You will receive an email explaining how to send the items back."
            )
        return f"{text} {P.ANYTHING_ELSE}"
