"""Where each stage reads and writes, relative to the repository root (dvc.yaml lists the same paths)."""

from __future__ import annotations

from pathlib import Path

EVAL_TASKS = Path("data/eval/tasks.jsonl")
EMBEDDED_DATA = Path("data/embedded")
EMBEDDED_MODEL = Path("models/embedded")
BASELINE_MODEL = Path("models/baseline")
BASELINE_RUN = Path("runs/baseline")
TARGETS = Path("data/targets.json")
SYNTH_DIR = Path("data/synth")
ANCHORS = SYNTH_DIR / "anchors.jsonl"
CURATED_DIR = Path("data/curated")
CANDIDATE_MODEL = Path("models/candidate")
CANDIDATE_RUN = Path("runs/candidate")
GATE = Path("gate/gate.json")
METRICS_DIR = Path("metrics")  # committed headline metrics for `dvc metrics` (pipeline.loop.metrics_files)
REPORT_DIR = Path("report")
PROMOTION = Path("gate/promotion.json")
TRACKING = Path("gate/tracking.json")
STAGE_TIMES = Path("runs/stage_times")  # git-ignored, hashed by nothing (pipeline.loop.stage_times)
