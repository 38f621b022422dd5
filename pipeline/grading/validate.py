"""Tasks checked against the world they run in: what the schema alone cannot see.

A task written for another world, a gold action naming a tool the world lacks or a record it does not hold, a
check no end state can meet, a check its own gold actions fail, an env assertion its function cannot take (an
argument it has no parameter for) or its gold end state does not meet, a customer who can only identify as
someone else:
each would otherwise be scored, silently, as the agent's failure. Each task is proved solvable: its gold actions
are replayed and its checks graded on the end state they reach. `task_problems` lists the problems, one line each
naming the task and the field; `check_tasks` raises on any.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from pathlib import Path

from pipeline.dataset import (
    OrderStatusCheck,
    Task,
    TaskFileError,
    TaskSetupError,
    ToolNotCalledCheck,
    assertion_problem,
    check_assertions,
    replay_gold,
)
from pipeline.world import World, WorldLoadError, domain_label

# refusals of a gold call that mean the task is wrong, not the agent (a write on a missing record, or after the
# gold transfer); τ²-bench tasks do attempt a few writes the policy refuses (precondition) and look up records
# that do not exist (reads), on purpose
_BAD_ANY = frozenset({"invalid_arguments", "internal"})
_BAD_WRITE = _BAD_ANY | {"not_found", "unauthorized", "transferred"}


class TaskValidationError(TaskFileError):
    """Tasks that do not fit the world they are run in; the message lists every problem."""


def task_problems(world: World, tasks: Iterable[Task]) -> list[str]:
    """Every problem of `tasks` against `world`, one line each: 'task <id>: field <field>: <what>'."""
    problems: list[str] = []
    for task in tasks:
        problems += [f"task {task.id!r}: {p}" for p in _problems(world, task)]
    return problems


def check_tasks(world: World, tasks: Iterable[Task], source: str = "tasks") -> None:
    """Raise TaskValidationError naming every problem (the first 20) of `tasks` against `world`."""
    problems = task_problems(world, tasks)
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise TaskValidationError(
            f"{source}: {len(problems)} problem(s) against world {world.name!r}:\n  {shown}{more}"
        )


def _problems(world: World, task: Task) -> list[str]:
    if task.world != world.name:
        return [f"field world: the task is written for world {task.world!r}, not {world.name!r}"]
    out: list[str] = []
    if task.customer_user_id is not None and not any(
        task.customer_user_id in world.table(t) for t in world.table_names
    ):
        out.append(f"field customer_user_id: no record {task.customer_user_id!r} in world {world.name!r}")
    unknown = [
        (i, a.name, world.side_of(a.requestor))
        for i, a in enumerate(task.gold_actions)
        if a.name not in world.tools_of(world.side_of(a.requestor)).tools
    ]
    out += [
        f"field gold_actions.{i}.name: unknown tool {name!r}" + (" of the customer's" if side == "user" else "")
        for i, name, side in unknown
    ]
    out += _identity_problems(world, task)
    check_problems = []
    for i, check in enumerate(task.checks):
        check_problems += [f"field checks.{i}: {p}" for p in _check_problems(world, check)]
    out += check_problems
    assertions = task.evaluation.env_assertions if task.evaluation is not None else []
    assertion_problems = [
        f"field evaluation.env_assertions.{i}: {p}"
        for i, a in enumerate(assertions)
        if (p := assertion_problem(world.domain, a)) is not None
    ]
    out += assertion_problems
    if not unknown:
        try:
            session = replay_gold(world, task)
        except TaskSetupError as exc:
            return [*out, f"field initial_state: {exc}"]
        refused = []
        for i, event in enumerate(session.log):
            bad = _BAD_WRITE if event.kind == "write" else _BAD_ANY
            if not event.ok and event.error_category in bad:
                why = f"{event.name} is refused ({event.error_category}): {event.error}"
                refused.append(f"field gold_actions.{i}: {why}")
        out += refused
        if not check_problems and not refused:  # a refused gold call is the cause; its checks' failures follow
            out += _gold_check_problems(world, task, session)
        if not assertion_problems and not refused:  # the gold end state must meet the task's own env assertions
            out += [
                f"field evaluation.env_assertions.{i}: the gold end state does not meet {r.env_type}-side"
                f" {r.func_name}" + (f" ({r.error})" if r.error else "")
                for i, r in enumerate(check_assertions(session, assertions))
                if not r.met
            ]
    return out


def _gold_check_problems(world: World, task: Task, session) -> list[str]:
    """The task's checks graded on its own gold end state: a check the gold fails makes the task unsolvable. A check
    on what the agent tells the customer (`communicated`) is about the conversation, which gold actions do not hold."""
    from pipeline.dataset import CommunicatedCheck
    from pipeline.grading.task_checks import evaluate_check

    log = [event.to_dict() for event in session.log]
    changed = session.changed()
    out = []
    for i, check in enumerate(task.checks):
        if isinstance(check, CommunicatedCheck):
            continue
        result = evaluate_check(check, world, log, changed)
        if not result.passed:
            out.append(f"field checks.{i}: contradicts the task's gold actions: {'; '.join(result.details)}")
    return out


def _identity_problems(world: World, task: Task) -> list[str]:
    """A customer who can only give another user's id or email could never be served as the task's customer."""
    known, customer = task.user_script.known, task.customer_user_id
    if customer is None or "users" not in world.table_names:
        return []
    if known.user_id is not None and known.user_id != customer:
        return [f"field user_script.known.user_id: {known.user_id!r} is not the task's customer {customer!r}"]
    named = None not in (known.first_name, known.last_name, known.zip)
    other_way = known.user_id is not None or named or bool(known.facts)
    if known.email is not None and not other_way:
        users = world.table("users")
        owners = sorted(k for k, u in users.items() if str(getattr(u, "email", "")).lower() == known.email.lower())
        if owners and customer not in owners:  # an unknown email is a scenario (the customer misremembers it)
            return [
                f"field user_script.known.email: {known.email!r} belongs to {owners[0]!r}, not the task's customer"
                f" {customer!r}, and the customer knows no other way to be identified"
            ]
    return []


def _check_problems(world: World, check) -> list[str]:
    if isinstance(check, ToolNotCalledCheck) and check.tool not in world.tools.tools:
        return [f"unknown tool {check.tool!r}"]
    if isinstance(check, OrderStatusCheck):
        record_type = world.domain.tables.get("orders")
        if record_type is None:
            return [f"domain {domain_label(world.domain)!r} has no orders table"]
        field = record_type.model_fields.get("status")
        allowed = _literal_values(field.annotation) if field is not None else ()
        if allowed and check.status not in allowed:
            return [f"impossible status {check.status!r} for order {check.order_id}; statuses are {list(allowed)}"]
        if check.order_id not in world.table("orders"):
            return [f"no order {check.order_id!r} in world {world.name!r}"]
    return []


def validate_file(path: Path, world_ref: str | None = None, domain: str | None = None) -> str:
    """`agentloop tasks validate`: the file's tasks against the schema and their world; one line to show.

    Without `world_ref` the world is the one the tasks name (all must name one); raises on any problem.
    """
    from pipeline.dataset import read_tasks
    from pipeline.world import load_world

    tasks = read_tasks(path)
    if not tasks:
        raise TaskFileError(f"{path}: no tasks")
    if world_ref is None:
        named = sorted({t.world for t in tasks})
        if len(named) != 1:
            raise TaskValidationError(f"{path}: tasks name {len(named)} worlds {named}; pass --world to pick one")
        try:
            world = load_world(named[0], domain)
        except WorldLoadError as exc:
            missing = "--world" if domain else "--domain (the domain that reads it: module:attribute) or --world"
            why = f"{path}: the tasks' world {named[0]!r} does not load; pass {missing} ({exc})"
            raise TaskValidationError(why) from None
    else:
        world = load_world(world_ref, domain)
    check_tasks(world, tasks, str(path))
    return f"{path}: {len(tasks)} valid tasks (checked against world {world.name!r})"


def _literal_values(annotation: typing.Any) -> tuple:
    """The values a `Literal` annotation allows, also inside an optional (`Literal[...] | None`); () for any other."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    for member in typing.get_args(annotation):
        if typing.get_origin(member) is typing.Literal:
            return typing.get_args(member)
    return ()
