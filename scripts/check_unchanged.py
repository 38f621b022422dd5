"""Did a change move the loop's outputs? Run the loop at two revisions with the same seeds and compare digests.

    python scripts/check_unchanged.py REV            # REV (e.g. a commit before a refactoring) vs the work tree
    python scripts/check_unchanged.py REV --full     # the committed params instead of the small ones (≈ 2 × 12 min)

Each side is a fresh clone (the work tree's side: HEAD plus the uncommitted changes of tracked files). Both run
every `dvc.yaml` stage but `embedded` (both use the committed checkpoint) and `promote` (it only logs to MLflow),
each with `dvc repro --single-item`, on small params (`SMALL`) unless --full. A small embedded default is also
built on each side from the same config (`agentloop train baseline --config`), so the build's code is checked
too. Every file of every stage's outputs is hashed (sha256); wall-clock timings are kept out of hashed outputs,
so any difference is a real one. Prints a table and exits 1 if anything differs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("embedded", "promote")
SMALL = {
    "world": {"eval_tasks": 12},
    "measure": {"trials": 2, "resamples": 200, "concurrency": 4},
    "target": {"budget": 24},
    "synthesize": {"anchors": 30},
    "curate": {"max_items": 8},
    "train": {"epochs": 1.0},
    "gate": {"resamples": 200, "k": 2},
}
TINY_EMBEDDED = {
    "corpus_tasks": 40,
    "tokenizer_conversations": 20,
    "loop": {"epochs": 1, "max_steps": 6, "learning_rate": 0.003, "batch_tokens": 2048},
}


def run(cmd: list[str], cwd: Path, log: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(cwd), DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    env.update(HF_HUB_OFFLINE="1", MLFLOW_TRACKING_URI=f"sqlite:///{cwd / 'mlruns.db'}")
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        if subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode:
            sys.exit(f"failed in {cwd}: {' '.join(cmd)} (log: {log})")


def clone(rev: str | None, into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(into)], check=True)
    if rev is not None:
        subprocess.run(["git", "checkout", "-q", rev], cwd=into, check=True)
        return into
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=ROOT, capture_output=True, check=True).stdout
    if diff:
        subprocess.run(["git", "apply", "--binary", "-"], cwd=into, input=diff, check=True)
    return into


def deep_update(base: dict, changes: dict) -> dict:
    for key, value in changes.items():
        base[key] = deep_update(dict(base.get(key) or {}), value) if isinstance(value, dict) else value
    return base


def stage_outputs(repo: Path) -> dict[str, list[str]]:
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    outs = {}
    for name, stage in stages.items():
        paths = [o if isinstance(o, str) else next(iter(o)) for o in stage.get("outs", [])]
        outs[name] = paths + [next(iter(m)) if isinstance(m, dict) else m for m in stage.get("metrics", [])]
    return outs


def digests(repo: Path, paths: list[str]) -> dict[str, str]:
    out = {}
    for rel in paths:
        path = repo / rel
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            out[str(f.relative_to(repo))] = hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "missing"
    return out


def side(rev: str | None, work: Path, full: bool) -> dict[str, str]:
    name = rev or "worktree"
    repo = clone(rev, work / name.replace("/", "_"))
    log = work / f"{name.replace('/', '_')}.log"
    if not full:
        params = yaml.safe_load((repo / "params.yaml").read_text())
        (repo / "params.yaml").write_text(yaml.safe_dump(deep_update(params, SMALL), sort_keys=False))
    outs = stage_outputs(repo)
    for stage in outs:
        if stage not in SKIPPED:
            print(f"  {name}: {stage}", flush=True)
            run(["dvc", "repro", "--single-item", stage], repo, log)
    result = {
        f"{stage}: {path}": d
        for stage in outs
        if stage not in SKIPPED
        for path, d in digests(repo, outs[stage]).items()
    }
    (work / "tiny.yaml").write_text(yaml.safe_dump(TINY_EMBEDDED))
    print(f"  {name}: a small embedded build", flush=True)
    cmd = ["agentloop", "train", "baseline", "--out", "tiny", "--config", str(work / "tiny.yaml")]
    run(cmd, repo, log)
    result |= {f"tiny embedded: {p}": d for p, d in digests(repo, ["tiny"]).items() if not p.endswith(".json")}
    result |= {"tiny embedded: agentloop.json (less timings)": meta_digest(repo / "tiny" / "agentloop.json")}
    return result


def meta_digest(path: Path) -> str:
    import json

    meta = json.loads(path.read_text())
    meta.get("training", {}).pop("tokens_per_s", None)  # a wall-clock speed
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the revision to compare the work tree with")
    parser.add_argument("--full", action="store_true", help="the committed params (each side ≈ 12 min on 2 cores)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the clones and logs here")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="agentloop-unchanged-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{args.rev} vs the work tree, in {work}", flush=True)
    before, after = side(args.rev, work, args.full), side(None, work, args.full)
    keys = sorted(set(before) | set(after))
    moved = [k for k in keys if before.get(k) != after.get(k)]
    for k in keys:
        mark = "MOVED" if k in moved else "same "
        print(f"{mark}  {(after.get(k) or before.get(k) or '')[:16]}  {k}")
    print(f"\n{len(keys) - len(moved)} of {len(keys)} output files identical; {len(moved)} moved.")
    if args.workdir is None and not moved:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if moved else 0)


if __name__ == "__main__":
    main()
