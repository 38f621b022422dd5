"""The trial journal: every finished (task, trial) is on disk before the next one is counted, so a run that is
killed (SIGKILL, OOM, a lost machine) and started again loses no trial and runs none twice.

The journal is append-only JSON Lines: a header naming the run's fingerprint, then one line per finished
trial (trajectory + verdict), each written with a single `write` and fsynced. On reopening, a torn last
line (the kill landed mid-write) is cut off, duplicates are dropped (the first finished record of a trial
wins), and trials lost to infrastructure errors are offered again (the endpoint may be back). A journal
written by a different run (another agent, task file, seed...) is refused rather than mixed in.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from pipeline.dataset import Task
from pipeline.errors import InputError
from pipeline.grading import Verdict
from pipeline.outputs import writing
from pipeline.rollout import Trajectory
from pipeline.trials.trial import TrialResult

log = logging.getLogger(__name__)
JOURNAL_VERSION = 1
Key = tuple[str, int]


class ResumeMismatchError(InputError, ValueError):
    """The run directory holds the journal of a different run."""


class TrialJournal:
    """Append-only, fsynced record of finished trials in one run directory."""

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path, self.fingerprint = Path(path), fingerprint
        self._fh: BinaryIO | None = None

    def load(self, tasks: Sequence[Task]) -> tuple[dict[Key, TrialResult], dict[Key, TrialResult]]:
        """(finished trials, trials whose latest record is an infrastructure error), by (task id, trial).

        Also cuts a torn last line, so appends start on a line boundary.
        """
        by_id = {t.id: t for t in tasks}
        done: dict[Key, TrialResult] = {}
        broken: dict[Key, TrialResult] = {}
        if not self.path.exists():
            return done, broken
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            log.warning("%s: dropping a torn last record (%d bytes)", self.path, len(data) - end)
            with writing(self.path, "the journal is as it was; free space and run again"), self.path.open("r+b") as fh:
                fh.truncate(end)
                os.fsync(fh.fileno())
        lines = data[:end].splitlines()
        if not lines:
            return done, broken
        header = _record(lines[0])
        if header is None or "journal" not in header:
            raise ResumeMismatchError(
                f"{self.path}:1: not a trial journal header (expected a JSON object with 'journal' and"
                f" 'fingerprint'); use a new output directory, or delete {self.path} to start over"
            )
        if header.get("fingerprint") != self.fingerprint:
            raise ResumeMismatchError(
                f"{self.path}: this run directory holds another run (fingerprint {header.get('fingerprint')},"
                f" this run {self.fingerprint}); use a new output directory, or delete {self.path} to start over"
            )
        duplicates = 0
        for n, line in enumerate(lines[1:], start=2):
            entry = _record(line)
            try:
                if entry is None:
                    raise ValueError("not a JSON object")
                key = (entry["task_id"], int(entry["trial"]))
                result = TrialResult(
                    task=by_id[key[0]],
                    trial=key[1],
                    trajectory=Trajectory.model_validate(entry["trajectory"]),
                    verdict=Verdict.model_validate(entry["verdict"]),
                    attempts=int(entry.get("attempts", 1)),
                    node=entry.get("node"),
                    node_ip=entry.get("node_ip"),
                )
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s:%d: unreadable record skipped: %s", self.path, n, exc)
                continue
            if key in done:
                duplicates += 1
            elif result.verdict.infra_error:
                broken[key] = result
            else:
                done[key] = result
                broken.pop(key, None)
        if duplicates:
            log.warning("%s: %d duplicate records ignored", self.path, duplicates)
        return done, broken

    def append(self, result: TrialResult) -> None:
        """Write one finished trial and fsync it before returning. An OSError (a full disk) becomes a WriteError:
        the run stops, and the journal keeps every trial finished before it (a torn last line is cut on resume)."""
        with writing(self.path, "the journal keeps the trials finished so far; free space and run again to resume"):
            self._append(result)

    def _append(self, result: TrialResult) -> None:
        if self._fh is None:
            new = not self.path.exists() or self.path.stat().st_size == 0
            self._fh = self.path.open("ab")
            if new:
                self._write({"journal": JOURNAL_VERSION, "fingerprint": self.fingerprint})
        self._write(
            {
                "task_id": result.task.id,
                "trial": result.trial,
                "attempts": result.attempts,
                "node": result.node,
                "node_ip": result.node_ip,
                "trajectory": result.trajectory.model_dump(mode="json"),
                "verdict": result.verdict.model_dump(mode="json"),
            }
        )

    def _write(self, obj: dict) -> None:
        """Keys in the order the objects hold them (not sorted): a resumed trial reads back as it was, so the
        run's files written from it are byte-identical to an uninterrupted run's."""
        assert self._fh is not None
        self._fh.write((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TrialJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _record(line: bytes) -> dict | None:
    """One journal line as a JSON object, or None when it is not one (bad UTF-8, bad JSON, too deeply nested,
    an array or a scalar)."""
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
