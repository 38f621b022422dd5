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
