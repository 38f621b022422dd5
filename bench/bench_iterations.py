"""Iterations in a row from a fresh clone, each with the README's command, each from the registry's champion.

Clones this repository's HEAD into a scratch directory (a fresh clone: no runs, no registry, no DVC cache) and
runs, with the committed params:

    dvc repro                                                          # iteration 1, from the embedded default
    dvc exp run -S loop.iteration=2 -S baseline.source=champion        # iteration 2
    dvc exp run -S loop.iteration=3 -S baseline.source=champion        # iteration 3, ...

For each: wall time and each stage's (runs/stage_times), the load average around it (sampled every 10 s), the
train world it synthesized in, the baseline's and the candidate's pass^1, pass^k and failure-mode task rates, the
gate's outcome with its interval and MDE, the registered version and the champion after it, and whether the
baseline it measured is the champion the iteration before left (digest of the fetched checkpoint). Writes
bench/results/iterations.json and prints the side-by-side table (markdown).

    python bench/bench_iterations.py [--iterations 3] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("invention", "misread", "plan_adherence")


def env_for(repo: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(repo), DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true", HF_HUB_OFFLINE="1", CI="false"
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


class LoadSampler:
    """The 1-minute load average every `every` seconds while an iteration runs."""

    def __init__(self, every: float = 10.0):
        self.every, self.samples, self._stop = every, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self.samples.append(os.getloadavg()[0])
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _measured(metrics: dict, k: int) -> dict:
    return {
        "agent": metrics.get("agent"),
        "pass@1": metrics.get("pass_at_1"),
        f"pass^{k}": metrics.get("pass_hat_k", {}).get(str(k)),
        **{m: metrics.get("failure_modes", {}).get(m, {}).get("tasks") for m in MODES},
    }


def collect(repo: Path, iteration: int, command: list[str], seconds: float, load: list[float]) -> dict:
    gate = _json(repo / "gate" / "gate.json")
    phk = gate.get("pass_hat_k", {})
    k = phk.get("k", 4)
    promotion = _json(repo / "gate" / "promotion.json")
    baseline_ref = _json(repo / "models" / "baseline" / "agent.json")
    candidate_ref = _json(repo / "models" / "candidate" / "agent.json")
    stages = {}
    for f in sorted((repo / "runs" / "stage_times").glob("*.json")):
        t = _json(f)
        if t.get("start", 0) >= time.time() - seconds - 5:  # stages this iteration ran (the rest were reused)
            stages[t["stage"]] = round(t["end"] - t["start"], 1)
    return {
        "iteration": iteration,
        "command": " ".join(command),
        "seconds": round(seconds, 1),
        "stage_seconds": stages,
        "load": {"mean": round(statistics.mean(load), 2), "min": round(min(load), 2), "max": round(max(load), 2)},
        "train_world": _json(repo / "data" / "synth" / "manifest.json").get("world"),
        "targets": {m: v.get("count") for m, v in _json(repo / "data" / "targets.json").get("modes", {}).items()},
        "baseline_source": baseline_ref.get("source"),
        "baseline_version": baseline_ref.get("version"),
        "baseline_digest": baseline_ref.get("checkpoint_digest"),
        "candidate_digest": candidate_ref.get("checkpoint_digest"),
        "baseline": _measured(_json(repo / "runs" / "baseline" / "metrics.json"), k),
        "candidate": _measured(_json(repo / "runs" / "candidate" / "metrics.json"), k),
        "gate": {
            "outcome": gate.get("outcome"),
            "k": k,
            "gain": phk.get("diff"),
            "interval": [phk.get("low"), phk.get("high")],
            "mde": phk.get("mde"),
            "reasons": gate.get("reasons"),
        },
        "model_version": promotion.get("model_version"),
        "champion_version": promotion.get("champion_version"),
        "champion_moved": promotion.get("champion_moved"),
    }


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def table(rows: list[dict]) -> str:
    k = rows[0]["gate"]["k"] if rows else 4
    head = (
        f"| iteration | train world | baseline (version) | pass^1 | pass^{k} | invention | misread | plan adherence"
        f" | gate: pass^{k} gain, 95% interval, MDE | outcome | champion after | time (load) |"
    )
    out = [head, "|" + "---|" * 12]
    for r in rows:
        b, c, g = r["baseline"], r["candidate"], r["gate"]
        source = f"{r['baseline_source']} (v{r['baseline_version']})" if r["baseline_version"] else r["baseline_source"]
        cell = lambda key, b=b, c=c: f"{pct(b[key])} → {pct(c[key])}"  # noqa: E731
        lo, hi = g["interval"]
        out.append(
            f"| {r['iteration']} | {r['train_world']} | {source} | {cell('pass@1')} | {cell(f'pass^{k}')}"
            f" | {cell('invention')} | {cell('misread')} | {cell('plan_adherence')}"
            f" | {pp(g['gain'])} ({pp(lo)} … {pp(hi)}), MDE {pp(g['mde'])} | {g['outcome']}"
            f" | v{r['champion_version']} | {r['seconds'] / 60:.1f} min ({r['load']['mean']:.1f}) |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None, help="Where to clone (default: a temporary directory).")
    ap.add_argument("--keep", action="store_true", help="Keep the clone (its runs, registry and reports).")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "iterations.json")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-iterations-"))
    repo = work / "repo"
    if repo.exists():
        raise SystemExit(f"{repo} exists: give another --workdir")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    env = env_for(repo)
    rows: list[dict] = []
    try:
        for n in range(1, args.iterations + 1):
            if n == 1:
                command = ["dvc", "repro"]
            else:
                command = ["dvc", "exp", "run", "-S", f"loop.iteration={n}", "-S", "baseline.source=champion"]
            log = work / f"iteration-{n}.log"
            print(f"iteration {n}: {' '.join(command)} (log {log})", flush=True)
            with LoadSampler() as load, log.open("w") as fh:
                started = time.time()
                done = subprocess.run(command, cwd=repo, env=env, stdout=fh, stderr=subprocess.STDOUT)
                seconds = time.time() - started
            if done.returncode != 0:
                raise SystemExit(f"iteration {n} failed (exit {done.returncode}); see {log}")
            row = collect(repo, n, command, seconds, load.samples)
            if rows:
                row["baseline_is_previous_champion"] = row["baseline_digest"] == (
                    rows[-1]["candidate_digest"] if rows[-1]["champion_moved"] else rows[-1].get("champion_digest")
                )
            row["champion_digest"] = (
                row["candidate_digest"]
                if row["champion_moved"]
                else (rows[-1]["champion_digest"] if rows else row["baseline_digest"])
            )
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("iteration", "seconds", "load", "gate", "champion_version")}))
            write(args.results, commit, rows, repo)  # after every iteration: a stopped run keeps what it measured
            print(table(rows), flush=True)
    finally:
        write(args.results, commit, rows, repo)
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows) if rows else "no iteration finished")


def write(path: Path, commit: str, rows: list[dict], repo: Path) -> None:
    report = {
        "commit": commit,
        "iterations": rows,
        "table": table(rows) if rows else "",
        "setup": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "clone": str(repo)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
