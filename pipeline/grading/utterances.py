"""What an assistant message does, read from its wording: claims completion, refuses, asks to confirm, states a status.

Keyword rules, deliberately loose enough for a model agent that phrases things a little differently from the
scripted oracle, and strict enough that the oracle's own sentences never trip the wrong rule.
"""

from __future__ import annotations

import re

from pipeline.world import Vocabulary

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


def claims_completion(text: str) -> bool:
    """Says an action was carried out ("has been cancelled", "all set", "I have updated"), and refuses nothing."""
    return bool(_CLAIM.search(text)) and not refuses(text) and not _DECLINED.search(text)


def refuses(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def closes(text: str) -> bool:
    """Closes the topic ('anything else I can help with?')."""
    return bool(_CLOSING.search(text))


def asks_confirmation(text: str) -> bool:
    """A yes/no request about an action: the policy's confirmation step (not 'anything else?')."""
    if _CLOSING.search(text) or not _ACTION_WORD.search(text):
        return False
    return ("?" in text and bool(_ASK_CONFIRM.search(text))) or bool(_PLEASE_CONFIRM.search(text))


def order_ids(text: str, vocabulary: Vocabulary) -> list[str]:
    """The record ids a message cites, in the domain's form (retail: order ids '#W…')."""
    return vocabulary.ref_pattern.findall(text) if vocabulary.ref_pattern else []


def status_claims(text: str, vocabulary: Vocabulary) -> list[tuple[str, str]]:
    """(record id, status) for each record the message says is in some status."""
    pattern = vocabulary.status_claim_pattern
    if pattern is None:
        return []
    return [(m.group(1), vocabulary.canonical(m.group(2))) for m in pattern.finditer(text)]


def status_compatible(claimed: str, shown: str, vocabulary: Vocabulary) -> bool:
    """Whether a stated status agrees with the one a tool showed (retail: 'shipped' covers every status after
    pending)."""
    return vocabulary.compatible(claimed, shown)
