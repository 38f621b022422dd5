"""Ray scaling on world-bound work: oracle agent + scripted user + tools + grading, no model.

Runs the same tasks × trials serially in-process, then through the Ray executor with 1 and with 2 worker
actors on a local Ray instance of `--cpus` CPUs (default 2, the CI machine's size). Ray start-up is timed
apart. Scaling efficiency = (time with 1 worker / time with 2 workers) / 2; the driver process shares the same
cores, so on a 2-core machine the ceiling is below 1. Every run's results are checked equal to the serial ones.

    python bench/bench_ray_scaling.py [--tasks 300] [--trials 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.generator import GeneratorConfig
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.worlds import generate_world
from pipeline.grading.grader import clear_expected_cache
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_executor import RayExecutor
from pipeline.users.scripted import ScriptedUser

ROOT = Path(__file__).resolve().parents[1]


def timed(executor, world, tasks, trials) -> tuple[float, list]:
    clear_expected_cache()
    t0 = time.perf_counter()
    out = [
        (r.task.id, r.trial, r.verdict.passed, r.trajectory.final_hash)
        for r in executor.run(world, tasks, OracleAgent(), ScriptedUser(), trials)
    ]
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="Best of N for each configuration.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ray_scaling.json")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    world = generate_world(GeneratorConfig(seed=0))
    tasks = generate_tasks(world, args.tasks, seed=0)
    n = len(tasks) * args.trials
    serial_s, reference = min(timed(SerialExecutor(), world, tasks, args.trials) for _ in range(args.repeats))

    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray_start_s = time.perf_counter() - t0
    runs = {}
    for workers in (1, 2):
        best = None
        for _ in range(args.repeats):
            seconds, out = timed(RayExecutor(workers=workers), world, tasks, args.trials)
            assert out == reference, "Ray results differ from the serial ones"
            best = seconds if best is None else min(best, seconds)
        runs[workers] = best
    ray.shutdown()

    speedup = runs[1] / runs[2]
    result = {
        "world": world.name,
        "trials": n,
        "serial_s": round(serial_s, 3),
        "serial_trials_per_s": round(n / serial_s, 1),
        "ray_start_s": round(ray_start_s, 2),
        "ray_1_worker_s": round(runs[1], 3),
        "ray_2_workers_s": round(runs[2], 3),
        "ray_1_worker_trials_per_s": round(n / runs[1], 1),
        "ray_2_workers_trials_per_s": round(n / runs[2], 1),
        "speedup_2_vs_1": round(speedup, 3),
        "scaling_efficiency": round(speedup / 2, 3),
        "ray_1_worker_vs_serial": round(serial_s / runs[1], 3),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()},
    }
    print(
        f"{n} trials on {world.name}: serial {n / serial_s:.0f}/s, Ray 1 worker {n / runs[1]:.0f}/s, "
        f"2 workers {n / runs[2]:.0f}/s; speed-up {speedup:.2f}x, efficiency {speedup / 2:.0%}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
