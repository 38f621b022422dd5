"""Lean decoding vs transformers' forward: the embedded default's episodes, side by side, same samples.

Runs the same held-out episodes (scripted user, temperature 0.7, one torch thread, serial) with the `hf`
agent decoding through `pipeline.agents.backends.lean.LeanLlama` and through `LlamaForCausalLM.forward`, alternating
rounds so both see the same machine load. Reports episodes per second, tokens per second, the speed ratio,
and whether the two produced the same conversations (they sample from the same logits up to float rounding).

Writes bench/results/lean_decoding.json.

    python bench/embedded/bench_lean_decoding.py [--checkpoint models/embedded] [--tasks 40] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from machine import torch_machine, write_results

from pipeline.agents.backends.hf import HFAgent
from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import read_tasks
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[2]


def run(world, tasks, agent) -> tuple[list, float, int]:
    started = time.perf_counter()
    trajs = [run_episode(world, t, agent, ScriptedUser(), trial=0, seed=i) for i, t in enumerate(tasks)]
    seconds = time.perf_counter() - started
    tokens = sum(m.usage.completion_tokens for tr in trajs for m in tr.messages if m.usage is not None)
    return trajs, seconds, tokens


def conversation(traj) -> list:
    return [(m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in traj.messages]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--world", default="gen-101")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "lean_decoding.json")
    args = ap.parse_args()
    world = load_world(args.world)
    eval_tasks = ROOT / "data" / "eval" / "tasks.jsonl"
    tasks = read_tasks(eval_tasks)[: args.tasks] if eval_tasks.exists() else generate_tasks(world, args.tasks)
    agents = {
        name: HFAgent(args.checkpoint, temperature=0.7, lean=lean) for name, lean in (("lean", True), ("hf", False))
    }
    seconds: dict[str, list[float]] = {name: [] for name in agents}
    tokens: dict[str, int] = {}
    convs: dict[str, list] = {}
    for _ in range(args.rounds):
        for name, agent in agents.items():
            trajs, s, n = run(world, tasks, agent)
            seconds[name].append(s)
            tokens[name], convs[name] = n, [conversation(t) for t in trajs]
    median = {name: statistics.median(v) for name, v in seconds.items()}
    same = sum(a == b for a, b in zip(convs["lean"], convs["hf"], strict=True))
    report = {
        "episodes": len(tasks),
        "median_seconds": {k: round(v, 2) for k, v in median.items()},
        "episodes_per_s": {k: round(len(tasks) / v, 2) for k, v in median.items()},
        "tokens_per_s": {k: round(tokens[k] / median[k]) for k in median},
        "speedup": round(median["hf"] / median["lean"], 2),
        "same_conversations": f"{same}/{len(tasks)}",
        "seconds": seconds,
        "setup": {
            "checkpoint": str(args.checkpoint),
            "rounds": args.rounds,
            **torch_machine(),
        },
    }
    write_results(args.results, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
