"""A repository's sqlite store that was copied or moved keeps its artifacts with it.

MLflow records absolute artifact locations (each experiment's, each run's, each model version's), so a store
created at /a/repo/mlruns.db and copied to /b/repo went on writing artifacts into /a/repo/mlartifacts: promote in
a copy wrote into the original. When the default artifact root of the store (`mlartifacts/` beside the database)
is recorded under another folder than the database's own, every location under that old root is rebased onto
the new one, before anything is written. A location set explicitly (`tracking.artifact_location`) is left alone.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

# (table, column) pairs that hold artifact locations; missing ones (older MLflow schemas) are skipped
COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
    ("logged_models", "artifact_location"),
)


def _local_path(location: str) -> str | None:
    if location.startswith("file://"):
        return location.removeprefix("file://")
    return location if location.startswith("/") else None


def rebase_moved_store(db: Path, artifact_dir: str) -> int:
    """Rebase artifact locations recorded under another `.../<artifact_dir>` onto `db.parent/<artifact_dir>`.

    Returns how many values changed (0 when the store was never moved)."""
    new_root = str(db.resolve().parent / artifact_dir)
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "experiments" not in tables:
            return 0
        old_roots = set()
        for (location,) in conn.execute("SELECT artifact_location FROM experiments"):
            path = _local_path(location or "")
            if path is None:
                continue
            head, sep, _ = path.partition(f"/{artifact_dir}")
            if sep and head + sep != new_root:
                old_roots.add(head + sep)
        if not old_roots:
            return 0
        changed = 0
        for table, column in COLUMNS:
            if table not in tables:
                continue
            if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                continue
            for old in old_roots:
                for prefix in ("file://", ""):
                    before = prefix + old
                    cursor = conn.execute(
                        f"UPDATE {table} SET {column} = ? || substr({column}, ?)"  # noqa: S608 (fixed names)
                        f" WHERE {column} = ? OR {column} LIKE ? ESCAPE '\\'",
                        (prefix + new_root, len(before) + 1, before, _like_prefix(before + "/")),
                    )
                    changed += cursor.rowcount
    log.warning(
        "%s was copied or moved: its artifact locations under %s now point into %s",
        db,
        ", ".join(sorted(old_roots)),
        new_root,
    )
    return changed


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
