"""One MLflow parent run per loop iteration, one nested run per stage.

DVC runs each stage in its own process, so the parent run is found again by a key (iteration + parameter
fingerprint, stored as a tag) instead of being held open: every stage of one `dvc repro` lands under the same
parent, and a changed parameter set starts a new, comparable parent rather than mixing two configurations. A stage
run is found again the same way (its name, role, DVC stage hash and parameters, as the tag `agentloop.stage_key`):
logging an iteration again (`promote` rerun) updates its finished stage runs instead of listing each once more.
Everything goes through an explicit `MlflowClient`; no global MLflow state is touched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import InputError
from pipeline.tracking.config import TrackingConfig, git_commit, repo_root
from pipeline.tracking.records import (
    MAX_TAG_CHARS,
    clean_key,
    curve_metrics,
    flatten_params,
    gate_metrics,
    params_digest,
    summary_metrics,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from pipeline.metrics import IterationHeadline, MeasureSummary

log = logging.getLogger(__name__)

_BATCH = 100  # MLflow accepts at most 100 params / tags per log_batch call (1000 metrics)


def _ms(t: float | None) -> int | None:
    return None if t is None else int(t * 1000)


def short_agent(agent: str, limit: int = 40) -> str:
    """A run-name-sized agent label: `hf:runs/train/ckpt-3` → `hf:ckpt-3`.

    >>> short_agent("hf:runs/iter-002/checkpoint")
    'hf:checkpoint'
    >>> short_agent("oracle")
    'oracle'
    """
    kind, sep, rest = agent.partition(":")
    if sep and "/" in rest:
        agent = f"{kind}:{Path(rest).name}"
    return agent if len(agent) <= limit else agent[: limit - 1] + "…"


class RunLogger:
    """Writes metrics, params, tags and artifacts to one MLflow run (optionally mirroring headline records to a
    parent, so the iteration row in `mlflow ui` carries the numbers people compare)."""

    def __init__(self, client: MlflowClient | None, run_id: str, parent: RunLogger | None = None):
        self._client = client
        self.run_id = run_id
        self.parent = parent

    @property
    def client(self) -> MlflowClient:
        """The MLflow client (an iteration tracker has one once entered)."""
        if self._client is None:
            raise RuntimeError("not bound to an MLflow run: enter the iteration tracker first")
        return self._client

    @client.setter
    def client(self, client: MlflowClient) -> None:
        self._client = client

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        from mlflow.entities import RunTag

        items = [RunTag(clean_key(k), str(v)[:MAX_TAG_CHARS]) for k, v in tags.items() if v is not None]
        for i in range(0, len(items), _BATCH):
            self.client.log_batch(self.run_id, tags=items[i : i + _BATCH])

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Nested sections become dotted keys; params are immutable in MLflow, so a key already logged is
        skipped (with a warning when its value differs) rather than failing a stage."""
        from mlflow.entities import Param

        flat = flatten_params(params)
        existing = self.client.get_run(self.run_id).data.params
        changed = sorted(k for k, v in flat.items() if k in existing and existing[k] != v)
        if changed:
            log.warning("run %s already has different values for params %s; keeping the first", self.run_id, changed)
        items = [Param(k, v) for k, v in flat.items() if k not in existing]
        for i in range(0, len(items), _BATCH):
            self.client.log_batch(self.run_id, params=items[i : i + _BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0, *, propagate: bool = False) -> None:
        self._log([(k, float(v), step) for k, v in metrics.items()], propagate)

    def log_series(self, name: str, points: Sequence[tuple[int, float]], *, propagate: bool = False) -> None:
        """One metric over steps (e.g. pass^k over k), so the MLflow chart of that metric draws the curve."""
        self._log([(name, float(v), int(step)) for step, v in points], propagate)

    def _log(self, points: list[tuple[str, float, int]], propagate: bool) -> None:
        from mlflow.entities import Metric

        ts = int(time.time() * 1000)
        items = [Metric(clean_key(k), v, ts, step) for k, v, step in points]
        for i in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[i : i + 1000])
        if propagate and self.parent is not None:
            self.parent._log(points, False)

    def log_summary(self, summary: MeasureSummary, prefix: str = "", *, propagate: bool = False) -> None:
        """A measurement's metrics (under ``prefix``, none by default: a stage run's role is in its name and tags,
        so measure and remeasure runs share keys), plus pass@k / pass^k as step series (`curve/pass_hat_k`,
        step = k)."""
        self.log_metrics(summary_metrics(summary, prefix), propagate=propagate)
        for name, series in curve_metrics(summary).items():
            self.log_series(f"{prefix}curve/{name}", series, propagate=propagate)
        self.set_tags({f"agentloop.agent.{prefix.strip('/') or 'measured'}": summary.agent})

    def log_gate(self, decision: Mapping[str, Any], prefix: str = "gate/", *, propagate: bool = True) -> bool:
        """Gate metrics (mirrored on the parent with ``propagate``) and the decision tags (on the parent too, so
        the iteration row shows the decision)."""
        metrics, tags = gate_metrics(decision, prefix)
        self.log_metrics(metrics, propagate=propagate)
        self.set_tags(tags)
        if self.parent is not None:
            self.parent.set_tags(tags)
        return tags["agentloop.decision"] == "promote"

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        """A file, or a directory's contents, under ``artifact_path`` (a directory keeps its own name by default)."""
        p = Path(path)
        if p.is_dir():
            self.client.log_artifacts(self.run_id, str(p), artifact_path or p.name)
        elif p.is_file():
            self.client.log_artifact(self.run_id, str(p), artifact_path)
        else:
            raise InputError(f"artifact {p} does not exist")

    def artifact_uri(self) -> str:
        return self.client.get_run(self.run_id).info.artifact_uri


class IterationTracker(RunLogger):
    """Context manager for one loop iteration's parent run; ``stage(name)`` opens a nested run inside it."""

    def __init__(
        self,
        config: TrackingConfig | None = None,
        *,
        iteration: int,
        agent: str,
        params: Mapping[str, Any] | None = None,
        stage_hashes: Mapping[str, str] | None = None,
        commit: str | None = None,
        run_key: str | None = None,
        note: str | None = None,
        start_time: float | None = None,
    ):
        super().__init__(client=None, run_id="", parent=None)  # bound to a run in __enter__
        self.config = config or TrackingConfig()
        self.iteration = iteration
        self.agent = agent
        self.params = dict(params or {})
        self.stage_hashes = dict(stage_hashes or {})
        if commit is None:
            commit, dirty = git_commit(repo_root())
        else:
            dirty = False
        self.commit, self.dirty = commit, dirty
        # A rerun of one commit with the same params resumes its run; two runs of different commits (two pushes
        # racing at one iteration) never share one, nor end each other's stage runs as stale.
        self.run_key = run_key or f"iter-{iteration:03d}/{params_digest(self.params)}" + (
            f"/{commit[:12]}" if commit else ""
        )
        self.note = note
        self.start_time = start_time
        self.resumed = False
        self._stack: list[RunLogger] = []

    @property
    def run_name(self) -> str:
        return f"iter-{self.iteration:03d} · {short_agent(self.agent)} · {(self.commit or 'nogit')[:7]}"

    @property
    def active(self) -> RunLogger:
        """The innermost open run: the current stage's, else the parent."""
        return self._stack[-1] if self._stack else self

    def _common_tags(self) -> dict[str, Any]:
        tags: dict[str, Any] = {"agentloop.iteration": self.iteration, "agentloop.git_dirty": str(self.dirty).lower()}
        if self.commit:
            tags |= {"agentloop.git_commit": self.commit, "mlflow.source.git.commit": self.commit}
        return tags

    def _find_parent(self, experiment_id: str) -> str | None:
        if "'" in self.run_key:
            raise InputError(f"run key must not contain quotes: {self.run_key!r}")
        runs = self.client.search_runs(
            [experiment_id],
            filter_string=f"tags.`agentloop.run_key` = '{self.run_key}'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    def __enter__(self) -> IterationTracker:
        self.client = self.config.client()
        experiment_id = self.config.experiment_id(self.client)
        run_id = self._find_parent(experiment_id)
        tags = self._common_tags() | {
            "agentloop.kind": "iteration",
            "agentloop.run_key": self.run_key,
            "agentloop.agent": self.agent,
            "agentloop.params_digest": params_digest(self.params),
        }
        tags |= {f"dvc.stage.{name}": digest for name, digest in self.stage_hashes.items()}
        if self.note:
            tags["mlflow.note.content"] = self.note
        if run_id is None:
            run = self.client.create_run(
                experiment_id,
                run_name=self.run_name,
                tags={k: str(v) for k, v in tags.items()},
                start_time=_ms(self.start_time),
            )
            run_id = run.info.run_id
            log.info("MLflow: new iteration run %s (%s)", self.run_name, run_id)
        else:
            self.resumed = True
            self._end_stale_stages(experiment_id, run_id)
            self.client.update_run(run_id, status="RUNNING")
            log.info("MLflow: resuming iteration run %s (%s)", self.run_name, run_id)
        self.run_id, self.parent = run_id, None
        self.set_tags(tags)
        self.log_params(self.params)
        return self

    def log_headline(self, headline: IterationHeadline) -> None:
        """The iteration's headline on its run: the compared metrics, a name that says what came of it, the
        headline as its description, and the whole record as a tag (pipeline.tracking.headline)."""
        from pipeline.tracking.headline import HEADLINE_TAG, description, headline_metrics, run_name

        self.log_metrics(headline_metrics(headline))
        self.set_tags(
            {
                HEADLINE_TAG: headline.model_dump_json(),
                "mlflow.note.content": description(headline),
                "agentloop.outcome": headline.outcome,
                "agentloop.baseline": headline.baseline,
            }
        )
        self.client.update_run(self.run_id, name=run_name(headline))

    def _end_stale_stages(self, experiment_id: str, run_id: str) -> None:
        """Stage runs of this iteration still RUNNING belong to a process that died (a kill skips `finally`):
        they are ended as KILLED, so the iteration's record shows what happened instead of runs that never end."""
        stale = self.client.search_runs(
            [experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run_id}' and attributes.status = 'RUNNING'",
        )
        for run in stale:
            log.warning(
                "MLflow: ending stage run %s (%s), left RUNNING by a killed process", run.info.run_name, run.info.run_id
            )
            self.client.set_terminated(run.info.run_id, status="KILLED")

    def _find_stage(self, experiment_id: str, key: str) -> str | None:
        """The run of this iteration's stage execution `key` (see `stage`), if one finished before (a failed or
        killed one stays as it ended, the record of what happened; its retry is a run of its own)."""
        runs = self.client.search_runs(
            [experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{self.run_id}' and tags.`agentloop.stage_key` = '{key}'"
            " and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    def __exit__(self, exc_type, exc, tb) -> None:
        self.client.set_terminated(self.run_id, status="FAILED" if exc_type else "FINISHED")

    @contextmanager
    def stage(
        self,
        name: str,
        *,
        role: str | None = None,
        params: Mapping[str, Any] | None = None,
        times: tuple[float, float] | None = None,
        about: str | None = None,
        reused: bool = False,
    ) -> Iterator[RunLogger]:
        """A nested run for one stage execution: a rerun of the stage (a new DVC stage hash, other parameters) is
        a new nested run under the same parent; the same execution logged again reuses its run.

        ``times`` (unix seconds) are the stage's own start and end, when it recorded them: the run then spans
        them, and `stage_seconds/<name>` lands on the parent too (after the headline metrics, alphabetically).
        Without them the run spans the logging itself.
        ``reused`` marks a stage DVC skipped (its outputs, and times, are from an earlier run)."""
        run_name = f"iter-{self.iteration:03d} · {name}" + (f" · {role}" if role else "")
        tags = self._common_tags() | {
            "mlflow.parentRunId": self.run_id,
            "agentloop.kind": "stage",
            "agentloop.stage": name,
            "agentloop.role": role,
            "dvc.stage_hash": self.stage_hashes.get(name),
            "agentloop.timing": "recorded by the stage" if times else "not recorded: the time of logging",
            "agentloop.reused": str(reused).lower(),
            "mlflow.note.content": about,
        }
        key = params_digest({"stage": name, "role": role, "hash": self.stage_hashes.get(name), "params": params or {}})
        tags["agentloop.stage_key"] = key
        experiment_id = self.client.get_run(self.run_id).info.experiment_id
        run_id = found = self._find_stage(experiment_id, key)
        if run_id is None:
            run_id = self.client.create_run(
                experiment_id,
                run_name=run_name,
                tags={k: str(v) for k, v in tags.items() if v is not None},
                start_time=_ms(times[0]) if times else None,
            ).info.run_id
        else:  # the same execution logged again: its run updated, not listed twice
            self.client.update_run(run_id, status="RUNNING")
            log.info("MLflow: stage run %s logged again (%s)", run_name, run_id)
        logger = RunLogger(self.client, run_id, parent=self)
        if found:
            logger.set_tags({k: v for k, v in tags.items() if v is not None})
        if params:
            logger.log_params(params)
        if times:
            logger.log_metrics({"stage_seconds": times[1] - times[0]})
            self.log_metrics({f"stage_seconds/{name}": times[1] - times[0]})
        self._stack.append(logger)
        status = "FAILED"
        try:
            yield logger
            status = "FINISHED"
        finally:
            self._stack.pop()
            self.client.set_terminated(logger.run_id, status=status, end_time=_ms(times[1]) if times else None)
            if status == "FAILED":
                self.set_tags({"agentloop.failed_stage": name})
