"""Replay of τ²-bench telecom's task sets — the 114 base tasks and the 2,285 of the full set — as
`agentloop world replay` plays them: each task's set-up on both sides, then its gold actions each by its own side,
the synchronisation after every call, then its env assertions on the final state.

Reported per set: tasks, time to load (both databases and the task file), time to replay and check, per task;
tasks with a refused gold action; tasks meeting every assertion; assertions met of all. Side by side, one run.

    python bench/bench_telecom_replay.py [--domain ../shared/tau2_telecom] [--out bench/results/telecom_replay.json]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from machine import host_machine, write_results

from pipeline.dataset.replay import replay_task
from pipeline.tau2.data import tau2_data_dir
from pipeline.world.registry import domain_of_directory

ROOT = Path(__file__).resolve().parents[1]
SETS = (("base", "tasks.json"), ("small", "tasks_small.json"), ("full", "tasks_full.json"))


def bench_set(domain_dir: Path, label: str, tasks_file: str) -> dict:
    importer = domain_of_directory(domain_dir).require("tau2_importer", needed_for="the telecom replay bench")
    t0 = time.perf_counter()
    world, tasks = importer.load(domain_dir, tasks_file)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lines = [replay_task(world, task, importer.replay_tables) for task in tasks]
    replay_s = time.perf_counter() - t0
    assertions = [a for line in lines for a in line.get("assertions", [])]
    return {
        "set": label,
        "file": tasks_file,
        "tasks": len(tasks),
        "load_s": round(load_s, 3),
        "replay_s": round(replay_s, 3),
        "ms_per_task": round(replay_s / max(len(tasks), 1) * 1e3, 3),
        "tasks_with_failed_actions": sum(1 for line in lines if line["failed_actions"]),
        "tasks_meeting_all_assertions": sum(1 for line in lines if all(a["met"] for a in line.get("assertions", []))),
        "assertions": len(assertions),
        "assertions_met": sum(1 for a in assertions if a["met"]),
        "gold_actions": sum(len(t.gold_actions) for t in tasks),
        "customer_side_gold_actions": sum(1 for t in tasks for a in t.gold_actions if a.requestor == "user"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "telecom_replay.json")
    args = parser.parse_args()
    load = os.getloadavg()
    if args.domain is None:
        args.domain = tau2_data_dir("telecom")
    results = [bench_set(args.domain, label, f) for label, f in SETS if (args.domain / f).exists()]
    print(
        f"{'set':<7}{'tasks':>7}{'load s':>8}{'replay s':>10}{'ms/task':>9}{'failed':>8}{'all met':>9}{'met/all':>13}"
    )
    for r in results:
        print(
            f"{r['set']:<7}{r['tasks']:>7}{r['load_s']:>8.2f}{r['replay_s']:>10.2f}{r['ms_per_task']:>9.2f}"
            f"{r['tasks_with_failed_actions']:>8}{r['tasks_meeting_all_assertions']:>9}"
            f"{r['assertions_met']:>7}/{r['assertions']:<5}"
        )
    report = {
        "sets": results,
        "machine": host_machine(load),
    }
    write_results(args.out, report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
