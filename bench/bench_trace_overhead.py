"""Trace-logging overhead: the time `promote` spends logging a measurement's trials as MLflow traces, against the
time of the measure itself, on the same 800-trial run (200 tasks × 4 trials, the loop's default shape).

By default the measure runs a scripted flawed agent (no model: the cheapest measure there is, so the ratio is
an upper bound on what the traces add); `--agent hf:models/embedded,temperature=0.7 --world gen-101` measures
the loop's own baseline (the embedded model on the held-out world). The traces then go through
`log_trial_traces`, the function the promote stage calls, into a fresh sqlite store, once per round; rounds
take turns with a measure.

    python bench/bench_trace_overhead.py [--tasks 200] [--trials 4] [--rounds 2] [--agent SPEC] [--world REF]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.authoring.templates import generate_tasks  # noqa: E402
from pipeline.dataset.io import write_tasks  # noqa: E402
from pipeline.measure import MeasureConfig, measure  # noqa: E402
from pipeline.tracking import TrackingConfig  # noqa: E402
from pipeline.tracking.traces import log_trial_traces  # noqa: E402
from pipeline.world.registry import load_world  # noqa: E402

WORLD = "gen-0"
AGENT = "flawed:plan_adherence=0.2,invention=0.2,misread=0.2"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--agent", default=AGENT, help="agent spec to measure (default: a scripted flawed agent)")
    ap.add_argument("--world", default=WORLD, help="world reference the tasks come from")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "trace_overhead.json")
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    measures, traces = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tasks = root / "tasks.jsonl"
        write_tasks(tasks, generate_tasks(load_world(args.world), args.tasks, seed=0))
        for r in range(args.rounds):
            run_dir = root / f"run{r}"
            t0 = time.perf_counter()
            config = MeasureConfig(world=args.world, tasks=tasks, agent=args.agent, trials=args.trials, resamples=200)
            measure(config, run_dir)
            measures.append(time.perf_counter() - t0)
            config = TrackingConfig(tracking_uri=f"sqlite:///{root / f'store{r}.db'}")
            client = config.client()
            exp = config.experiment_id(client)
            run = client.create_run(exp, run_name="iter-001 · measure · baseline")
            got = log_trial_traces(
                config.tracking_uri, exp, run.info.run_id, run_dir, role="baseline", iteration=1, run_key=f"r{r}"
            )
            traces.append(got["seconds"])
            print(f"round {r}: measure {measures[-1]:.2f} s, {got['traces']} traces in {got['seconds']:.2f} s")
    m, t = statistics.median(measures), statistics.median(traces)
    report = {
        "trials": args.tasks * args.trials,
        "world": args.world,
        "agent": args.agent,
        "measure_s": [round(x, 3) for x in measures],
        "trace_log_s": [round(x, 3) for x in traces],
        "median_measure_s": round(m, 3),
        "median_trace_log_s": round(t, 3),
        "trace_log_over_measure": round(t / m, 3),
        "ms_per_trace": round(1000 * t / (args.tasks * args.trials), 3),
        "store": "sqlite (fresh per round; the first trace search also runs the store's setup)",
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}",
    }
    write_results(args.out, report)
    print(f"trace logging / measure = {report['trace_log_over_measure']} ({report['ms_per_trace']} ms per trace)")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
