"""The inaction rules: the agent did not act on a request it should serve (never acted, refused wrongly, gave up).

A request the agent should serve is one the policy allows (`expect: done`) whose gold makes a write; a task without
requests (an imported τ²-bench task) is one such request when its gold makes a write on either side. It was left
undone when the end state lacks a change the gold makes (a missing change, or an unmet env assertion) and the agent
attempted no write for it: none of the request's gold write tools on a record no other request names, none naming
its record, and, with dual control, no step on the customer's side. Other modes explain some undone requests (a
completion claim with no write, a status misread, a fix claimed unchecked: findings marked `undone`); inaction is
named when more requests were left undone than they explain.

Where it shows: the first assistant message when the agent made no tool call at all (never_acted); else the last
transfer (gave_up), or refusal (refused) or closing ("anything else?", gave_up) that no other rule explains, with
nothing looked up since the customer spoke (identifying the customer aside); else the agent's last message (gave_up).
The last, not the first: a refusal restated after pushback is no new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.dataset import Task
from pipeline.grading.mode_rules import Finding
from pipeline.grading.timeline import Step, Timeline
from pipeline.grading.utterances import claims_completion, closes, refuses
from pipeline.grading.verdict import Verdict
from pipeline.rollout import Trajectory

MODE = "inaction"


@dataclass(frozen=True)
class Served:
    """A request the agent should act on: its index (None: the whole task), its gold writes, its record."""

    index: int | None
    writes: frozenset[str]
    about: str | None = None


def inaction_findings(
    task: Task,
    trajectory: Trajectory,
    timeline: Timeline,
    verdict: Verdict,
    found: list[Finding],
    writes: frozenset[str],
) -> list[Finding]:
    """The inaction evidence of a failed trial (one finding at most), given the other rules' `found`."""
    if not left_undone(verdict):
        return []
    undone = [r for r in to_serve(task, writes) if not acted(r, task, timeline, trajectory)]
    if len(undone) <= sum(f.undone for f in found):
        return []
    pos, kind, text = where(timeline, {f.pos for f in found})
    which = ", ".join("the task" if r.index is None else f"request {r.index}" for r in undone)
    return [Finding(pos, MODE, f"{text}; left undone: {which}", kind=kind)]


def left_undone(verdict: Verdict) -> bool:
    """The end state lacks what the gold makes: a missing change, or an env assertion unmet."""
    env = verdict.component("env_assertions")
    return any(d.kind == "missing_change" for d in verdict.diffs) or (env is not None and not env.passed)


def to_serve(task: Task, writes: frozenset[str]) -> list[Served]:
    """The requests the agent should act on: allowed ones whose gold writes."""
    requests = task.user_script.requests
    if not requests:
        names = frozenset(a.name for a in task.gold_actions if a.name in writes or a.requestor == "user")
        return [Served(None, names)] if names else []
    out = []
    for i, req in enumerate(requests):
        names = frozenset(a.name for a in task.gold_actions if a.request == i and a.name in writes)
        if req.expect == "done" and names:
            out.append(Served(i, names, req.about))
    return out


def _values(arguments: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for v in arguments.values():
        out.update(str(x) for x in (v if isinstance(v, list) else [v]) if not isinstance(x, (dict, list)))
    return out


def acted(r: Served, task: Task, timeline: Timeline, trajectory: Trajectory) -> bool:
    """Whether the agent attempted a write for `r` (or, for the whole task, had the customer take any step)."""
    attempts = [s for s in timeline.steps if s.is_write]
    if r.index is None:
        return bool(attempts) or bool(trajectory.customer_calls)
    others = {q.about for j, q in enumerate(task.user_script.requests) if j != r.index and q.about} - {r.about}
    for s in attempts:
        named = _values(s.arguments)
        if (r.about is not None and r.about in named) or (s.name in r.writes and not named & others):
            return True
    return False


def where(timeline: Timeline, explained: set[int]) -> tuple[int, str, str]:
    """(message, kind, what) where the inaction shows."""
    said = [s for s in timeline.said if s.role == "assistant"]
    if not timeline.steps:
        first = said[0].pos if said else 0
        return first, "never_acted", "made no tool call at all"
    looked = False
    last: tuple[int, str, str] | None = None
    for item in timeline.items:
        if isinstance(item, Step):
            looked = looked or item.kind != "identity"  # finding out who the customer is looks nothing up
            if item.ok and item.kind == "transfer":
                last = (item.pos, "gave_up", "transferred to a human agent")
            continue
        if item.role == "user":
            looked = False
            continue
        if looked or claims_completion(item.text) or item.pos in explained:
            continue
        if refuses(item.text):
            last = (item.pos, "refused", f"refuses ({_short(item.text)}) with nothing looked up")
        elif closes(item.text):
            last = (item.pos, "gave_up", f"moves on ({_short(item.text)}) without acting")
    if last is not None:
        return last
    end = said[-1].pos if said else 0
    return end, "gave_up", "the conversation ended"


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
