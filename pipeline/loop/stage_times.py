"""When each stage last ran: one small JSON record per stage, kept out of everything DVC hashes.

DVC runs each stage in its own process and the tracking happens once, in `promote`; these records let the
stage runs in MLflow carry the stage's real start, end and duration. They live under the git-ignored `runs/`
and are no stage's output or dependency, so wall-clock figures never change a hash nor make `dvc repro` dirty git.
A stage DVC skipped keeps the record of the run that made its outputs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.loop import paths
from pipeline.outputs import atomic_write

log = logging.getLogger(__name__)


class StageTime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    start: float = Field(description="Unix time the stage function began.")
    end: float = Field(description="Unix time it returned or raised.")
    status: Literal["FINISHED", "FAILED"] = "FINISHED"

    @property
    def duration_s(self) -> float:
        return self.end - self.start


def record_path(stage: str, root: Path | None = None) -> Path:
    return (root or paths.STAGE_TIMES) / f"{stage}.json"


def write_stage_time(record: StageTime, root: Path | None = None) -> Path:
    """Atomic (pipeline.outputs.atomic_write), so a reader never sees half a record."""
    path = record_path(record.stage, root)
    atomic_write(path, record.model_dump_json() + "\n")
    return path


def read_stage_time(stage: str, root: Path | None = None) -> StageTime | None:
    """The stage's last record; None when it never ran here (a fresh clone) or the record is unreadable."""
    path = record_path(stage, root)
    if not path.exists():
        return None
    try:
        return StageTime.model_validate_json(path.read_text())
    except ValidationError as exc:
        log.warning("%s: ignoring an unreadable stage time record: %s", path, exc.errors()[0]["msg"])
        return None
