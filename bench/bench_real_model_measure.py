"""Measuring a real checkpoint on CPU, step by step: its own chat format → `compact` → episodes in flight.

Runs the same held-out tasks (greedy, the scripted customer) three ways in one process, arms taking turns on
slices of the tasks so that load from other work falls on all:

- `generic, 1`: the checkpoint's own chat template with the whole policy and every tool schema in the prompt, one
  episode at a time (how an imported instruct model is measured before anything here is tuned for it);
- `compact, 1`: the `compact` chat format (the policy's summary, one line per tool, Python-style calls), one at a
  time;
- `compact, C`: the same with `--concurrency C` episodes in flight through the padded decoder (decoding steps of
  all episodes batched, the opening prompt's keys and values computed once and shared).

Reports wall time, prompt tokens per episode, trials per second, the ratio of each step to the one before, and what
`--target-tasks` × `--target-trials` (100 × 4 by default) would take at the last arm's rate.

    python bench/bench_real_model_measure.py --checkpoint models/smollm2 [--tasks data/smollm2/eval.jsonl]
        [--world gen-101] [--n 6] [--trials 1] [--concurrency 24] [--max-new-tokens 96] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from machine import torch_machine

from pipeline.agents.backends.hf import HFAgent
from pipeline.dataset.io import read_tasks
from pipeline.rollout.runner import Limits
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world


def run_arm(world, tasks, agent: HFAgent, trials: int, width: int, limits: Limits) -> dict:
    started, cpu = time.perf_counter(), os.times()
    results = list(SerialExecutor(batch=width).run(world, tasks, agent, ScriptedUser(), trials, 0, limits))
    end = os.times()
    usage = [m.usage for r in results for m in r.trajectory.messages if m.role == "assistant" and m.usage]
    return {
        "wall_s": time.perf_counter() - started,
        "cpu_s": (end.user - cpu.user) + (end.system - cpu.system),
        "trials": len(results),
        "passed": sum(r.verdict.passed for r in results),
        "prompt_tokens": sum(u.prompt_tokens for u in usage),
        "completion_tokens": sum(u.completion_tokens for u in usage),
        "first_prompt_tokens": [next(u.prompt_tokens for u in [m.usage for m in r.trajectory.messages
                                                                 if m.role == "assistant" and m.usage])
                                for r in results],
        "verdicts": {f"{r.task.id}/{r.trial}": r.verdict.passed for r in results},
    }  # fmt: skip


def merge(parts: list[dict]) -> dict:
    out = {k: sum(p[k] for p in parts) for k in ("wall_s", "cpu_s", "trials", "passed", "prompt_tokens")}
    out["completion_tokens"] = sum(p["completion_tokens"] for p in parts)
    firsts = [x for p in parts for x in p["first_prompt_tokens"]]
    out["first_prompt_tokens"] = round(sum(firsts) / len(firsts), 1)
    out["prompt_tokens_per_episode"] = round(out["prompt_tokens"] / out["trials"], 1)
    out["trials_per_s"] = round(out["trials"] / out["wall_s"], 4)
    out["verdicts"] = {k: v for p in parts for k, v in p["verdicts"].items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--tasks", type=Path, default=Path("data/smollm2/eval.jsonl"))
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--n", type=int, default=6, help="tasks of the file to run (the first N)")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=24)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--max-turns", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2, help="slices of the tasks the arms take turns on")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target-tasks", type=int, default=100)
    ap.add_argument("--target-trials", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("bench/results/real_model_measure.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    world = load_world(args.world)
    tasks = read_tasks(args.tasks)[: args.n]
    limits = Limits(max_turns=args.max_turns)

    def agent(fmt: str) -> HFAgent:
        return HFAgent(args.checkpoint, max_new_tokens=args.max_new_tokens, chat_format=fmt, threads=args.threads)

    agents = {"generic": agent("generic"), "compact": agent("compact")}
    arms = {"generic, 1": ("generic", 1), "compact, 1": ("compact", 1),
            f"compact, {args.concurrency}": ("compact", args.concurrency)}  # fmt: skip
    run_arm(world, tasks[:1], agents["compact"], 1, 1, limits)  # warm-up: kernels, allocator
    parts: dict[str, list[dict]] = {a: [] for a in arms}
    slices = [tasks[i :: args.rounds] for i in range(args.rounds)]
    names = list(arms)
    for r, part in enumerate(slices):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # the order rotates
            fmt, width = arms[name]
            parts[name].append(run_arm(world, part, agents[fmt], args.trials, width, limits))
            print(f"round {r + 1}/{len(slices)} {name}: {parts[name][-1]['wall_s']:.1f} s", flush=True)
    result = {name: merge(p) for name, p in parts.items()}
    last = result[names[-1]]
    report = {
        "machine": torch_machine(),
        "checkpoint": str(args.checkpoint),
        "tasks": str(args.tasks),
        "n_tasks": len(tasks),
        "trials": args.trials,
        "max_new_tokens": args.max_new_tokens,
        "arms": {n: {k: v for k, v in a.items() if k != "verdicts"} for n, a in result.items()},
        "speedup_vs_previous": {
            names[i]: round(result[names[i - 1]]["wall_s"] / result[names[i]]["wall_s"], 2)
            for i in range(1, len(names))
        },
        "prompt_tokens_ratio_generic_to_compact": round(
            result["generic, 1"]["prompt_tokens_per_episode"] / result["compact, 1"]["prompt_tokens_per_episode"], 2
        ),
        "same_verdicts_compact_1_vs_in_flight": sum(
            result["compact, 1"]["verdicts"][k] == last["verdicts"][k] for k in last["verdicts"]
        ),
        "target": f"{args.target_tasks} tasks x {args.target_trials} trials",
        "target_minutes_at_last_arm": round(args.target_tasks * args.target_trials / last["trials_per_s"] / 60, 1),
        "torch": torch.__version__,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
