"""Measuring one episode at a time vs with episodes in flight: the embedded baseline, same trials, same verdicts.

Runs the committed embedded checkpoint (sampled at the loop's temperature) on the same held-out-style tasks
twice in one process: `concurrency 1` (the runner drives one episode at a time) and `--concurrency C` (C
episodes in flight, their decoding steps batched by the hf backend's continuous batching). The tasks are cut
into `--rounds` slices and the two arms take turns on each slice (the first arm alternating), so load from
other work on the machine falls on both. Reports wall and CPU time, trials/s, the speed-ups, and whether every
trajectory (timings aside) and verdict is identical.

    python bench/bench_measure_speed.py [--tasks 200] [--trials 4] [--concurrency 16] [--rounds 4]
        [--world gen-101]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from machine import torch_machine

from pipeline.agents.registry import make_agent
from pipeline.rollout.executor import SerialExecutor
from pipeline.synth.templates import generate_tasks
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]


def timed(world, tasks, agent, trials: int, concurrency: int) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one arm on `tasks`, and each trial's verdict and trajectory (timings aside)."""
    started, cpu = time.perf_counter(), time.process_time()
    results = SerialExecutor(batch=concurrency).run(world, tasks, agent, ScriptedUser(), trials, seed=0)
    out = {}
    for r in results:
        record = r.trajectory.without_timings().model_dump_json(exclude={"agent_usage"})
        out[(r.task.id, r.trial)] = (r.verdict.passed, record)
    return time.perf_counter() - started, time.process_time() - cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=4, help="task slices the two arms take turns on")
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--checkpoint", default=str(ROOT / "models" / "embedded"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "measure_speed.json"))
    args = ap.parse_args()
    world = load_world(args.world)
    tasks = generate_tasks(world, args.tasks, seed=0)
    agent = make_agent(f"hf:{args.checkpoint},temperature=0.7")
    arms = {1: [0.0, 0.0, {}], args.concurrency: [0.0, 0.0, {}]}
    rounds = max(1, min(args.rounds, len(tasks)))
    for i in range(rounds):
        part = tasks[i * len(tasks) // rounds : (i + 1) * len(tasks) // rounds]
        for width in list(arms)[:: 1 if i % 2 == 0 else -1]:
            wall, cpu, out = timed(world, part, agent, args.trials, width)
            arms[width][0] += wall
            arms[width][1] += cpu
            arms[width][2].update(out)
            print(f"round {i + 1}/{rounds} concurrency {width}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    (one_s, one_cpu, one), (many_s, many_cpu, many) = arms[1], arms[args.concurrency]
    trials = len(one)
    result = {
        "tasks": len(tasks),
        "trials": trials,
        "concurrency": args.concurrency,
        "rounds": rounds,
        "one_at_a_time_s": round(one_s, 2),
        "in_flight_s": round(many_s, 2),
        "speedup": round(one_s / many_s, 2),
        "cpu_s": {"one_at_a_time": round(one_cpu, 2), "in_flight": round(many_cpu, 2)},
        "cpu_speedup": round(one_cpu / many_cpu, 2),
        "trials_per_s": {"one_at_a_time": round(trials / one_s, 2), "in_flight": round(trials / many_s, 2)},
        "identical_trajectories": sum(one[k][1] == many[k][1] for k in one),
        "identical_verdicts": sum(one[k][0] == many[k][0] for k in one),
        "passes": sum(bool(v[0]) for v in one.values()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": torch_machine(),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
