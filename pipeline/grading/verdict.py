"""The verdict: one pydantic result saying pass/fail, which components decided it, and why."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pipeline.rollout.trajectory import Strict

DiffKind = Literal["wrong_value", "unrequested_change", "missing_change"]


class FieldDiff(Strict):
    """One field where the final state and the expected state disagree."""

    kind: DiffKind = Field(
        description="wrong_value: both changed it, differently; unrequested_change: only the"
        " agent changed it; missing_change: only the gold actions changed it."
    )
    table: str
    key: str = Field(description="Record id.")
    path: str = Field(description="Dotted field path inside the record, e.g. 'payment_history.2.amount'.")
    expected: Any = None
    actual: Any = None
    base: Any = None


class ComponentResult(Strict):
    name: str
    passed: bool
    required: bool = True
    details: list[str] = Field(default_factory=list, description="Why it failed (empty when passed).")
    notes: list[str] = Field(
        default_factory=list, description="Diagnostics worth reporting that do not fail the component."
    )


class Verdict(Strict):
    task_id: str
    trial: int = 0
    passed: bool
    infra_error: bool = Field(default=False, description="Excluded from metrics: not the agent's fault.")
    components: list[ComponentResult] = Field(default_factory=list)
    diffs: list[FieldDiff] = Field(default_factory=list)
    final_hash: str = ""
    expected_hash: str = ""
    diagnostics: list[str] = Field(default_factory=list)

    def component(self, name: str) -> ComponentResult | None:
        return next((c for c in self.components if c.name == name), None)

    @property
    def failed_components(self) -> list[str]:
        return [c.name for c in self.components if c.required and not c.passed]
