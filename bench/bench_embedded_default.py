"""The embedded default's bar: baseline → SFT on targeted synthesized data vs an equal-size untargeted control.

On CPU (2 threads), from nothing downloaded:

1. build the embedded default baseline (tokenizer, tiny Llama with the planted copy circuit, copy warm-up,
   training on the situation-flawed corpus) — `pipeline.embedded.build.build_baseline`;
2. measure it on held-out tasks of the evaluation world (k trials per task): pass^1, pass^k, failure modes;
3. split a synthesis budget across the measured failure modes (`pipeline.target`) and synthesize targeted,
   verified tasks with gold trajectories on the training world (`pipeline.synth`), aimed at the cells (template ×
   dial × outcome) the baseline failed in;
4. two controls of the same size: gold trajectories on untargeted generated tasks (the held-out generator's
   template mix), and the synthesizer run without the measurement (an even split over the modes, no failure
   cells) — the first asks whether targeting beats volume, the second whether the measurement steers well;
5. SFT the baseline through TRL on each (same settings, same anchor replay) and measure all three.

Writes bench/results/embedded_default.json (the table and every timing). With `--seeds N` both arms are trained
with SFT seeds 0..N-1 (data order and anchor mixing) and the table holds their means (each run under
`per_seed`): one SFT run's pass^k moves by several points with its seed alone.

    python bench/bench_embedded_default.py [--from-checkpoint models/embedded] [--eval-tasks 40] [--trials 4]
        [--budget 240] [--seeds 1] [--out DIR]

Unless given, synthesis, budget, anchors, epochs, learning rate and temperature are the loop's (params.yaml).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from pathlib import Path

import torch
from machine import torch_machine, write_results

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.embedded.build import EmbeddedConfig, build_baseline
from pipeline.embedded.corpus import run_corpus
from pipeline.loop.params import load_params
from pipeline.measure import MeasureConfig, measure
from pipeline.synth.synthesize import synthesize
from pipeline.target import Targets, make_targets, split_budget
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]
MODES = ("plan_adherence", "invention", "misread")
log = logging.getLogger("bench")


def row(summary, seconds: float) -> dict:
    k = str(summary.trials_per_task)
    return {
        "pass^1": summary.pass_hat_k["1"],
        f"pass^{k}": summary.pass_hat_k[k],
        "modes_tasks": {m: summary.failure_modes[m].tasks for m in MODES},
        "modes_trials": {m: summary.failure_modes[m].trials for m in MODES},
        "infra_errors": summary.infra_errors,
        "measure_s": round(seconds, 1),
    }


def mean_row(rows: list[dict]) -> dict:
    """The field-by-field mean of `row`s (one per SFT seed)."""
    if len(rows) == 1:
        return rows[0]
    out = {}
    for key, value in rows[0].items():
        if isinstance(value, dict):
            out[key] = {m: sum(r[key][m] for r in rows) / len(rows) for m in value}
        else:
            out[key] = sum(r[key] for r in rows) / len(rows)
    return out


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def write_trajectories(path: Path, trajectories) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for traj in trajectories:
            fh.write(traj.model_dump_json() + "\n")


def main() -> None:
    loop = load_params(ROOT / "params.yaml")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-world", default="gen-101")
    ap.add_argument("--eval-tasks", type=int, default=200)
    ap.add_argument("--eval-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument(
        "--budget", type=int, default=loop.target.budget, help="Synthesis budget (tasks) split across failure modes."
    )
    ap.add_argument(
        "--anchors",
        type=int,
        default=loop.synthesize.anchors,
        help="Gold anchor trajectories replayed in both SFT arms.",
    )
    ap.add_argument(
        "--anchor-share", type=float, default=loop.train.anchor_share, help="Share of anchors in each arm's examples."
    )
    ap.add_argument(
        "--temperature", type=float, default=loop.measure.temperature, help="Sampling temperature when measuring."
    )
    ap.add_argument("--executor", choices=("serial", "ray"), default="ray", help="Where measured trials run.")
    ap.add_argument("--seeds", type=int, default=1, help="SFT seeds per arm (the table holds their means).")
    ap.add_argument("--epochs", type=float, default=loop.train.epochs)
    ap.add_argument("--lr", type=float, default=loop.train.learning_rate)
    ap.add_argument("--embedded", type=Path, default=None, help="YAML/JSON of EmbeddedConfig settings.")
    ap.add_argument("--reuse-baseline", action="store_true", help="Reuse <out>/baseline if it exists.")
    ap.add_argument(
        "--from-checkpoint",
        type=Path,
        default=None,
        help="Start from this built checkpoint (e.g. models/embedded, the one `dvc repro` uses) instead of building.",
    )
    ap.add_argument("--out", type=Path, default=Path("/tmp/agentloop-bench-embedded"))
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "embedded_default.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("httpx", "datasets", "transformers", "pipeline.embedded.train_loop"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    torch.set_num_threads(2)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}

    settings = json.loads(args.embedded.read_text()) if args.embedded else {}
    config = EmbeddedConfig.model_validate(settings)
    baseline = out / "baseline"
    if args.from_checkpoint is not None:
        if baseline.exists():
            shutil.rmtree(baseline)
        shutil.copytree(args.from_checkpoint, baseline)
        meta = json.loads((baseline / "agentloop.json").read_text())
        (out / "build.json").write_text(json.dumps({"from": str(args.from_checkpoint), **meta["data_manifest"]}))
    elif not (args.reuse_baseline and (baseline / "agentloop.json").exists()):
        if baseline.exists():
            shutil.rmtree(baseline)
        build, seconds["build_baseline"] = timed(build_baseline, config, baseline)
        (out / "build.json").write_text(json.dumps(build, indent=2))
    build = json.loads((out / "build.json").read_text())

    eval_world = load_world(args.eval_world)
    train_world = load_world(config.train_world)
    assert eval_world.fingerprint != train_world.fingerprint, "training and evaluation worlds must differ"
    eval_tasks = out / "eval_tasks.jsonl"
    write_tasks(eval_tasks, generate_tasks(eval_world, args.eval_tasks, seed=args.eval_seed))

    def measure_agent(name: str, ckpt: Path):
        cfg = MeasureConfig(
            world=args.eval_world,
            tasks=eval_tasks,
            agent=f"hf:{ckpt},temperature={args.temperature:g}",
            trials=args.trials,
            seed=0,
            resamples=200,
            executor=args.executor,
        )
        summary, s = timed(measure, cfg, out / f"run-{name}")
        seconds[f"measure_{name}"] = s
        return summary, s

    base_summary, base_s = measure_agent("baseline", baseline)

    # targeted data: split the budget over the measured modes and their failure cells, synthesize on the training world
    run = out / "run-baseline"
    targets, seconds["target"] = timed(
        make_targets, run / "metrics.json", args.budget, loop.target.config, run / "verdicts.jsonl", eval_tasks
    )
    synth_dir = out / "synth"
    if synth_dir.exists():
        shutil.rmtree(synth_dir)
    synth, seconds["synthesize"] = timed(synthesize, train_world, targets, synth_dir, loop.synthesize.config)
    n = len(synth.trajectories)

    # control and anchors: untargeted gold trajectories (default template mix), disjoint seeds
    t = time.perf_counter()
    pool = generate_tasks(train_world, n + args.anchors + 40, seed=97)
    gold = run_corpus(train_world, pool, OracleAgent(), trials=1, seed=97, passing_only=True)
    control, anchors = gold[:n], gold[n : n + args.anchors]
    write_trajectories(out / "control.jsonl", control)
    write_trajectories(out / "anchors.jsonl", anchors)
    seconds["control_data"] = time.perf_counter() - t

    # the synthesizer without the measurement: an even split over the modes, no failure cells, unscaled dials
    even = {m: 1.0 for m in MODES}
    plain_targets = Targets(budget=n, modes=split_budget(even, n, loop.target.config))
    unaimed_dir = out / "synth-untargeted"
    if unaimed_dir.exists():
        shutil.rmtree(unaimed_dir)
    unaimed, seconds["synthesize_untargeted"] = timed(
        synthesize, train_world, plain_targets, unaimed_dir, loop.synthesize.config
    )

    arms = {
        "targeted": synth_dir,
        "control": out / "control.jsonl",
        "untargeted_synth": unaimed_dir,
    }
    results = {"baseline": row(base_summary, base_s)}
    sft_info: dict[str, dict] = {}
    per_seed: dict[str, list[dict]] = {name: [] for name in arms}
    for seed in range(args.seeds):
        for name, data in arms.items():
            tag = name if seed == 0 else f"{name}-seed{seed}"
            params = SFTConfig(
                base=baseline,
                data=[data / "trajectories.jsonl" if data.is_dir() else data],
                anchors=[out / "anchors.jsonl"],
                anchor_share=args.anchor_share,
                tasks=[data / "tasks.jsonl"] if data.is_dir() else [],
                epochs=args.epochs,
                learning_rate=args.lr,
                seed=seed,
            )
            ckpt = out / f"sft-{tag}"
            result, seconds[f"sft_{tag}"] = timed(run_sft, params, ckpt)
            shutil.rmtree(out / f"run-{tag}", ignore_errors=True)  # measured with the weights just replaced
            sft_info[tag] = {
                "examples": result.examples,
                "steps": result.steps,
                "loss": [round(result.first_loss, 4), round(result.last_loss, 4)],
                "tokens": result.manifest.get("tokens"),
            }
            summary, s = measure_agent(tag, ckpt)
            per_seed[name].append(row(summary, s))
    for name, got in per_seed.items():
        results[name] = mean_row(got)

    k = f"pass^{args.trials}"
    b, tg, ct, us = results["baseline"], results["targeted"], results["control"], results["untargeted_synth"]
    bar = {
        "pass^k_gain_points": round(100 * (tg[k] - b[k]), 1),
        "pass^k_gain_ok": tg[k] - b[k] >= 0.25,
        "pass^k_doubled": tg[k] >= 2 * b[k],
        "modes_cut_by_two_thirds": {m: tg["modes_tasks"][m] <= b["modes_tasks"][m] / 3 for m in MODES},
        "beats_control": tg[k] > ct[k],
        "beats_control_per_seed": [a[k] > c[k] for a, c in zip(per_seed["targeted"], per_seed["control"], strict=True)],
        "beats_untargeted_synth": tg[k] > us[k],
        "beats_untargeted_synth_per_seed": [
            a[k] > c[k] for a, c in zip(per_seed["targeted"], per_seed["untargeted_synth"], strict=True)
        ],
    }
    report = {
        "table": results,
        "bar": bar,
        "per_seed": per_seed,
        "sft": sft_info,
        "targets": {m: t.count for m, t in targets.modes.items()},
        "synthesized": {"tasks": len(synth.tasks), "trajectories": n, "by_aim": synth.manifest["counts"]["by_aim"]},
        "synthesized_untargeted": {"tasks": len(unaimed.tasks), "trajectories": len(unaimed.trajectories)},
        "baseline_build": build,
        "seconds": {k2: round(v, 1) for k2, v in seconds.items()},
        "setup": {
            "eval_world": args.eval_world,
            "eval_tasks": args.eval_tasks,
            "trials": args.trials,
            "train_world": config.train_world,
            "budget": args.budget,
            "anchors": args.anchors,
            "anchor_share": args.anchor_share,
            "temperature": args.temperature,
            "epochs": args.epochs,
            "lr": args.lr,
            "seeds": args.seeds,
            "synthesize": loop.synthesize.config.model_dump(mode="json", exclude={"verify", "judge"}),
            **torch_machine(),
        },
    }
    write_results(args.results, report)
    print(json.dumps({"table": results, "bar": bar, "seconds": report["seconds"]}, indent=2))


if __name__ == "__main__":
    main()
