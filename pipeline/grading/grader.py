"""The deterministic verdict of one trajectory: state, static checks, task checks, replay consistency, judge.

Nothing the trajectory says about the world is trusted: its tool calls are replayed in a fresh session to
recompute the world log and the end state, and the recorded ones must agree (or the trajectory was
tampered with, or produced by a different world). The expected state is the task's gold actions replayed
in the same world, cached because many trials share a task.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pipeline.dataset import Task, replay_gold, start_session, task_assertions
from pipeline.digest import sha256_json
from pipeline.errors import TaskError
from pipeline.grading.delivery import repeated_writes_component
from pipeline.grading.judge import Judge, is_enabled
from pipeline.grading.state_diff import count_by_kind, diff_states, summarize_diffs
from pipeline.grading.static_checks import StaticInput, call_key, run_static_checks
from pipeline.grading.task_checks import evaluate_task_checks
from pipeline.grading.tau2_reward import Tau2Config, tau2_reward
from pipeline.grading.verdict import ComponentResult, Verdict
from pipeline.rollout import (
    NOT_RUN,
    PROGRAM_FAILURES,
    InfrastructureError,
    Limits,
    Message,
    Trajectory,
    not_run_message,
    run_tool_call,
)
from pipeline.world import Session, World, domain_spec

log = logging.getLogger(__name__)
CACHE_SIZE = 4096


@dataclass(frozen=True)
class ExpectedState:
    """The gold end state of a task (treat as read-only: it is shared through the cache)."""

    changed: dict[str, dict[str, dict]]
    hash: str
    failed_actions: tuple[str, ...]
    refused_writes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReplayedState:
    """A trajectory's tool calls replayed in a fresh session."""

    log: list[dict[str, Any]]
    tool_messages: list[Message]
    changed: dict[str, dict[str, dict]]
    hash: str
    customer_results: list[Message] = field(default_factory=list)
    session: Session | None = None

    @property
    def agent_log(self) -> list[dict[str, Any]]:
        """The agent's own calls (the customer's, in a domain with dual control, are not the agent's doing)."""
        return [e for e in self.log if e.get("requestor", "assistant") == "assistant"]


_cache: OrderedDict[tuple[str, str, str, str], ExpectedState] = OrderedDict()
_cache_lock = threading.Lock()


def expected_state(world: World, task: Task) -> ExpectedState:
    """The task's gold actions replayed as its customer; LRU-cached per (world, task id, gold actions)."""
    gold = sha256_json(
        {"user": task.customer_user_id, "actions": [a.model_dump() for a in task.gold_actions]}
        | ({"setup": task.initial_state} if task.initial_state else {})
    )
    key = (domain_spec(world.domain), world.fingerprint, task.id, gold)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    session = replay_gold(world, task)
    changed = session.changed()
    failed = tuple(f"{e.name}: {e.error}" for e in session.log if not e.ok)
    refused = frozenset(call_key(e.name, e.arguments) for e in session.log if not e.ok and e.kind == "write")
    state = ExpectedState(changed, _state_hash(world, changed), failed, refused)
    with _cache_lock:
        _cache[key] = state
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return state


def clear_expected_cache() -> None:
    with _cache_lock:
        _cache.clear()


def replay_trajectory(
    world: World, trajectory: Trajectory, authenticated_user_id: str | None = None, task: Task | None = None
) -> ReplayedState:
    """Re-run every tool call, in order, exactly as the episode runner does: from the task's starting state, the
    agent's calls and (dual control) the customer's own, each on its side, interleaved as they happened.

    The calls the runner left unrun at the end of the episode (its tool-call budget used up: the tail of tool
    messages reads `NOT_RUN`) are left unrun here too; the tool-budget check counts them.
    """
    session = start_session(world, task, authenticated_user_id=authenticated_user_id)
    calls = trajectory.tool_calls()
    recorded = [m.content for m in trajectory.messages if m.role == "tool"]
    tail = len(calls)
    while tail > 0 and tail <= len(recorded) and recorded[tail - 1] == NOT_RUN:
        tail -= 1
    customer = sorted(trajectory.customer_calls, key=lambda c: c.at)
    tool_messages: list[Message] = []
    customer_results: list[Message] = []
    j = 0
    for i, message in enumerate([*trajectory.messages, None]):
        while j < len(customer) and (message is None or customer[j].at <= i):
            customer_results.append(run_tool_call(session, customer[j].call, requestor="user"))
            j += 1
        if message is not None and message.role == "assistant":
            for c in message.tool_calls:
                n = len(tool_messages)
                tool_messages.append(run_tool_call(session, c) if n < tail else not_run_message(c))
    changed = session.changed()
    return ReplayedState(
        [e.to_dict() for e in session.log],
        tool_messages,
        changed,
        _state_hash(world, changed),
        customer_results,
        session,
    )


def _state_hash(world: World, changed: dict) -> str:
    """Same value as `Session.state_hash()`, without recomputing `changed()`."""
    return sha256_json({"base": world.fingerprint, "changed": changed})


def _nonempty(changed: dict) -> dict:
    return {table: records for table, records in changed.items() if records}


def check_replay_consistency(trajectory: Trajectory, replayed: ReplayedState) -> ComponentResult:
    """The recorded tool results, world log and end state must equal the recomputed ones."""
    problems: list[str] = []
    recorded = [m for m in trajectory.messages if m.role == "tool"]
    if len(recorded) != len(replayed.tool_messages):
        problems.append(f"{len(recorded)} tool messages recorded for {len(replayed.tool_messages)} tool calls")
    for i, (got, want) in enumerate(zip(recorded, replayed.tool_messages, strict=False)):
        fields = [f for f in ("tool_call_id", "name", "content", "error") if getattr(got, f) != getattr(want, f)]
        if fields:
            problems.append(f"tool message {i} ({want.name}) differs from the replay in {', '.join(fields)}")
    for i, (call, want) in enumerate(zip(trajectory.customer_calls, replayed.customer_results, strict=True)):
        fields = [f for f in ("name", "content", "error") if getattr(call.result, f) != getattr(want, f)]
        if fields:
            problems.append(f"customer call {i} ({want.name}) differs from the replay in {', '.join(fields)}")
    has_record = bool(trajectory.final_hash or trajectory.world_log or _nonempty(trajectory.final_changed))
    if has_record:
        if trajectory.world_log != replayed.log:
            bad = next(
                (i for i, (a, b) in enumerate(zip(trajectory.world_log, replayed.log, strict=False)) if a != b),
                min(len(trajectory.world_log), len(replayed.log)),
            )
            problems.append(
                f"recorded world log differs from the replay at event {bad}"
                f" ({len(trajectory.world_log)} recorded, {len(replayed.log)} replayed)"
            )
        if _nonempty(trajectory.final_changed) != _nonempty(replayed.changed):
            problems.append("recorded final state differs from the replayed one")
        if trajectory.final_hash != replayed.hash:
            problems.append("recorded final hash differs from the replayed one")
    notes = [] if has_record else ["no recorded world log or state to compare; tool messages only"]
    return ComponentResult(name="replay_consistency", passed=not problems, details=problems, notes=notes)


def grade(
    world: World,
    task: Task,
    trajectory: Trajectory,
    limits: Limits | None = None,
    judge: Judge | None = None,
    *,
    authenticated_user_id: str | None = None,
    judge_required: bool = False,
    tau2: Tau2Config | None = None,
) -> Verdict:
    """The verdict of one finished trajectory; passes when every required component passes.

    `authenticated_user_id` is whom the episode's session started authenticated as (None in ordinary
    episodes, where the agent must authenticate the customer itself). The verdict also carries the
    τ²-compatible reward (`pipeline.grading.tau2_reward`), replayed as `tau2` says.
    """
    if trajectory.task_id != task.id:
        raise TaskError(f"trajectory is for task {trajectory.task_id!r}, not {task.id!r}")
    if trajectory.infra_error:
        return _infra_verdict(trajectory, f"infrastructure error: {trajectory.error or 'unknown'}")
    limits = limits or Limits()
    try:
        expected = expected_state(world, task)
        replayed = replay_trajectory(world, trajectory, authenticated_user_id, task)
        environment_reward = replayed.session.environment_reward() if replayed.session is not None else None
    except InfrastructureError as exc:  # the environment behind the protocol failed while replaying
        return _infra_verdict(trajectory, f"environment unavailable while grading: {exc}")
    diagnostics = [f"gold action refused: {f}" for f in expected.failed_actions]

    state_ok = replayed.hash == expected.hash
    diffs = [] if state_ok else diff_states(world, expected.changed, replayed.changed)
    state_details = [] if state_ok else summarize_diffs(diffs) or ["state hash differs from the expected one"]
    components = [ComponentResult(name="state", passed=state_ok, details=state_details)]
    resolve = getattr(judge, "confirms", None) if is_enabled(judge) else None
    try:
        components += run_static_checks(
            StaticInput(
                world,
                replayed.agent_log,
                replayed.changed,
                trajectory.messages,
                limits.max_tool_calls,
                expected.refused_writes,
                resolve_unclear=resolve,
            )
        )
    except InfrastructureError as exc:
        return _infra_verdict(trajectory, f"judge unavailable: {exc}")
    said = [m.content for m in trajectory.messages if m.role == "assistant" and m.content]
    components += evaluate_task_checks(task.checks, world, replayed.agent_log, replayed.changed, said)
    assertions = task.evaluation.env_assertions if task.evaluation is not None else []
    if assertions and replayed.session is not None:  # a replay always keeps its session
        results = task_assertions(task, replayed.session)
        components.append(
            ComponentResult(
                name="env_assertions",
                passed=all(r.met for r in results),
                details=[
                    f"{r.env_type} {r.func_name}({', '.join(f'{k}={v!r}' for k, v in r.arguments.items())})"
                    f" is not {r.assert_value}" + (f" ({r.error})" if r.error else "")
                    for r in results
                    if not r.met
                ],
            )
        )
    if trajectory.termination in PROGRAM_FAILURES:  # the agent program failed its turn: the agent's failure
        why = trajectory.error or PROGRAM_FAILURES[trajectory.termination]
        components.append(ComponentResult(name="program", passed=False, details=[f"{trajectory.termination}: {why}"]))
    repeated = repeated_writes_component(world, trajectory)
    if repeated is not None:
        components.append(repeated)
        diagnostics.append(f"a write repeated within one agent turn (at-least-once delivery): {repeated.details[0]}")
    consistency = check_replay_consistency(trajectory, replayed)
    components.append(consistency)
    if not consistency.passed:
        diagnostics.append(
            "trajectory record disagrees with its replay (tampered or from another world); graded on the replay"
        )
    if is_enabled(judge):
        try:
            result = judge.judge(task, trajectory)  # type: ignore[union-attr]
        except InfrastructureError as exc:
            return _infra_verdict(trajectory, f"judge unavailable: {exc}")
        components.append(result.model_copy(update={"name": "judge", "required": judge_required}))
    review = getattr(judge, "review_user", None) if is_enabled(judge) else None
    if review is not None and not all(c.passed for c in components if c.required):
        try:  # a failed trial: was it the user simulator's doing? (its own category, not the agent's failure)
            components.append(review(task, trajectory))
        except InfrastructureError as exc:
            return _infra_verdict(trajectory, f"judge unavailable: {exc}")
    diagnostics += [f"{c.name}: {note}" for c in components for note in c.notes]
    try:
        tau2_result = tau2_reward(world, task, trajectory, tau2, judge)
    except InfrastructureError as exc:
        return _infra_verdict(trajectory, f"judge unavailable: {exc}")
    return Verdict(
        task_id=task.id,
        trial=trajectory.trial,
        passed=all(c.passed for c in components if c.required),
        components=components,
        diffs=diffs,
        final_hash=replayed.hash,
        expected_hash=expected.hash,
        diagnostics=diagnostics,
        tau2=tau2_result,
        environment_reward=environment_reward,
    )


def _infra_verdict(trajectory: Trajectory, why: str) -> Verdict:
    log.info("task %s trial %d excluded: %s", trajectory.task_id, trajectory.trial, why)
    return Verdict(
        task_id=trajectory.task_id, trial=trajectory.trial, passed=False, infra_error=True, diagnostics=[why]
    )


def verdict_summary(verdict: Verdict) -> str:
    """One line for logs and the CLI, e.g. 'FAIL task 7 trial 0: state (1 wrong_value), static.confirmation'."""
    head = f"task {verdict.task_id} trial {verdict.trial}"
    if verdict.infra_error:
        return f"INFRA {head}: {verdict.diagnostics[0] if verdict.diagnostics else 'infrastructure error'}"
    if verdict.passed:
        return f"PASS {head}"
    parts = []
    for name in verdict.failed_components:
        if name == "state" and verdict.diffs:
            counts = ", ".join(f"{n} {k}" for k, n in count_by_kind(verdict.diffs).items() if n)
            parts.append(f"state ({counts})")
        else:
            parts.append(name)
    return f"FAIL {head}: {', '.join(parts)}"
