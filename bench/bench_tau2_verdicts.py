"""Both verdicts on τ²-bench gold conversations, and the time to import and re-grade a τ²-bench results file.

1. For retail (114 tasks) and airline (50): the gold-equivalent conversation of every task (natural confirmation
   replies) graded by the strict verdict and by the τ²-compatible reward (no judge, so NL assertions are left
   out), with the failing components of any that fail; and every perturbation graded by both.
2. A results file of retail's 114 tasks × 4 trials in τ²-bench's data model (the gold conversations, trial by
   trial), imported with `import_run` (replay, both verdicts, metrics): wall-clock seconds.

    PYTHONPATH=. python bench/bench_tau2_verdicts.py [--results bench/results/tau2_verdicts.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from pipeline.errors import TaskError
from pipeline.grading.grader import grade
from pipeline.grading.tau2_criteria import apply_criteria
from pipeline.tau2.data import tau2_data_dir
from pipeline.tau2.gold import PERTURBATIONS, gold_conversation, perturb
from pipeline.tau2.import_run import import_run
from pipeline.tau2.results_file import results_of, simulation_of
from pipeline.world.registry import resolve_domain

ROOT = Path(__file__).resolve().parents[1]
NATURAL = ("Sounds good, please do that.", "Absolutely, go ahead.", "Yes please, that's correct.", "Perfect, go ahead.")


def load(name: str):
    path = tau2_data_dir(name)
    raw = json.loads((path / "tasks.json").read_text())
    world, tasks = resolve_domain(name).require("tau2_importer").load(path)
    return path, raw, world, apply_criteria(tasks, raw)


def gold_both(world, tasks) -> dict:
    failed = {}
    t0 = time.perf_counter()
    for t in tasks:
        v = grade(world, t, gold_conversation(world, t, NATURAL))
        if not (v.passed and v.tau2.passed):
            failed[t.id] = {"strict": v.failed_components, "tau2": v.tau2.failed, "diagnostics": v.diagnostics[:3]}
    return {
        "tasks": len(tasks),
        "strict_pass": sum(1 for t in tasks if not failed.get(t.id, {}).get("strict")),
        "tau2_pass": sum(1 for t in tasks if not failed.get(t.id, {}).get("tau2")),
        "failed": failed,
        "grade_s": round(time.perf_counter() - t0, 3),
    }


def perturbed_both(world, tasks) -> dict:
    out = {}
    for how in PERTURBATIONS:
        c: Counter[str] = Counter()
        for t in tasks:
            try:
                v = grade(world, t, perturb(world, t, how, NATURAL))
            except TaskError:  # a perturbation this task has nothing to perturb for
                c["not applicable"] += 1
                continue
            c[f"strict {'pass' if v.passed else 'fail'} / tau2 {'pass' if v.tau2.passed else 'fail'}"] += 1
        out[how] = dict(sorted(c.items()))
    return out


def import_bench(path, raw, world, tasks, trials: int = 4) -> dict:
    sims = [
        simulation_of(gold_conversation(world, t, NATURAL, trial=k), f"{t.id}-{k}", 1.0)
        for t in tasks
        for k in range(trials)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        results.write_text(json.dumps(results_of(sims, raw, world.domain.name, trials)))
        size = results.stat().st_size
        t0 = time.perf_counter()
        record = import_run(results, path, Path(tmp) / "run")
        wall = time.perf_counter() - t0
    return {"simulations": len(sims), "file_bytes": size, "import_s": round(wall, 3), "record": record}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "tau2_verdicts.json")
    args = ap.parse_args()
    report: dict = {}
    for name in ("retail", "airline"):
        path, raw, world, tasks = load(name)
        report[name] = {"gold": gold_both(world, tasks), "perturbed": perturbed_both(world, tasks)}
        g = report[name]["gold"]
        print(
            f"{name}: gold strict {g['strict_pass']}/{g['tasks']}, tau2 {g['tau2_pass']}/{g['tasks']};"
            f" failed {g['failed']}"
        )
        print(f"{name}: perturbed {report[name]['perturbed']}")
        if name == "retail":
            report["import_retail_114x4"] = import_bench(path, raw, world, tasks)
            r = report["import_retail_114x4"]
            print(f"import {r['simulations']} simulations ({r['file_bytes']} bytes): {r['import_s']} s")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
