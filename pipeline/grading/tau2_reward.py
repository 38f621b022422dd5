"""The τ²-compatible reward: τ²-bench's own scoring rule, computed beside our strict verdict.

Its semantics, as τ²-bench's evaluator defines them (reward = product over the task's `reward_basis`):

- termination: a chat that neither the agent nor the user ended (max steps, too many errors, ...) scores 0 and
  nothing else is evaluated;
- DB: the trial's tool calls replayed on a fresh database and the gold actions replayed on another; the reward is
  1 when the two end states are equal, 0 otherwise. There is no authorization rule: every call runs whoever the
  conversation is about. A gold write that fails leaves the gold state incomplete: a match then certifies
  nothing and DB drops out of the product (a mismatch still scores 0);
- ACTION: every gold action is matched by some tool call of the trial with the same name and the same values of
  its `compare_args` (all the call's arguments when None);
- COMMUNICATE: each `communicate_info` string, lower-cased, occurs in some agent message's text, lower-cased with
  its commas removed (substring match, no judge);
- NL_ASSERTION: the judge (when one is configured) checks the task's `nl_assertions` on the transcript; without
  a judge the component is left out of the product and listed in `unjudged`;
- ENV_ASSERTION: our tasks carry no environment assertions, so it scores 1.

`Tau2Config.upstream_tools` replays both sides with τ²-bench's tool behaviour where the domain names quirks of
it (`Domain.tau2_quirks`; retail: `modify_pending_order_items`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset.task import Task
from pipeline.grading.judge import Judge, is_enabled
from pipeline.grading.verdict import Tau2Check, Tau2Result
from pipeline.rollout.trajectory import Trajectory
from pipeline.world.tables import Session, World, sha256_json
from pipeline.world.tools import execute

VerdictName = Literal["strict", "tau2"]
VERDICTS: tuple[str, ...] = VerdictName.__args__  # type: ignore[attr-defined]
REWARD_TYPES = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")
DEFAULT_BASIS = ("DB", "COMMUNICATE")  # τ²-bench's default when a task names none
EVALUATED_TERMINATIONS = frozenset({"agent_stop", "user_stop"})
_CACHE_SIZE = 4096


class Tau2Config(BaseModel):
    """How the τ²-compatible reward replays tool calls."""

    model_config = ConfigDict(extra="forbid")

    upstream_tools: bool = Field(
        default=False,
        description="Replay with τ²-bench's tool behaviour where it differs from ours (retail:"
        " modify_pending_order_items gives every replaced item the last new variant's price and options).",
    )


def replay_calls(world: World, calls: Iterable[tuple[str, Any]], upstream_tools: bool = False) -> Session:
    """Run (name, arguments) calls in order in a fresh session with no authorization rule."""
    session = world.session()
    session.authorize = False
    quirks = world.domain.tau2_quirks() if upstream_tools else {}
    for name, arguments in calls:
        quirk = quirks.get(name)
        if quirk is None:
            execute(session, name, arguments)
        else:
            quirk(session, arguments, lambda n=name, a=arguments: execute(session, n, a))
    return session


_gold: OrderedDict[tuple, tuple[dict, tuple[str, ...]]] = OrderedDict()
_gold_lock = threading.Lock()


def gold_state(world: World, task: Task, upstream_tools: bool = False) -> tuple[dict, tuple[str, ...]]:
    """(end state of the replayed gold actions, the gold writes that failed); LRU-cached."""
    key = (world.fingerprint, task.id, sha256_json([a.model_dump() for a in task.gold_actions]), upstream_tools)
    with _gold_lock:
        if key in _gold:
            _gold.move_to_end(key)
            return _gold[key]
    session = replay_calls(world, ((a.name, a.arguments) for a in task.gold_actions), upstream_tools)
    failed = tuple(f"{e.name}: {e.error}" for e in session.log if not e.ok and e.kind == "write")
    value = (session.changed(), failed)
    with _gold_lock:
        _gold[key] = value
        while len(_gold) > _CACHE_SIZE:
            _gold.popitem(last=False)
    return value


def _db(world: World, task: Task, trajectory: Trajectory, config: Tau2Config) -> Tau2Check:
    expected, failed = gold_state(world, task, config.upstream_tools)
    calls = ((c.name, c.arguments) for c in trajectory.tool_calls())
    actual = replay_calls(world, calls, config.upstream_tools).changed()
    match = actual == expected
    details = [] if match else [f"end state differs from gold in {_differing(expected, actual)}"]
    if failed:
        details.append(f"gold replay incomplete ({'; '.join(failed)})" + ("; match not certified" if match else ""))
    return Tau2Check(name="DB", reward=1.0 if match else 0.0, details=details)


def _differing(expected: dict, actual: dict) -> str:
    keys = sorted(
        f"{table}/{key}"
        for table in sorted(set(expected) | set(actual))
        for key in set(expected.get(table, {})) | set(actual.get(table, {}))
        if expected.get(table, {}).get(key) != actual.get(table, {}).get(key)
    )
    return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def action_matches(name: str, arguments: dict, compare_args: list[str] | None, call_name: str, call_args: Any) -> bool:
    """τ²-bench's action match: same name, same values of the compared arguments."""
    if name != call_name:
        return False
    call_args = call_args if isinstance(call_args, dict) else {}  # an unparsed call has no arguments to compare
    keys = compare_args if compare_args is not None else list(call_args)
    if not keys:
        return True
    return {k: v for k, v in call_args.items() if k in keys} == {k: v for k, v in arguments.items() if k in keys}


def _action(task: Task, trajectory: Trajectory) -> Tau2Check:
    calls = trajectory.tool_calls()
    missing = [
        a.name
        for a in task.gold_actions
        if not any(action_matches(a.name, a.arguments, a.compare_args, c.name, c.arguments) for c in calls)
    ]
    return Tau2Check(
        name="ACTION", reward=0.0 if missing else 1.0, details=[f"no call matches gold {n}" for n in missing]
    )


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
    basis = list(ev.reward_basis) if ev and ev.reward_basis else list(DEFAULT_BASIS)
    unknown = sorted(set(basis) - set(REWARD_TYPES))
    if unknown:
        raise ValueError(f"task {task.id}: evaluation.reward_basis: unknown reward type(s) {unknown}")
    if trajectory.termination not in EVALUATED_TERMINATIONS:
        return Tau2Result(
            reward=0.0,
            passed=False,
            basis=basis,
            terminated_early=True,
            notes=[f"ended by {trajectory.termination}, neither the agent nor the user: not evaluated"],
        )
    checks = [
        _db(world, task, trajectory, config),
        Tau2Check(name="ENV_ASSERTION", reward=1.0),
        _action(task, trajectory),
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


def clear_gold_cache() -> None:
    with _gold_lock:
        _gold.clear()
