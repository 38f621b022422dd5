"""What an assistant message does, read from its wording: claims completion, refuses, asks to confirm, states a status.

Keyword rules, deliberately loose enough for a model agent that phrases things a little differently from the
scripted oracle, and strict enough that the oracle's own sentences never trip the wrong rule.
"""

from __future__ import annotations

import re

from pipeline.world.retail.schema import ORDER_STATUSES

_CLAIM = re.compile(
    r"\b(has|have) been (cancell?ed|modified|updated|changed|requested|returned|exchanged|refunded|submitted|placed)\b"
    r"|\b(is|are) now\b|\ball set\b|\bsuccessfully\b|\bcompleted the request\b"
    r"|\bI(?: have|'ve) (completed|cancell?ed|modified|updated|changed|processed|submitted|placed|requested|"
    r"returned|exchanged|refunded|gone ahead)\b",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"\b(cannot|can't|can not|unable|not able|not possible|not allowed|not eligible|unfortunately|"
    r"i'm sorry, but|i am sorry, but|won't be able|failed|did not go through|didn't go through)\b",
    re.IGNORECASE,
)
_DECLINED = re.compile(r"\bI won't make that change\b|\bwon't (make|do)\b", re.IGNORECASE)
_ASK_CONFIRM = re.compile(
    r"\(yes/no\)|\b(confirm|proceed|shall i|should i|would you like me to|do you want me to|go ahead)\b", re.IGNORECASE
)
_PLEASE_CONFIRM = re.compile(r"\bplease confirm\b|\(yes/no\)", re.IGNORECASE)
_ACTION_WORD = re.compile(r"\b(cancel|modify|change|return|exchange|update|refund|replace|switch)\w*\b", re.IGNORECASE)
_CLOSING = re.compile(r"anything else|something else i can|else i can help", re.IGNORECASE)

_STATUS_WORDS = sorted({*ORDER_STATUSES, "canceled", "shipped"}, key=len, reverse=True)
_STATUS_ALT = "|".join(re.escape(s) for s in _STATUS_WORDS)
# "order #W1 is 'processed'", "#W1 ... (status 'pending (item modified)')", "#W1 is already delivered"; not
# "has been cancelled" or "is now ..." (those claim a change, a completion claim, not a reading of the status).
_STATUS_CLAIM = re.compile(
    rf"(#W\d+)[^.!?\n]{{0,60}}?\b(?:is|was|status(?: is)?|has (?:the )?status|shows as)\s+"
    rf"(?:currently\s+|already\s+|still\s+|marked\s+as\s+|in\s+)?['\"]?({_STATUS_ALT})['\"]?",
    re.IGNORECASE,
)
_ORDER_ID = re.compile(r"#W\d+")


def claims_completion(text: str) -> bool:
    """Says an action was carried out ("has been cancelled", "all set", "I have updated"), and refuses nothing."""
    return bool(_CLAIM.search(text)) and not refuses(text) and not _DECLINED.search(text)


def refuses(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def asks_confirmation(text: str) -> bool:
    """A yes/no request about an action: the policy's confirmation step (not 'anything else?')."""
    if _CLOSING.search(text) or not _ACTION_WORD.search(text):
        return False
    return ("?" in text and bool(_ASK_CONFIRM.search(text))) or bool(_PLEASE_CONFIRM.search(text))


def order_ids(text: str) -> list[str]:
    return _ORDER_ID.findall(text)


def _canonical(status: str) -> str:
    s = status.lower()
    return "cancelled" if s == "canceled" else s


def status_claims(text: str) -> list[tuple[str, str]]:
    """(order id, status) for each order the message says is in some status."""
    return [(m.group(1), _canonical(m.group(2))) for m in _STATUS_CLAIM.finditer(text)]


def status_compatible(claimed: str, shown: str) -> bool:
    """Whether a stated status agrees with the one a tool showed ('shipped' covers every status after pending)."""
    if claimed == shown:
        return True
    if claimed == "shipped":
        return shown not in ("pending", "pending (item modified)", "cancelled")
    return claimed == "pending" and shown == "pending (item modified)"
