"""The loop's data as MLflow datasets: the held-out tasks, the synthesized pool, the curated selection, the anchors.

Each is a JSON-lines file (or two); its MLflow dataset holds one row per record with the columns a reader
filters on, plus each record's sha256, so the schema and size shown in `mlflow ui` are the data's own. The
digest is of the file bytes (not a sample of rows), so the same held-out set is the same dataset in every
iteration, and a changed pool is a new one. Runs link to them with a context saying how they used them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import InputError

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.data.pandas_dataset import PandasDataset

log = logging.getLogger(__name__)

DIGEST_CHARS = 12


class DatasetFileError(InputError, ValueError):
    """A data file that cannot be read as a dataset; the message names the file and line."""


def _task_row(d: dict[str, Any]) -> dict[str, Any]:
    prov = d.get("provenance") or {}
    return {
        "task_id": d["id"],
        "world": d.get("world"),
        "template": prov.get("template"),
        "source": prov.get("source"),
        "failure_mode": prov.get("failure_mode"),
        "depth": int(prov.get("depth") or 0),
        "parent": prov.get("parent"),
        "dials": json.dumps(prov.get("dials") or {}, sort_keys=True),
        "gold_actions": len(d.get("gold_actions") or []),
        "checks": len(d.get("checks") or []),
    }


def _trajectory_row(d: dict[str, Any]) -> dict[str, Any]:
    msgs = d.get("messages") or []
    return {
        "task_id": d["task_id"],
        "trial": int(d.get("trial") or 0),
        "agent": d.get("agent"),
        "messages": len(msgs),
        "tool_calls": sum(len(m.get("tool_calls") or []) for m in msgs),
        "termination": d.get("termination"),
    }


def _selected_row(d: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_id": d["task_id"],
        "role": d.get("role"),
        "probes": int(d.get("probes") or 0),
        "passes": int(d.get("passes") or 0),
        "band": d.get("band"),
        "messages": len((d.get("trajectory") or {}).get("messages") or []),
    }


@dataclass(frozen=True)
class DataSpec:
    """A dataset: its name in MLflow, the file its rows come from, other files its digest covers, the row maker."""

    name: str
    rows_from: Path
    row: Callable[[dict[str, Any]], dict[str, Any]]
    also: tuple[Path, ...] = ()

    def files(self) -> list[Path]:
        return [self.rows_from, *self.also]


def eval_tasks(path: Path) -> DataSpec:
    return DataSpec("held-out tasks", path, _task_row)


def synth_pool(tasks: Path, trajectories: Path) -> DataSpec:
    return DataSpec("synthesized pool", tasks, _task_row, (trajectories,))


def curated(selected: Path) -> DataSpec:
    return DataSpec("curated selection", selected, _selected_row)


def anchors(path: Path) -> DataSpec:
    return DataSpec("anchors", path, _trajectory_row)


def file_digest(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:DIGEST_CHARS]


def build_dataset(spec: DataSpec) -> PandasDataset:
    """One row per non-empty line of ``spec.rows_from`` (its sha256 beside it); errors name file and line."""
    import pandas as pd
    from mlflow.data.pandas_dataset import from_pandas

    for p in spec.files():
        if not p.exists():
            raise DatasetFileError(f"{p}: file not found (dataset {spec.name!r})")
    rows = []
    with spec.rows_from.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = spec.row(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise DatasetFileError(f"{spec.rows_from}:{lineno}: not a record of {spec.name!r} ({exc!r})") from None
            row["sha256"] = hashlib.sha256(line.rstrip("\n").encode()).hexdigest()
            rows.append(row)
    df = pd.DataFrame(rows)
    with warnings.catch_warnings():  # also MLflow's hint on integer columns and missing values: none are missing
        warnings.simplefilter("ignore", UserWarning)
        return from_pandas(
            df,
            source=str(spec.rows_from),  # a local file source (the warning that it could be read two ways is muted)
            name=spec.name,
            digest=file_digest(spec.files()),
        )


def log_datasets(client: MlflowClient, run_id: str, used: Sequence[tuple[PandasDataset, str]]) -> None:
    """Link datasets to a run; the context (`evaluation`, `training`, `output`, …) says how the run used each."""
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    inputs = [
        DatasetInput(dataset=ds._to_mlflow_entity(), tags=[InputTag(key=MLFLOW_DATASET_CONTEXT, value=context)])
        for ds, context in used
    ]
    if not inputs:
        return
    from mlflow.exceptions import MlflowException

    for attempt in range(3):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except MlflowException as exc:
            # Two runs logging one new dataset at once (racing retrain runs): the server checks, then inserts, and
            # the later insert violates the dataset's key; on a retry the dataset exists and is only linked.
            if "unique constraint" not in str(exc).lower() or attempt == 2:
                raise
            log.info("dataset logged by another run meanwhile; linking it (%s)", str(exc).splitlines()[0][:120])


def dataset_tags(datasets: Sequence[PandasDataset], prefix: str = "agentloop.data") -> dict[str, str]:
    """`agentloop.data.<name>` = digest and `… .rows`, for model versions (which hold tags, not inputs).

    >>> class D: name, digest, profile = "curated selection", "abc123", {"num_rows": 40}
    >>> dataset_tags([D()])
    {'agentloop.data.curated_selection': 'abc123', 'agentloop.data.curated_selection.rows': '40'}
    """
    out: dict[str, str] = {}
    for ds in datasets:
        key = f"{prefix}.{ds.name.replace(' ', '_')}"
        out[key] = ds.digest
        out[f"{key}.rows"] = str((ds.profile or {}).get("num_rows", ""))
    return out
