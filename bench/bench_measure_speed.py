"""Measuring one episode at a time vs with episodes in flight: the embedded baseline, same trials, same verdicts.

Runs the committed embedded checkpoint (sampled at the loop's temperature) on the same held-out-style tasks
twice in one process: `concurrency 1` (the runner drives one episode at a time) and `--concurrency C` (C
episodes in flight, their decoding steps batched by the hf backend's continuous batching). Reports wall time,
trials/s, the speed-up, and whether every trajectory (timings aside) and verdict is identical.

    python bench/bench_measure_speed.py [--tasks 200] [--trials 4] [--concurrency 16] [--world gen-101]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from machine import torch_machine

from pipeline.agents.registry import make_agent
from pipeline.rollout.executor import SerialExecutor
from pipeline.synth.templates import generate_tasks
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]


def timed(world, tasks, agent, trials: int, concurrency: int) -> tuple[float, dict]:
    started = time.perf_counter()
    results = SerialExecutor(batch=concurrency).run(world, tasks, agent, ScriptedUser(), trials, seed=0)
    out = {}
    for r in results:
        record = r.trajectory.without_timings().model_dump_json(exclude={"agent_usage"})
        out[(r.task.id, r.trial)] = (r.verdict.passed, record)
    return time.perf_counter() - started, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--checkpoint", default=str(ROOT / "models" / "embedded"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "measure_speed.json"))
    args = ap.parse_args()
    world = load_world(args.world)
    tasks = generate_tasks(world, args.tasks, seed=0)
    agent = make_agent(f"hf:{args.checkpoint},temperature=0.7")
    one_s, one = timed(world, tasks, agent, args.trials, 1)
    many_s, many = timed(world, tasks, agent, args.trials, args.concurrency)
    trials = len(one)
    result = {
        "tasks": len(tasks),
        "trials": trials,
        "concurrency": args.concurrency,
        "one_at_a_time_s": round(one_s, 2),
        "in_flight_s": round(many_s, 2),
        "speedup": round(one_s / many_s, 2),
        "trials_per_s": {"one_at_a_time": round(trials / one_s, 2), "in_flight": round(trials / many_s, 2)},
        "identical_trajectories": sum(one[k][1] == many[k][1] for k in one),
        "identical_verdicts": sum(one[k][0] == many[k][0] for k in one),
        "passes": sum(bool(v[0]) for v in one.values()),
        "machine": torch_machine(),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
