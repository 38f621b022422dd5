"""The retail oracle's and customer's fixed sentences: identity questions, the order question, describing items,
options and addresses as a customer says them, asking for a request's missing details, and the confirmation step.

The oracle speaks in these sentences and the task templates describe entities with these helpers, so the scripted
user (which understands agents by keywords) and a small model trained to imitate the oracle see one consistent
vocabulary. The sentences every domain shares (closing, refusals, yes/no) are `pipeline.agents.scripted.phrases`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.agents import YES_NO

ASK_EMAIL_FIRST = "Before I can do that, I need to verify your identity: what is the email address on your account?"
ASK_EMAIL = "I'd be happy to help. First I need to verify your identity: what is the email address on your account?"
ASK_NAME_ZIP = "No problem. Could you tell me your first name, last name and the zip code of your address instead?"
ASK_ORDER = "Which order is this about? Please tell me the order id."
VERBS = {
    "cancel": "cancel",
    "modify_address": "change the shipping address of",
    "modify_payment": "change the payment method of",
    "modify_items": "modify items of",
    "return": "return items of",
    "exchange": "exchange items of",
    "modify_user_address": "change your default address",
}


def describe_options(options: Mapping[str, str]) -> str:
    """'color blue, size M' — option names and values in the record's order."""
    return ", ".join(f"{k} {v}" for k, v in options.items())


def describe_item(name: str, options: Mapping[str, str]) -> str:
    return f"{name} ({describe_options(options)})"


def name_item(name: str, options: Mapping[str, str], item_id: str) -> str:
    """'Board Game 4780751996 (players 2-4, theme party)': an order's line as compact tool results render it."""
    return f"{name} {item_id} ({describe_options(options)})"


def format_address(address: Mapping[str, str]) -> str:
    """One line a customer would say; every field appears verbatim (empty address2 left out)."""
    parts = [address["address1"], address.get("address2", ""), address["city"], address["state"], address["country"]]
    return ", ".join(p for p in parts if p) + f", zip {address['zip']}"


def ask_details(intent: str, topics: list[str]) -> str:
    """One message asking for every missing detail of a request."""
    questions = []
    for topic in topics:
        if topic == "reason":
            questions.append("What is the reason for the cancellation: 'no longer needed' or 'ordered by mistake'?")
        elif topic == "address":
            questions.append("What is the new address (street, apartment or suite, city, state, country and zip)?")
        elif topic == "items":
            what = "return" if intent == "return" else "change"
            to = "" if intent == "return" else ", and which options would you like instead"
            questions.append(f"Which items exactly would you like to {what}{to}?")
        elif topic == "payment_method":
            if intent == "modify_payment":
                questions.append("Which payment method would you like to use instead?")
            elif intent == "return":
                questions.append("Which payment method should receive the refund: the original one or a gift card?")
            else:
                questions.append("Which payment method should pay or receive the price difference?")
    return " ".join(questions)


def confirm(intent: str, order_id: str | None, lines: list[str], once: bool = False) -> str:
    """The action details, then an explicit yes/no question: the policy's confirmation step."""
    head = f"To confirm, I will {VERBS[intent]}" + (f" order {order_id}" if order_id else "") + ":"
    body = " ".join(f"- {line}" for line in lines)
    warn = (
        " Please make sure these are all the items you want to change: an order can be changed this way only once."
        if once
        else ""
    )
    return f"{head} {body}{warn} Shall I proceed {YES_NO}?"


def status_fact(order_id: str, status: str, need: str, done: str) -> str:
    """The two facts a status rule compares, side by side, said before the agent proceeds or refuses: "Order #W1
    is 'delivered'; to be cancelled, an order must be 'pending'." A small model then decides from two words it has
    just written, instead of from the request many turns back and a line of the tool result."""
    return f"Order {order_id} is '{status}'; to be {done}, an order must be '{need}'."


# ---- naming payment methods (what the customer says; the compact codec shows the same words) ---------------
def _field(record: Any, key: str) -> Any:
    """A field of a world record or of its JSON form (tool results are parsed into dicts)."""
    return record.get(key) if isinstance(record, Mapping) else getattr(record, key, None)


def describe_payment(method: Any, methods: Mapping[str, Any]) -> str:
    """How a customer names one of their payment methods, unambiguous among `methods` (records or dicts)."""
    source = _field(method, "source")
    same = [m for m in methods.values() if _field(m, "source") == source]
    if source == "credit_card":
        brand, last_four = _field(method, "brand"), _field(method, "last_four")
        twins = [m for m in same if _field(m, "brand") == brand and _field(m, "last_four") == last_four]
        if len(twins) == 1:
            return f"{brand} credit card ending in {last_four}"
    elif len(same) == 1:
        return "PayPal account" if source == "paypal" else "gift card"
    return f"{str(source).replace('_', ' ')} {_field(method, 'id')}"


def name_payment(method: Any, methods: Mapping[str, Any]) -> str:
    """'visa credit card ending in 9079 credit_card_0012648': a payment method as compact tool results render it.

    The customer's own words come first and the id right after them, so an agent that repeats what the
    customer said continues with that method's id (see `name_item`). The compact codec renders a payment
    method with the same words (`pipeline.formats.codec`; a test keeps the two alike)."""
    said = describe_payment(method, methods)
    pid = _field(method, "id")
    return said if said.endswith(str(pid)) else f"{said} {pid}"
