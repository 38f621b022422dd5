"""Grading time per task on the 114 τ²-bench retail gold trajectories, against a τ²-bench-style evaluator.

Each task's trajectory is its gold actions as assistant tool calls, with an ask-and-"yes" exchange before
every write (so the confirmation check passes). τ² gold trajectories have no authentication step (tasks
70-113 hold only writes), so for tasks from τ²-bench the episode starts with the task's customer already
authenticated, for the recorded episode and for the grader's replay alike.

Baseline: what τ²-bench's evaluator does per task: for the gold replay and again for the trajectory
replay, rebuild the database from db.json (json.load + pydantic validation + deep copy), run the calls on
it, hash the whole database, and compare the two hashes.

Ours is timed cold (expected-state cache empty: gold replay included) and warm (cache hit, as for the
second and later trials of a task). Loading the world once is reported separately.

    python bench/bench_grading.py [--domain ../shared/tau2_retail] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import time
from pathlib import Path

from pipeline.dataset.task import Action, Task
from pipeline.grading.grader import clear_expected_cache, grade, verdict_summary
from pipeline.rollout.runner import run_tool_call
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory
from pipeline.world.retail.replay import replay_actions
from pipeline.world.retail.schema import RetailDB
from pipeline.world.retail.state import RetailWorld, sha256_json
from pipeline.world.retail.tau2 import load_tau2_domain
from pipeline.world.retail.tools import WRITE_TOOLS

ROOT = Path(__file__).resolve().parents[1]


def start_user(task: Task) -> str | None:
    """Who the episode starts authenticated as: τ² tasks' customer (their gold has no auth step), else nobody."""
    return task.customer_user_id if task.provenance.source == "tau2" else None


def gold_trajectory(world: RetailWorld, task: Task) -> Trajectory:
    """The gold actions as an episode, recorded the way the runner records one."""
    session = world.session(authenticated_user_id=start_user(task))
    messages = [Message(role="user", content="Hi, I need help.")]
    for i, action in enumerate(task.gold_actions):
        if action.name in WRITE_TOOLS:
            messages.append(Message(role="assistant", content=f"I will run {action.name}({action.arguments}). OK?"))
            messages.append(Message(role="user", content="Yes, go ahead."))
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments)
        messages.append(Message(role="assistant", tool_calls=[call]))
        messages.append(run_tool_call(session, call))
    messages.append(Message(role="assistant", content="Done."))
    return Trajectory(
        task_id=task.id,
        agent="gold",
        user="gold",
        world=world.name,
        messages=messages,
        world_log=[e.to_dict() for e in session.log],
        final_changed=session.changed(),
        final_hash=session.state_hash(),
    )


def tau2_style_db_hash(db_path: Path, actions, user_id: str | None) -> str:
    """One τ²-bench check: fresh database from disk, replay, hash of the whole database."""
    with open(db_path) as f:
        data = json.load(f)
    db = copy.deepcopy(RetailDB.model_validate(data))
    world = RetailWorld(db)
    session = replay_actions(world, actions, user_id)
    full = world.to_dict()
    for table, records in session.changed().items():
        full[table].update(records)
    return sha256_json(full)


def tau2_style_grade(db_path: Path, task: Task, traj: Trajectory) -> bool:
    calls = [Action(name=c.name, arguments=c.arguments or {}) for c in traj.tool_calls()]
    gold = tau2_style_db_hash(db_path, task.gold_actions, task.customer_user_id)
    actual = tau2_style_db_hash(db_path, calls, start_user(task))
    return gold == actual


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", type=Path, default=ROOT / ".." / "shared" / "tau2_retail")
    parser.add_argument("--rounds", type=int, default=5, help="Timed rounds of our grader (median reported).")
    parser.add_argument("--baseline-tasks", type=int, default=0, help="Limit the baseline to N tasks (0 = all).")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "grading.json")
    args = parser.parse_args()

    t0 = time.perf_counter()
    domain = load_tau2_domain(args.domain)
    world, tasks = domain.world, domain.tasks
    _ = world.fingerprint
    load_s = time.perf_counter() - t0
    trajs = {t.id: gold_trajectory(world, t) for t in tasks}

    cold, warm = [], []
    for _ in range(args.rounds):
        clear_expected_cache()
        t0 = time.perf_counter()
        verdicts = [grade(world, t, trajs[t.id], authenticated_user_id=start_user(t)) for t in tasks]
        cold.append((time.perf_counter() - t0) / len(tasks))
        t0 = time.perf_counter()
        for t in tasks:
            grade(world, t, trajs[t.id], authenticated_user_id=start_user(t))
        warm.append((time.perf_counter() - t0) / len(tasks))
    failed = [verdict_summary(v) for v in verdicts if not v.passed]

    base_tasks = tasks[: args.baseline_tasks] if args.baseline_tasks else tasks
    t0 = time.perf_counter()
    base_ok = [tau2_style_grade(args.domain / "db.json", t, trajs[t.id]) for t in base_tasks]
    base = (time.perf_counter() - t0) / len(base_tasks)
    agree = sum(ok == v.component("state").passed for ok, v in zip(base_ok, verdicts, strict=False))

    ours_cold, ours_warm = statistics.median(cold), statistics.median(warm)
    result = {
        "tasks": len(tasks),
        "passed": len(tasks) - len(failed),
        "failed": failed,
        "baseline_tasks": len(base_tasks),
        "baseline_agrees_on_state": agree,
        "world_load_s": round(load_s, 3),
        "ours_cold_ms_per_task": round(ours_cold * 1e3, 3),
        "ours_warm_ms_per_task": round(ours_warm * 1e3, 3),
        "tau2_style_ms_per_task": round(base * 1e3, 2),
        "speedup_cold": round(base / ours_cold, 1),
        "speedup_warm": round(base / ours_warm, 1),
        "target_speedup": 50,
        "rounds": args.rounds,
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
    }
    print(f"grading {len(tasks)} τ²-bench gold trajectories ({result['passed']} pass; world load {load_s:.2f} s)")
    print(f"{'grader':<34}{'ms/task':>10}{'speedup':>10}")
    print(f"{'τ²-style (rebuild db per check)':<34}{result['tau2_style_ms_per_task']:>10.2f}{1.0:>10.1f}")
    print(f"{'agentloop, cold cache':<34}{result['ours_cold_ms_per_task']:>10.3f}{result['speedup_cold']:>10.1f}")
    print(f"{'agentloop, warm cache':<34}{result['ours_warm_ms_per_task']:>10.3f}{result['speedup_warm']:>10.1f}")
    print(f"baseline and agentloop agree on the end state for {agree}/{len(base_tasks)} tasks")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
