"""Tasks that flipped between baseline and candidate, and the one tool call that changed the outcome.

A task flipped up when the baseline failed it on every valid trial and the candidate passed it at least once;
down is the reverse. For each flip one failing and one passing trajectory are paired (the same trial index
when both have it, so the scripted user wears the same persona) and compared call by call: the decisive call
is the first write whose name or arguments differ between the two (a changed call, one only the failing trial
made, or one it never made); when no write differs, the first differing tool call of any kind; when the two
made exactly the same calls, the first write made after a different conversation (e.g. without asking the
customer to confirm).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import zip_longest
from typing import Any, Literal

from pipeline.digest import canonical_json
from pipeline.grading import Verdict
from pipeline.report.inputs import RunData
from pipeline.rollout import Message, ToolCall, Trajectory
from pipeline.world import resolve_domain

Direction = Literal["fixed", "regressed"]
DecisiveKind = Literal["changed_arguments", "changed_tool", "extra_in_failing", "missing_in_failing", "context"]


@dataclass(frozen=True)
class CallRef:
    """A tool call located in its trajectory: message index, index among the message's calls, the call, and
    whether the trajectory's domain registers the tool as a write."""

    message: int
    index: int
    call: ToolCall
    is_write: bool = False


@dataclass
class DecisiveCall:
    kind: DecisiveKind
    failing: CallRef | None
    passing: CallRef | None
    arg_diffs: list[tuple[str, Any, Any]] = field(default_factory=list)  # (argument, failing value, passing value)


@dataclass
class Flip:
    task_id: str
    direction: Direction
    baseline: tuple[int, int]
    candidate: tuple[int, int]
    failing_side: Literal["baseline", "candidate"]
    failing: Trajectory
    passing: Trajectory
    failing_verdict: Verdict
    decisive: DecisiveCall | None

    @property
    def before(self) -> Trajectory:
        return self.failing if self.failing_side == "baseline" else self.passing

    @property
    def after(self) -> Trajectory:
        return self.passing if self.failing_side == "baseline" else self.failing


def write_tools(traj: Trajectory) -> frozenset[str]:
    """The tools of kind 'write' in the domain the trajectory ran in."""
    return resolve_domain(traj.domain).tools.of_kind("write")


def tool_calls(traj: Trajectory) -> list[CallRef]:
    writes = write_tools(traj)
    return [
        CallRef(i, j, c, c.name in writes)
        for i, m in enumerate(traj.messages)
        if m.role == "assistant"
        for j, c in enumerate(m.tool_calls)
    ]


def _call_key(c: ToolCall) -> str:
    args = canonical_json(c.arguments) if c.arguments is not None else f"raw:{c.raw_arguments}"
    return f"{c.name}({args})"


def _arg_diffs(a: ToolCall | None, b: ToolCall | None) -> list[tuple[str, Any, Any]]:
    if a is None or b is None:
        return []
    aa, bb = a.arguments or {}, b.arguments or {}
    return [(k, aa.get(k), bb.get(k)) for k in sorted(set(aa) | set(bb)) if aa.get(k) != bb.get(k)]


def _decide(f: CallRef | None, p: CallRef | None) -> DecisiveCall:
    if f and p:
        kind: DecisiveKind = "changed_arguments" if f.call.name == p.call.name else "changed_tool"
    else:
        kind = "extra_in_failing" if f else "missing_in_failing"
    return DecisiveCall(
        kind=kind, failing=f, passing=p, arg_diffs=_arg_diffs(f.call if f else None, p.call if p else None)
    )


def _context(traj: Trajectory, upto: int) -> list[str]:
    return [f"{m.role}:{m.content}" for m in traj.messages[:upto] if m.role in ("user", "assistant") and m.content]


def decisive_call(failing: Trajectory, passing: Trajectory) -> DecisiveCall | None:
    """The call that changed the outcome (see the module docstring); None when nothing tells the two apart."""
    fc, pc = tool_calls(failing), tool_calls(passing)
    sm = SequenceMatcher(a=[_call_key(r.call) for r in fc], b=[_call_key(r.call) for r in pc], autojunk=False)
    pairs: list[tuple[CallRef | None, CallRef | None]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "equal":
            pairs += list(zip_longest(fc[i1:i2], pc[j1:j2]))
    for f, p in pairs:
        if (f and f.is_write) or (p and p.is_write):
            return _decide(f, p)
    if pairs:
        return _decide(*pairs[0])
    for f, p in zip(fc, pc, strict=True):
        if f.is_write and _context(failing, f.message) != _context(passing, p.message):
            return DecisiveCall(kind="context", failing=f, passing=p)
    return None


def _pick_pair(fail_run: RunData, pass_run: RunData, task_id: str) -> tuple[int, int] | None:
    fails = [t for t in fail_run.trials_of(task_id) if fail_run.outcome((task_id, t)) is False]
    passes = [t for t in pass_run.trials_of(task_id) if pass_run.outcome((task_id, t)) is True]
    fails = [t for t in fails if (task_id, t) in fail_run.trajectories]
    passes = [t for t in passes if (task_id, t) in pass_run.trajectories]
    if not fails or not passes:
        return None
    same = sorted(set(fails) & set(passes))
    return (same[0], same[0]) if same else (fails[0], passes[0])


def find_flips(baseline: RunData, candidate: RunData) -> list[Flip]:
    """Every task that flipped, fixed ones first, each with its paired trajectories and decisive call."""
    b_counts, c_counts = baseline.counts(), candidate.counts()
    out: list[Flip] = []
    for task_id in sorted(set(b_counts) & set(c_counts)):
        (bc, bn), (cc, cn) = b_counts[task_id], c_counts[task_id]
        if bn == 0 or cn == 0:
            continue
        if bc == 0 and cc > 0:
            direction: Direction = "fixed"
            side: Literal["baseline", "candidate"]
            fail_run, pass_run, side = baseline, candidate, "baseline"
        elif bc > 0 and cc == 0:
            direction, fail_run, pass_run, side = "regressed", candidate, baseline, "candidate"
        else:
            continue
        pair = _pick_pair(fail_run, pass_run, task_id)
        if pair is None:
            continue
        failing = fail_run.trajectories[(task_id, pair[0])]
        passing = pass_run.trajectories[(task_id, pair[1])]
        out.append(
            Flip(
                task_id=task_id,
                direction=direction,
                baseline=(bc, bn),
                candidate=(cc, cn),
                failing_side=side,
                failing=failing,
                passing=passing,
                failing_verdict=fail_run.verdicts[(task_id, pair[0])],
                decisive=decisive_call(failing, passing),
            )
        )
    return sorted(out, key=lambda f: (f.direction != "fixed", f.task_id))


def _message_key(m: Message) -> str:
    calls = ";".join(_call_key(c) for c in m.tool_calls)
    return f"{m.role}|{m.name or ''}|{m.content or ''}|{calls}"


def align_messages(left: Trajectory, right: Trajectory) -> list[tuple[int | None, int | None, bool]]:
    """Rows of (left message index, right message index, same) aligning two conversations side by side."""
    a, b = [_message_key(m) for m in left.messages], [_message_key(m) for m in right.messages]
    rows: list[tuple[int | None, int | None, bool]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [(i, j, True) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
        else:
            rows += [(i, j, False) for i, j in zip_longest(range(i1, i2), range(j1, j2))]
    return rows
