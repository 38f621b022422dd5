"""`agentloop import tau2-run`: a τ²-bench results file → our run layout, re-graded with both verdicts.

`tau2 run` saves one JSON file: `info` (agent, user, limits), `tasks` (the tasks as graded, with their
evaluation criteria) and `simulations` (per trial: task id, trial, messages, termination reason, reward info).
Each simulation becomes a Trajectory whose agent tool calls are replayed in our world of the same domain
directory: the tool messages are the ones our tools return (what `agentloop gate` re-grades and checks), and
a call whose success or failure differs from τ²-bench's record is counted. The run directory then holds what
`agentloop measure` writes (trajectories.jsonl, verdicts.jsonl, per_task.csv, metrics.json) plus tasks.jsonl (the
tasks with τ²-bench's criteria, for `--tasks`) and tau2_import.json: the source's sha256, the domain and world
(with its digest) it was re-graded in, the models the file names (`agent_model`, `user_model`), counts, and how
often our τ²-compatible reward equals the reward recorded in the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.dataset import Task, expected_outcomes, known_assertions, start_session, write_tasks
from pipeline.errors import AgentloopError, InputError
from pipeline.grading import Tau2Config, Tau2CriteriaError, VerdictName, apply_criteria, grade
from pipeline.outputs import atomic_write
from pipeline.rollout import CustomerCall, Message, ToolCall, Trajectory, run_tool_call
from pipeline.trials import TrialResult
from pipeline.world import World, domain_label, domain_spec

log = logging.getLogger(__name__)
NOT_EVALUABLE = frozenset({"infrastructure_error", "context_window_exceeded"})  # τ²-bench leaves these out too
TAU2_STOPS = frozenset({"agent_stop", "user_stop"})  # τ²-bench's evaluated terminations (transfers are user_stop)


class Tau2ImportError(InputError, ValueError):
    """A results file or domain directory that cannot be imported; the message names the file and the field."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class Tau2ToolCall(_Loose):
    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: str | None = None


class Tau2Message(_Loose):
    role: str
    content: str | None = None
    tool_calls: list[Tau2ToolCall] | None = None
    id: str | None = Field(default=None, description="For tool messages: the call answered.")
    error: bool = False


class Tau2RewardInfo(_Loose):
    reward: float


class Tau2Simulation(_Loose):
    id: str
    task_id: str
    trial: int | None = None
    seed: int | None = None
    termination_reason: str
    messages: list[Tau2Message] | None = None
    reward_info: Tau2RewardInfo | None = None


class Tau2Results(_Loose):
    info: dict[str, Any] | None = None
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    simulations: list[Tau2Simulation]


def read_results(path: Path) -> Tau2Results:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Tau2ImportError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise Tau2ImportError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise Tau2ImportError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return Tau2Results.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise Tau2ImportError(f"{path}: field {'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}") from None


def _part(info: dict | None, part: str) -> dict:
    """`info[part]` where it is an object (τ²-bench's agent_info, user_info), else nothing."""
    value = (info or {}).get(part)
    return value if isinstance(value, dict) else {}


def _names(info: dict | None) -> tuple[str, str]:
    agent, user = _part(info, "agent_info"), _part(info, "user_info")
    return (
        f"tau2:{agent.get('llm') or agent.get('implementation') or 'agent'}",
        f"tau2:{user.get('llm') or user.get('implementation') or 'user'}",
    )


def _model(info: dict | None, part: str) -> str | None:
    """The LLM τ²-bench records a participant called (`info.agent_info.llm`), or None where it names none."""
    llm = _part(info, part).get("llm")
    return llm if isinstance(llm, str) and llm.strip() else None


def termination_of(reason: str) -> str:
    """Our termination for τ²-bench's: the stops carry over, errors that void a rollout are infrastructure, and
    everything else (max_steps, too_many_errors, agent_error, ...) ended the chat without either side: turn_limit."""
    if reason in TAU2_STOPS:
        return reason
    return "infra_error" if reason in NOT_EVALUABLE else "turn_limit"


def to_trajectory(
    sim: Tau2Simulation, trial: int, world: World, agent: str, user: str, task: Task | None = None
) -> tuple[Trajectory, int]:
    """The simulation as our Trajectory (tool calls replayed in `world`, from `task`'s set-up, each on the side
    that made it) and how many call outcomes differ."""
    session = start_session(world, task)
    customer_calls: list[CustomerCall] = []
    recorded = {m.id: m.error for m in sim.messages or [] if m.role == "tool" and m.id is not None}
    messages: list[Message] = []
    differ = 0
    for i, m in enumerate(sim.messages or []):
        if m.role == "tool":
            continue
        if m.role not in ("system", "user", "assistant"):
            raise Tau2ImportError(f"simulation {sim.id}: messages[{i}].role: unknown role {m.role!r}")
        calls = [
            ToolCall(id=c.id or f"call_{i}_{j}", name=c.name, arguments=c.arguments)
            for j, c in enumerate(m.tool_calls or [])
        ]
        if m.role == "user" and calls:
            if world.user_tools is None:
                raise Tau2ImportError(
                    f"simulation {sim.id}: messages[{i}]: user tool calls, but domain"
                    f" {domain_label(world.domain)!r} gives the customer no tools"
                )
            for call in calls:  # the customer's own calls: theirs alone, the agent never sees them
                answer = run_tool_call(session, call, requestor="user")
                differ += call.id in recorded and recorded[call.id] != answer.error
                customer_calls.append(CustomerCall(at=len(messages), call=call, result=answer))
            if m.content and m.content.strip():
                messages.append(Message(role="user", content=m.content))
            continue
        messages.append(Message(role=m.role, content=m.content, tool_calls=calls))
        for call in calls:
            answer = run_tool_call(session, call)
            differ += call.id in recorded and recorded[call.id] != answer.error
            messages.append(answer)
    termination = termination_of(sim.termination_reason)
    trajectory = Trajectory(
        task_id=sim.task_id,
        trial=trial,
        seed=sim.seed or 0,
        agent=agent,
        user=user,
        world=world.name,
        domain=domain_spec(world.domain),
        messages=messages,
        customer_calls=customer_calls,
        world_log=[e.to_dict() for e in session.log],
        final_changed=session.changed(),
        final_hash=session.state_hash(),
        termination=termination,
        error=f"τ²-bench termination: {sim.termination_reason}" if termination == "infra_error" else None,
    )
    return trajectory, differ


def _tasks(results: Tau2Results, domain_dir: Path) -> tuple[World, dict[str, Task], str]:
    from pipeline.world import checked_world, domain_of_directory

    try:
        importer = domain_of_directory(domain_dir).require("tau2_importer", needed_for="import tau2-run")
        world, tasks = importer.load(domain_dir)
        checked_world(world, domain_dir)
    except AgentloopError as exc:  # a directory no domain reads, or one whose tasks do not convert
        raise Tau2ImportError(str(exc)) from None
    source = "results file"
    raw = results.tasks
    if not raw:
        source, raw = "domain tasks.json", json.loads((domain_dir / "tasks.json").read_text(encoding="utf-8"))
    try:
        tasks = apply_criteria(tasks, raw, known_assertions(world.domain))
    except Tau2CriteriaError as exc:
        raise Tau2ImportError(f"{source}: {exc}") from None
    return world, {t.id: t for t in tasks}, source


def check_conversations(results: Tau2Results, path: Path) -> None:
    """Refuse simulations saved without their conversation: re-grading one replays no call, so each would be scored
    as an agent that did nothing (pass^k 0) rather than as what it was. A simulation τ²-bench itself leaves out (an
    infrastructure error) may have none."""
    empty = [
        i
        for i, sim in enumerate(results.simulations)
        if not sim.messages and sim.termination_reason not in NOT_EVALUABLE
    ]
    if empty:
        first = results.simulations[empty[0]]
        raise Tau2ImportError(
            f"{path}: simulations[{empty[0]}].messages: no messages (task {first.task_id!r}, trial"
            f" {first.trial if first.trial is not None else '?'}; {len(empty)} of {len(results.simulations)}"
            " simulations have none): nothing to re-grade; save the results with their messages"
        )


def import_run(
    results_path: Path,
    domain_dir: Path,
    out_dir: Path,
    *,
    verdict: VerdictName = "strict",
    tau2: Tau2Config | None = None,
    resamples: int = 1000,
) -> dict:
    """Import and re-grade; writes the run directory and returns the tau2_import.json record."""
    from pipeline.measure import trial_record, write_per_task
    from pipeline.metrics import summarize

    started = time.perf_counter()
    # the tool messages are our tools' replies, not τ²-bench's record: its strict replay check does not apply
    tau2 = (tau2 or Tau2Config()).model_copy(update={"check_record": False})
    results_path, domain_dir, out_dir = Path(results_path), Path(domain_dir), Path(out_dir)
    results = read_results(results_path)
    if not results.simulations:
        raise Tau2ImportError(f"{results_path}: field simulations: no simulations")
    check_conversations(results, results_path)
    world, tasks, criteria_source = _tasks(results, domain_dir)
    agent, user = _names(results.info)
    seen: Counter[str] = Counter()
    graded: list[TrialResult] = []
    keys: set[tuple[str, int]] = set()
    agree, differ, upstream = 0, 0, 0
    for i, sim in enumerate(results.simulations):
        task = tasks.get(sim.task_id)
        if task is None:
            raise Tau2ImportError(
                f"{results_path}: simulations[{i}].task_id: {sim.task_id!r} is not a task of {domain_dir}"
            )
        trial = sim.trial if sim.trial is not None else seen[sim.task_id]
        seen[sim.task_id] += 1
        if (sim.task_id, trial) in keys:
            raise Tau2ImportError(f"{results_path}: simulations[{i}]: task {sim.task_id!r} trial {trial} appears twice")
        keys.add((sim.task_id, trial))
        trajectory, n = to_trajectory(sim, trial, world, agent, user, task)
        differ += n
        v = grade(world, task, trajectory, tau2=tau2)
        if sim.reward_info is not None and v.tau2 is not None:
            upstream += 1
            agree += (sim.reward_info.reward == 1.0) == v.tau2.passed
        graded.append(TrialResult(task=task, trial=trial, trajectory=trajectory, verdict=v))
    graded.sort(key=lambda r: (r.task.id, r.trial))
    used = [tasks[t] for t in sorted({r.task.id for r in graded})]
    expected = expected_outcomes(world, used)
    records = [trial_record(r, 0.0, verdict, expected[r.task.id]) for r in graded]
    out_dir.mkdir(parents=True, exist_ok=True)
    write_tasks(out_dir / "tasks.jsonl", used)
    atomic_write(out_dir / "trajectories.jsonl", "".join(r.trajectory.model_dump_json() + "\n" for r in graded))
    atomic_write(
        out_dir / "verdicts.jsonl",
        "".join(
            json.dumps(
                {
                    "verdict": r.verdict.model_dump(mode="json"),
                    "analysis": rec.analysis and rec.analysis.model_dump(mode="json"),
                },
                sort_keys=True,
            )
            + "\n"
            for r, rec in zip(graded, records, strict=True)
        ),
    )
    max_k = min(seen.values())
    summary = summarize(records, agent=agent, max_k=max_k, resamples=resamples)
    atomic_write(out_dir / "metrics.json", json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    write_per_task(out_dir / "per_task.csv", records, max_k)
    valid = [r.verdict for r in graded if not r.verdict.infra_error]
    record = {
        "source": str(results_path),
        "source_sha256": hashlib.sha256(results_path.read_bytes()).hexdigest(),
        "domain": str(domain_dir),
        "domain_name": world.domain.name,
        "world": world.name,
        "world_digest": world.fingerprint,
        "criteria_from": criteria_source,
        "agent": agent,
        "user": user,
        "agent_model": _model(results.info, "agent_info"),
        "user_model": _model(results.info, "user_info"),
        "verdict": verdict,
        "tasks": len(used),
        "trials": len(graded),
        "infra_errors": len(graded) - len(valid),
        "strict_passes": sum(v.passed for v in valid),
        "tau2_passes": sum(bool(v.tau2 and v.tau2.passed) for v in valid),
        "disagreements": sum(v.tau2 is not None and v.passed != v.tau2.passed for v in valid),
        "upstream_rewards": upstream,
        "upstream_agreement": agree,
        "tool_outcomes_differing": differ,
        "seconds": round(time.perf_counter() - started, 3),
    }
    atomic_write(out_dir / "tau2_import.json", json.dumps(record, indent=2, sort_keys=True) + "\n")
    log.info("imported %d simulations from %s → %s", len(graded), results_path, out_dir)
    return record
