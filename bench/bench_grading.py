"""Grading time per task on τ²-bench gold trajectories — retail's 114, airline's 50 and telecom's 114, side by
side — against a τ²-bench-style evaluator.

Each task's trajectory is its gold actions as assistant tool calls, with an ask-and-"yes" exchange before
every write (so the confirmation check passes). τ² gold trajectories have no authentication step (tasks
70-113 hold only writes), so for tasks from τ²-bench the episode starts with the task's customer already
authenticated, for the recorded episode and for the grader's replay alike.

Telecom (dual control): each episode starts from the task's set-up on both sides; a gold action the customer
makes is the customer's own call (the agent asks, the customer acts); the verdict's env assertions are checked.

Baseline: what τ²-bench's evaluator does per task: for the gold replay and again for the trajectory
replay, rebuild the database from db.json (json.load + pydantic validation + deep copy; both databases and
the set-up where the domain has dual control), run the calls on it, hash the whole database, and compare the
two hashes.

Ours is timed cold (expected-state cache empty: gold replay included) and warm (cache hit, as for the
second and later trials of a task). Loading the world once is reported separately. Everything goes through
the domain boundary (the directory's domain, its τ²-bench importer, its tools' kinds): no domain is named here.

    python bench/bench_grading.py [--domain ../shared/tau2_retail --domain ../shared/tau2_airline] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from pathlib import Path

from machine import host_machine, write_results

from pipeline.dataset.replay import replay_actions
from pipeline.dataset.setup import start_session
from pipeline.dataset.task import Action, Task
from pipeline.grading.grader import clear_expected_cache, grade, verdict_summary
from pipeline.rollout.runner import run_tool_call
from pipeline.rollout.trajectory import CustomerCall, Message, ToolCall, Trajectory
from pipeline.tau2.data import tau2_data_dir
from pipeline.world.registry import domain_of_directory
from pipeline.world.tables import World, sha256_json

ROOT = Path(__file__).resolve().parents[1]


def start_user(task: Task) -> str | None:
    """Who the episode starts authenticated as: τ² tasks' customer (their gold has no auth step), else nobody."""
    return task.customer_user_id if task.provenance.source == "tau2" else None


def gold_trajectory(world: World, task: Task) -> Trajectory:
    """The gold actions as an episode, recorded the way the runner records one."""
    session = start_session(world, task, authenticated_user_id=start_user(task))
    messages = [Message(role="user", content="Hi, I need help.")]
    customer_calls: list[CustomerCall] = []
    for i, action in enumerate(task.gold_actions):
        if world.side_of(action.requestor) == "user":  # the agent asks, the customer acts on their phone
            messages.append(Message(role="assistant", content=f"Please {action.name} on your phone."))
            call = ToolCall(id=f"user_{i}", name=action.name, arguments=action.arguments)
            result = run_tool_call(session, call, requestor="user")
            customer_calls.append(CustomerCall(at=len(messages), call=call, result=result))
            messages.append(Message(role="user", content="Done."))
            continue
        if world.tools[action.name].kind == "write":
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
        customer_calls=customer_calls,
        world_log=[e.to_dict() for e in session.log],
        final_changed=session.changed(),
        final_hash=session.state_hash(),
    )


def tau2_style_db_hash(domain_dir: Path, actions, user_id: str | None, task: Task) -> str:
    """One τ²-bench check: fresh database from disk (parsed and validated), set-up, replay, hash of the whole
    database."""
    world = copy.deepcopy(domain_of_directory(domain_dir).load(str(domain_dir)))
    session = replay_actions(world, actions, user_id, task=task)
    full = world.to_dict()
    for table, records in session.changed().items():
        full[table].update(records)
    return sha256_json(full)


def tau2_style_grade(domain_dir: Path, task: Task, traj: Trajectory) -> bool:
    calls = [Action(name=e["name"], arguments=e["arguments"], requestor=e.get("requestor")) for e in traj.world_log]
    gold = tau2_style_db_hash(domain_dir, task.gold_actions, task.customer_user_id, task)
    actual = tau2_style_db_hash(domain_dir, calls, start_user(task), task)
    return gold == actual


def bench_domain(domain_dir: Path, rounds: int, baseline_tasks: int) -> dict:
    t0 = time.perf_counter()
    domain = domain_of_directory(domain_dir)
    world, tasks = domain.require("tau2_importer", needed_for="the grading bench").load(domain_dir)
    _ = world.fingerprint
    load_s = time.perf_counter() - t0
    trajs = {t.id: gold_trajectory(world, t) for t in tasks}

    cold, warm = [], []
    for _ in range(rounds):
        clear_expected_cache()
        t0 = time.perf_counter()
        verdicts = [grade(world, t, trajs[t.id], authenticated_user_id=start_user(t)) for t in tasks]
        cold.append((time.perf_counter() - t0) / len(tasks))
        t0 = time.perf_counter()
        for t in tasks:
            grade(world, t, trajs[t.id], authenticated_user_id=start_user(t))
        warm.append((time.perf_counter() - t0) / len(tasks))
    failed = [verdict_summary(v) for v in verdicts if not v.passed]

    base_tasks = tasks[:baseline_tasks] if baseline_tasks else tasks
    t0 = time.perf_counter()
    base_ok = [tau2_style_grade(domain_dir, t, trajs[t.id]) for t in base_tasks]
    base = (time.perf_counter() - t0) / len(base_tasks)
    agree = sum(ok == v.component("state").passed for ok, v in zip(base_ok, verdicts, strict=False))
    ours_cold, ours_warm = statistics.median(cold), statistics.median(warm)
    return {
        "domain": domain.name,
        "directory": domain_dir.resolve().name,
        "tasks": len(tasks),
        "passed": len(tasks) - len(failed),
        "failed": failed,
        "env_assertions_met": sum(1 for v in verdicts if (c := v.component("env_assertions")) and c.passed),
        "tau2_reward_1": sum(1 for v in verdicts if v.tau2 is not None and v.tau2.reward == 1.0),
        "baseline_tasks": len(base_tasks),
        "baseline_agrees_on_state": agree,
        "world_load_s": round(load_s, 3),
        "ours_cold_ms_per_task": round(ours_cold * 1e3, 3),
        "ours_warm_ms_per_task": round(ours_warm * 1e3, 3),
        "tau2_style_ms_per_task": round(base * 1e3, 2),
        "speedup_cold": round(base / ours_cold, 1),
        "speedup_warm": round(base / ours_warm, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--domain",
        type=Path,
        action="append",
        help="A τ²-bench domain directory (repeatable; default: ../shared/tau2_retail, tau2_airline, tau2_telecom).",
    )
    parser.add_argument("--rounds", type=int, default=5, help="Timed rounds of our grader (median reported).")
    parser.add_argument("--baseline-tasks", type=int, default=0, help="Limit the baseline to N tasks (0 = all).")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "grading.json")
    args = parser.parse_args()
    load = os.getloadavg()
    dirs = args.domain or [tau2_data_dir("retail"), tau2_data_dir("airline"), tau2_data_dir("telecom")]
    results = [bench_domain(d, args.rounds, args.baseline_tasks) for d in dirs]
    print(
        f"{'domain':<10}{'tasks':>6}{'pass':>6}{'load s':>8}{'τ²-style ms':>13}{'cold ms':>9}{'warm ms':>9}"
        f"{'×cold':>8}{'×warm':>8}{'agree':>7}"
    )
    for r in results:
        print(
            f"{r['domain']:<10}{r['tasks']:>6}{r['passed']:>6}{r['world_load_s']:>8.2f}{r['tau2_style_ms_per_task']:>13.2f}"
            f"{r['ours_cold_ms_per_task']:>9.3f}{r['ours_warm_ms_per_task']:>9.3f}{r['speedup_cold']:>8.1f}"
            f"{r['speedup_warm']:>8.1f}{r['baseline_agrees_on_state']:>7}"
        )
    report = {
        "domains": results,
        "target_speedup": 50,
        "rounds": args.rounds,
        "machine": host_machine(load),
    }
    write_results(args.out, report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
