"""A/A false-promotion rate of the gate: how often does it promote an agent over itself, and what could it see?

Two sources of "the same model measured twice":

Synthetic. A held-out set of tasks with fixed per-task pass probabilities; each simulated seed draws both runs'
trials from those same probabilities (k = 4 trials per task, one failure mode per failed trial from the
task's own Dirichlet(1/2) mix) and runs `pipeline.gate.evaluate` both ways, as `agentloop gate-aa` does.
Probabilities are sigmoid(mu + u_template + e_task), templates cycled like the task generator's (15), with
u ~ N(0, 0.75²), e ~ N(0, sigma²). Populations:
    committed-champion   mu, sigma fitted to the champion run recorded in gate/gate.json (pass@1 = passes /
                         valid trials, pass^4 as gated) — no per-task file is committed, so its two moments
    committed-candidate  the same for the candidate run recorded there
    power-bench          bench/bench_gate_power.py's population (pass@1 0.60, sigma 3)

Real. Pairs of `measure` runs of one scripted flawed agent (planting rates 0.2 per mode) with different seeds
on a small generated world, each pair through `pipeline.gate.aa.aa_check`.

Per row: the one-way false-promotion rate (A over B: what one gate run risks) and the either-way rate (what
`gate-aa` flags), with 95% Wilson intervals, the outcome shares, the mean MDE and the median tasks_needed.

    python bench/bench_gate_aa.py [--sims 300] [--tasks 200] [--pairs 10] [--workers 2] [--first-sim 0] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.domains.retail.synthesis import RETAIL_CYCLE as DEFAULT_CYCLE  # noqa: E402
from pipeline.gate import GateConfig, TaskOutcome, evaluate  # noqa: E402
from pipeline.grading.failure_modes import FAILURE_MODES  # noqa: E402

K = 4
SIGMA_TEMPLATE = 0.75
CONFIG = GateConfig(k=K)
REAL_WORLD, REAL_TASKS = "gen-3-12x40x100", 48
REAL_AGENT = "flawed:plan_adherence=0.2,invention=0.2,misread=0.2,seed={seed}"


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


_NORMALS: list = []


def _moments(mu: float, sigma: float) -> tuple[float, float]:
    """Population (pass@1, pass^4) of sigmoid(mu + u + e) on a fixed-seed sample of 20,000 tasks."""
    import numpy as np

    if not _NORMALS:
        rng = np.random.default_rng(12345)
        _NORMALS.extend([rng.normal(0, SIGMA_TEMPLATE, 20_000), rng.normal(0, 1, 20_000)])
    ps = 1.0 / (1.0 + np.exp(-(mu + _NORMALS[0] + sigma * _NORMALS[1])))
    return float(ps.mean()), float((ps**K).mean())


def _bisect(f, lo: float, hi: float, target: float) -> float:
    for _ in range(28):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def fit(pass1: float, pass4: float) -> tuple[float, float]:
    """(mu, sigma) matching both moments: for a sigma, mu fixes pass@1; sigma then sets pass^4 (it rises with sigma)."""

    def mu_for(sigma: float) -> float:
        return _bisect(lambda m: _moments(m, sigma)[0], -8.0, 8.0, pass1)

    sigma = _bisect(lambda s: _moments(mu_for(s), s)[1], 0.05, 12.0, pass4)
    return mu_for(sigma), sigma


def _tasks(n: int, mu: float, sigma: float, seed: str) -> list[tuple[str, float, list[float]]]:
    """The fixed held-out set: (template, pass probability, failure-mode mix) per task."""
    rng = random.Random(seed)
    u = {t: rng.gauss(0.0, SIGMA_TEMPLATE) for t in sorted(set(DEFAULT_CYCLE))}
    out = []
    for i in range(n):
        template = DEFAULT_CYCLE[i % len(DEFAULT_CYCLE)]
        mix = [rng.gammavariate(0.5, 1.0) + 1e-12 for _ in FAILURE_MODES]
        out.append((template, _sigmoid(mu + u[template] + rng.gauss(0.0, sigma)), mix))
    return out


def _run(rng: random.Random, tasks) -> dict[str, TaskOutcome]:
    table = {}
    for j, (template, p, mix) in enumerate(tasks):
        passes = sum(rng.random() < p for _ in range(K))
        modes = dict.fromkeys(FAILURE_MODES, 0)
        for _ in range(K - passes):
            modes[rng.choices(FAILURE_MODES, weights=mix)[0]] += 1
        table[f"t{j:04d}"] = TaskOutcome(template=template, n=K, passes=passes, modes=modes)
    return table


def simulate(args) -> dict:
    name, tasks, i = args
    rng = random.Random(f"gate-aa:{name}:{i}")
    a, b = _run(rng, tasks), _run(rng, tasks)
    ab, ba = evaluate(a, b, CONFIG), evaluate(b, a, CONFIG)
    return {
        "outcome": ab.outcome,
        "either": ab.promote or ba.promote,
        "reverse": ba.promote,
        "mde": ab.pass_hat_k.mde,
        "tasks_needed": ab.pass_hat_k.tasks_needed,
    }


def _wilson(x: int, n: int, z: float = 1.96) -> list[float]:
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def _sign_test(x: int, n: int) -> float:
    """Two-sided exact binomial p of x successes in n under p = 1/2: are the two directions exchangeable?"""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(x, n - x) + 1)) / 2**n
    return round(min(1.0, 2 * tail), 4)


def _row(source: str, rows: list[dict], extra: dict) -> dict:
    n = len(rows)
    one = sum(r["outcome"] == "promote" for r in rows)
    either = sum(r["either"] for r in rows)
    reverse = sum(r["reverse"] for r in rows)
    needed = [r["tasks_needed"] for r in rows if r["tasks_needed"] is not None]
    row = {
        "source": source,
        **extra,
        "pairs": n,
        "false_promotion_one_way": round(one / n, 4),
        "false_promotion_one_way_95ci": _wilson(one, n),
        "false_promotion_either_way": round(either / n, 4),
        "false_promotion_either_way_95ci": _wilson(either, n),
        # A over B and B over A count the same kind of event on exchangeable runs: equal in expectation.
        "promotions_a_over_b": one,
        "promotions_b_over_a": reverse,
        "direction_sign_test_p": _sign_test(one, one + reverse),
        "outcomes": {
            o: round(sum(r["outcome"] == o for r in rows) / n, 4) for o in ("promote", "block", "inconclusive")
        },
        "mean_mde": round(statistics.fmean(r["mde"] for r in rows), 4),
        "median_tasks_needed": statistics.median(needed) if needed else None,
    }
    print(
        f"{source:>22}  one-way {row['false_promotion_one_way']:.1%} {row['false_promotion_one_way_95ci']}  "
        f"either-way {row['false_promotion_either_way']:.1%} {row['false_promotion_either_way_95ci']}  "
        f"A>B {one} B>A {reverse} (p {row['direction_sign_test_p']})  "
        f"outcomes {row['outcomes']}  MDE {row['mean_mde']:+.3f}  tasks_needed {row['median_tasks_needed']}",
        flush=True,
    )
    return row


def real_pairs(pairs: int) -> dict:
    """Measure the flawed agent 2 × pairs times (seeds 0, 1, …) and A/A-check consecutive seeds."""
    from pipeline.authoring.templates import generate_tasks
    from pipeline.dataset.io import write_tasks
    from pipeline.gate.aa import aa_check
    from pipeline.measure import MeasureConfig, measure
    from pipeline.world.registry import load_world

    world = load_world(REAL_WORLD)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tasks = root / "tasks.jsonl"
        write_tasks(tasks, generate_tasks(world, REAL_TASKS, seed=0))
        for i in range(pairs):
            dirs = []
            for seed in (2 * i, 2 * i + 1):
                cfg = MeasureConfig(
                    world=REAL_WORLD, tasks=tasks, agent=REAL_AGENT.format(seed=seed), trials=K, resamples=100
                )
                measure(cfg, root / f"s{seed}")
                dirs.append(root / f"s{seed}")
            check = aa_check(dirs[0], dirs[1], tasks, world, CONFIG)
            ab = check.directions[0]
            rows.append(
                {
                    "outcome": ab.outcome,
                    "either": check.false_promotion,
                    "reverse": check.directions[1].promote,
                    "mde": ab.pass_hat_k.mde,
                    "tasks_needed": ab.pass_hat_k.tasks_needed,
                }
            )
    return _row("real flawed measures", rows, {"world": REAL_WORLD, "n_tasks": REAL_TASKS, "agent": REAL_AGENT})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=300, help="Simulated A/A pairs per population.")
    ap.add_argument("--tasks", type=int, default=200, help="Held-out tasks in the synthetic populations.")
    ap.add_argument("--pairs", type=int, default=10, help="Real measured A/A pairs (0: skip).")
    ap.add_argument("--first-sim", type=int, default=0, help="Index of the first simulated pair (fresh seeds).")
    ap.add_argument("--only", help="Run this synthetic population only (committed-champion, …).")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gate_aa.json")
    args = ap.parse_args()
    gate = json.loads((ROOT / "gate" / "gate.json").read_text())
    k_gate = gate["pass_hat_k"]["k"]
    if k_gate != K:
        raise SystemExit(f"gate/gate.json gated pass^{k_gate}; this bench fits pass^{K}")
    t0 = time.perf_counter()
    populations = {}
    for role, key in (("champion", "champion"), ("candidate", "candidate")):
        inputs = gate["inputs"][role]
        pass1 = inputs["passes"] / inputs["valid_trials"]
        mu, sigma = fit(pass1, gate["pass_hat_k"][key])
        populations[f"committed-{role}"] = {
            "mu": mu,
            "sigma_task": sigma,
            "fitted_to": {"pass@1": round(pass1, 4), f"pass^{K}": gate["pass_hat_k"][key], "run": inputs["dir"]},
        }
    populations["power-bench"] = {"mu": 0.8957, "sigma_task": 3.0, "fitted_to": "bench/bench_gate_power.py"}
    print(
        f"gate defaults: k={K}, margin {CONFIG.margin}, {CONFIG.confidence:.0%} interval, power {CONFIG.power}, "
        f"min_effect {CONFIG.min_effect}; {args.sims} simulated A/A pairs of {args.tasks} tasks per population"
    )
    rows = []
    with Pool(args.workers) as pool:
        for name, pop in populations.items():
            if args.only and name != args.only:
                continue
            tasks = _tasks(args.tasks, pop["mu"], pop["sigma_task"], f"gate-aa-tasks:{name}")
            pop["realized"] = {
                "pass@1": round(sum(p for _, p, _ in tasks) / len(tasks), 4),
                f"pass^{K}": round(sum(p**K for _, p, _ in tasks) / len(tasks), 4),
            }
            pop["mu"], pop["sigma_task"] = round(pop["mu"], 4), round(pop["sigma_task"], 4)
            sims = pool.map(
                simulate, [(name, tasks, i) for i in range(args.first_sim, args.first_sim + args.sims)], chunksize=4
            )
            rows.append(_row(name, sims, {"population": pop, "n_tasks": args.tasks}))
    if args.pairs:
        rows.append(real_pairs(args.pairs))
    report = {
        "gate_config": CONFIG.model_dump(mode="json"),
        "first_sim": args.first_sim,
        "rows": rows,
        "wall_s": round(time.perf_counter() - t0, 1),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {args.workers} workers, "
        f"python {platform.python_version()}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"→ {args.out} ({report['wall_s']} s)")


if __name__ == "__main__":
    main()
