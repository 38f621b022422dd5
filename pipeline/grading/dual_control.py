"""The failure modes dual control adds, when the customer holds tools of their own and the agent can only ask.

Each is a finer name for one of the three modes the loop targets, read from the trajectory (the customer's own
calls and what their tools showed them included) and the verdict, with the domain's words for its workflow
(`Vocabulary.workflow_steps`, `Vocabulary.harmful_changes`). Each needs the end state to fail an env assertion:
a trial whose end state meets the task's assertions names none of them.

- unverified_fix (plan adherence): the agent says the issue is fixed or resolved while no call of the customer's
  tools came between its own last call and that message (the fix was claimed, never checked on their side).
- skipped_step (plan adherence): the customer's tools showed a problem the workflow has a step for, and the agent
  never had the customer take that step afterwards (a problem that a wrong instruction caused is that
  instruction's, not a skipped step).
- wrong_instruction (misread): the agent had the customer make a change that left their side worse (turn on
  airplane mode, turn off mobile data, a slower network mode), never undone.
"""

from __future__ import annotations

import re
from typing import Literal

from pipeline.grading.mode_rules import Finding
from pipeline.grading.modes import DUAL_CONTROL
from pipeline.grading.verdict import Verdict
from pipeline.rollout import Trajectory
from pipeline.world import EMPTY, Vocabulary

DualControlMode = Literal["unverified_fix", "wrong_instruction", "skipped_step"]
DUAL_CONTROL_MODES: tuple[str, ...] = tuple(DUAL_CONTROL)
PARENT: dict[str, str] = DUAL_CONTROL
_FIXED = re.compile(r"\b(fixed|resolved|should (now )?work|working (again|now)|all set)\b", re.IGNORECASE)


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def dual_control_findings(trajectory: Trajectory, verdict: Verdict, vocabulary: Vocabulary = EMPTY) -> list[Finding]:
    """Every piece of dual-control evidence in a trial whose end state fails an env assertion."""
    env = verdict.component("env_assertions")
    if env is None or env.passed:
        return []
    unmet = "; ".join(env.details[:2])
    return [
        *unverified_fixes(trajectory, unmet),
        *wrong_instructions(trajectory, vocabulary),
        *skipped_steps(trajectory, vocabulary),
    ]


def unverified_fixes(trajectory: Trajectory, unmet: str = "") -> list[Finding]:
    """The first message that says the issue is fixed with no customer call since the agent's last call."""
    checked_at = [c.at for c in trajectory.customer_calls]
    last_change = -1
    for pos, m in enumerate(trajectory.messages):
        if m.role == "assistant" and m.tool_calls:
            last_change = pos
        claim = m.role == "assistant" and not m.tool_calls and bool(_FIXED.search(m.content or ""))
        if claim and not any(last_change < at <= pos for at in checked_at):
            why = f" ({unmet})" if unmet else ""
            text = f"says the issue is fixed, never verified on the customer's side{why}"
            return [Finding(pos, PARENT["unverified_fix"], text, kind="unverified_fix", undone=True)]
    return []


def _asker(trajectory: Trajectory, at: int) -> int | None:
    """The agent's message the customer acted on: the last one before their call."""
    for pos in range(min(at, len(trajectory.messages)) - 1, -1, -1):
        m = trajectory.messages[pos]
        if m.role == "assistant" and not m.tool_calls:
            return pos
    return None


def _harmful(vocabulary: Vocabulary, content: str | None) -> bool:
    return any(re.search(p, content or "") for p in vocabulary.harmful_changes)


def wrong_instructions(trajectory: Trajectory, vocabulary: Vocabulary) -> list[Finding]:
    calls = trajectory.customer_calls
    out = []
    for i, c in enumerate(calls):
        if c.result.error or not _harmful(vocabulary, c.result.content):
            continue
        if any(later.call.name == c.call.name and not later.result.error for later in calls[i + 1 :]):
            continue  # undone (or redone) afterwards
        pos = _asker(trajectory, c.at)
        if pos is not None:
            what = _first_line(c.result.content)
            text = f"asked the customer to {c.call.name}, which left their side worse ({what})"
            out.append(Finding(pos, PARENT["wrong_instruction"], text, kind="wrong_instruction"))
    return out


def skipped_steps(trajectory: Trajectory, vocabulary: Vocabulary) -> list[Finding]:
    calls = trajectory.customer_calls
    out: list[Finding] = []
    named: set[str] = set()
    for i, c in enumerate(calls):
        if c.result.error:
            continue
        if any(_harmful(vocabulary, earlier.result.content) for earlier in calls[:i]):
            break  # what shows after a harmful change is that change's doing
        for pattern, step in vocabulary.workflow_steps.items():
            shown = re.search(pattern, c.result.content or "")
            if not shown or step in named:
                continue
            if any(later.call.name == step for later in calls[i + 1 :]):
                continue
            named.add(step)
            text = f"the customer's {c.call.name} showed '{shown.group(0)}'; the workflow's {step} was never asked for"
            out.append(Finding(c.at, PARENT["skipped_step"], text, kind="skipped_step"))
    return out
