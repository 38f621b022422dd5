"""A task's own checks (pipeline.dataset.task.TaskCheck), evaluated on the final state and the world log."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.dataset import (
    CommunicatedCheck,
    NoWritesCheck,
    OrderStatusCheck,
    TaskCheck,
    ToolBudgetCheck,
    ToolNotCalledCheck,
    TransferCheck,
)
from pipeline.grading.verdict import ComponentResult
from pipeline.world import World


def evaluate_check(
    check: TaskCheck,
    world: World,
    log: list[dict[str, Any]],
    final_changed: Mapping[str, Mapping[str, dict]],
    said: Sequence[str] = (),
) -> ComponentResult:
    """One check's result, named 'task.<kind>'; `log` is the world's event log, `final_changed` the end delta,
    `said` the assistant's text messages."""
    problems: list[str] = []
    if isinstance(check, OrderStatusCheck):
        record = (final_changed.get("orders") or {}).get(check.order_id)
        if record is not None:
            status = record.get("status")
        else:
            base = world.table("orders").get(check.order_id)
            status = getattr(base, "status", None)  # records are typed per domain; None when there is none
        if status != check.status:
            problems.append(f"order {check.order_id} is {status!r}, expected {check.status!r}")
    elif isinstance(check, NoWritesCheck):
        problems += [
            f"successful write step {e.get('step')} {e.get('name')}"
            for e in log
            if e.get("kind") == "write" and e.get("ok")
        ]
    elif isinstance(check, ToolBudgetCheck):
        if len(log) > check.limit:
            problems.append(f"{len(log)} tool calls exceed the task's limit of {check.limit}")
    elif isinstance(check, TransferCheck):
        transferred = any(e.get("kind") == "transfer" and e.get("ok") for e in log)
        if transferred != check.expected:
            problems.append("transferred to a human agent" if transferred else "never transferred to a human agent")
    elif isinstance(check, CommunicatedCheck):
        text = "\n".join(said).lower()
        problems += [
            f"never told the customer {v!r}"
            for v in check.values
            if not re.search(rf"(?<![\w]){re.escape(v.lower())}(?![\w])", text)
        ]
    elif isinstance(check, ToolNotCalledCheck):
        n = sum(1 for e in log if e.get("name") == check.tool)
        if n:
            problems.append(f"{check.tool} was called {n} time(s)")
    else:  # pragma: no cover - the TaskCheck union is closed
        raise TypeError(f"unknown task check {type(check).__name__}")
    return ComponentResult(name=f"task.{check.kind}", passed=not problems, details=problems)


def evaluate_task_checks(
    checks: list[TaskCheck],
    world: World,
    log: list[dict[str, Any]],
    final_changed: Mapping[str, Mapping[str, dict]],
    said: Sequence[str] = (),
) -> list[ComponentResult]:
    """Every check of a task; a kind that repeats gets '.2', '.3', ... so component names stay unique."""
    seen: Counter[str] = Counter()
    results = []
    for check in checks:
        result = evaluate_check(check, world, log, final_changed, said)
        seen[result.name] += 1
        if seen[result.name] > 1:
            result = result.model_copy(update={"name": f"{result.name}.{seen[result.name]}"})
        results.append(result)
    return results
