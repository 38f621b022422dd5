"""What `promote` gathers for the stage runs besides metrics: the stages' own times, what each stage is, and
the loop's data as MLflow datasets.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.loop import paths
from pipeline.loop.stage_times import StageTime, read_stage_time

if TYPE_CHECKING:
    from mlflow.data.pandas_dataset import PandasDataset

log = logging.getLogger(__name__)

# Stages of one `dvc repro` follow each other within seconds; an earlier record is from a stage DVC skipped.
REPRO_GAP_S = 300.0
STAGES_DIR = Path("stages")


def about(stage: str, stages_dir: Path = STAGES_DIR) -> str | None:
    """What the stage does, in its script's own words (the docstring of `stages/<stage>.py`, prefix dropped).

    >>> about("no-such-stage") is None
    True
    """
    path = stages_dir / f"{stage}.py"
    if not path.exists():
        return None
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    line = doc.strip().splitlines()[0] if doc.strip() else ""
    return line.split(":", 1)[1].strip() if line.startswith("DVC stage") and ":" in line else line or None


@dataclass
class StageTimes:
    """Each stage's last record, and which of them ran in the same `dvc repro` as the stage ending at ``until``."""

    records: dict[str, StageTime]
    this_repro: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, stages: list[str], until: float, root: Path | None = None) -> StageTimes:
        records = {s: r for s in stages if (r := read_stage_time(s, root)) is not None}
        chain, start = set(), until
        for name, rec in sorted(records.items(), key=lambda kv: kv[1].end, reverse=True):
            if rec.end > until:
                continue
            if rec.end < start - REPRO_GAP_S:
                break
            chain.add(name)
            start = min(start, rec.start)
        return cls(records, chain)

    def times(self, stage: str) -> tuple[float, float] | None:
        rec = self.records.get(stage)
        return (rec.start, rec.end) if rec else None

    def reused(self, stage: str) -> bool:
        """Recorded, but not in this repro: DVC skipped it and kept the outputs of its earlier run."""
        return stage in self.records and stage not in self.this_repro

    def start(self) -> float | None:
        """When this repro's first stage began; None when no stage of it left a record."""
        return min((self.records[s].start for s in self.this_repro), default=None)


@dataclass
class LoopData:
    """The loop's datasets, each None where its file is missing or empty."""

    eval: PandasDataset | None
    pool: PandasDataset | None
    curated: PandasDataset | None
    anchors: PandasDataset | None

    @classmethod
    def read(cls, eval_tasks: Path = paths.EVAL_TASKS) -> LoopData:
        from pipeline.tracking import datasets as d

        def get(spec: d.DataSpec) -> PandasDataset | None:
            if not all(p.exists() for p in spec.files()):
                log.info("dataset %r: %s missing, not logged", spec.name, spec.files())
                return None
            ds = d.build_dataset(spec)
            return ds if ds.profile and ds.profile.get("num_rows") else None

        return cls(
            eval=get(d.eval_tasks(eval_tasks)),
            pool=get(d.synth_pool(paths.SYNTH_DIR / "tasks.jsonl", paths.SYNTH_DIR / "trajectories.jsonl")),
            curated=get(d.curated(paths.CURATED_DIR / "selected.jsonl")),
            anchors=get(d.anchors(paths.ANCHORS)),
        )

    def training(self, method: str, use_curated: bool) -> list[PandasDataset]:
        """What `train` learns from (as `pipeline.loop.stages.train_candidate` reads it); none for an agent spec."""
        if method != "sft":
            return []
        return [ds for ds in (self.curated if use_curated else None, self.pool, self.anchors) if ds is not None]

    def templates(self) -> dict[str, str | None]:
        """Held-out task id → template, for the trace tags."""
        if self.eval is None:
            return {}
        return dict(zip(self.eval.df["task_id"], self.eval.df["template"], strict=True))
