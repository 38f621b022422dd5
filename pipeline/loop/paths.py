"""Where each stage reads and writes, relative to the repository root (dvc.yaml lists the same paths)."""

from __future__ import annotations

from pathlib import Path

EVAL_TASKS = Path("data/eval/tasks.jsonl")
BASELINE_MODEL = Path("models/baseline")
BASELINE_RUN = Path("runs/baseline")
TARGETS = Path("data/targets.json")
SYNTH_DIR = Path("data/synth")
CURATED_DIR = Path("data/curated")
CANDIDATE_MODEL = Path("models/candidate")
CANDIDATE_RUN = Path("runs/candidate")
GATE = Path("gate/gate.json")
REPORT_DIR = Path("report")
PROMOTION = Path("gate/promotion.json")
