"""A throwaway copy of this repository (working tree, as git sees it) with a reduced, fast configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# Scripted agents stand in for the model so the whole loop runs in seconds; the embedded build is a toy one.
TINY_EMBEDDED = {
    "corpus_tasks": 6,
    "tokenizer_conversations": 6,
    "tokenizer": {"vocab_size": 400, "model_max_length": 8192},
    "model": {"hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 8192},
    "copy_circuit": False,
    "loop": {"max_steps": 2, "batch_tokens": 4096},
    "threads": 1,
}
REDUCED = {
    "embedded": TINY_EMBEDDED,
    "world": {"eval_world": "gen-101-20x80x160", "train_world": "gen-7-20x80x160", "eval_tasks": 24},
    "baseline": {"source": "agent:flawed:plan_adherence=0.4,invention=0.4,misread=0.4"},
    "train": {"method": "agent:oracle"},
    "measure": {"trials": 2, "resamples": 200, "executor": "serial"},
    "gate": {"k": 2, "resamples": 500},
    "target": {"budget": 16},
    "curate": {"probes": 2, "executor": "serial"},
}


def loop_env(repo: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(repo),
        DVC_NO_ANALYTICS="1",
        MLFLOW_DISABLE_TELEMETRY="true",
        AGENTLOOP_LOG="WARNING",
        HF_HUB_OFFLINE="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def copy_repo(dst: Path) -> Path:
    """Copy tracked and untracked-but-not-ignored files into a fresh git repository at `dst`."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    env = loop_env(dst)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=dst, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "copy"], cwd=dst, check=True, env=env)
    return dst


def set_params(repo: Path, updates: dict) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for section, values in updates.items():
        params.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def dvc(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["dvc", *args], cwd=repo, env=loop_env(repo), capture_output=True, text=True, check=check)
