"""Fixed phrasings shared by the scripted participants of every domain: yes/no, closing, refusals, failures,
money.

A domain's own sentences (its identity and detail questions, its confirmation step) are its own module's, e.g.
`pipeline.domains.retail.phrases`. Nothing here invents a figure: every number or id is passed in by the caller,
who took it from a tool result or a user message.
"""

from __future__ import annotations

YES_NO = "(yes/no)"
ANYTHING_ELSE = "Is there anything else I can help you with?"
NOT_FOUND_IDENTITY = "I couldn't find an account with those details. Could you check them and tell me again?"
GOODBYE = "You're welcome. Have a great day!"
TRANSFER = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."  # τ²-bench's words, any domain
NO_POLICY_REASON = "this request is not something I can do under our policy."  # fallback; never in a sound task


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


# ---- inaction (`pipeline.agents.scripted.inaction`) ---------------------------------------------------------
WRONGFUL_REFUSAL = "I'm sorry, but I can't help with that request."
WRONGFUL_REFUSAL_REASON = "that is not something I can help with."
NOT_ACTING = f"Thank you for letting me know. {ANYTHING_ELSE}"
GIVING_UP = "I'm afraid I can't take this any further myself."
TRANSFERRED = "I have transferred you to a human agent who can help with this."
