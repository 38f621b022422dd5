"""The τ²-compatible reward: τ²-bench's own scoring rule, computed beside our strict verdict.

Its semantics, as τ²-bench's evaluator defines them (reward = product over the task's `reward_basis`; a basis
not given is DB and COMMUNICATE, an empty one, or a τ²-bench task without criteria, scores 1):

- termination: a chat that neither the agent nor the user ended (max steps, too many errors, ...) scores 0 and
  nothing else is evaluated; the user's transfer and out-of-scope signals are stops like ###STOP###;
- DB: the trial's writes replayed on a fresh database and the gold actions replayed on another; the reward is
  1 when the two end states are equal, 0 otherwise. There is no authorization rule and no writes-after-transfer
  rule: every call runs whoever the conversation is about. A replayed write whose outcome differs from the
  conversation's tool message (a write our tools refused that τ²-bench's would run) is τ²-bench's strict replay
  failing: the trial scores 0. A gold write that fails leaves the gold state incomplete: a match then certifies
  nothing and DB drops out of the product (a mismatch still scores 0);
- ACTION: the share of gold actions matched by some tool call of the trial with the same name and the same
  values of its `compare_args` (all the call's arguments when None; JSON-text values compared as JSON);
- COMMUNICATE: each `communicate_info` string, lower-cased, occurs in some agent message's text, lower-cased with
  its commas removed (substring match, no judge);
- NL_ASSERTION: the judge (when one is configured) checks the task's `nl_assertions` on the transcript; without
  a judge the component is left out of the product and listed in `unjudged`;
- ENV_ASSERTION: each of the task's env assertions (a domain function on one side's final state, dual control)
  must return its `assert_value`, on the state the conversation's writes replayed from the task's set-up reach
  (both sides' writes, in order, the domain's synchronisation after each); 1 when all hold (or there are none),
  else 0. ACTION then matches a customer-side gold action against the customer's own calls.

Our own tasks (no τ²-bench criteria at all) are scored on DB and COMMUNICATE. `Tau2Config.upstream_tools` replays
both sides with τ²-bench's tool behaviour where the domain names quirks of it (`Domain.tau2_quirks`; retail:
`modify_pending_order_items`).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset import Task, start_session, task_assertions
from pipeline.digest import sha256_json
from pipeline.errors import TaskError
from pipeline.grading.judge import Judge, is_enabled
from pipeline.grading.tau2_criteria import DEFAULT_BASIS
from pipeline.grading.verdict import Tau2Check, Tau2Result
from pipeline.rollout import USER_ENDED, Message, Trajectory
from pipeline.world import Session, ToolEvent, World, domain_spec, execute

VerdictName = Literal["strict", "tau2"]
VERDICTS: tuple[str, ...] = VerdictName.__args__  # type: ignore[attr-defined]
REWARD_TYPES = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")
EVALUATED_TERMINATIONS = frozenset({"agent_stop", *USER_ENDED})  # τ²-bench's AGENT_STOP and USER_STOP
_INITIAL_STATE_FIELDS = ("initialization_data", "message_history")
_CACHE_SIZE = 4096


class Tau2Config(BaseModel):
    """How the τ²-compatible reward replays tool calls."""

    model_config = ConfigDict(extra="forbid")

    upstream_tools: bool = Field(
        default=False,
        description="Replay with τ²-bench's tool behaviour where it differs from ours (the domain's `tau2_quirks`;"
        " retail's item modification gives every replaced item the last new variant's price and options).",
    )
    check_record: bool = Field(
        default=True,
        description="Score 0 when a replayed write's outcome differs from the conversation's tool message, as"
        " τ²-bench's strict replay does. Off for imported τ²-bench runs, whose tool messages are our tools' replies"
        " rather than the ones τ²-bench recorded.",
    )


def _run(session: Session, quirks: dict, name: str, arguments: Any, requestor: str = "assistant") -> ToolEvent:
    quirk = quirks.get(name) if requestor == "assistant" else None
    if quirk is None:
        return execute(session, name, arguments, requestor)
    return quirk(session, arguments, lambda: execute(session, name, arguments))


def replay_calls(
    world: World, calls: Iterable[tuple], upstream_tools: bool = False, task: Task | None = None
) -> Session:
    """Run (name, arguments[, requestor]) calls in order in a fresh session (in `task`'s starting state, when
    given) with no authorization rule."""
    session = start_session(world, task)
    session.authorize = False
    quirks = dict(world.domain.tau2_quirks()) if upstream_tools else {}
    for name, arguments, *side in calls:
        _run(session, quirks, name, arguments, world.side_of(side[0] if side else None))
    return session


def _ordered_calls(trajectory: Trajectory) -> list[tuple[str, Any, Message | None]]:
    """(requestor, call, the tool message its caller read) of both sides' calls, in the order they ran."""
    answers = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool" and m.tool_call_id is not None}
    customer = sorted(trajectory.customer_calls, key=lambda c: c.at)
    out: list[tuple[str, Any, Message | None]] = []
    j = 0
    for i, message in enumerate([*trajectory.messages, None]):
        while j < len(customer) and (message is None or customer[j].at <= i):
            out.append(("user", customer[j].call, customer[j].result))
            j += 1
        if message is not None and message.role == "assistant":
            out += [("assistant", c, answers.get(c.id)) for c in message.tool_calls]
    return out


def replay_trajectory(
    world: World, trajectory: Trajectory, upstream_tools: bool = False, task: Task | None = None
) -> tuple[Session, list[str]]:
    """τ²-bench's predicted environment: from the task's starting state, the conversation's writes (both sides',
    dual control) replayed in order with no authorization rule (reads, unknown tools and unparsed calls change
    nothing and are skipped, as τ²-bench skips non-mutating calls), and the writes whose replayed outcome differs
    from the tool message their caller read."""
    session = start_session(world, task)
    session.authorize = False
    quirks = dict(world.domain.tau2_quirks()) if upstream_tools else {}
    diverged: list[str] = []
    for requestor, call, answer in _ordered_calls(trajectory):
        tools = world.tools_of(requestor)
        spec = tools.tools.get(call.name) if tools is not None else None
        if spec is None or spec.kind != "write" or call.arguments is None:
            continue
        event = _run(session, quirks, call.name, call.arguments, requestor)
        if answer is not None and (event.ok == answer.error or (event.content or "") != (answer.content or "")):
            said = "refused" if answer.error else "ran"
            diverged.append(f"{call.name} (call {call.id}): the conversation's tool {said} it, the replay did not")
    return session, diverged


_gold: OrderedDict[tuple, tuple[dict, tuple[str, ...]]] = OrderedDict()
_gold_lock = threading.Lock()


def gold_state(world: World, task: Task, upstream_tools: bool = False) -> tuple[dict, tuple[str, ...]]:
    """(end state of the replayed gold actions, the gold writes that failed); LRU-cached."""
    gold = [a.model_dump() for a in task.gold_actions]
    setup = sha256_json([gold, task.initial_state])
    key = (domain_spec(world.domain), world.fingerprint, task.id, setup, upstream_tools)
    with _gold_lock:
        if key in _gold:
            _gold.move_to_end(key)
            return _gold[key]
    calls = ((a.name, a.arguments, a.requestor) for a in task.gold_actions)
    session = replay_calls(world, calls, upstream_tools, task)
    failed = tuple(f"{e.name}: {e.error}" for e in session.log if not e.ok and e.kind == "write")
    value = (session.changed(), failed)
    with _gold_lock:
        _gold[key] = value
        while len(_gold) > _CACHE_SIZE:
            _gold.popitem(last=False)
    return value


def _db(world: World, task: Task, trajectory: Trajectory, config: Tau2Config) -> tuple[Tau2Check, list[str], Session]:
    expected, failed = gold_state(world, task, config.upstream_tools)
    session, diverged = replay_trajectory(world, trajectory, config.upstream_tools, task)
    actual = session.changed()
    match = actual == expected
    details = [] if match else [f"end state differs from gold in {_differing(expected, actual)}"]
    if failed:
        details.append(f"gold replay incomplete ({'; '.join(failed)})" + ("; match not certified" if match else ""))
    return Tau2Check(name="DB", reward=1.0 if match else 0.0, details=details), diverged, session


def _env_assertions(task: Task, session: Session) -> Tau2Check:
    missed = [r for r in task_assertions(task, session) if not r.met]
    details = [f"{r.env_type} {r.func_name}({r.arguments}) is not {r.assert_value}" for r in missed]
    return Tau2Check(name="ENV_ASSERTION", reward=0.0 if missed else 1.0, details=details)


def _differing(expected: dict, actual: dict) -> str:
    keys = sorted(
        f"{table}/{key}"
        for table in sorted(set(expected) | set(actual))
        for key in set(expected.get(table, {})) | set(actual.get(table, {}))
        if expected.get(table, {}).get(key) != actual.get(table, {}).get(key)
    )
    return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def _as_json(value: Any) -> Any:
    """A value with its JSON-text parts parsed, so that spacing and key order do not decide a match."""
    if isinstance(value, str) and value.strip().startswith(("{", "[")):
        try:
            return _as_json(json.loads(value))
        except json.JSONDecodeError:
            return value
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value


def action_matches(name: str, arguments: dict, compare_args: list[str] | None, call_name: str, call_args: Any) -> bool:
    """τ²-bench's action match: same name, same values of the compared arguments."""
    if name != call_name:
        return False
    call_args = call_args if isinstance(call_args, dict) else {}  # an unparsed call has no arguments to compare
    keys = compare_args if compare_args is not None else list(call_args)
    if not keys:
        return True
    ours = {k: _as_json(v) for k, v in call_args.items() if k in keys}
    return ours == {k: _as_json(v) for k, v in arguments.items() if k in keys}


def _action(world: World, task: Task, trajectory: Trajectory) -> Tau2Check:
    calls = {"assistant": trajectory.tool_calls(), "user": [c.call for c in trajectory.customer_calls]}
    missing = [
        a.name
        for a in task.gold_actions
        if not any(
            action_matches(a.name, a.arguments, a.compare_args, c.name, c.arguments)
            for c in calls[world.side_of(a.requestor)]
        )
    ]
    share = 1.0 - len(missing) / len(task.gold_actions) if task.gold_actions else 1.0
    return Tau2Check(name="ACTION", reward=share, details=[f"no call matches gold {n}" for n in missing])


def communicated(info: str, trajectory: Trajectory) -> bool:
    """τ²-bench's check: `info` lower-cased is a substring of an agent message lower-cased, commas removed."""
    needle = info.lower()
    return any(
        m.role == "assistant" and m.content and m.content.strip() and needle in m.content.lower().replace(",", "")
        for m in trajectory.messages
    )


def _communicate(infos: list[str], trajectory: Trajectory) -> Tau2Check:
    missing = [i for i in infos if not communicated(i, trajectory)]
    return Tau2Check(name="COMMUNICATE", reward=0.0 if missing else 1.0, details=[f"not said: {i!r}" for i in missing])


def _nl(task: Task, assertions: list[str], trajectory: Trajectory, judge: Judge | None) -> Tau2Check | None:
    if not assertions:
        return Tau2Check(name="NL_ASSERTION", reward=1.0)
    if not is_enabled(judge):
        return None
    result = judge.judge(task.model_copy(update={"rubric": list(assertions)}), trajectory)  # type: ignore[union-attr]
    return Tau2Check(name="NL_ASSERTION", reward=1.0 if result.passed else 0.0, details=list(result.details))


def tau2_reward(
    world: World, task: Task, trajectory: Trajectory, config: Tau2Config | None = None, judge: Judge | None = None
) -> Tau2Result:
    """The τ²-compatible reward of one finished trajectory (see the module docstring for the rule)."""
    config = config or Tau2Config()
    ev = task.evaluation
    basis = list(DEFAULT_BASIS) if ev is None or ev.reward_basis is None else list(ev.reward_basis)
    unknown = sorted(set(basis) - set(REWARD_TYPES))
    if unknown:
        raise TaskError(f"task {task.id}: evaluation.reward_basis: unknown reward type(s) {unknown}")
    given = [f for f in _INITIAL_STATE_FIELDS if (task.initial_state or {}).get(f)]
    if given:
        raise TaskError(f"task {task.id}: initial_state.{given[0]}: not supported by the τ²-compatible reward")
    if trajectory.termination not in EVALUATED_TERMINATIONS:
        return Tau2Result(
            reward=0.0,
            passed=False,
            basis=basis,
            terminated_early=True,
            notes=[f"ended by {trajectory.termination}, neither the agent nor the user: not evaluated"],
        )
    db, diverged, predicted = _db(world, task, trajectory, config)
    if diverged and config.check_record:
        return Tau2Result(
            reward=0.0,
            passed=False,
            basis=basis,
            checks=[db],
            replay_diverged=True,
            notes=[f"replay differs from the conversation: {d}; τ²-bench's strict replay fails: 0" for d in diverged],
        )
    checks = [
        db,
        _env_assertions(task, predicted),
        _action(world, task, trajectory),
        _communicate(list(ev.communicate_info) if ev else [], trajectory),
    ]
    nl = _nl(task, list(ev.nl_assertions) if ev else [], trajectory, judge) if "NL_ASSERTION" in basis else None
    unjudged = ["NL_ASSERTION"] if "NL_ASSERTION" in basis and nl is None else []
    if nl is not None:
        checks.append(nl)
    certified = not any("match not certified" in d for d in checks[0].details)
    reward = 1.0
    for c in checks:
        if c.name in basis and (c.name != "DB" or certified or c.reward < 1.0):
            reward *= c.reward
    notes = [f"{n} in the reward basis but no judge is configured: left out of the product" for n in unjudged]
    return Tau2Result(reward=reward, passed=reward == 1.0, basis=basis, checks=checks, unjudged=unjudged, notes=notes)
