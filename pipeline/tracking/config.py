"""Where the loop's MLflow records go: one sqlite file in the repository unless MLFLOW_TRACKING_URI says otherwise.

The default keeps a fresh clone self-contained (no server to start, `mlflow ui --backend-store-uri
sqlite:///mlruns.db` shows everything), while a team points the same code at a shared server through the
standard environment variable.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from pipeline.tracking.bounds import bound_requests

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger(__name__)

# The loop runs offline and inside DVC logs: no usage pings, no progress bars. Users can still override both.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
bound_requests()  # bounded HTTP retries and timeouts (pipeline.tracking.bounds)

DB_NAME = "mlruns.db"
ARTIFACT_DIR = "mlartifacts"


def repo_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` (default: cwd) holding `.git`; ``start`` itself if none does."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return here


def git_commit(root: Path | None = None) -> tuple[str | None, bool]:
    """(HEAD commit, working tree dirty) of the repository at ``root``; (None, False) outside a git repository."""
    root = root or repo_root()
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, False
    return sha or None, bool(status.strip())


def _default_uri() -> str:
    env = os.environ.get("MLFLOW_TRACKING_URI")
    return env if env else f"sqlite:///{repo_root() / DB_NAME}"


class TrackingConfig(BaseModel):
    """Which MLflow store, experiment and registered model the loop writes to."""

    model_config = ConfigDict(extra="forbid")

    tracking_uri: str = Field(
        default_factory=_default_uri,
        description="MLflow tracking (and registry) URI; default MLFLOW_TRACKING_URI, else sqlite:///<repo>/mlruns.db.",
    )
    experiment: str = Field(default="agentloop", description="MLflow experiment holding one parent run per iteration.")
    model_name: str = Field(
        default="agentloop-agent", description="Registered model holding every candidate checkpoint."
    )
    artifact_location: str | None = Field(
        default=None,
        description="Artifact root for a newly created experiment; default: `mlartifacts/` beside a sqlite file, "
        "the server's choice otherwise.",
    )

    def experiment_artifact_location(self) -> str | None:
        """Keep artifacts of a sqlite store next to the database rather than in whatever cwd a stage runs in."""
        if self.artifact_location is not None:
            return self.artifact_location
        prefix = "sqlite:///"
        if self.tracking_uri.startswith(prefix):
            db = Path(self.tracking_uri[len(prefix) :])
            return str(db.resolve().parent / ARTIFACT_DIR)
        return None

    def rebase_if_moved(self) -> None:
        """Point the artifact locations of a moved sqlite store at `mlartifacts/` beside it (unless the
        artifact location is set explicitly)."""
        prefix = "sqlite:///"
        if self.artifact_location is not None or not self.tracking_uri.startswith(prefix):
            return
        db = Path(self.tracking_uri[len(prefix) :])
        if db.is_file():
            from pipeline.tracking.relocate import rebase_moved_store

            rebase_moved_store(db, ARTIFACT_DIR)

    def client(self) -> MlflowClient:
        from mlflow import MlflowClient

        return MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.tracking_uri)

    def experiment_id(self, client: MlflowClient | None = None) -> str:
        """The experiment's id, creating it on first use (a store copied or moved along with its repository is
        first rebased onto its new place: `pipeline.tracking.relocate`)."""
        self.rebase_if_moved()
        client = client or self.client()
        exp = client.get_experiment_by_name(self.experiment)
        if exp is not None:
            return exp.experiment_id
        from mlflow.exceptions import MlflowException

        log.info("creating MLflow experiment %r at %s", self.experiment, self.tracking_uri)
        try:
            return client.create_experiment(self.experiment, artifact_location=self.experiment_artifact_location())
        except MlflowException as exc:  # another run created it first (two first runs on an empty store)
            if (
                exc.error_code != "RESOURCE_ALREADY_EXISTS"
                or (exp := client.get_experiment_by_name(self.experiment)) is None
            ):
                raise
            return exp.experiment_id
