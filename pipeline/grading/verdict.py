"""The verdict: one pydantic result saying pass/fail, which components decided it, and why."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer

from pipeline.errors import InputError
from pipeline.strict import Strict

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


class Tau2Check(Strict):
    """One τ²-bench reward component: its name (DB, ACTION, COMMUNICATE, NL_ASSERTION, ENV_ASSERTION), its reward,
    and what it found."""

    name: str
    reward: float
    details: list[str] = Field(default_factory=list)


class Tau2Result(Strict):
    """The τ²-compatible reward of a trial: τ²-bench's own rule, beside our strict verdict."""

    reward: float = Field(description="Product of the components in the task's reward basis (0 or 1 in practice).")
    passed: bool = Field(description="reward == 1.")
    basis: list[str] = Field(default_factory=list, description="The reward basis the product was taken over.")
    checks: list[Tau2Check] = Field(default_factory=list, description="Every component computed, in the basis or not.")
    terminated_early: bool = Field(default=False, description="Neither side ended the chat: scored 0 unevaluated.")
    replay_diverged: bool = Field(
        default=False, description="A replayed write's outcome differs from the conversation's tool message: 0."
    )
    unjudged: list[str] = Field(
        default_factory=list, description="Basis components left out for want of a judge (NL_ASSERTION)."
    )
    notes: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        """Names of the basis components that scored below 1 (['termination'] for an early end, ['replay'] for a
        conversation τ²-bench's strict replay could not reproduce)."""
        if self.terminated_early:
            return ["termination"]
        if self.replay_diverged:
            return ["replay"]
        return [c.name for c in self.checks if c.name in self.basis and c.reward < 1.0]


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
    tau2: Tau2Result | None = Field(default=None, description="The τ²-compatible reward (None: not computed).")
    environment_reward: float | None = Field(
        default=None,
        description="The environment's own score of the episode (`reward()` of an environment behind the protocol),"
        " reported beside the verdict, never in place of it; None (and left out of the record): it gives none.",
    )

    @model_serializer(mode="wrap")
    def _without_absent_reward(self, handler: Any) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("environment_reward", 0) is None:
            del out["environment_reward"]
        return out

    def component(self, name: str) -> ComponentResult | None:
        return next((c for c in self.components if c.name == name), None)

    @property
    def failed_components(self) -> list[str]:
        return [c.name for c in self.components if c.required and not c.passed]

    def outcome(self, verdict: str = "strict") -> bool:
        """Pass or fail under the chosen verdict: 'strict' (ours) or 'tau2' (τ²-bench's reward)."""
        if verdict == "strict":
            return self.passed
        if verdict != "tau2":
            raise InputError(f"unknown verdict {verdict!r}; expected strict or tau2")
        if self.tau2 is None:
            raise InputError(f"task {self.task_id} trial {self.trial}: no τ²-compatible reward in this verdict")
        return self.tau2.passed
