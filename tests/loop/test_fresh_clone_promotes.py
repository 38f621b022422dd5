"""A fresh clone's `dvc repro` promotes into its own MLflow store, so the README's next iteration finds a champion.

Were `gate/promotion.json` kept in git, a clone whose run reproduces every input byte for byte would find promote
up to date, skip it, and leave its empty registry without a champion: `baseline.source=champion` then fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_promotion_record_is_not_kept_in_git():
    tracked = subprocess.run(
        ["git", "ls-files", "gate/promotion.json"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert tracked.strip() == "", "gate/promotion.json is tracked: a fresh clone's dvc repro would skip promote"


def test_promote_stage_output_is_cached_not_committed():
    outs = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["promote"]["outs"]
    (out,) = [o for o in outs if (o if isinstance(o, str) else next(iter(o))) == "gate/promotion.json"]
    assert isinstance(out, str) or out["gate/promotion.json"].get("cache", True), out
