"""The `promote` stage: log the whole iteration to MLflow, register the candidate, move `champion` only on a pass.

AGENTLOOP_PROMOTE=off (set by CI on pull requests) records everything but never moves `champion`. Only the
gate's outcome "promote" moves it; "block" and "inconclusive" are recorded (gate_outcome in promotion.json).

Each DVC stage runs in its own process, so tracking happens once, at the end, from the stages' outputs: one
parent run per iteration (keyed by iteration and params, so a rerun with the same params resumes it) and a
nested run per stage carrying that stage's params, metrics and artifacts.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pipeline.loop import paths
from pipeline.loop.agentref import read_agent_spec
from pipeline.loop.params import Params
from pipeline.rollout.resume import atomic_write

log = logging.getLogger(__name__)


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _artifacts(run, *files: Path, artifact_path: str | None = None) -> None:
    for f in files:
        if f.exists():
            run.log_artifact(f, artifact_path)


def track_and_promote(p: Params, lock_path: Path = Path("dvc.lock")) -> dict[str, Any]:
    from pipeline.gate.decision import read_gate
    from pipeline.loop.stages import eval_tasks_file
    from pipeline.metrics.summary import MeasureSummary
    from pipeline.tracking import (
        IterationTracker,
        TrackingConfig,
        champion_version,
        dvc_stage_hashes,
        promote,
        register_checkpoint,
    )

    config = TrackingConfig(experiment=p.promote.experiment, model_name=p.promote.model_name)
    sections = p.model_dump(mode="json")
    candidate = read_agent_spec(paths.CANDIDATE_MODEL)
    decision = read_gate(paths.GATE)
    baseline_summary = MeasureSummary.model_validate_json((paths.BASELINE_RUN / "metrics.json").read_text())
    candidate_summary = MeasureSummary.model_validate_json((paths.CANDIDATE_RUN / "metrics.json").read_text())
    tracker = IterationTracker(
        config, iteration=p.loop.iteration, agent=candidate, params=sections, stage_hashes=dvc_stage_hashes(lock_path)
    )
    with tracker:
        with tracker.stage("world", params=sections["world"]) as run:
            run.log_metrics({"eval_tasks": sum(1 for _ in eval_tasks_file(p).open())})
        with tracker.stage("baseline", role="baseline", params=sections["baseline"]) as run:
            _artifacts(run, paths.BASELINE_MODEL / "agent.json")
            run.set_tags({"agentloop.agent": read_agent_spec(paths.BASELINE_MODEL)})
        with tracker.stage("measure", role="baseline", params=sections["measure"]) as run:
            run.log_summary(baseline_summary, prefix="baseline/")
            _artifacts(run, paths.BASELINE_RUN / "metrics.json", paths.BASELINE_RUN / "per_task.csv")
        with tracker.stage("target", params=sections["target"]) as run:
            _artifacts(run, paths.TARGETS)
        with tracker.stage("synthesize", params=sections["synthesize"]) as run:
            manifest = _json(paths.SYNTH_DIR / "manifest.json")
            run.log_metrics({"tasks": float(manifest.get("tasks", 0))})
            _artifacts(run, paths.SYNTH_DIR / "manifest.json")
        with tracker.stage("curate", params=sections["curate"]) as run:
            _artifacts(run, paths.CURATED_DIR / "manifest.json")
        with tracker.stage("train", role="candidate", params=sections["train"]) as run:
            version = register_checkpoint(tracker, paths.CANDIDATE_MODEL)
        with tracker.stage("remeasure", role="candidate", params=sections["measure"]) as run:
            run.log_summary(candidate_summary, prefix="candidate/")
            _artifacts(run, paths.CANDIDATE_RUN / "metrics.json", paths.CANDIDATE_RUN / "per_task.csv")
        with tracker.stage("gate", params=sections["gate"]) as run:
            run.log_gate(decision.model_dump(mode="json"))
            _artifacts(run, paths.GATE)
        with tracker.stage("report", params=sections["report"]) as run:
            _artifacts(run, paths.REPORT_DIR / "report.html")
            if (paths.REPORT_DIR / "plots").exists():
                run.log_artifact(paths.REPORT_DIR / "plots", "plots")
        allowed = os.environ.get("AGENTLOOP_PROMOTE", "on") != "off"
        with tracker.stage("promote", params=sections["promote"]) as run:
            if decision.promote and allowed:
                promote(version, decision.model_dump(mode="json"), tracker=tracker)
            # What the registry says now, not what this process meant to do: a rerun after a kill that landed
            # after the alias moved writes the same record as a run that was never killed.
            champion = champion_version(config)
            moved = decision.promote and allowed and champion == version
            run.set_tags({"agentloop.champion_moved": str(moved).lower()})
        record = {
            "iteration": p.loop.iteration,
            "candidate": candidate,
            "model_version": version,
            "champion_version": champion,
            "promoted": decision.promote,
            "gate_outcome": decision.outcome,  # promote, block or inconclusive (never moves the champion)
            "champion_moved": moved,
            "promotion_allowed": allowed,
            "reasons": decision.reasons,
        }
        where = {"run_id": tracker.run_id, "tracking_uri": config.tracking_uri}
    paths.PROMOTION.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(paths.PROMOTION, json.dumps(record, indent=2, sort_keys=True) + "\n")
    # The store's own ids differ on every machine: kept out of the tracked record, so a rerun leaves git clean.
    atomic_write(paths.TRACKING, json.dumps(where, indent=2, sort_keys=True) + "\n")
    return {**record, **where}
