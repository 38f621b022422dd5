"""SFT on CPU in float32 against bf16 autocast (`train.bf16`), same data, same steps, side by side in one run.

Only a CPU with AMX or AVX-512 BF16 runs the bf16 arm in bf16 (elsewhere `bf16` trains in float32 and the two
arms are the same). Records each arm's wall time and per-step losses, and the CPU.

    python bench/bench_sft_precision.py --base models/smollm2 --data data/synth/trajectories.jsonl \
        [--steps 8 --max-length 3584] [--out bench/results/sft_precision.json]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from machine import host_machine, torch_machine, write_results

from pipeline.train.lora import LoraSpec
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="checkpoint to train (LoRA rank 16, as the whole-mix recipe)")
    ap.add_argument("--data", type=Path, nargs="+", required=True, help="trajectories.jsonl files")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=3584)
    ap.add_argument("--out", type=Path, default=Path("bench/results/sft_precision.json"))
    args = ap.parse_args()
    report: dict = {"machine": {**host_machine(os.getloadavg()), **torch_machine()}, "steps": args.steps, "arms": {}}
    for bf16 in (False, True):
        params = SFTConfig(
            base=args.base, data=args.data, max_length=args.max_length, max_steps=args.steps, batch_size=1,
            learning_rate=3e-3, threads=2, logging_steps=1, bf16=bf16, lora=LoraSpec(rank=16, alpha=32), seed=0,
        )  # fmt: skip
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            result = run_sft(params, Path(out) / "sft")
            wall = time.perf_counter() - start
        report["arms"]["bf16" if bf16 else "float32"] = {
            "wall_s": round(wall, 1),
            "steps": result.steps,
            "losses": [round(loss, 4) for loss in result.losses],
        }
    f32, b16 = report["arms"]["float32"], report["arms"]["bf16"]
    report["speedup"] = round(f32["wall_s"] / b16["wall_s"], 2)
    report["largest_loss_gap"] = max(abs(a - b) for a, b in zip(f32["losses"], b16["losses"], strict=True))
    write_results(args.out, report)
    print(report["speedup"], report["largest_loss_gap"])


if __name__ == "__main__":
    main()
