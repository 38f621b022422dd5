"""A task's starting state: its set-up actions run on both sides before the first message.

τ²-bench tasks carry `initial_state.initialization_actions`: calls (`env_type` 'assistant' or 'user', `func_name`,
`arguments`) that put the world in the state the conversation starts from (a SIM card unseated, a line
suspended). Each runs on its side, through the domain's set-up functions or, where the name is a tool of that side,
the tool; the domain's synchronisation follows every one. Set-up calls are not episode events: they leave no
trace in the world log, only in the state. Generic over domains.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from pipeline.dataset.task import Action, Task
from pipeline.digest import sha256_json
from pipeline.errors import TaskError
from pipeline.world import Session, ToolError, World, bounds_for, call_tool, domain_label, synchronise

SIDES: dict[object, str] = {"assistant": "assistant", "user": "user"}
_CACHE_SIZE = 4096
_started: OrderedDict[tuple[str, str, str], dict] = OrderedDict()
_lock = threading.Lock()
_UNSUPPORTED = ("initialization_data", "message_history")


class TaskSetupError(TaskError, ValueError):
    """A task whose set-up cannot run; the message names the task and the action."""


def setup_actions(task: Task) -> list[Action]:
    """The task's set-up actions, each with the side that runs it as its requestor (none for most tasks)."""
    state = task.initial_state or {}
    given = [f for f in _UNSUPPORTED if state.get(f)]
    if given:
        raise TaskSetupError(f"task {task.id}: initial_state.{given[0]}: not supported")
    raw = state.get("initialization_actions") or []
    if not isinstance(raw, list):
        raise TaskSetupError(f"task {task.id}: initial_state.initialization_actions: expected a list")
    actions = []
    for i, a in enumerate(raw):
        where = f"task {task.id}: initial_state.initialization_actions[{i}]"
        if not isinstance(a, dict) or not isinstance(a.get("func_name"), str):
            raise TaskSetupError(f"{where}: expected an object with func_name")
        side = SIDES.get(a.get("env_type"))
        if side is None:
            raise TaskSetupError(
                f"task {task.id}: initial_state.initialization_actions: not supported: [{i}].env_type"
                f" {a.get('env_type')!r}, expected 'assistant' or 'user'"
            )
        args = a.get("arguments") or {}
        if not isinstance(args, dict):
            raise TaskSetupError(f"{where}.arguments: expected an object")
        actions.append(Action(name=a["func_name"], arguments=args, requestor=side))
    return actions


def run_setup_action(session: Session, action: Action) -> Any:
    """Run one set-up action on its side, atomically, then the synchronisation; its result. Raises ToolError."""
    side = action.requestor or "assistant"
    domain = session.world.domain
    functions = domain.setup_functions().get(side, None)
    spec = functions.tools.get(action.name) if functions is not None else None
    if spec is None:
        tools = session.world.tools_of(side)
        spec = tools.tools.get(action.name) if tools is not None else None
    if spec is None:
        raise TaskSetupError(
            f"no set-up function or {side} tool named {action.name!r} in domain {domain_label(domain)!r}"
        )
    args = spec.validate(action.arguments)
    bounds = bounds_for(domain)
    authorize, session.authorize = session.authorize, False  # set-up is the world's doing, not a party's
    session.begin_call()
    try:
        result = call_tool(session, action.name, spec.func, args, bounds)
    except Exception:
        session.rollback_call()
        raise
    finally:
        session.authorize = authorize
    session.commit_call()
    synchronise(session)
    return result


def run_setup(session: Session, task: Task) -> Session:
    """Put `session` in the task's starting state (both sides); a set-up action that fails is a bad task."""
    for i, action in enumerate(setup_actions(task)):
        try:
            run_setup_action(session, action)
        except TaskSetupError as exc:
            raise TaskSetupError(
                f"task {task.id}: initial_state.initialization_actions: not supported: [{i}] ({action.name}): {exc}"
            ) from None
        except ToolError as exc:
            raise TaskSetupError(
                f"task {task.id}: initial_state.initialization_actions[{i}] ({action.name}) failed: {exc}"
            ) from None
    synchronise(session)
    return session


def start_session(world: World, task: Task | None, authenticated_user_id: str | None = None) -> Session:
    """A fresh session of `world` in `task`'s starting state (the base world when the task sets nothing up).

    A task's starting state is computed once per (world, set-up) and shared: a committed overlay record is never
    changed in place (a later call edits a copy), so each new session takes a shallow copy of the overlay.
    """
    if task is not None and (started := world.start(task, authenticated_user_id)) is not None:
        return started
    session = world.session(authenticated_user_id=authenticated_user_id)
    if task is None or not (task.initial_state or {}).get("initialization_actions"):
        return run_setup(session, task) if task is not None else session
    key = (world.fingerprint, task.id, sha256_json(task.initial_state))
    with _lock:
        overlay = _started.get(key)
        if overlay is not None:
            _started.move_to_end(key)
    if overlay is None:
        run_setup(session, task)
        overlay = {table: dict(records) for table, records in session.overlay.items()}
        with _lock:
            _started[key] = overlay
            while len(_started) > _CACHE_SIZE:
                _started.popitem(last=False)
    session.overlay = {table: dict(records) for table, records in overlay.items()}
    return session
