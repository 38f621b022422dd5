"""Episodes per second with no model: oracle agent + scripted user + tools, then the same with grading.

Tasks come from the template generator on a seeded generated world (the default-size world: 50 products,
500 users, 1000 orders). Each task runs `--trials` times (personas vary by trial). Timed separately:
task generation, episodes alone, grading alone (expected-state cache cleared first, so each task's gold
replay is paid once), and the flawed agent's episodes. Single process, serial.

    python bench/bench_episodes.py [--tasks 300] [--trials 4] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections import Counter
from pathlib import Path

from pipeline.authoring import generate
from pipeline.domains.retail.flawed import FlawConfig, FlawedAgent
from pipeline.domains.retail.generator import GeneratorConfig
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.worlds import generate_world
from pipeline.grading.grader import clear_expected_cache, grade
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser

ROOT = Path(__file__).resolve().parents[1]


def run_all(world, tasks, agent, trials):
    started = time.perf_counter()
    trajs = [(t, run_episode(world, t, agent, ScriptedUser(), trial=k)) for t in tasks for k in range(trials)]
    return trajs, time.perf_counter() - started


def grade_all(world, trajs):
    clear_expected_cache()
    started = time.perf_counter()
    verdicts = [grade(world, t, tr) for t, tr in trajs]
    return verdicts, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "episodes.json")
    args = parser.parse_args()

    t0 = time.perf_counter()
    world = generate_world(GeneratorConfig(seed=args.seed))
    world_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen = generate(world, args.tasks, seed=args.seed)
    gen_s = time.perf_counter() - t0
    tasks = gen.tasks

    trajs, run_s = run_all(world, tasks, OracleAgent(), args.trials)
    verdicts, grade_s = grade_all(world, trajs)
    n = len(trajs)
    flawed = FlawedAgent(FlawConfig(rates={"plan_adherence": 0.3, "invention": 0.3, "misread": 0.3}, seed=args.seed))
    ftrajs, frun_s = run_all(world, tasks, flawed, args.trials)
    fverdicts, fgrade_s = grade_all(world, ftrajs)
    planted = [bool(flawed.planted(t, tr.trial)) for t, tr in ftrajs]

    result = {
        "world": {"name": world.name, "products": 50, "users": 500, "orders": 1000, "generate_s": round(world_s, 3)},
        "tasks": len(tasks),
        "templates": dict(Counter(t.provenance.template for t in tasks)),
        "generation_skipped": dict(gen.skipped),
        "generate_tasks_per_s": round(len(tasks) / gen_s, 1),
        "trials": args.trials,
        "episodes": n,
        "oracle_pass_rate": sum(v.passed for v in verdicts) / n,
        "messages_per_episode": round(statistics.mean(len(tr.messages) for _, tr in trajs), 1),
        "max_messages_per_episode": max(len(tr.messages) for _, tr in trajs),
        "episodes_per_s": round(n / run_s, 1),
        "grades_per_s": round(n / grade_s, 1),
        "episodes_per_s_with_grading": round(n / (run_s + grade_s), 1),
        "flawed": {
            "rates": flawed.config.rates,
            "planted_share": round(sum(planted) / n, 3),
            "planted_trials_failed": sum(p and not v.passed for p, v in zip(planted, fverdicts, strict=True)),
            "planted_trials": sum(planted),
            "clean_trials_passed": sum((not p) and v.passed for p, v in zip(planted, fverdicts, strict=True)),
            "clean_trials": n - sum(planted),
            "episodes_per_s_with_grading": round(n / (frun_s + fgrade_s), 1),
        },
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
    }
    print(f"{len(tasks)} tasks x {args.trials} trials on {world.name} (generated in {gen_s:.2f} s)")
    print(f"oracle + scripted user:          {result['episodes_per_s']:>9.1f} episodes/s")
    print(f"grading:                         {result['grades_per_s']:>9.1f} verdicts/s")
    print(f"oracle + user + grading:         {result['episodes_per_s_with_grading']:>9.1f} episodes/s")
    print(f"oracle pass rate:                {result['oracle_pass_rate']:>9.1%}")
    f = result["flawed"]
    print(f"flawed + user + grading:         {f['episodes_per_s_with_grading']:>9.1f} episodes/s")
    print(
        f"flawed: planted {f['planted_trials']} trials, {f['planted_trials_failed']} failed; "
        f"clean {f['clean_trials']}, {f['clean_trials_passed']} passed"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
