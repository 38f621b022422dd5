"""Where a run, a target file or a synthesized set came from, recorded with it and checked by every consumer
through one function.

`measure` writes `provenance.json` into its run folder: the domain, the world (name and digest of its tables) and
the sha256 of the task file it measured. `target` copies its run's record into targets.json (with the digests of
the metrics and verdicts it read, under `sources`); `synthesize` writes one into its output folder (the world it
grounded its tasks in, the digests of the tasks and trajectories it wrote and of the targets it read).

Every consumer hands what it was given (world, domain, task file) to `check_provenance` (a folder, or a file the
record beside it describes) or, for a record carried inside a file, `check_record`: `gate`, `report` and `target`
check a run; `synthesize` its targets; `curate`, `rollout` and `train grpo` the pool or task files they read. A
record naming another domain, another world (or the same world's name with other tables), or another version of
the task file (a gold changed since would re-grade old conversations against a new answer: a different pass^k,
with no warning) is refused in one line naming the input, the field and both values. A folder without a record
(made before records existed), or whose record describes other trajectories than the folder holds (files restored
from a cache), is accepted as it is.
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
    made_by: str | None = Field(
        default=None,
        description="The command that made the record's files (None: measure, which records the task file it"
        " read; `synthesize` records the tasks and trajectories it wrote).",
    )
    sources: dict[str, str] | None = Field(
        default=None, description="Other inputs read (file name → sha256): a target file's metrics and verdicts."
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
    return json.dumps(provenance.model_dump(exclude_none=True), indent=2, sort_keys=True) + "\n"


def read_provenance(run_dir: Path) -> Provenance | None:
    path = Path(run_dir) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        return Provenance.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise ProvenanceError(f"{path}: not a valid provenance record: {exc.errors()[0]['msg']}") from None


def check_provenance(
    source: Path, world=None, tasks_path: Path | None = None, domain: str | None = None
) -> Provenance | None:
    """Refuse `source` when its record names another domain or world, or another version of `tasks_path`.

    `source` is a folder holding `provenance.json` (a run, a synthesized set), or a file in such a folder that the
    record describes (its tasks or its trajectories); `world` a loaded World, `domain` a domain's name. Returns the
    record, or None where there is none that describes `source` (nothing is checked then)."""
    recorded = describing(source)
    if recorded is not None:
        check_record(recorded, source, world, tasks_path, domain)
    return recorded


def describing(source: Path) -> Provenance | None:
    """The record of `source` (a folder, or a file of one): None when there is none, when it is stale (the folder's
    trajectories are not the ones it records) or when `source` is a file it does not describe."""
    source = Path(source)
    folder = source if source.is_dir() else source.parent
    recorded = read_provenance(folder)
    if recorded is None:
        return None
    trajectories = folder / TRAJECTORIES
    if not trajectories.is_file() or file_sha256(trajectories) != recorded.trajectories_sha256:
        log.warning("%s: %s describes other trajectories (stale); not checked", folder, PROVENANCE_FILE)
        return None
    if source.is_file() and file_sha256(source) not in (recorded.tasks_sha256, recorded.trajectories_sha256):
        return None  # a file beside the record that it says nothing about
    return recorded


def check_record(
    recorded: Provenance, where: Path | str, world=None, tasks_path: Path | None = None, domain: str | None = None
) -> None:
    """The comparison `check_provenance` makes, for a record already read (one carried inside a file)."""
    given: list[tuple[str, str, str]] = []
    if domain is not None:
        given.append(("domain", recorded.domain, domain))
    if world is not None:
        given += [("domain", recorded.domain, world.domain.name), ("world", recorded.world, world.name)]
        if recorded.world == world.name:
            given.append(("world_digest", recorded.world_digest, world.fingerprint))
    if tasks_path is not None:
        given.append(("tasks_sha256", recorded.tasks_sha256, file_sha256(tasks_path)))
    verb = "measured" if recorded.made_by is None else f"made by {recorded.made_by}"
    for field, was, now in given:
        if was != now:
            against = f"{tasks_path} now has" if field == "tasks_sha256" else "given"
            why = ""
            if field == "tasks_sha256":
                why = " (the task file changed since: measure again)" if recorded.made_by is None else ""
            elif field == "world_digest":
                why = " (a world of that name with other tables)"
            raise ProvenanceError(f"{where}: {verb} with {field} {was[:16]!r}, {against} {now[:16]!r}{why}")
