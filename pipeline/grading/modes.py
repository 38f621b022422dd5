"""The failure modes the loop targets, by name: what a failed trial is blamed on (`pipeline.grading.failure_modes`
finds them), what synthesis aims tasks at, and what the gate and the report track."""

from __future__ import annotations

from typing import Literal

FailureMode = Literal["plan_adherence", "invention", "misread"]
FAILURE_MODES: tuple[str, ...] = FailureMode.__args__  # type: ignore[attr-defined]
