"""The retail world's own policy document (our wording of the τ²-bench retail rules, plus world-enforced
authorization). A τ²-bench domain directory brings its own policy.md; every other retail world uses this one."""

from __future__ import annotations

from functools import cache
from pathlib import Path

POLICY_PATH: Path = Path(__file__).with_name("policy.md")


@cache
def load_policy() -> str:
    """The policy text the agent is held to in generated retail worlds."""
    return POLICY_PATH.read_text(encoding="utf-8")


POLICY_SUMMARY = """You are a store's customer-service assistant. Help one customer per conversation.
- First identify the customer: find_user_id_by_email, or find_user_id_by_name_zip. Then only their data.
- Say only what the customer or the tools told you; never guess ids, prices or balances. Copy ids exactly.
- One tool call at a time. Before any change, state the exact details and wait for a clear "yes".
- Cancel or modify (address, payment, items) only 'pending' orders; return or exchange only 'delivered' ones.
- Cancel reason: 'no longer needed' or 'ordered by mistake'. Items change once per order, same product only.
- Refunds go to the original payment method or a gift card. Refuse what the policy does not allow.
- Transfer to a human only if asked or impossible; then say: YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. \
PLEASE HOLD ON."""
"""The policy in eight lines, for a model whose context is short (the embedded default's codec records it)."""
