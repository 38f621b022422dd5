"""Failure modes: why a failed trial failed, named from the trajectory and the world's own log.

The modes of the registry (`pipeline.grading.modes`: plan adherence, invention, tool-output misread, inaction) plus
the failure signature and whether the failure "looked complete" from the transcript alone. Everything is
recomputed from what the agent saw and did; nothing is read from the agent that produced the trajectory.

Evidence rules, each tied to the message where it shows:

- plan_adherence: an affirmed confirmation request followed by no write attempt (before the next
  confirmation request, or ever); a completion claim ("I have cancelled…", "all set") when no write attempt
  preceded it and the state it is about is unchanged; a write refused because nobody was authenticated yet;
  a successful write with no affirmed confirmation request (a yes/no question about an action) since the
  previous write attempt (stricter than the static check, which takes a 'yes' after any assistant text).
  A write call whose arguments do not parse is an attempt (it uses up the 'yes'), malformed: it shows as
  the signature malformed_write, not as plan adherence.
- invention: a write argument with a value that occurs in no earlier user message or successful tool output
  (refused writes count too; an enumerated cancel reason is a choice, not a value); a money amount or id-like
  figure in an assistant message that no earlier user message or tool output contains.
- misread: a write on an order whose last shown status is not the one that write needs; a payment method the
  customer does not have per get_user_details (when the id itself came from the conversation: an id from
  nowhere is invention); a payment change to a gift card whose shown balance is below the order's shown
  payment; an assistant message stating a status for an order that contradicts the status the
  tools last showed; a completion claim right after a refused write that nothing else explains; on a
  conditional request, a write of the branch the record's shown field does not select
  (`pipeline.grading.branches`).

- inaction: a request the policy allows, whose gold writes, left with no write attempt (nor a step on the customer's
  side) while the end state lacks the gold's change, beyond what the rules above explain (a claim with no write, a
  misread status, an unchecked fix): never acted, refused, or gave up (`pipeline.grading.inaction`).

Dual control (a customer who holds tools; `pipeline.grading.dual_control`), each while the end state fails an env
assertion, named in `dual_control` and counted under its mode: the agent claims a fix it never verified on the
customer's side (unverified_fix, plan adherence); skips a step the workflow requires for what the customer's tools
showed (skipped_step, plan adherence); asks the customer to do what leaves their side worse (wrong_instruction,
misread).

A trial the judge's review finds the user simulator to blame for (it stopped before its goal, leaked its
instructions, asked for something its scenario does not) names no agent mode: it is its own category.

Dominant mode: the mode of the earliest evidence in the conversation (the first place the trial went wrong);
evidence in one message for several modes is ranked by the registry's priority: invention, then misread, then plan
adherence, then inaction (the more specific explanation first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from pipeline.dataset import Task
from pipeline.grading.branches import branch_findings
from pipeline.grading.dual_control import DUAL_CONTROL_MODES, DualControlMode, dual_control_findings
from pipeline.grading.inaction import inaction_findings
from pipeline.grading.mode_rules import Finding, find_modes
from pipeline.grading.modes import FAILURE_MODES, PRIORITY, FailureMode
from pipeline.grading.timeline import Timeline, build_timeline
from pipeline.grading.utterances import claims_completion, order_ids, refuses
from pipeline.grading.verdict import Verdict
from pipeline.rollout import MALFORMED, PROGRAM_FAILURES, Trajectory
from pipeline.strict import Strict
from pipeline.world import EMPTY, Vocabulary, resolve_domain

Signature = Literal[
    "tool_error_unrecovered",
    "empty_lookup_unrecovered",
    "policy_violation",
    "gave_up",
    "transferred",
    "malformed_write",
]
SIGNATURES: tuple[str, ...] = Signature.__args__  # type: ignore[attr-defined]
__all__ = ["FAILURE_MODES", "PRIORITY", "RULES", "SIGNATURES", "FailureAnalysis", "analyze"]


class FailureAnalysis(Strict):
    """The diagnosis of one trial (empty for a passing trial)."""

    modes: list[FailureMode] = Field(default_factory=list, description="Every failure mode that applies.")
    dominant: FailureMode | None = Field(default=None, description="The one mode that best explains the failure.")
    evidence: dict[str, list[str]] = Field(default_factory=dict, description="Mode → what in the trial shows it.")
    signature: list[Signature] = Field(default_factory=list, description="How the failure shows on the surface.")
    looked_complete: bool = Field(
        default=False,
        description="Final message signals completion, at least one write happened, last tool result no error.",
    )
    dual_control: list[DualControlMode] = Field(
        default_factory=list,
        description="The dual-control modes that apply (unverified_fix, skipped_step, wrong_instruction), each"
        " also counted under its mode in `modes`; left out of the JSON when none.",
    )
    user_simulator: list[str] = Field(
        default_factory=list,
        description="Why the user simulator, not the agent, failed the trial (the judge's review); when set, no"
        " agent failure mode is named.",
    )

    @model_serializer(mode="wrap")
    def _drop_no_dual_control(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and not data.get("dual_control"):
            data.pop("dual_control", None)
        return data


def vocabulary_of(domain: str) -> Vocabulary:
    """The failure-mode vocabulary of a trajectory's domain (`EMPTY` when the domain declares none)."""
    return resolve_domain(domain).vocabulary() or EMPTY


class Evidence:
    """What the rules read: the task, the trajectory and its timeline, the verdict, the domain's words and write
    tools, and what the rules before found."""

    def __init__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> None:
        self.task, self.trajectory, self.verdict = task, trajectory, verdict
        self.timeline = build_timeline(trajectory)
        domain = resolve_domain(trajectory.domain)
        self.vocabulary = domain.vocabulary() or EMPTY
        self.writes = domain.tools.of_kind("write")
        self.found: list[Finding] = []


Rule = Callable[[Evidence], list[Finding]]
RULES: tuple[Rule, ...] = (
    lambda e: find_modes(e.timeline, e.vocabulary),
    lambda e: dual_control_findings(e.trajectory, e.verdict, e.vocabulary),
    lambda e: branch_findings(e.task, e.timeline),
    lambda e: inaction_findings(e.task, e.trajectory, e.timeline, e.verdict, e.found, e.writes),
)
"""The rule sets, in order; each sees what the ones before found (`Evidence.found`)."""


def analyze(task: Task, trajectory: Trajectory, verdict: Verdict) -> FailureAnalysis:
    """The failure analysis of one graded trial; empty when it passed or was lost to infrastructure."""
    if verdict.passed or verdict.infra_error:
        return FailureAnalysis()
    e = Evidence(task, trajectory, verdict)
    timeline, vocabulary = e.timeline, e.vocabulary
    review = verdict.component("user_simulator")
    if review is not None and not review.passed:
        return FailureAnalysis(
            signature=signatures(task, timeline, verdict, vocabulary),
            looked_complete=looked_complete(timeline),
            user_simulator=review.details or ["the judge found the user simulator at fault"],
        )
    for rule in RULES:
        e.found += rule(e)
    found = e.found
    modes = [m for m in FAILURE_MODES if any(f.mode == m for f in found)]
    evidence: dict[str, list[str]] = {}
    for f in found:
        line = f"message {f.pos}: " + (f"{f.kind}: " if f.kind else "") + f.text
        if line not in evidence.setdefault(f.mode, []):
            evidence[f.mode].append(line)
    return FailureAnalysis(
        modes=modes,
        dominant=dominant_mode(found),
        evidence=evidence,
        signature=signatures(task, timeline, verdict, vocabulary),
        looked_complete=looked_complete(timeline),
        dual_control=[k for k in DUAL_CONTROL_MODES if any(f.kind == k for f in found)],
    )


def dominant_mode(found: list[Finding]) -> str | None:
    """The mode of the earliest evidence; ties within one message broken by `PRIORITY`."""
    if not found:
        return None
    return min(found, key=lambda f: (f.pos, PRIORITY.index(f.mode))).mode


def _whose(step) -> bool:
    """A read the world refused because the record is another customer's: that answer is the information (the
    order the customer named is not theirs), not a fault to recover from."""
    return (
        step.kind in ("read", "identity")
        and step.error_category == "unauthorized"
        and "another customer" in step.content
    )


def signatures(task: Task, timeline: Timeline, verdict: Verdict, vocabulary: Vocabulary = EMPTY) -> list[str]:
    steps = timeline.steps
    out: list[str] = []
    groups = vocabulary.lookup_groups
    errors = [(i, s) for i, s in enumerate(steps) if not s.ok and not _empty_lookup(s, groups) and not _whose(s)]
    if errors:
        i, last = errors[-1]
        if not any(s.ok and s.name == last.name for s in steps[i + 1 :]):
            out.append("tool_error_unrecovered")
    for i, s in enumerate(steps):
        if _empty_lookup(s, groups) and not any(t.ok and groups.get(t.name) == groups[s.name] for t in steps[i + 1 :]):
            out.append("empty_lookup_unrecovered")
            break
    failed = set(verdict.failed_components)
    if failed & {"static.policy_violation", "static.authorization", "static.after_transfer"}:
        out.append("policy_violation")
    if timeline.termination in ("agent_stop", "turn_limit", *PROGRAM_FAILURES) or _unaddressed(
        task, timeline, vocabulary
    ):
        out.append("gave_up")
    if any(s.ok and s.name == "transfer_to_human_agents" for s in steps):
        out.append("transferred")
    if any(s.is_write and s.error_category == MALFORMED for s in steps):
        out.append("malformed_write")
    return out


def _empty_lookup(step, groups) -> bool:
    return not step.ok and step.error_category == "not_found" and step.name in groups


def _unaddressed(task: Task, timeline: Timeline, vocabulary: Vocabulary) -> list[int]:
    """Requests the agent never looked into, acted on nor spoke about (the conversation ended with them open)."""
    texts = [s.text for s in timeline.said if s.role == "assistant"]
    steps = timeline.steps
    out = []
    for i, req in enumerate(task.user_script.requests):
        if req.intent in ("info", "transfer"):
            continue
        if req.about:
            key = vocabulary.record_key or "order_id"
            done = any(s.arguments.get(key) == req.about for s in steps) or any(
                req.about in order_ids(t, vocabulary) for t in texts
            )
        else:
            done = any(vocabulary.write_intents.get(s.name) == req.intent for s in steps) or any(
                claims_completion(t) or refuses(t) for t in texts
            )
        if not done:
            out.append(i)
    return out


def looked_complete(timeline: Timeline) -> bool:
    """The transcript alone reads as success: closing claim, a successful write, and no error at the end."""
    said = [s for s in timeline.said if s.role == "assistant"]
    steps = timeline.steps
    return (
        bool(said)
        and claims_completion(said[-1].text)
        and any(s.is_write and s.ok for s in steps)
        and bool(steps)
        and steps[-1].ok
    )
