"""Proof against planted truth: does the failure-mode classifier recover the flaws a flawed agent planted?

A domain's world (`--domain retail`, the default: a seeded generated world of 50 products, 500 users, 1000 orders;
`--domain airline`: τ²-bench airline's database, ../shared/tau2_airline), `--tasks` of the domain's generated
evaluation tasks (its `tasks` capability; a domain without one, as telecom, takes the first `--tasks` of its
τ²-bench base tasks, ../shared/tau2_telecom), each run `--trials` times by the domain's flawed scripted agent (its
`flaws` capability) with every mode planted at `--rate`, against the scripted customer in the domain's phrasing.
A domain whose customer holds tools (dual control) is scored on the dual-control modes as well (unverified_fix,
wrong_instruction, skipped_step: each counted under its mode too), with 60 turns per episode.
Each trial is graded and analysed (`pipeline.grading.failure_modes.analyze`, which sees only the trajectory, its
world log and the verdict); the modes it names are then compared with the modes the agent planted (`planted`).
Reported: per-mode precision and recall, the planted-vs-detected confusion matrix (every pair per trial,
'none' for an empty side), dominant-mode accuracy, per-variant recall, how many failed trials had no mode
evidence, signatures and the looked-complete share, and how many tasks the domain's oracle passes (one trial each).
Written to bench/results/failure_modes.json (retail) or failure_modes_<domain>.json.

    python bench/bench_failure_modes.py [--domain retail] [--world REF] [--tasks 240] [--trials 4] [--rate 0.25]
                                        [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from pipeline.grading.dual_control import DUAL_CONTROL_MODES
from pipeline.grading.failure_modes import FAILURE_MODES, SIGNATURES, analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import format_report, score
from pipeline.rollout.runner import Limits, run_episode
from pipeline.tau2.data import tau2_data_dir
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world, resolve_domain

ROOT = Path(__file__).resolve().parents[1]
MIN_SCORE = 0.9
DEFAULT_WORLDS = {
    "retail": lambda seed: f"gen-{seed}",
    "airline": lambda seed: str(tau2_data_dir("airline")),
    "telecom": lambda seed: str(tau2_data_dir("telecom")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=240)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--rate", type=float, default=0.25, help="Planting rate of every mode.")
    parser.add_argument("--seed", type=int, default=0, help="World, task and planting seed.")
    parser.add_argument("--domain", default="retail", help="retail, airline or module:attribute.")
    parser.add_argument("--world", default=None, help="World reference (default: the domain's, see above).")
    parser.add_argument("--out", type=Path, default=None, help="Default: bench/results/failure_modes[_DOMAIN].json.")
    args = parser.parse_args()

    domain = resolve_domain(args.domain)
    ref = args.world or (DEFAULT_WORLDS[domain.name](args.seed) if domain.name in DEFAULT_WORLDS else "")
    if not ref:
        raise SystemExit(f"domain {domain.name!r} has no default world: give --world")
    suffix = "" if domain.name == "retail" else f"_{domain.name}"
    out = args.out or ROOT / "bench" / "results" / f"failure_modes{suffix}.json"
    need = "the failure-mode proof"
    dual = bool(domain.user_tools)
    modes = (*FAILURE_MODES, *DUAL_CONTROL_MODES) if dual else FAILURE_MODES
    limits = Limits(max_turns=60) if dual else Limits()
    if domain.tasks() is not None or domain.tau2_importer() is None:
        world = load_world(ref, args.domain)
        tasks = domain.require("tasks", needed_for=need)(world, args.tasks, seed=args.seed)
    else:
        world, tasks = domain.require("tau2_importer", needed_for=need).load(ref)
        tasks = tasks[: args.tasks]
    agent = domain.require("flaws", needed_for=need)(dict.fromkeys(modes, args.rate), seed=args.seed)
    oracle = domain.require("oracle", needed_for=need)()
    rows, signatures, variants = [], Counter(), defaultdict(lambda: [0, 0])
    looked_complete = planted_but_passed = 0
    run_s = analyze_s = 0.0
    for task in tasks:
        for trial in range(args.trials):
            t0 = time.perf_counter()
            traj = run_episode(world, task, agent, ScriptedUser(), trial=trial, limits=limits)
            verdict = grade(world, task, traj, limits=limits)
            t1 = time.perf_counter()
            analysis = analyze(task, traj, verdict)
            analyze_s += time.perf_counter() - t1
            run_s += t1 - t0
            planted = agent.planted(task, trial)
            detected = [*analysis.modes, *analysis.dual_control]
            rows.append((planted, detected, analysis.dominant, verdict.passed))
            planted_but_passed += bool(planted) and verdict.passed
            if not verdict.passed:
                signatures.update(analysis.signature)
                looked_complete += analysis.looked_complete
            for mode, variant in agent.planted_variants(task, trial).values():
                variants[variant][0] += 1
                variants[variant][1] += mode in detected

    oracle_failed = [
        t.id
        for t in tasks
        if not grade(world, t, run_episode(world, t, oracle, ScriptedUser(), limits=limits), limits=limits).passed
    ]
    report = score(rows, modes)
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
        "oracle_passed": len(tasks) - len(oracle_failed),
        "oracle_failed": oracle_failed,
        "episode_and_grade_s": round(run_s, 2),
        "ms_per_trial": round(1000 * run_s / max(1, len(rows)), 3),
        "analyze_ms_per_trial": round(1000 * analyze_s / max(1, len(rows)), 3),
    }
    print(f"{len(tasks)} tasks x {args.trials} trials on {world.name}, every mode planted at {args.rate}\n")
    print(format_report(report))
    print("\nper variant: " + ", ".join(f"{v} {d}/{n}" for v, (n, d) in sorted(variants.items())))
    print(f"planted trials the verdict passed anyway: {planted_but_passed}")
    print(f"signatures of failed trials: {dict(signatures)}; looked complete {looked_complete}/{failed}")
    print(f"oracle passed {result['oracle_passed']}/{len(tasks)} tasks")
    print(f"episode and grade: {result['ms_per_trial']} ms per trial; analyze: {result['analyze_ms_per_trial']} ms")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    weak = [m for m, s in report.per_mode.items() if min(s.precision, s.recall) < MIN_SCORE]
    if weak:
        raise SystemExit(f"precision or recall below {MIN_SCORE} for: {', '.join(weak)}")


if __name__ == "__main__":
    main()
