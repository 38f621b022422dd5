"""SFT beside another job: what one busy core costs the loop's training, by OpenMP wait policy and torch threads.

Each arm fine-tunes the embedded default for the same optimizer steps on the same trajectories (the loop's SFT
settings: batches of 4 from micro-batches of 1, 2,048 tokens at most) in a fresh process, because the OpenMP runtime
reads `OMP_WAIT_POLICY` once, when torch loads it. Arms: the wait policy (`default`: libgomp's own when the variable
says nothing, a thread at a barrier spins 300,000 times before it sleeps, what SFT ran with before `pipeline` set
the variable; the arm passes an empty value, which libgomp reports as invalid and ignores, and which `pipeline`
leaves alone; `PASSIVE`: it sleeps at once, what `pipeline` sets; `spinN`: the default policy with
`GOMP_SPINCOUNT=N`, a bounded spin) × torch threads (2, the SFT default; 1) × the machine (alone; beside one core of
busy work, a Python loop that never sleeps). Rounds alternate the arms so each sees the same load. Reports training
steps per second (TRL's own train_runtime, set-up excluded), each arm's slowdown beside the busy core (its fair
share with two threads on two cores is about 1.5×: three runnable threads share two cores), the load average around
each run, and the losses (identical across wait policies: the policy changes how threads wait, not what they
compute). The machine is never quite alone on a shared host: the load average is recorded with every run, and the
ratios come from arms run back to back.

    python bench/bench_sft_contention.py [--steps 10] [--rounds 2] [--policies default,PASSIVE,spin1000]

Writes bench/results/sft_contention.json."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True:\n    pass\n"


def arm(checkpoint: Path, steps: int, threads: int, examples: int) -> dict:
    """One SFT run in this process (the policy came in through the environment); its speed and losses."""
    sys.path.insert(0, str(ROOT))
    from pipeline.authoring.templates import generate_tasks
    from pipeline.domains.retail.oracle import OracleAgent
    from pipeline.embedded.corpus import run_corpus
    from pipeline.train.sft import run_sft
    from pipeline.train.sft_config import SFTConfig
    from pipeline.world.registry import load_world

    world = load_world("gen-7")
    trajectories = run_corpus(
        world, generate_tasks(world, examples, seed=0), OracleAgent(), trials=1, seed=0, passing_only=True
    )
    params = SFTConfig(
        base=checkpoint, data=[], max_steps=steps, learning_rate=1e-3, batch_size=4, max_length=2048, threads=threads
    )
    with tempfile.TemporaryDirectory(prefix="bench-sft-contention-") as scratch:
        result = run_sft(params, Path(scratch) / "out", trajectories=trajectories)
    return {
        "steps": result.steps,
        "train_seconds": result.train_seconds,
        "steps_per_s": result.steps / result.train_seconds,
        "losses": result.losses,
        "mean_loss": result.mean_loss,
    }


def run_arm(policy: str, threads: int, busy: bool, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop("GOMP_SPINCOUNT", None)
    if policy.startswith("spin"):
        env.update(OMP_WAIT_POLICY="", GOMP_SPINCOUNT=policy[len("spin") :])
    else:
        env["OMP_WAIT_POLICY"] = "" if policy == "default" else policy
    competitor = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
    try:
        time.sleep(1.0 if busy else 0.0)
        load_before = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--arm", str(threads), "--steps", str(args.steps)]
        cmd += ["--checkpoint", str(args.checkpoint), "--examples", str(args.examples)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    finally:
        if competitor is not None:
            competitor.kill()
            competitor.wait()
    got = json.loads(out.strip().splitlines()[-1])
    got["load_before"] = round(load_before, 2)
    got["load_after"] = round(os.getloadavg()[0], 2)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--steps", type=int, default=10, help="Optimizer steps per run (batches of 4).")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--examples", type=int, default=60, help="Oracle trajectories to train on.")
    ap.add_argument("--policies", default="default,PASSIVE")
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--arm", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "sft_contention.json")
    args = ap.parse_args()
    if args.arm is not None:
        print(json.dumps(arm(args.checkpoint, args.steps, args.arm, args.examples)))
        return
    arms = [
        (policy, int(threads), busy)
        for policy in args.policies.split(",")
        for threads in args.threads.split(",")
        for busy in (False, True)
    ]
    runs: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for policy, threads, busy in arms:
            name = f"{policy.lower()}_{threads}t_{'busy' if busy else 'alone'}"
            runs.setdefault(name, []).append(run_arm(policy, threads, busy, args))
            print(name, json.dumps({k: v for k, v in runs[name][-1].items() if k != "losses"}), flush=True)
    speed = {name: statistics.median(r["steps_per_s"] for r in rs) for name, rs in runs.items()}
    slowdown = {
        f"{policy.lower()}_{threads}t": round(
            speed[f"{policy.lower()}_{threads}t_alone"] / speed[f"{policy.lower()}_{threads}t_busy"], 2
        )
        for policy, threads, _ in arms
    }
    losses = {name: rs[0]["losses"] for name, rs in runs.items()}
    report = {
        "steps_per_s": {k: round(v, 3) for k, v in speed.items()},
        "slowdown_beside_one_busy_core": slowdown,
        "passive_over_default": {
            f"{threads}t_{m}": round(speed[f"passive_{threads}t_{m}"] / speed[f"default_{threads}t_{m}"], 2)
            for threads in {t for _, t, _ in arms}
            for m in ("alone", "busy")
            if f"default_{threads}t_{m}" in speed and f"passive_{threads}t_{m}" in speed
        },
        "same_losses_across_policies": all(
            losses[f"default_{t}t_{m}"] == losses[f"passive_{t}t_{m}"]
            for t in {t for _, t, _ in arms}
            for m in ("alone", "busy")
            if f"default_{t}t_{m}" in losses and f"passive_{t}t_{m}" in losses
        ),
        "runs": runs,
        "setup": {
            "checkpoint": str(args.checkpoint),
            "steps": args.steps,
            "examples": args.examples,
            "rounds": args.rounds,
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k not in ("runs",)}, indent=2))


if __name__ == "__main__":
    main()
