"""Power simulation of the promotion gate: how often does it promote when nothing changed, and when pass^4 truly
rose by 10 points?

No episodes are run: per-task outcomes are drawn from a population that looks like a τ-bench retail agent
(pass^1 = 0.60, pass^4 ≈ 0.39, 40% of tasks flipping over 4 trials: pass^k falling with k as τ-bench reports),
and each simulated evaluation goes through `pipeline.gate.evaluate`, the very rule `agentloop gate` applies
after re-grading.

Population. Tasks are assigned templates by cycling over the task generator's DEFAULT_CYCLE (15 templates,
so the bootstrap clusters as it does on generated evaluation sets), and each task its template's expected outcome
(the retail taxonomy's: 'refuse' for a refusal template, 'act' otherwise, a two-request task included), so the
tracked 'act pass^k' test runs in the Holm family as it does on real held-out tasks. A task's success probability is
sigmoid(mu + u_template + e_task) with u ~ N(0, 0.75²), e ~ N(0, 3²); mu is set so that mean pass@1 = 0.60.
Each failed trial shows one failure mode drawn from the task's own mix (Dirichlet(0.5, 0.5, 0.5)).

Scenarios (k = 4 trials per task, the gate's defaults otherwise):
    null      the candidate is the champion: same success probabilities, independent trials
    +10pt     every task's logit shifted by the delta that raises population mean pass^4 by exactly 0.10
              (failure modes keep their mix, so every mode rate falls with the failures)

Rows: power (+10pt) at each size tried and at the default evaluation size EVAL_TASKS (pipeline/gate/config.py),
false promotions (null) at the smallest size and the default, and power at the default for a harder population
(e ~ N(0, 2²): more flipping tasks, pass^4 ≈ 0.32). Each row gives the promotion rate with its 95% Wilson
interval, how often the pass^k bound alone would promote, and how often a Holm "got worse" test blocked.

    python bench/bench_gate_power.py [--sims 1000] [--sizes 100,150] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import time
from multiprocessing import Pool
from pathlib import Path

from pipeline.dataset import Expected
from pipeline.domains.retail.synthesis import RETAIL_CYCLE as DEFAULT_CYCLE
from pipeline.domains.retail.synthesis import TAXONOMY
from pipeline.gate import EVAL_TASKS, GateConfig, TaskOutcome, evaluate
from pipeline.grading.failure_modes import FAILURE_MODES

ROOT = Path(__file__).resolve().parents[1]
K = 4
TARGET_PASS1 = 0.60
GAIN = 0.10
SIGMA_TEMPLATE, SIGMA_TASK = 0.75, 3.0
SIGMA_TASK_SENSITIVITY = 2.0  # more flipping tasks (pass^4 ≈ 0.32 at pass@1 0.60): a harder population
CONFIG = GateConfig(k=K)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _logits(n: int, rng: random.Random, mu: float, sigma_task: float) -> list[tuple[str, float]]:
    """n tasks with templates cycled as the task generator does, each with its success logit."""
    u = {t: rng.gauss(0.0, SIGMA_TEMPLATE) for t in sorted(set(DEFAULT_CYCLE))}
    cycle = [DEFAULT_CYCLE[i % len(DEFAULT_CYCLE)] for i in range(n)]
    return [(t, mu + u[t] + rng.gauss(0.0, sigma_task)) for t in cycle]


_SAMPLES: dict[float, list[float]] = {}


def _population(mu: float, delta: float, sigma_task: float) -> dict[str, float]:
    """Population means (a fixed-seed sample of 50,000 tasks) of pass@1, pass^4 and the 4-trial bucket shares."""
    if sigma_task not in _SAMPLES:  # template and task effects drawn afresh per point: the marginal over templates
        rng = random.Random(12345)
        _SAMPLES[sigma_task] = [rng.gauss(0.0, SIGMA_TEMPLATE) + rng.gauss(0.0, sigma_task) for _ in range(50_000)]
    ps = [_sigmoid(mu + x + delta) for x in _SAMPLES[sigma_task]]
    n = len(ps)
    always, never = sum(p**K for p in ps) / n, sum((1 - p) ** K for p in ps) / n
    return {
        "pass@1": sum(ps) / n,
        f"pass^{K}": always,
        "always": always,
        "never": never,
        "flipping": 1 - always - never,
    }


def _bisect(f, lo: float, hi: float, target: float) -> float:
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def calibrate(sigma_task: float) -> tuple[float, float]:
    """(mu, delta): mean pass@1 = TARGET_PASS1; the logit shift delta adds GAIN to the population mean pass^4."""
    mu = _bisect(lambda m: _population(m, 0.0, sigma_task)["pass@1"], -3.0, 3.0, TARGET_PASS1)
    base = _population(mu, 0.0, sigma_task)[f"pass^{K}"]
    delta = _bisect(lambda d: _population(mu, d, sigma_task)[f"pass^{K}"] - base, 0.0, 5.0, GAIN)
    return mu, delta


def _expected(template: str) -> Expected:
    """A template's expected outcome: 'refuse' when the taxonomy says its request is refused, else 'act'."""
    return "refuse" if template in TAXONOMY and TAXONOMY[template].outcome == "refused" else "act"


def _outcome(rng: random.Random, template: str, p: float, mix: list[float]) -> TaskOutcome:
    passes = sum(rng.random() < p for _ in range(K))
    modes = dict.fromkeys(FAILURE_MODES, 0)
    for _ in range(K - passes):
        modes[rng.choices(FAILURE_MODES, weights=mix)[0]] += 1
    return TaskOutcome(template=template, n=K, passes=passes, modes=modes, expected=_expected(template))


def simulate(args: tuple[str, int, int, float, float, float]) -> dict[str, float]:
    """One simulated evaluation: draw tasks and both agents' trials, run the gate; returns its decision parts."""
    scenario, n, i, mu, delta, sigma_task = args
    rng = random.Random(f"gate-power:{scenario}:{sigma_task}:{n}:{i}")
    shift = delta if scenario == "+10pt" else 0.0
    champion, candidate, truth = {}, {}, 0.0
    for j, (template, x) in enumerate(_logits(n, rng, mu, sigma_task)):
        mix = [rng.gammavariate(0.5, 1.0) + 1e-12 for _ in FAILURE_MODES]  # the task's Dirichlet(1/2) mode mix
        p, q = _sigmoid(x), _sigmoid(x + shift)
        champion[f"t{j:04d}"] = _outcome(rng, template, p, mix)
        candidate[f"t{j:04d}"] = _outcome(rng, template, q, mix)
        truth += q**K - p**K
    result = evaluate(candidate, champion, CONFIG)
    return {
        "promote": result.promote,
        "bound_ok": result.pass_hat_k.low > CONFIG.margin,
        "holm_block": any(t.worse for t in result.tests),
        "observed_gain": result.pass_hat_k.diff,
        "true_gain": truth / n,
    }


def _wilson(x: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def run_cell(pool: Pool, scenario: str, n: int, sims: int, sigma_task: float = SIGMA_TASK) -> dict:
    mu, delta = calibrate(sigma_task)
    t0 = time.perf_counter()
    rows = pool.map(simulate, [(scenario, n, i, mu, delta, sigma_task) for i in range(sims)], chunksize=8)
    promoted = sum(r["promote"] for r in rows)
    lo, hi = _wilson(promoted, sims)
    cell = {
        "scenario": scenario,
        "sigma_task": sigma_task,
        "n_tasks": n,
        "sims": sims,
        "promote_rate": promoted / sims,
        "promote_rate_95ci": [round(lo, 4), round(hi, 4)],
        "bound_only_rate": sum(r["bound_ok"] for r in rows) / sims,
        "holm_block_rate": sum(r["holm_block"] for r in rows) / sims,
        "mean_observed_gain": round(sum(r["observed_gain"] for r in rows) / sims, 4),
        "mean_true_gain": round(sum(r["true_gain"] for r in rows) / sims, 4),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(_row(cell), flush=True)
    return cell


def _row(c: dict) -> str:
    lo, hi = c["promote_rate_95ci"]
    return (
        f"{c['scenario']:>6} σ_task={c['sigma_task']:.1f} n={c['n_tasks']:>4}  "
        f"promote {c['promote_rate']:6.1%} [{lo:.1%}, {hi:.1%}]  bound-only {c['bound_only_rate']:6.1%}  "
        f"holm-block {c['holm_block_rate']:5.1%}  gain {c['mean_observed_gain']:+.3f} "
        f"(true {c['mean_true_gain']:+.3f})  {c['seconds']}s"
    )


def _describe(sigma_task: float) -> dict:
    mu, delta = calibrate(sigma_task)
    return {
        "sigma_task": sigma_task,
        "mu": round(mu, 4),
        "delta_logit": round(delta, 4),
        "champion": {k: round(v, 4) for k, v in _population(mu, 0.0, sigma_task).items()},
        "candidate_+10pt": {k: round(v, 4) for k, v in _population(mu, delta, sigma_task).items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=1000, help="Simulated evaluations per cell.")
    ap.add_argument("--sizes", default="100,150", help="Evaluation sizes (tasks) to try besides the default.")
    ap.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gate_power.json")
    args = ap.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")} | {EVAL_TASKS})
    t0 = time.perf_counter()
    print(
        f"gate defaults: k={K}, {CONFIG.confidence:.0%} paired bootstrap, margin {CONFIG.margin}, "
        f"Holm alpha {CONFIG.alpha}, {CONFIG.resamples} resamples; {args.sims} simulated evaluations per row"
    )
    with Pool(args.workers) as pool:
        cells = [run_cell(pool, "+10pt", n, args.sims) for n in sizes]
        cells += [run_cell(pool, "null", n, args.sims) for n in sorted({sizes[0], EVAL_TASKS})]
        cells.append(run_cell(pool, "+10pt", EVAL_TASKS, args.sims, SIGMA_TASK_SENSITIVITY))
    power = [c for c in cells if c["scenario"] == "+10pt" and c["sigma_task"] == SIGMA_TASK]
    needed = next((c["n_tasks"] for c in power if c["promote_rate"] >= 0.80), None)
    at = {(c["scenario"], c["sigma_task"]): c["promote_rate"] for c in cells if c["n_tasks"] == EVAL_TASKS}
    report = {
        "gate_config": CONFIG.model_dump(mode="json"),
        "default_eval_tasks": EVAL_TASKS,
        "population": {
            "templates": len(set(DEFAULT_CYCLE)),
            "refuse_share": round(sum(_expected(t) == "refuse" for t in DEFAULT_CYCLE) / len(DEFAULT_CYCLE), 4),
            "sigma_template": SIGMA_TEMPLATE,
            "target_pass@1": TARGET_PASS1,
            "gain_pass^4": GAIN,
        },
        "populations": [_describe(SIGMA_TASK), _describe(SIGMA_TASK_SENSITIVITY)],
        "cells": cells,
        "smallest_tried_size_with_80pct_power": needed,
        "at_default": {
            "false_promotion_rate": at[("null", SIGMA_TASK)],
            "power_+10pt": at[("+10pt", SIGMA_TASK)],
            "power_+10pt_harder_population": at[("+10pt", SIGMA_TASK_SENSITIVITY)],
        },
        "wall_s": round(time.perf_counter() - t0, 1),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {args.workers} workers, "
        f"python {platform.python_version()}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"smallest evaluation size tried with >= 80% power: {needed}; default EVAL_TASKS = {EVAL_TASKS}")
    print(f"at the default: {report['at_default']}  ({report['wall_s']} s) → {args.out}")


if __name__ == "__main__":
    main()
