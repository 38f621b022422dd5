"""The batched torch decoder under the churn of long conversations: the working tree's against a git revision's.

Episodes of a measure run, without a world: each opens with a prompt sharing a system prefix, then turn after turn
its prompt grows by its last reply and a tool result (random token ids of seeded lengths), and each reply draws
a seeded number of tokens (greedy, no stop token), so every arm decodes the same rows and the same tokens join
and leave the batch at the same passes. `--episodes` stay in flight, as `measure --concurrency` keeps them.
Each arm runs in a process of its own (its peak resident memory is its own), the arms taking turns for
`--rounds`. Per arm: wall time, passes, tokens per second, peak RSS, and whether every reply's tokens equal the
first arm's.

    python bench/bench_batch_churn.py --checkpoint models/smollm2 --before fc9378e [--episodes 24] [--turns 8]
        [--dtype float32] [--rounds 2] [--out bench/results/batch_churn.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from machine import host_machine, torch_machine, write_results


def workload(seed: int, episodes: int, turns: int, vocab: int) -> list[list[tuple[list[int], int]]]:
    """Per episode, per turn: the new prompt tokens and the reply's length."""
    rng = random.Random(seed)
    system = [rng.randrange(vocab) for _ in range(800)]  # the system prompt and tools every episode opens with
    plans = []
    for _ in range(episodes):
        first = system + [rng.randrange(vocab) for _ in range(rng.randint(20, 60))]
        steps = [(first, rng.randint(12, 96))]
        steps += [
            ([rng.randrange(vocab) for _ in range(rng.randint(30, 300))], rng.randint(12, 96)) for _ in range(turns - 1)
        ]
        plans.append(steps)
    return plans


def run(args: argparse.Namespace) -> dict:
    """One arm: every episode's turns through one `PaddedBatch` (the working tree's, or `args.rev`'s)."""
    import torch
    from transformers import AutoModelForCausalLM

    from pipeline.agents.backends.hf import PrefixCache
    from pipeline.agents.backends.hf_padded import PaddedBatch, TokenRow

    batch_class = PaddedBatch
    if args.rev:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_engines import decoder_at

        batch_class = decoder_at(args.rev)
    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=getattr(torch, args.dtype)).eval()
    plans = workload(args.seed, args.episodes, args.turns, model.config.vocab_size)
    batch = batch_class(model, set(), temperature=0.0)
    prefixes = [PrefixCache(model, lean=False) for _ in plans]
    turn = [0] * len(plans)
    replies: list[list[list[int]]] = [[] for _ in plans]
    contexts: list[list[int]] = [[] for _ in plans]  # each episode's conversation so far
    started = time.perf_counter()

    def submit(e: int) -> None:
        new, room = plans[e][turn[e]]
        contexts[e] = contexts[e] + (replies[e][-1] if replies[e] else []) + new
        batch.start(TokenRow(prefixes[e], torch.Generator().manual_seed(e), contexts[e], room, tag=e))

    for e in range(len(plans)):
        submit(e)
    while batch.busy:
        for row in batch.step():
            e = row.tag
            replies[e].append(row.out)
            turn[e] += 1
            if turn[e] < len(plans[e]):
                submit(e)
    wall = time.perf_counter() - started
    tokens = sum(len(r) for rs in replies for r in rs)
    return {
        "wall_s": round(wall, 2),
        "passes": batch.passes,
        "tokens": tokens,
        "tokens_per_s": round(tokens / wall, 2),
        "longest_context": max(len(c) for c in contexts),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "replies_sha256": hashlib.sha256(json.dumps(replies).encode()).hexdigest(),
        "replies": replies,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--before", required=True, help="the git revision whose decoder the second arm runs")
    ap.add_argument("--episodes", type=int, default=24)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rev", default="", help=argparse.SUPPRESS)  # set in an arm's own process
    ap.add_argument("--arm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=Path("bench/results/batch_churn.json"))
    args = ap.parse_args()
    if args.arm:
        print(json.dumps(run(args)))
        return
    load = os.getloadavg()
    arms = {"working tree": "", args.before: args.before}
    results: dict[str, list[dict]] = {name: [] for name in arms}
    names = list(arms)
    for r in range(args.rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            cmd = [sys.executable, __file__, "--arm", "--rev", arms[name], *sys.argv[1:]]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results[name].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r + 1}/{args.rounds} {name}: {results[name][-1]['wall_s']} s", flush=True)
    ref = results[names[0]][0]["replies"]
    report_arms = {}
    for name, runs in results.items():
        wall = sum(x["wall_s"] for x in runs) / len(runs)
        same = sum(a == b for x in runs for a, b in zip(x["replies"], ref, strict=True))
        report_arms[name] = {
            "wall_s": [x["wall_s"] for x in runs],
            "mean_wall_s": round(wall, 2),
            "passes": runs[0]["passes"],
            "tokens": runs[0]["tokens"],
            "tokens_per_s": round(runs[0]["tokens"] / wall, 2),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in runs),
            "longest_context": runs[0]["longest_context"],
            "episodes_identical_to_first_arm": f"{same}/{len(ref) * len(runs)}",
            "speedup_vs_before": None,
        }
    before = report_arms[args.before]["mean_wall_s"]
    for arm in report_arms.values():
        arm["speedup_vs_before"] = round(before / arm["mean_wall_s"], 2)
    report = {
        "machine": {**host_machine(load), **torch_machine()},
        "checkpoint": str(args.checkpoint),
        "dtype": args.dtype,
        "episodes_in_flight": args.episodes,
        "turns": args.turns,
        "seed": args.seed,
        "arms": report_arms,
    }
    write_results(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
