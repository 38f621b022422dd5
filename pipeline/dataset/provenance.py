"""Where a run came from, recorded beside it and checked by every consumer through one function.

`measure` writes `provenance.json` into its run folder: the domain, the world (name and digest of its tables) and
the sha256 of the task file it measured. `gate` and `report` hand what they were given (world, task file) to
`check_provenance`, which refuses a run measured on another world or another version of the task file (a gold
changed since would re-grade old conversations against a new answer: a different pass^k, with no warning) in one
line naming the run, the field and both values. A run folder without the record (measured before it existed), or
whose record describes other trajectories than the folder holds (files restored from a cache), is accepted as it
is.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import InputError

PROVENANCE_FILE = "provenance.json"
TRAJECTORIES = "trajectories.jsonl"
log = logging.getLogger(__name__)


class ProvenanceError(InputError, ValueError):
    """Inputs that do not belong together."""


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: str = Field(description="The domain's name.")
    world: str = Field(description="The world's name.")
    world_digest: str = Field(description="sha256 of the world's tables (World.fingerprint).")
    tasks_sha256: str = Field(description="sha256 of the task file's bytes.")
    trajectories_sha256: str = Field(
        description="sha256 of the run's trajectories.jsonl: a record beside other trajectories (a folder whose"
        " files were restored from a cache without it) is stale and ignored."
    )

    @classmethod
    def of(cls, world, tasks_path: Path, run_dir: Path) -> Provenance:
        return cls(
            domain=world.domain.name,
            world=world.name,
            world_digest=world.fingerprint,
            tasks_sha256=file_sha256(tasks_path),
            trajectories_sha256=file_sha256(Path(run_dir) / TRAJECTORIES),
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def provenance_text(provenance: Provenance) -> str:
    return json.dumps(provenance.model_dump(), indent=2, sort_keys=True) + "\n"


def read_provenance(run_dir: Path) -> Provenance | None:
    path = Path(run_dir) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        return Provenance.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise ProvenanceError(f"{path}: not a valid provenance record: {exc.errors()[0]['msg']}") from None


def check_provenance(run_dir: Path, world=None, tasks_path: Path | None = None) -> Provenance | None:
    """Refuse `run_dir` when its record names another domain or world, or another version of `tasks_path`."""
    recorded = read_provenance(run_dir)
    if recorded is None:
        return None
    trajectories = Path(run_dir) / TRAJECTORIES
    if not trajectories.is_file() or file_sha256(trajectories) != recorded.trajectories_sha256:
        log.warning("%s: %s describes other trajectories (stale); not checked", run_dir, PROVENANCE_FILE)
        return None
    given: list[tuple[str, str, str]] = []
    if world is not None:
        given += [("domain", recorded.domain, world.domain.name), ("world", recorded.world, world.name)]
        if recorded.world == world.name:
            given.append(("world_digest", recorded.world_digest, world.fingerprint))
    if tasks_path is not None:
        given.append(("tasks_sha256", recorded.tasks_sha256, file_sha256(tasks_path)))
    for field, was, now in given:
        if was != now:
            against = f"{tasks_path} now has" if field == "tasks_sha256" else "given"
            raise ProvenanceError(
                f"{run_dir}: measured with {field} {was[:16]!r}, {against} {now[:16]!r}"
                f"{' (the task file changed since: measure again)' if field == 'tasks_sha256' else ''}"
            )
    return recorded
