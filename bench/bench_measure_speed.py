"""Measuring one episode at a time vs with episodes in flight: the embedded baseline, same trials, same verdicts.

Runs the committed embedded checkpoint (sampled at the loop's temperature) on the same held-out-style tasks
three times in one process: one episode at a time (the runner drives one episode, the model draws one token a
pass), `--concurrency C` episodes in flight with their decoding steps batched by the hf backend's continuous
batching and no drafts (`draft=0`), and the same with `--draft K` draft tokens per reply and pass (the
default). The tasks are cut into `--rounds` slices and the arms take turns on each slice (the order rotating),
so load from other work on the machine falls on all. Reports wall and CPU time, trials/s, the speed-ups, and
whether every trajectory (timings aside) and verdict is identical; with `--reference` (a trajectories.jsonl of
the same trials, e.g. the loop's `runs/baseline`), how many trials equal it too.

    python bench/bench_measure_speed.py [--tasks 200] [--trials 4] [--concurrency 16] [--draft 8] [--rounds 4]
        [--world gen-101] [--reference runs/baseline/trajectories.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from machine import torch_machine

from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.rollout.trajectory import Trajectory
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]


def timed(world, tasks, agent, trials: int, concurrency: int) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one arm on `tasks`, and each trial's verdict and trajectory (timings aside)."""
    started, cpu = time.perf_counter(), time.process_time()
    results = SerialExecutor(batch=concurrency).run(world, tasks, agent, ScriptedUser(), trials, seed=0)
    out = {}
    for r in results:
        out[(r.task.id, r.trial)] = (r.verdict.passed, comparable(r.trajectory))
    return time.perf_counter() - started, time.process_time() - cpu, out


def comparable(trajectory: Trajectory) -> str:
    """A trajectory without its timings, usage and agent name (the loop names its checkpoint copy `checkpoint`)."""
    return trajectory.without_timings().model_dump_json(exclude={"agent_usage", "agent"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--draft", type=int, default=8, help="draft tokens per reply and pass in the third arm")
    ap.add_argument("--rounds", type=int, default=4, help="task slices the arms take turns on")
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--checkpoint", default=str(ROOT / "models" / "embedded"))
    ap.add_argument("--reference", type=Path, help="trajectories.jsonl of the same trials to compare with")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "measure_speed.json"))
    args = ap.parse_args()
    world = load_world(args.world)
    tasks = generate_tasks(world, args.tasks, seed=0)
    spec = f"hf:{args.checkpoint},temperature=0.7"
    arms = {
        "one_at_a_time": (make_agent(f"{spec},draft=0"), 1),
        "in_flight": (make_agent(f"{spec},draft=0"), args.concurrency),
        "in_flight_drafts": (make_agent(f"{spec},draft={args.draft}"), args.concurrency),
    }
    wall, cpu, got = dict.fromkeys(arms, 0.0), dict.fromkeys(arms, 0.0), {name: {} for name in arms}
    rounds = max(1, min(args.rounds, len(tasks)))
    for i in range(rounds):
        part = tasks[i * len(tasks) // rounds : (i + 1) * len(tasks) // rounds]
        names = list(arms)
        for name in names[i % len(names) :] + names[: i % len(names)]:
            agent, width = arms[name]
            w, c, out = timed(world, part, agent, args.trials, width)
            wall[name] += w
            cpu[name] += c
            got[name].update(out)
            print(f"round {i + 1}/{rounds} {name}: {w:.1f} s wall, {c:.1f} s CPU", flush=True)
    one = got["one_at_a_time"]
    trials = len(one)
    base = wall["one_at_a_time"]
    result = {
        "tasks": len(tasks),
        "trials": trials,
        "concurrency": args.concurrency,
        "draft": args.draft,
        "rounds": rounds,
        "wall_s": {k: round(v, 2) for k, v in wall.items()},
        "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "speedup": {k: round(base / v, 2) for k, v in wall.items()},
        "cpu_speedup": {k: round(cpu["one_at_a_time"] / v, 2) for k, v in cpu.items()},
        "trials_per_s": {k: round(trials / v, 2) for k, v in wall.items()},
        "identical_trajectories": {k: sum(one[t][1] == v[t][1] for t in one) for k, v in got.items()},
        "identical_verdicts": {k: sum(one[t][0] == v[t][0] for t in one) for k, v in got.items()},
        "passes": sum(bool(v[0]) for v in one.values()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": torch_machine(),
    }
    if args.reference:
        ref = {}
        for line in args.reference.read_text().splitlines():
            t = Trajectory.model_validate_json(line)
            ref[(t.task_id, t.trial)] = comparable(t)
        result["reference"] = str(args.reference)
        result["identical_to_reference"] = {k: sum(ref.get(t) == v[t][1] for t in v) for k, v in got.items()}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
