"""Proof against planted truth: does the failure-mode classifier recover the flaws a flawed agent planted?

A seeded generated world (default size: 50 products, 500 users, 1000 orders), `--tasks` template tasks, each
run `--trials` times by the flawed scripted agent with every mode planted at `--rate`. Each trial is graded
and analysed (`pipeline.grading.failure_modes.analyze`, which sees only the trajectory, its world log and the
verdict); the modes it names are then compared with the modes the agent planted (`FlawedAgent.planted`).
Reported: per-mode precision and recall, the planted-vs-detected confusion matrix (every pair per trial,
'none' for an empty side), dominant-mode accuracy, per-variant recall, how many failed trials had no mode
evidence, signatures and the looked-complete share. Written to bench/results/failure_modes.json.

    python bench/bench_failure_modes.py [--tasks 240] [--trials 4] [--rate 0.25] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from pipeline.agents.flawed import FlawConfig, FlawedAgent
from pipeline.grading.failure_modes import FAILURE_MODES, SIGNATURES, analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import format_report, score
from pipeline.rollout.runner import run_episode
from pipeline.synth import generate_tasks
from pipeline.users.scripted import ScriptedUser
from pipeline.world.retail.generator import GeneratorConfig, generate_world

ROOT = Path(__file__).resolve().parents[1]
MIN_SCORE = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=240)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--rate", type=float, default=0.25, help="Planting rate of every mode.")
    parser.add_argument("--seed", type=int, default=0, help="World, task and planting seed.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "failure_modes.json")
    args = parser.parse_args()

    world = generate_world(GeneratorConfig(seed=args.seed))
    tasks = generate_tasks(world, args.tasks, seed=args.seed)
    agent = FlawedAgent(FlawConfig(rates=dict.fromkeys(FAILURE_MODES, args.rate), seed=args.seed))
    rows, signatures, variants = [], Counter(), defaultdict(lambda: [0, 0])
    looked_complete = planted_but_passed = 0
    run_s = analyze_s = 0.0
    for task in tasks:
        for trial in range(args.trials):
            t0 = time.perf_counter()
            traj = run_episode(world, task, agent, ScriptedUser(), trial=trial)
            verdict = grade(world, task, traj)
            t1 = time.perf_counter()
            analysis = analyze(task, traj, verdict)
            analyze_s += time.perf_counter() - t1
            run_s += t1 - t0
            planted = agent.planted(task, trial)
            rows.append((planted, analysis.modes, analysis.dominant, verdict.passed))
            planted_but_passed += bool(planted) and verdict.passed
            if not verdict.passed:
                signatures.update(analysis.signature)
                looked_complete += analysis.looked_complete
            for mode, variant in agent.planted_variants(task, trial).values():
                variants[variant][0] += 1
                variants[variant][1] += mode in analysis.modes

    report = score(rows, FAILURE_MODES)
    failed = report.failed_trials
    result = {
        "world": world.name,
        "tasks": len(tasks),
        "trials": args.trials,
        "rates": agent.config.rates,
        "planting_seed": args.seed,
        **report.model_dump(),
        "per_variant_recall": {
            v: {"planted": n, "detected": d, "recall": round(d / n, 4)} for v, (n, d) in sorted(variants.items())
        },
        "planted_but_passed": planted_but_passed,
        "signatures": {s: signatures[s] for s in SIGNATURES},
        "looked_complete_share_of_failed": round(looked_complete / failed, 4) if failed else 0.0,
        "episode_and_grade_s": round(run_s, 2),
        "analyze_ms_per_trial": round(1000 * analyze_s / max(1, len(rows)), 3),
    }
    print(f"{len(tasks)} tasks x {args.trials} trials on {world.name}, every mode planted at {args.rate}\n")
    print(format_report(report))
    print("\nper variant: " + ", ".join(f"{v} {d}/{n}" for v, (n, d) in sorted(variants.items())))
    print(f"planted trials the verdict passed anyway: {planted_but_passed}")
    print(f"signatures of failed trials: {dict(signatures)}; looked complete {looked_complete}/{failed}")
    print(f"analyze: {result['analyze_ms_per_trial']} ms per trial")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    weak = [m for m, s in report.per_mode.items() if min(s.precision, s.recall) < MIN_SCORE]
    if weak:
        raise SystemExit(f"precision or recall below {MIN_SCORE} for: {', '.join(weak)}")


if __name__ == "__main__":
    main()
