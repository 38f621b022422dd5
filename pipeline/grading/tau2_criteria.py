"""τ²-bench evaluation criteria onto our tasks: what its reward reads, taken from its own task records.

A τ²-bench results file carries the tasks its run was graded on; a domain directory's tasks.json carries them
too. Either way the criteria (communicate_info, nl_assertions, reward_basis and each action's requestor and
compare_args) are taken from there, so the τ²-compatible reward reads exactly what τ²-bench's did.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pipeline.dataset import EnvAssertion, Evaluation, Task
from pipeline.dataset.assertions import argument_problem
from pipeline.errors import TaskError

DEFAULT_BASIS = ("DB", "COMMUNICATE")  # τ²-bench's reward basis when a task names none


class Tau2CriteriaError(TaskError, ValueError):
    """A τ²-bench task record whose evaluation criteria do not fit; the message names the task and field."""


def _strings(task_id: str, field: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Tau2CriteriaError(f"task {task_id}: evaluation_criteria.{field}: expected a list")
    return [str(v) for v in value]


Known = Collection[tuple[str, str]]
"""The (side, function) pairs a domain can check; a mapping to the functions (`known_assertions`) also has each
assertion's arguments checked against its function's signature."""


def env_assertions(task_id: str, criteria: dict, known: Known | None = None) -> list[EnvAssertion]:
    """The criteria's env assertions, each one the domain can check (`known`: its (side, function) pairs, or the
    functions by pair; None or empty: a domain without env assertions, which refuses any)."""
    raw = criteria.get("env_assertions") or []
    if raw and not known:
        raise Tau2CriteriaError(f"task {task_id}: evaluation_criteria.env_assertions: not supported by this domain")
    out = []
    for i, a in enumerate(raw):
        where = f"task {task_id}: evaluation_criteria.env_assertions[{i}]"
        try:
            assertion = EnvAssertion.model_validate({k: v for k, v in a.items() if k != "message" or v is not None})
        except (ValueError, AttributeError) as exc:
            raise Tau2CriteriaError(f"{where}: {exc}") from None
        if (assertion.env_type, assertion.func_name) not in (known or set()):
            raise Tau2CriteriaError(
                f"{where}: {assertion.env_type}-side assertion {assertion.func_name!r}: not supported by this domain"
            )
        func = known.get((assertion.env_type, assertion.func_name)) if isinstance(known, Mapping) else None
        problem = argument_problem(func, assertion.arguments) if func is not None else None
        if problem:
            raise Tau2CriteriaError(f"{where}: {assertion.env_type}-side assertion {assertion.func_name!r}: {problem}")
        out.append(assertion)
    return out


def unsupported_criteria(task_id: str, criteria: dict, known: Known | None = None) -> None:
    """Refuse criteria whose τ²-bench reward ours would silently get wrong: environment assertions the domain cannot
    check (`known`: the (side, function) pairs it can), and a DB basis without gold actions (τ²-bench then scores
    DB 1 whatever the agent did; ours could not tell missing actions from an empty list)."""
    env_assertions(task_id, criteria, known)
    basis = criteria.get("reward_basis")
    basis = DEFAULT_BASIS if basis is None else basis
    if criteria.get("actions") is None and ("DB" in basis or "ENV_ASSERTION" in basis):
        raise Tau2CriteriaError(
            f"task {task_id}: evaluation_criteria.actions: missing with {sorted(basis)} in the reward basis"
            " (τ²-bench would score DB 1 unchecked); give the gold actions, [] for none"
        )


def with_criteria(task: Task, raw: dict, known: Known | None = None) -> Task:
    """`task` with the evaluation criteria of the τ²-bench task record `raw` (same id); `known` as for
    `unsupported_criteria`."""
    criteria = raw.get("evaluation_criteria")
    if criteria is None:  # τ²-bench scores a task without criteria 1: an empty basis
        return task.model_copy(update={"evaluation": Evaluation(reward_basis=[])})
    if not isinstance(criteria, dict):
        raise Tau2CriteriaError(f"task {task.id}: evaluation_criteria: expected an object")
    unsupported_criteria(task.id, criteria, known)
    actions = criteria.get("actions") or []
    if len(actions) != len(task.gold_actions):
        raise Tau2CriteriaError(
            f"task {task.id}: evaluation_criteria.actions: {len(actions)} actions, the task {len(task.gold_actions)}"
        )
    gold = []
    for i, (ours, theirs) in enumerate(zip(task.gold_actions, actions, strict=True)):
        if not isinstance(theirs, dict) or theirs.get("name") != ours.name:
            raise Tau2CriteriaError(f"task {task.id}: evaluation_criteria.actions[{i}]: not the task's {ours.name}")
        requestor = theirs.get("requestor") or ours.requestor
        gold.append(ours.model_copy(update={"requestor": requestor, "compare_args": theirs.get("compare_args")}))
    basis = criteria.get("reward_basis")
    evaluation = Evaluation(
        communicate_info=_strings(task.id, "communicate_info", criteria.get("communicate_info")),
        nl_assertions=_strings(task.id, "nl_assertions", criteria.get("nl_assertions")),
        reward_basis=None if basis is None else _strings(task.id, "reward_basis", basis),
        env_assertions=env_assertions(task.id, criteria, known),
    )
    return task.model_copy(update={"gold_actions": gold, "evaluation": evaluation})


def apply_criteria(tasks: list[Task], raw_tasks: list[dict], known: Known | None = None) -> list[Task]:
    """Every task with the criteria of the raw record of the same id (tasks without one are kept as they are)."""
    by_id = {str(r.get("id")): r for r in raw_tasks if isinstance(r, dict)}
    return [with_criteria(t, by_id[t.id], known) if t.id in by_id else t for t in tasks]
