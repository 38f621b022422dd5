"""Fixed phrasings shared by the scripted participants of every domain: yes/no, closing, refusals, failures,
money, and how a payment method is named (the compact codec renders tool results with it).

A domain's own sentences (its identity and detail questions, its confirmation step) are its own module's, e.g.
`pipeline.domains.retail.phrases`. Nothing here invents a figure: every number or id is passed in by the caller,
who took it from a tool result or a user message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

YES_NO = "(yes/no)"
ANYTHING_ELSE = "Is there anything else I can help you with?"
NOT_FOUND_IDENTITY = "I couldn't find an account with those details. Could you check them and tell me again?"
GOODBYE = "You're welcome. Have a great day!"
TRANSFER = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."  # τ²-bench's words, any domain
NO_POLICY_REASON = "this request is not something I can do under our policy."  # fallback; never in a sound task


# ---- naming payment methods (what the customer says, and the codec shows) ---------------------------------
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
    customer said continues with that method's id (see `name_item`)."""
    said = describe_payment(method, methods)
    pid = _field(method, "id")
    return said if said.endswith(str(pid)) else f"{said} {pid}"


def money(amount: float) -> str:
    """'$12.50', '-$3.10'."""
    return f"-${-amount:.2f}" if amount < 0 else f"${amount:.2f}"


# ---- the oracle's questions -------------------------------------------------------------------------------
REFUSED_AFTER_FACT = f"I'm sorry, but I cannot do that. {ANYTHING_ELSE}"


def declined() -> str:
    return f"Understood, I won't make that change. {ANYTHING_ELSE}"


def refusal(reason: str) -> str:
    return f"I'm sorry, but I cannot do that: {reason} {ANYTHING_ELSE}"


def refusal_again(reason: str) -> str:
    return f"I understand your frustration, and I'm sorry, but I cannot make an exception: {reason} {ANYTHING_ELSE}"


def failed(error: str) -> str:
    return f"I'm sorry, I was not able to complete that: {error.removeprefix('Error: ')} {ANYTHING_ELSE}"
