"""Evidence for values: did a value an agent wrote or stated come from the conversation, or from nowhere?

A value is grounded when it occurs, as a whole token, in an earlier user message or successful tool output.
Matching is normalised the way the same value is naturally written in different places: case and runs of
whitespace are ignored, an order id matches with or without its '#', and money amounts match any number a
tool printed to the cent (signs ignored: a refund of 3.10 is stated as '$3.10'). Error outputs are not
evidence: a refusal echoes the agent's own arguments ("order #W999 not found").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

CENT = 0.005
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE]-?\d+)?")
_MONEY = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
# Id-like tokens worth checking in what the agent says: order ids, long digit runs (item, product, tracking
# numbers) and prefixed ids (credit_card_0123456, user ids such as sara_doe_496 are words plus digits).
_IDS = re.compile(r"#?\bW\d{4,}\b|(?<![\w.$,])\d{6,}(?!\w|[.,]\d)|\b[a-z]+(?:_[a-z]+)*_\d{4,}\b", re.IGNORECASE)


def normalize(text: str) -> str:
    """Lower case, single spaces."""
    return " ".join(text.lower().split())


def _strip_hash(value: str) -> str:
    return value[1:] if value.startswith("#") else value


def _token_pattern(value: str) -> re.Pattern[str]:
    """`value` as a whole token: not glued to a letter, digit or underscore on either side."""
    body = r"\s+".join(re.escape(part) for part in value.split())
    return re.compile(rf"(?<![\w]){body}(?![\w])")


def flat_values(value: Any) -> list[str]:
    """The scalar values inside a write argument (list elements one by one), as strings."""
    if isinstance(value, list | tuple):
        return [s for v in value for s in flat_values(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in flat_values(v)]
    return [] if value is None else [str(value)]


@dataclass
class EvidencePool:
    """What an agent may take values from, in conversation order: user messages and successful tool outputs."""

    texts: list[str] = field(default_factory=list)
    amounts: list[float] = field(default_factory=list)
    _joined: str | None = None

    def add(self, text: str | None) -> None:
        if not text:
            return
        self.texts.append(normalize(text))
        self.amounts.extend(abs(float(x)) for x in _NUMBER.findall(text))
        self._joined = None

    @property
    def joined(self) -> str:
        if self._joined is None:
            self._joined = "\n".join(self.texts)
        return self._joined

    def grounded(self, value: Any) -> bool:
        """Every scalar inside `value` occurs as a whole token in the pool (empty strings always do)."""
        return all(self._has(s) for s in flat_values(value))

    def _has(self, scalar: str) -> bool:
        s = _strip_hash(normalize(scalar))
        if not s:
            return True
        return bool(_token_pattern(s).search(self.joined))

    def has_amount(self, amount: float) -> bool:
        return any(abs(abs(amount) - a) < CENT for a in self.amounts)

    def ungrounded(self, arguments: dict[str, Any], skip: Iterable[str] = ()) -> list[str]:
        """'name=value' for each write argument with a scalar found nowhere in the pool."""
        skipped = set(skip)
        out = []
        for name, value in (arguments or {}).items():
            if name in skipped:
                continue
            missing = [s for s in flat_values(value) if not self._has(s)]
            if missing:
                out.append(f"{name}={missing[0] if len(missing) == 1 else missing}")
        return out


def stated_figures(text: str) -> list[tuple[str, str]]:
    """(kind, token) of each figure an assistant message states: 'money' amounts and 'id'-like tokens."""
    out = [("money", m.group(1).replace(",", "")) for m in _MONEY.finditer(text)]
    out += [("id", m.group(0)) for m in _IDS.finditer(text)]
    return out


def unsupported_figures(text: str, pool: EvidencePool) -> list[str]:
    """The figures in `text` that no earlier user message or tool output contains."""
    bad = []
    for kind, token in stated_figures(text):
        ok = pool.has_amount(float(token)) if kind == "money" else pool.grounded(token)
        if not ok:
            bad.append(f"${token}" if kind == "money" else token)
    return bad
