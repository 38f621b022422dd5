"""What pulling the shared DVC cache saves a retrain run: the workflow's steps, timed, with and without the remote.

Each run is what `.github/workflows/retrain.yml` does in a fresh checkout (a copy of this repository's working
tree: no DVC cache, no runs), without act around it:

    python -m pipeline.loop.next_iteration --write        # the iteration from the registry
    dvc pull --run-cache --allow-missing                   # with a remote only
    dvc repro [--pull] report && dvc repro --force --single-item promote
    dvc push --run-cache                                   # with a remote only

Runs, against one MLflow store (sqlite, artifacts beside it; copied where two runs must see the same registry):

    1. iteration 1, empty remote (every stage runs), pushed
    2. iteration 2 without a remote (every stage runs)
    3. iteration 2 pulling from the remote (the stages whose inputs iteration 2 did not change are restored)
    4. iteration 2 again, pulling (a re-run, or a push after a pull request measured the same: all restored)

For each: wall time, the time in `dvc pull`/`dvc push`, and the stages run and restored. Writes
bench/results/retrain_pull.json and prints a markdown table. `--params committed` runs the committed (full-size)
params instead of the small scripted configuration (hours on 2 cores: the embedded model's measure dominates).

    python bench/bench_retrain_pull.py [--params small|committed] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import host_machine, write_results  # noqa: E402
from tests.loop.loop_helpers import REDUCED, copy_repo, set_params  # noqa: E402

SMALL = REDUCED | {
    "train": {"method": "agent:flawed:plan_adherence=0.2,invention=0.2,misread=0.2"},
    "gate": REDUCED["gate"] | {"margin": -1.0, "tracked": []},  # iteration 1 promotes: iteration 2 has a champion
}


def _env(repo: Path, store: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(repo),
        DVC_NO_ANALYTICS="1",
        MLFLOW_DISABLE_TELEMETRY="true",
        HF_HUB_OFFLINE="1",
        AGENTLOOP_LOG="WARNING",
        MLFLOW_TRACKING_URI=f"sqlite:///{store}",
        AGENTLOOP_PROMOTE="on",
    )
    return env


def _sh(cmd: list[str], repo: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {repo}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return time.perf_counter() - t0, r.stdout + r.stderr


def checkout(work: Path, name: str, small: bool) -> Path:
    repo = copy_repo(work / name)
    if small:
        set_params(repo, SMALL)
    return repo


def retrain(repo: Path, store: Path, remote: Path | None) -> dict:
    """One run of the workflow's DVC steps in `repo`; seconds and what DVC did."""
    env = _env(repo, store)
    t0 = time.perf_counter()
    _, plan = _sh([sys.executable, "-m", "pipeline.loop.next_iteration", "--write"], repo, env)
    pull = push = 0.0
    if remote is not None:
        _sh(["dvc", "remote", "add", "--local", "--force", "--default", "agentloop", str(remote)], repo, env)
        pull, _ = _sh(["dvc", "pull", "--run-cache", "--allow-missing"], repo, env)
    repro, log = _sh(["dvc", "repro", *(["--pull"] if remote else []), "report"], repo, env)
    promote, log2 = _sh(["dvc", "repro", "--force", "--single-item", "promote"], repo, env)
    if remote is not None:
        push, _ = _sh(["dvc", "push", "--run-cache"], repo, env)
    total = time.perf_counter() - t0
    promotion = json.loads((repo / "gate" / "promotion.json").read_text())
    return {
        "plan": plan.strip().splitlines()[-1],
        "iteration": promotion["iteration"],
        "seconds": round(total, 1),
        "pull_s": round(pull, 1),
        "repro_s": round(repro + promote, 1),
        "push_s": round(push, 1),
        "ran": re.findall(r"Running stage '([^']+)'", log + log2),
        "restored": re.findall(r"Stage '([^']+)' is cached - skipping run", log),
        "champion_moved": promotion["champion_moved"],
    }


def _copy_store(src: Path, dst: Path) -> Path:
    shutil.copytree(src.parent, dst)
    return dst / src.name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", choices=["small", "committed"], default="small")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-retrain-pull-"))
    work.mkdir(parents=True, exist_ok=True)
    small = args.params == "small"
    load = os.getloadavg()
    remote = work / "remote"
    store = work / "store" / "mlruns.db"
    store.parent.mkdir()
    runs = {}
    try:
        runs["1. iteration 1, empty remote"] = retrain(checkout(work, "c1", small), store, remote)
        after_one = _copy_store(store, work / "store-after-1")
        runs["2. iteration 2, no remote"] = retrain(
            checkout(work, "c2", small), _copy_store(after_one, work / "store-2"), None
        )
        runs["3. iteration 2, pulled"] = retrain(
            checkout(work, "c3", small), _copy_store(after_one, work / "s3"), remote
        )
        runs["4. iteration 2 again, pulled"] = retrain(
            checkout(work, "c4", small), _copy_store(after_one, work / "s4"), remote
        )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    report = {"params": args.params, "machine": host_machine(load), "load_after": os.getloadavg(), "runs": runs}
    write_results(ROOT / "bench" / "results" / "retrain_pull.json", report)
    print("| run | iteration | wall s | pull s | repro s | push s | stages run | restored |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for name, r in runs.items():
        print(
            f"| {name} | {r['iteration']} | {r['seconds']} | {r['pull_s']} | {r['repro_s']} | {r['push_s']} |"
            f" {', '.join(r['ran'])} | {', '.join(r['restored'])} |"
        )


if __name__ == "__main__":
    main()
