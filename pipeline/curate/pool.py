"""Reading a pool of trajectories: measure run directories, rollout files, or imported logs.

A pool entry is a file of trajectories (JSON Lines in the trajectory schema) or a directory holding
`trajectories.jsonl`. Verdicts recorded beside them are paired by line: `verdicts.jsonl` in a run
directory (lines {"verdict": ..., "analysis": ...}) or `<name>.verdicts.jsonl` next to a rollout file
(plain verdict lines). A line that does not parse is not an error of the whole pool: it becomes a
rejection with its file and line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pipeline.errors import InputError
from pipeline.rollout import Trajectory


@dataclass
class PoolItem:
    source: str  # file:line
    trajectory: Trajectory
    recorded: dict | None = None  # the verdict recorded with it, if any


@dataclass
class Rejection:
    """A pool entry curation set aside: where it came from (file:line), why (a short code) and the detail.

    A record for the curation report, not an exception: one bad line never stops the pool."""

    source: str
    reason: str
    detail: str


def _verdicts_for(path: Path) -> Path | None:
    for cand in (
        path.with_name("verdicts.jsonl") if path.name == "trajectories.jsonl" else None,
        path.with_suffix(".verdicts.jsonl"),
    ):
        if cand is not None and cand.exists():
            return cand
    return None


def _files(entries: list[Path]) -> list[Path]:
    out = []
    for entry in entries:
        if entry.is_dir():
            f = entry / "trajectories.jsonl"
            if not f.exists():
                raise InputError(f"{entry}: a pool directory must hold trajectories.jsonl")
            out.append(f)
        elif entry.exists():
            out.append(entry)
        else:
            raise InputError(f"{entry}: no such pool file or directory")
    return out


def read_pool(entries: list[Path]) -> tuple[list[PoolItem], list[Rejection]]:
    items: list[PoolItem] = []
    errors: list[Rejection] = []
    for path in _files(entries):
        vpath = _verdicts_for(path)
        verdicts = vpath.read_text().splitlines() if vpath else []
        for i, line in enumerate(path.read_text().splitlines()):
            if not line.strip():
                continue
            source = f"{path}:{i + 1}"
            try:
                traj = Trajectory.model_validate_json(line)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                errors.append(Rejection(source, "unparseable", f"field {where}: {err['msg']}"))
                continue
            recorded = None
            if i < len(verdicts) and verdicts[i].strip():
                try:
                    data = json.loads(verdicts[i])
                    recorded = data.get("verdict", data) if isinstance(data, dict) else None
                except json.JSONDecodeError:
                    errors.append(Rejection(source, "unparseable", f"{vpath}:{i + 1}: verdict is not JSON"))
                    continue
            items.append(PoolItem(source, traj, recorded))
    return items, errors
