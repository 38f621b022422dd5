"""Fingerprints of the DVC stages that produced an iteration, read from `dvc.lock`.

DVC records no single hash per stage; it records the command, the hash of every dependency and output and the
value of every parameter. A digest of that entry changes exactly when the stage's inputs, outputs or command do,
so it names "which version of this stage ran" in a tag short enough to compare by eye in `mlflow ui`.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pipeline.digest import sha256_json
from pipeline.errors import TrackingError

DIGEST_CHARS = 12


class DvcLockError(TrackingError, ValueError):
    """dvc.lock is missing its `stages` table or is not a DVC lock file."""


def stage_digest(entry: dict) -> str:
    """Short sha256 of one stage's lock entry (order-independent).

    >>> stage_digest({"cmd": "python x.py", "outs": [{"path": "o", "md5": "ab"}]})
    'ae614c624b62'
    """
    return sha256_json(entry, ensure_ascii=True, default=str)[:DIGEST_CHARS]


def dvc_stage_hashes(lock_path: str | Path = "dvc.lock") -> dict[str, str]:
    """Stage name → digest of its dvc.lock entry; {} when the pipeline has not run yet (no lock file)."""
    path = Path(lock_path)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        raise DvcLockError(f"{path}: no `stages` mapping (is this a DVC 2+ lock file?)")
    return {name: stage_digest(entry) for name, entry in sorted(stages.items())}
