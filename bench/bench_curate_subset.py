"""Curation's claim: a small curated subset of a trajectory pool gives nearly the lift of the whole pool.

On the embedded default, on the same held-out tasks:

1. the pool: verified gold trajectories of generated tasks on the training world (`--pool` tasks, default mix);
2. curate it against the baseline (`pipeline.curate`: replay-verify, probe n times, Jeffreys bands, anchors and
   targets mixed), capped at `--share` of the pool;
3. SFT the baseline on the whole pool and, with the same settings, on the curated subset; measure both and the
   baseline. Lift = pass^k(arm) − pass^k(baseline); goal: the subset reaches ≥ 95% of the whole pool's lift.
   With `--seeds N`, both arms are trained with SFT seeds 0..N-1 (data order and mixing) and the lifts averaged:
   one SFT run's pass^k moves by several points with its seed alone.
4. `--match-steps`: the subset arms train for as many optimizer steps as the whole pool (epochs × pool / subset),
   so the comparison is of data at equal compute rather than of 5× less training; `--random-arm` adds a random
   subset of the curated size (same steps as the curated arm), the control that shows what curation adds.

Unless given, probes, temperature and the anchor ratio are the loop's (params.yaml, `curate` and `measure`).

Writes bench/results/curate_subset.json.

    python bench/bench_curate_subset.py [--from-checkpoint models/embedded] [--pool 200] [--share 0.2]
        [--seeds 1] [--match-steps] [--random-arm]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import time
from pathlib import Path

from pipeline.authoring.templates import generate_tasks
from pipeline.curate.curate import CurateConfig, curate
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.embedded.corpus import run_corpus
from pipeline.loop.params import load_params
from pipeline.measure import MeasureConfig, measure
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig
from pipeline.world.registry import load_world

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench")


def main() -> None:
    loop = load_params(ROOT / "params.yaml")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from-checkpoint", type=Path, default=ROOT / "models" / "embedded")
    ap.add_argument("--train-world", default="gen-7")
    ap.add_argument("--eval-world", default="gen-101")
    ap.add_argument("--eval-tasks", type=int, default=200)
    ap.add_argument("--executor", choices=("serial", "ray"), default="ray", help="Where measured trials run.")
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--pool", type=int, default=200, help="Gold trajectories in the pool.")
    ap.add_argument("--share", type=float, default=0.2, help="Largest curated share of the pool.")
    ap.add_argument("--probes", type=int, default=loop.curate.probes)
    ap.add_argument("--anchor-ratio", type=float, default=loop.curate.anchor_ratio)
    ap.add_argument(
        "--temperature", type=float, default=loop.measure.temperature, help="Probe and measure temperature."
    )
    ap.add_argument("--seeds", type=int, default=1, help="SFT seeds per arm (lifts averaged).")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--match-steps", action="store_true", help="Subsets train as many steps as the whole pool.")
    ap.add_argument("--random-arm", action="store_true", help="Add a random subset of the curated size.")
    ap.add_argument("--out", type=Path, default=Path("/tmp/agentloop-bench-curate"))
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "curate_subset.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("httpx", "datasets", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()

    world = load_world(args.train_world)
    tasks = generate_tasks(world, args.pool, seed=31)
    gold = run_corpus(world, tasks, OracleAgent(), trials=1, seed=31, passing_only=True)
    write_tasks(out / "pool_tasks.jsonl", tasks)
    (out / "pool.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in gold))
    eval_tasks = out / "eval_tasks.jsonl"
    write_tasks(eval_tasks, generate_tasks(load_world(args.eval_world), args.eval_tasks, seed=0))

    t = time.perf_counter()
    cap = max(1, int(args.share * len(gold)))
    manifest = curate(
        CurateConfig(
            pool=[out / "pool.jsonl"],
            tasks=out / "pool_tasks.jsonl",
            world=args.train_world,
            agent=f"hf:{args.from_checkpoint},temperature={args.temperature:g}",
            probes=args.probes,
            anchor_ratio=args.anchor_ratio,
            bands=loop.curate.bands,
            max_items=cap,
        ),
        out / "curated",
    )
    seconds["curate"] = time.perf_counter() - t

    def measured(name: str, agent: str) -> dict:
        t = time.perf_counter()
        s = measure(
            MeasureConfig(
                world=args.eval_world,
                tasks=eval_tasks,
                agent=f"{agent},temperature={args.temperature:g}",
                trials=args.trials,
                seed=0,
                resamples=200,
                executor=args.executor,
            ),
            out / f"run-{name}",
        )
        seconds[f"measure_{name}"] = time.perf_counter() - t
        k = str(args.trials)
        return {"pass^1": s.pass_hat_k["1"], f"pass^{k}": s.pass_hat_k[k]}

    k = f"pass^{args.trials}"
    table = {"baseline": measured("baseline", f"hf:{args.from_checkpoint}")}
    arms = {"whole_pool": out / "pool.jsonl", "curated": out / "curated" / "selected.jsonl"}
    sizes = {"whole_pool": len(gold), "curated": manifest["selected"]}
    if args.random_arm:
        pick = random.Random(31).sample(range(len(gold)), sizes["curated"])
        (out / "random.jsonl").write_text("".join(gold[i].model_dump_json() + "\n" for i in sorted(pick)))
        arms["random"], sizes["random"] = out / "random.jsonl", sizes["curated"]
    epochs = {name: args.epochs * (sizes["whole_pool"] / sizes[name] if args.match_steps else 1.0) for name in arms}
    runs: dict[str, list[dict]] = {name: [] for name in arms}
    for seed in range(args.seeds):
        for name, data in arms.items():
            tag = name if seed == 0 else f"{name}-seed{seed}"
            t = time.perf_counter()
            params = SFTConfig(
                base=args.from_checkpoint, data=[data], epochs=epochs[name], learning_rate=args.lr, seed=seed
            )
            run_sft(params, out / f"sft-{tag}")
            seconds[f"sft_{tag}"] = time.perf_counter() - t
            runs[name].append(measured(tag, f"hf:{out / f'sft-{tag}'}"))
    for name, got in runs.items():
        table[name] = {key: sum(r[key] for r in got) / len(got) for key in got[0]}
    lift = {name: table[name][k] - table["baseline"][k] for name in arms}
    per_seed_lift = {name: [r[k] - table["baseline"][k] for r in got] for name, got in runs.items()}
    ratio = lift["curated"] / lift["whole_pool"] if lift["whole_pool"] > 0 else None
    random_ratio = lift["random"] / lift["whole_pool"] if "random" in lift and lift["whole_pool"] > 0 else None
    report = {
        "table": table,
        "sizes": sizes,
        "share": sizes["curated"] / sizes["whole_pool"],
        "lift": lift,
        "per_seed_lift": per_seed_lift,
        "curated_lift_ratio": ratio,
        "random_lift_ratio": random_ratio,
        "epochs": epochs,
        "goal_met": ratio is not None and ratio >= 0.95 and sizes["curated"] <= args.share * sizes["whole_pool"],
        "curate_manifest": {k2: manifest[k2] for k2 in ("band_histogram", "kept_tasks", "selected") if k2 in manifest},
        "seconds": {k2: round(v, 1) for k2, v in seconds.items()},
        "seconds_total": round(time.perf_counter() - t0, 1),
        "setup": vars(args) | {"from_checkpoint": str(args.from_checkpoint), "out": str(out), "results": None},
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2, default=str) + "\n")
    keys = ("table", "sizes", "lift", "curated_lift_ratio", "random_lift_ratio", "goal_met")
    print(json.dumps({k2: report[k2] for k2 in keys}, indent=2))


if __name__ == "__main__":
    main()
