"""One iteration of the loop on a real model, summarised from the workspace its stages ran in.

The whole-mix SmolLM2 recipe (README, "A real model on CPU") runs for an hour or more on 2 cores; this script
reads what its stages left (params.yaml, both measure runs, the synthesis manifest, the curated set, the trained
checkpoint's record, gate.json, the stage times) and writes one JSON: pass@1 and pass^k of baseline and candidate
over the whole mix and over act / refuse tasks, the gate's decision and intervals, the per-template table, what
training saw, and the minutes each stage took.

    python bench/smollm2_mix.py --workdir DIR --label "iteration 1" --out bench/results/smollm2_mix.json [--append]

A later iteration's baseline is the previous candidate; `--first-baseline RUN_DIR` (iteration 1's measure run)
adds the candidate against where the loop started: that baseline's figures, the per-template table and the gate,
re-run with the workspace's own gate params on the same held-out tasks.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import yaml
from machine import host_machine, write_results

from pipeline.dataset import read_tasks
from pipeline.loop import paths
from pipeline.loop.stage_times import read_stage_time
from pipeline.metrics import by_template
from pipeline.report.inputs import load_run

STAGES = ("measure", "target", "synthesize", "curate", "train", "remeasure", "gate", "report", "promote")
PARAMS = ("world", "baseline", "measure", "target", "synthesize", "curate", "train", "gate")


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _run_figures(metrics: dict, k: str) -> dict:
    return {
        "agent": metrics["agent"],
        "tasks": metrics["tasks"],
        "trials_per_task": metrics["trials_per_task"],
        "pass_at_1": metrics["pass_at_1"],
        f"pass_hat_{k}": metrics["pass_hat_k"][k],
        f"pass_hat_{k}_interval": metrics["intervals"][f"pass_hat_{k}"],
        "by_expected": metrics.get("by_expected", {}),
        "failure_modes": {m: r["trials"] for m, r in metrics["failure_modes"].items()},
        "tokens_per_trial": metrics["cost"].get("tokens_per_trial"),
    }


def _templates_table(base_counts, cand_counts, templates: dict, k: int) -> dict:
    tb, tc = by_template(base_counts, templates, k), by_template(cand_counts, templates, k)
    return {
        name: {
            "tasks": (tc.get(name) or tb[name]).tasks,
            "baseline_pass_at_1": tb[name].pass_at_1 if name in tb else None,
            "candidate_pass_at_1": tc[name].pass_at_1 if name in tc else None,
            f"baseline_pass_hat_{k}": tb[name].pass_hat_k if name in tb else None,
            f"candidate_pass_hat_{k}": tc[name].pass_hat_k if name in tc else None,
        }
        for name in sorted(set(tb) | set(tc))
    }


def _gate_figures(gate: dict) -> dict:
    return {key: gate.get(key) for key in ("outcome", "promote", "reasons", "by_expected", "tests")} | {
        "interval": gate.get("pass_hat_k")
    }


def against_first(workdir: Path, first: Path, params: dict, tasks_file: Path, templates: dict, k: int) -> dict:
    """The candidate against iteration 1's baseline run: figures, per-template table and a fresh gate decision."""
    from pipeline.gate import GateConfig, decide
    from pipeline.world import load_world

    world = load_world(params["world"]["eval_world"], params["world"]["domain"])
    decision = decide(workdir / paths.CANDIDATE_RUN, first, tasks_file, world, GateConfig(**params["gate"]))
    base, cand = load_run(first), load_run(workdir / paths.CANDIDATE_RUN)
    return {
        "run": str(first),
        "baseline": _run_figures(_json(first / "metrics.json"), str(k)),
        "by_template": _templates_table(base.counts(), cand.counts(), templates, k),
        "gate": _gate_figures(decision.model_dump(mode="json")),
    }


def summarise(workdir: Path, label: str, first_baseline: Path | None = None) -> dict:
    params = yaml.safe_load((workdir / "params.yaml").read_text())
    k = int(params["gate"]["k"])
    tasks_file = workdir / (params["measure"].get("tasks") or paths.EVAL_TASKS)
    tasks = read_tasks(tasks_file)
    templates = {t.id: t.provenance.template for t in tasks}
    base, cand = load_run(workdir / paths.BASELINE_RUN), load_run(workdir / paths.CANDIDATE_RUN)
    gate = _json(workdir / paths.GATE)
    manifest = _json(workdir / paths.SYNTH_DIR / "manifest.json")
    trained = _json(workdir / paths.CANDIDATE_MODEL / "checkpoint" / "agentloop.json")
    times = {s: t for s in STAGES if (t := read_stage_time(s, workdir / paths.STAGE_TIMES)) is not None}
    return {
        "label": label,
        "params": {s: params.get(s) for s in PARAMS},
        "held_out": {"file": str(tasks_file.relative_to(workdir)), "tasks": len(tasks)},
        "baseline": _run_figures(_json(workdir / paths.BASELINE_RUN / "metrics.json"), str(k)),
        "candidate": _run_figures(_json(workdir / paths.CANDIDATE_RUN / "metrics.json"), str(k)),
        "by_template": _templates_table(base.counts(), cand.counts(), templates, k),
        "gate": _gate_figures(gate),
        "synthesis": {
            "tasks": manifest.get("tasks"),
            **{key: (manifest.get("counts") or {}).get(key) for key in ("by_aim", "by_template", "by_outcome")},
        },
        "training": {
            **{key: (trained.get("training") or {}).get(key) for key in ("epochs", "learning_rate", "lora", "steps")},
            "losses": (trained.get("training") or {}).get("losses"),
            **{
                key: (trained.get("data_manifest") or {}).get(key)
                for key in ("data_counts", "examples", "length", "tokens", "assistant_tokens")
            },
        },
        "stage_minutes": {s: round(t.duration_s / 60, 2) for s, t in times.items()},
    } | (
        {"against_first_baseline": against_first(workdir, first_baseline, params, tasks_file, templates, k)}
        if first_baseline
        else {}
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True, help="the workspace the loop's stages ran in")
    ap.add_argument("--label", default="iteration 1")
    ap.add_argument("--out", type=Path, default=Path("bench/results/smollm2_mix.json"))
    ap.add_argument("--append", action="store_true", help="add this iteration to the file's list")
    ap.add_argument("--first-baseline", type=Path, help="iteration 1's measure run, to gate the candidate against")
    args = ap.parse_args()
    summary = summarise(args.workdir, args.label, args.first_baseline)
    machine = host_machine(os.getloadavg())
    summary["machine"] = machine  # appended iterations may come from another machine than the file's first
    report = _json(args.out) if args.append else {}
    report.setdefault("machine", machine)
    report.setdefault("iterations", []).append(summary)
    write_results(args.out, report)
    first = summary.get("against_first_baseline", {}).get("gate", {}).get("outcome")
    print(
        json.dumps(
            {
                "label": args.label,
                "gate": summary["gate"]["outcome"],
                "gate_vs_first": first,
                "stages": summary["stage_minutes"],
            }
        )
    )


if __name__ == "__main__":
    main()
