"""One checkpoint measured by several engines side by side: speed, and agreement with torch float32.

Each arm is an agent spec and a number of episodes in flight; the arms take turns on slices of the same held-out
tasks (greedy, the scripted customer), the order rotating, so load from other work falls on all. Per arm: wall
time, trials per second, what `--target-tasks` × `--target-trials` would take at that rate, and per trial whether
the verdict and the agent's every reply equal the reference arm's (the first, torch float32).

    python bench/bench_engines.py --checkpoint models/smollm2 --tasks eval.jsonl [--world gen-101] [--n 24]
        [--arm 'torch f32=hf:{ck},max_new_tokens=96,threads=2@24'] [--arm 'llama.cpp q8_0=llamacpp:{ck},...@1']

An arm may end in `@REV`: its batched torch decoder (`PaddedBatch` of pipeline/agents/backends/hf_padded.py) is
the one at git revision REV, so a change to the decoder is measured against the decoder before it in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import host_machine, write_results

from pipeline.agents import make_agent
from pipeline.dataset.io import read_tasks
from pipeline.rollout.runner import Limits
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

DEFAULT_ARMS = [
    "torch f32, 24 in flight=hf:{ck},max_new_tokens=96,threads=2@24",
    "torch bf16, 24 in flight=hf:{ck},max_new_tokens=96,threads=2,dtype=bfloat16@24",
    "llama.cpp f32=llamacpp:{ck},max_new_tokens=96,threads=2@1",
    "llama.cpp f16=llamacpp:{ck},max_new_tokens=96,threads=2,weights=f16@1",
    "llama.cpp q8_0=llamacpp:{ck},max_new_tokens=96,threads=2,weights=q8_0@1",
]


def decoder_at(rev: str) -> type:
    """`PaddedBatch` as pipeline/agents/backends/hf_padded.py defines it at git revision `rev`."""
    source = subprocess.run(
        ["git", "show", f"{rev}:pipeline/agents/backends/hf_padded.py"], check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / f"hf_padded_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"hf_padded_{rev}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module.PaddedBatch


@contextlib.contextmanager
def batch_class(batch: type | None):
    """The hf agent's batched decoder runs `batch` in place of the current `PaddedBatch` (None: the current)."""
    import pipeline.agents.backends.hf_padded as padded

    current = padded.PaddedBatch
    try:
        if batch is not None:
            padded.PaddedBatch = batch  # type: ignore[misc]
        yield
    finally:
        padded.PaddedBatch = current  # type: ignore[misc]


def run_arm(world, tasks, agent, trials: int, width: int, limits: Limits, batch: type | None = None) -> dict:
    started = time.perf_counter()
    with batch_class(batch):
        results = list(SerialExecutor(batch=width).run(world, tasks, agent, ScriptedUser(), trials, 0, limits))
    replies = {
        f"{r.task.id}/{r.trial}": [m.content for m in r.trajectory.messages if m.role == "assistant"]
        + [json.dumps([c.model_dump() for c in m.tool_calls or []]) for m in r.trajectory.messages]
        for r in results
    }
    return {
        "wall_s": time.perf_counter() - started,
        "verdicts": {f"{r.task.id}/{r.trial}": r.verdict.passed for r in results},
        "replies": replies,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--n", type=int, default=24, help="tasks of the file to run (the first N)")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2, help="slices of the tasks the arms take turns on")
    ap.add_argument(
        "--arm", action="append", help="NAME=SPEC@IN_FLIGHT[@REV]; {ck} is the checkpoint (default: 5 arms)"
    )
    ap.add_argument("--target-tasks", type=int, default=100)
    ap.add_argument("--target-trials", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("bench/results/engines.json"))
    args = ap.parse_args()
    load = os.getloadavg()
    world = load_world(args.world)
    tasks = read_tasks(args.tasks)[: args.n]
    limits = Limits()
    arms: dict[str, tuple[str, int, str | None]] = {}
    for arm in args.arm or DEFAULT_ARMS:
        name, _, rest = arm.partition("=")
        spec, width, *rev = rest.split("@")
        arms[name] = (spec.format(ck=args.checkpoint), int(width), rev[0] if rev else None)
    batches = {name: decoder_at(rev) if rev else None for name, (_, _, rev) in arms.items()}
    agents = {}
    for name, (spec, _, _) in arms.items():
        t0 = time.perf_counter()
        agents[name] = make_agent(spec)
        print(f"{name}: loaded in {time.perf_counter() - t0:.1f} s", flush=True)
        run_arm(world, tasks[:1], agents[name], 1, 1, limits, batches[name])  # warm-up: kernels, allocator
    parts: dict[str, list[dict]] = {a: [] for a in arms}
    names = list(arms)
    for r in range(args.rounds):
        part = tasks[r :: args.rounds]
        for name in names[r % len(names) :] + names[: r % len(names)]:
            parts[name].append(run_arm(world, part, agents[name], args.trials, arms[name][1], limits, batches[name]))
            print(f"round {r + 1}/{args.rounds} {name}: {parts[name][-1]['wall_s']:.1f} s", flush=True)
    ref = names[0]
    merged = {
        n: {
            "wall_s": sum(p["wall_s"] for p in ps),
            "verdicts": {k: v for p in ps for k, v in p["verdicts"].items()},
            "replies": {k: v for p in ps for k, v in p["replies"].items()},
        }
        for n, ps in parts.items()
    }
    report_arms = {}
    for name, m in merged.items():
        trials = len(m["verdicts"])
        same_verdict = sum(m["verdicts"][k] == merged[ref]["verdicts"][k] for k in m["verdicts"])
        same_replies = sum(m["replies"][k] == merged[ref]["replies"][k] for k in m["replies"])
        rate = trials / m["wall_s"]
        report_arms[name] = {
            "spec": arms[name][0],
            "in_flight": arms[name][1],
            "decoder_at": arms[name][2] or "working tree",
            "wall_s": round(m["wall_s"], 1),
            "trials": trials,
            "passed": sum(m["verdicts"].values()),
            "trials_per_s": round(rate, 4),
            "target_minutes": round(args.target_tasks * args.target_trials / rate / 60, 1),
            "verdicts_agree_with_reference": f"{same_verdict}/{trials}",
            "verdict_agreement": round(same_verdict / trials, 3),
            "trajectories_identical_to_reference": f"{same_replies}/{trials}",
            "speedup_vs_reference": round(merged[ref]["wall_s"] / m["wall_s"], 2),
        }
    report = {
        "machine": host_machine(load),
        "checkpoint": str(args.checkpoint),
        "tasks": str(args.tasks),
        "n_tasks": len(tasks),
        "templates": sorted({t.id.rsplit("-", 1)[-1] for t in tasks}),
        "trials": args.trials,
        "reference": ref,
        "target": f"{args.target_tasks} tasks x {args.target_trials} trials",
        "arms": report_arms,
    }
    write_results(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
