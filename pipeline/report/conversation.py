"""One flipped task, rendered: the decisive tool call, the failing verdict, and both conversations side by side.

The left column is always the baseline (before), the right the candidate (after); rows are aligned so that
identical turns sit on the same line (greyed) and the turns where the two runs part ways stand out. The
decisive call is outlined and marked in both columns (or in the one column that has it).
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.dataset import Task
from pipeline.report.flips import CallRef, DecisiveCall, Flip, align_messages, write_tools
from pipeline.report.html import Safe, esc, join, note, table, tag
from pipeline.rollout import Message, ToolCall

MAX_TEXT = 2000
KIND_TEXT = {
    "changed_arguments": "same tool, different arguments",
    "changed_tool": "a different tool at this point",
    "extra_in_failing": "a call only the failing trial made",
    "missing_in_failing": "a call the failing trial never made",
    "context": "the same call, made after a different conversation",
}


def call_text(c: ToolCall) -> str:
    if c.arguments is None:
        return f"{c.name}(<unparsed: {c.raw_arguments!r}>)"
    return f"{c.name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in c.arguments.items())})"


def _short(x: Any) -> str:
    s = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= 300 else s[:300] + "…"


def _message(m: Message, decisive: CallRef | None, side_label: str, writes: frozenset[str]) -> Safe:
    calls = []
    for j, c in enumerate(m.tool_calls):
        hit = decisive is not None and decisive.index == j
        cls = "call" + (" write" if c.name in writes else "") + (" decisive" if hit else "")
        marker = tag("span", f"◆ decisive call ({side_label})", cls="marker") if hit else ""
        calls.append(join([marker, tag("code", call_text(c), cls=cls)]))
    text = m.content or ""
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"… [{len(m.content or '') - MAX_TEXT} more characters]"
    role = m.role + (f" · {m.name}" if m.role == "tool" and m.name else "") + (" · error" if m.error else "")
    cls = f"msg {m.role}" + (" error" if m.error else "")
    body = join([tag("div", role, cls="role"), tag("div", text, cls="text") if text else "", *calls])
    return tag("div", body, cls=cls)


def _side(d: DecisiveCall | None, failing: bool) -> CallRef | None:
    return None if d is None else d.failing if failing else d.passing


def conversation_table(flip: Flip) -> Safe:
    before, after = flip.before, flip.after
    left_failing = flip.failing_side == "baseline"
    d_left, d_right = _side(flip.decisive, left_failing), _side(flip.decisive, not left_failing)
    writes = (write_tools(before), write_tools(after))
    rows = []
    for i, j, same in align_messages(before, after):
        cells = []
        hits = (d_left is not None and d_left.message == i, d_right is not None and d_right.message == j)
        for pos, (idx, traj, d, label) in enumerate(((i, before, d_left, "before"), (j, after, d_right, "after"))):
            # the side without the decisive call gets a pointer where the other side made it
            absent = hits[1 - pos] and d is None
            pointer = tag("span", "◆ no such call in this trial", cls="marker") if absent else ""
            if idx is None:
                cells.append(tag("td", join([pointer, tag("span", "—", cls="empty")])))
                continue
            ref = d if d is not None and d.message == idx else None
            cell = join([pointer, _message(traj.messages[idx], ref, label, writes[pos])])
            cells.append(tag("td", cell, cls="decisive" if ref else None))
        rows.append(tag("tr", join(cells), cls="same" if same else "differs"))
    head = join(
        [
            tag("th", f"before: {before.agent} · trial {before.trial}"),
            tag("th", f"after: {after.agent} · trial {after.trial}"),
        ]
    )
    return Safe(f'<table class="convo"><thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody></table>')


def decisive_box(flip: Flip) -> Safe:
    d = flip.decisive
    if d is None:
        return tag(
            "div",
            "No tool call tells the two trials apart: both made the same calls after the same "
            "conversation; the verdict below says what failed.",
            cls="decisive-box",
        )
    parts = [tag("strong", "Decisive tool call: "), KIND_TEXT[d.kind]]
    rows = []
    if d.failing:
        rows.append(["failing trial", tag("code", call_text(d.failing.call), cls="call")])
    if d.passing:
        rows.append(["passing trial", tag("code", call_text(d.passing.call), cls="call")])
    body = [tag("p", join(parts)), table(["", "call"], rows)]
    if d.arg_diffs:
        body.append(
            table(
                ["argument", "failing value", "passing value"], [[k, _short(a), _short(b)] for k, a, b in d.arg_diffs]
            )
        )
    return tag("div", join(body), cls="decisive-box")


def verdict_block(flip: Flip) -> Safe:
    v = flip.failing_verdict
    failed = [c for c in v.components if c.required and not c.passed]
    parts = [tag("h3", f"Why the failing trial ({flip.failing_side}, trial {v.trial}) failed")]
    if failed:
        parts.append(table(["component", "details"], [[c.name, "; ".join(c.details) or "—"] for c in failed]))
    if v.diffs:
        parts.append(
            table(
                ["kind", "table", "record", "field", "expected", "actual"],
                [
                    [d.kind.replace("_", " "), d.table, d.key, d.path, _short(d.expected), _short(d.actual)]
                    for d in v.diffs
                ],
            )
        )
    else:
        parts.append(note("No field of the final state differs from the expected state."))
    return join(parts)


def render_flip(flip: Flip, task: Task | None) -> Safe:
    arrow = "fixed" if flip.direction == "fixed" else "regressed"
    (bc, bn), (cc, cn) = flip.baseline, flip.candidate
    title = f"{flip.task_id} — {arrow}: baseline {bc}/{bn} → candidate {cc}/{cn} passing trials"
    parts = [tag("h3", title)]
    if task is not None:
        writes = write_tools(flip.failing)
        gold = [a for a in task.gold_actions if a.name in writes]
        parts.append(tag("p", join([tag("strong", "Goal: "), task.user_script.goal])))
        if gold:
            parts.append(
                tag(
                    "p",
                    join(
                        [
                            tag("strong", "Gold writes: "),
                            join(
                                tag(
                                    "code",
                                    call_text(ToolCall(id="gold", name=a.name, arguments=a.arguments)),
                                    cls="call",
                                )
                                for a in gold
                            ),
                        ]
                    ),
                )
            )
    parts += [
        decisive_box(flip),
        verdict_block(flip),
        tag("h3", "Conversation, before and after"),
        conversation_table(flip),
    ]
    return Safe(f'<div class="flip {arrow}" data-task="{esc(flip.task_id)}">{join(parts)}</div>')
