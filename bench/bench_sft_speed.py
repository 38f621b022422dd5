"""SFT on CPU: TRL's own loss and whole padded batches vs the labelled-position loss and micro-batches of one.

Fine-tunes the embedded default on the same trajectories, the same number of optimizer steps, four ways —
TRL's fused LM head or `LabelledLossSFTTrainer`, each with batches of 4 in one forward pass or accumulated
from micro-batches of 1 — alternating rounds so every arm sees the same machine load. Reports the seconds of
each whole `run_sft` call (set-up and saving included), tokens per second, the speed-up over TRL's defaults, and
the logged losses (the four arms train on the same batches, so their losses should agree to float rounding).

Data: the loop's SFT data when `dvc repro` has made it (data/curate/selected.jsonl, data/synth/), else oracle
trajectories on the training world. Writes bench/results/sft_speed.json.

    python bench/bench_sft_speed.py [--checkpoint models/embedded] [--steps 40] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from machine import torch_machine, write_results

from pipeline.loop import paths
from pipeline.train.sft import load_data, run_sft
from pipeline.train.sft_config import SFTConfig

ROOT = Path(__file__).resolve().parents[1]
ARMS = {  # name: (labelled_loss, micro_batch_size)
    "trl_loss_batch_4": (False, 4),
    "trl_loss_micro_1": (False, 1),
    "labelled_loss_batch_4": (True, 4),
    "labelled_loss_micro_1": (True, 1),
}


def training_data(checkpoint: Path, examples: int):
    """The loop's SFT mix (as the train stage builds it) or, without it, oracle trajectories on the train world."""
    loop_data = [ROOT / paths.CURATED_DIR / "selected.jsonl", ROOT / paths.SYNTH_DIR / "trajectories.jsonl"]
    if all(p.exists() for p in loop_data):
        anchors = [ROOT / paths.ANCHORS] if (ROOT / paths.ANCHORS).exists() else []
        params = SFTConfig(base=checkpoint, data=loop_data, anchors=anchors, anchor_share=0.3)
        return load_data(params)[0], "loop"
    from pipeline.authoring.templates import generate_tasks
    from pipeline.domains.retail.oracle import OracleAgent
    from pipeline.embedded.corpus import run_corpus
    from pipeline.world.registry import load_world

    world = load_world("gen-7")
    tasks = generate_tasks(world, examples, seed=0)
    return run_corpus(world, tasks, OracleAgent(), trials=1, seed=0, passing_only=True), "oracle"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--steps", type=int, default=40, help="Optimizer steps per run (batches of 4).")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--examples", type=int, default=200, help="Oracle trajectories when the loop's data is absent.")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "sft_speed.json")
    args = ap.parse_args()
    trajectories, source = training_data(args.checkpoint, args.examples)
    seconds: dict[str, list[float]] = {name: [] for name in ARMS}
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as scratch:
        for _ in range(args.rounds):
            for name, (labelled, micro) in ARMS.items():
                params = SFTConfig(
                    base=args.checkpoint,
                    data=[],
                    max_steps=args.steps,
                    learning_rate=2e-3,
                    batch_size=4,
                    micro_batch_size=micro,
                    labelled_loss=labelled,
                    max_length=2048,
                    logging_steps=10,
                )
                started = time.perf_counter()
                results[name] = run_sft(params, Path(scratch) / name, trajectories=trajectories)
                seconds[name].append(time.perf_counter() - started)
    median = {name: statistics.median(v) for name, v in seconds.items()}
    steps = {name: r.steps for name, r in results.items()}
    tokens_per_step = results["trl_loss_batch_4"].manifest["tokens"] / len(trajectories) * 4
    report = {
        "data": source,
        "examples": len(trajectories),
        "steps": steps,
        "median_seconds": {k: round(v, 2) for k, v in median.items()},
        "approx_tokens_per_s": {k: round(tokens_per_step * steps[k] / v) for k, v in median.items()},
        "speedup_over_trl_defaults": {k: round(median["trl_loss_batch_4"] / v, 2) for k, v in median.items()},
        "losses": {k: [round(x, 5) for x in r.losses] for k, r in results.items()},
        "seconds": seconds,
        "setup": {
            "checkpoint": str(args.checkpoint),
            "rounds": args.rounds,
            **torch_machine(),
        },
    }
    write_results(args.results, report)
    print(json.dumps({k: v for k, v in report.items() if k not in ("losses", "seconds")}, indent=2))


if __name__ == "__main__":
    main()
