"""Short versions of policies, for the `compact` chat format, each bound to the exact policy text it summarizes.

A summary file (`*.md` here) opens with YAML front matter listing the sha256 digests of the policy texts it stands
for. `summary_of(policy)` is a pure function of the policy text: a policy with a summary renders as the summary,
any other (an edited policy, an unknown domain) renders in full. So measure, serve, SFT and GRPO, which all see
only the policy text, render it alike, and a summary never outlives the policy it was written for.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import yaml

from pipeline.errors import InputError

HERE = Path(__file__).parent


def digest(policy: str) -> str:
    return hashlib.sha256(policy.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def summaries(directory: Path = HERE) -> dict[str, str]:
    """Policy digest → summary, from every summary file; a malformed file fails naming it."""
    out: dict[str, str] = {}
    for path in sorted(directory.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        _, front, body = text.split("---\n", 2) if text.startswith("---\n") else ("", "", "")
        meta = yaml.safe_load(front) if front else None
        digests = meta.get("summarizes") if isinstance(meta, dict) else None
        if not body.strip() or not isinstance(digests, list) or not digests:
            raise InputError(f"{path}: a policy summary opens with front matter `summarizes: [sha256, ...]`")
        for d in digests:
            out[str(d)] = body.strip()
    return out


def summary_of(policy: str) -> str:
    """The summary bound to this exact policy text, or the text itself."""
    return summaries().get(digest(policy), policy)
