"""The failure modes the loop targets, in one registry: what a failed trial is blamed on (`pipeline.grading.
failure_modes` names them by their rules), what synthesis aims tasks at, what the scripted flawed agents plant, and
what the gate and the report track.

Every consumer iterates `MODES` (or `FAILURE_MODES`, their names): adding a mode is an entry here and its rules
(`RULES` in `pipeline.grading.failure_modes`), plus the planted flaw in each domain's scripted agent. The planted
flaw is data here (a name and what it does), so grading never imports an agent.

The fourth mode is named `inaction`: what the agent did on the request is nothing, whether it never called a tool,
refused what the policy allows, or gave up; "refusal" would name one of the three, and "gave_up" is already a
failure signature (`pipeline.grading.failure_modes.SIGNATURES`), which says how a failure looks, not why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import AfterValidator


@dataclass(frozen=True)
class ModeSpec:
    """One failure mode: its name, what it means, how it is found, and its defaults everywhere it is used."""

    name: str
    description: str
    rules: tuple[str, ...]  # the evidence that blames a failed trial on it (one line each; the code: RULES)
    priority: int  # evidence for several modes in one message: the lowest wins (the more specific explanation)
    planted: str  # the flaw a scripted flawed agent plants to exhibit it
    variants: tuple[str, ...]  # the planted flaw's variant names, as `planted_variants` reports them
    flaw_rate: float = 0.2  # planting rate of the plain `flawed` agent and `rollout --agent flawed`
    weight: float = 1.0  # target's default weight; 0: in no default split nor the gate's default tracked list
    dials: dict[str, float] = field(default_factory=dict)  # target's default dial → probability for its tasks
    # every rule reads what a tool showed: a trial in which no tool output appeared cannot show this mode, so an
    # agent that never saw one has no rate of it to compare against (the gate leaves it untested)
    needs_tool_output: bool = False


MODES: tuple[ModeSpec, ...] = (
    ModeSpec(
        name="plan_adherence",
        description="the agent departs from the policy's plan: writes unconfirmed or unauthenticated, or says done"
        " what it never did",
        rules=(
            "an affirmed confirmation request followed by no write attempt",
            "a completion claim with no write before it and the state it is about unchanged",
            "a write refused because nobody was authenticated yet",
            "a successful write with no affirmed confirmation request since the previous write attempt",
            "dual control: unverified_fix, skipped_step",
        ),
        priority=2,
        planted="skips the confirmation / never writes after the yes but says it is done / writes before"
        " authenticating",
        variants=("skip_confirmation", "no_write", "write_before_auth"),
        dials={"also_request": 0.7, "chained": 0.6, "pushback": 0.3, "underspecified": 0.2},
    ),
    ModeSpec(
        name="invention",
        description="the agent uses a value nobody said or showed",
        rules=(
            "a write argument with a value in no earlier user message or successful tool output",
            "a money amount or id-like figure in an assistant message that nothing earlier contains",
        ),
        priority=0,
        planted="one write argument replaced by a plausible value nobody said or showed",
        variants=("fabricate",),
        dials={"forgot_email": 0.6, "vague_item": 0.6, "underspecified": 0.4, "multi_item": 0.3},
    ),
    ModeSpec(
        name="misread",
        description="the agent acts against what the tools showed",
        rules=(
            "a write on a record whose last shown status is not the one that write needs",
            "a payment method the customer does not have, or a gift card whose shown balance is too low",
            "a stated status that contradicts the one the tools last showed",
            "a completion claim right after a refused write that nothing else explains",
            "on a conditional request, the branch the record's shown field does not select",
            "dual control: wrong_instruction",
        ),
        priority=1,
        planted="acts as if a record were in another state than shown: refuses naming a wrong status, or makes"
        " the write the shown state forbids",
        variants=(
            "refuse",
            "wrong_write",
            "wrong_total",
            "drop_segments",
            "bags_from_zero",
            "passenger_count",
            "write_refused",
            "wrong_branch",
        ),
        dials={"refusal": 0.7, "with_write": 0.6, "pushback": 0.4, "chained": 0.3, "underspecified": 0.2},
        needs_tool_output=True,
    ),
    ModeSpec(
        name="inaction",
        description="the agent does not act on a request it should serve: never acts, refuses wrongly, or gives up",
        rules=(
            "a request the policy allows, whose gold needs a write, got no write attempt (nor, with dual control,"
            " any step on the customer's side), and no other mode explains it",
            "shown where it happened: no tool call at all (never_acted), a refusal (refused), or a transfer or the"
            " end of the conversation (gave_up)",
        ),
        priority=3,
        planted="on one request the policy allows: refuses without a reason, transfers to a human, or closes"
        " without acting",
        variants=("wrongful_refusal", "give_up", "no_action"),
        weight=0.0,  # not in the committed loop's split nor the gate's list yet (params.yaml names three modes)
        dials={"with_write": 0.6, "pushback": 0.5, "chained": 0.3},
    ),
)
BY_NAME: dict[str, ModeSpec] = {m.name: m for m in MODES}
FAILURE_MODES: tuple[str, ...] = tuple(BY_NAME)
PRIORITY: tuple[str, ...] = tuple(m.name for m in sorted(MODES, key=lambda m: m.priority))
DUAL_CONTROL: dict[str, str] = {
    "unverified_fix": "plan_adherence",
    "wrong_instruction": "misread",
    "skipped_step": "plan_adherence",
}
"""The finer modes dual control adds (`pipeline.grading.dual_control`), each → the mode it is counted under."""
LOOP_MODES: tuple[str, ...] = tuple(m.name for m in MODES if m.weight > 0)
"""The modes the loop targets and gates on by default (a positive default weight)."""


def known_mode(name: str) -> str:
    """`name`, if it is a failure mode (a pydantic validator)."""
    if name not in BY_NAME:
        raise ValueError(f"unknown failure mode {name!r}; modes are {list(FAILURE_MODES)}")
    return name


FailureMode = Annotated[str, AfterValidator(known_mode)]
"""A failure mode's name, checked against the registry."""


def mode_of_variant(variant: str) -> str | None:
    """The mode whose planted flaw a variant name is (None for a variant no mode lists)."""
    return next((m.name for m in MODES if variant in m.variants), None)
