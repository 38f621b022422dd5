"""The `promote` stage: log the whole iteration to MLflow, register the candidate, move `champion` only on a pass.

AGENTLOOP_PROMOTE=off (set by CI on pull requests) records everything but never moves `champion`. Only the
gate's outcome "promote" moves it; "block" and "inconclusive" are recorded (gate_outcome in promotion.json).
The move is compare-and-set: an iteration whose baseline was the champion promotes only while `champion` still
points at that version; when another run moved it meanwhile, the stage stops with PromotionOvertaken (the
candidate stays registered, `champion` untouched) and a rerun gates against the new champion.

Each DVC stage runs in its own process, so tracking happens once, at the end, from the stages' outputs: one
parent run per iteration (keyed by iteration, params and commit, so a rerun with the same params resumes it; named,
described and measured by the iteration's headline, pipeline.tracking.headline) and a nested run per stage
carrying that stage's params, metrics, artifacts, datasets and its own recorded start and end
(pipeline.loop.stage_times). The measurements' trials become traces here, read back from their files, so
the measure itself never waits on the store (`promote.traces: false` leaves them out).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.loop import paths
from pipeline.loop.agentref import AGENT_FILE, agent_label, packaged, read_agent_spec
from pipeline.loop.history import current_headline, tracking_config
from pipeline.loop.next_iteration import EXPECTED_CHAMPION_ENV
from pipeline.loop.params import Params
from pipeline.loop.track_inputs import LoopData, StageTimes, about
from pipeline.outputs import atomic_write

log = logging.getLogger(__name__)


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _artifacts(run, *files: Path, artifact_path: str | None = None) -> None:
    for f in files:
        if f.exists():
            run.log_artifact(f, artifact_path)


TRACKED_STAGES = [
    "eval_tasks",
    "baseline",
    "measure",
    "target",
    "synthesize",
    "curate",
    "train",
    "remeasure",
    "gate",
    "report",
]


def _traces(p: Params, tracker, run, run_dir: Path, role: str, data: LoopData, times) -> None:
    """The measurement's trials as traces under its stage run (off the hot path: read back from its files)."""
    from pipeline.tracking import log_trial_traces

    if not p.promote.traces:
        run.set_tags({"agentloop.traces": "off (promote.traces: false)"})
        return
    got = log_trial_traces(
        tracker.config.tracking_uri,
        tracker.client.get_run(run.run_id).info.experiment_id,
        run.run_id,
        run_dir,
        role=role,
        iteration=p.loop.iteration,
        run_key=tracker.run_key,
        templates=data.templates(),
        base_s=times[0] if times else None,
    )
    run.log_metrics({"traces": got["traces"], "trace_log_seconds": got["seconds"]})
    run.set_tags({"agentloop.traces": f"{got['traces']} traces (batch {got['batch']})"})


def track_and_promote(p: Params, lock_path: Path = Path("dvc.lock")) -> dict[str, Any]:
    """Log the iteration and promote; an MLflow store that cannot be reached (down from the start or gone
    part-way) fails within the bounds of `pipeline.tracking.bounds`, as one TrackingUnavailableError."""
    from pipeline.tracking import check_reachable, tracking_errors

    uri = tracking_config(p).tracking_uri
    check_reachable(uri)
    with tracking_errors(uri):
        return _track_and_promote(p, lock_path)


def _track_and_promote(p: Params, lock_path: Path) -> dict[str, Any]:
    from pipeline.gate import read_gate
    from pipeline.loop.stages import eval_tasks_file
    from pipeline.metrics import MeasureSummary
    from pipeline.report import HISTORY_PLOT
    from pipeline.tracking import IterationTracker, champion_version, dvc_stage_hashes, log_datasets, promote

    began = time.time()
    config = tracking_config(p)
    headline = current_headline(p, config)  # before anything is registered: names what the iteration started from
    sections = p.model_dump(mode="json")
    candidate = read_agent_spec(paths.CANDIDATE_MODEL)
    decision = read_gate(paths.GATE)
    baseline_summary = MeasureSummary.model_validate_json((paths.BASELINE_RUN / "metrics.json").read_text())
    candidate_summary = MeasureSummary.model_validate_json((paths.CANDIDATE_RUN / "metrics.json").read_text())
    st = StageTimes.read(TRACKED_STAGES, until=began)
    data = LoopData.read(eval_tasks_file(p))
    trained_on = data.training(p.train.method, p.train.use_curated)
    tracker = IterationTracker(
        config,
        iteration=p.loop.iteration,
        agent=candidate,
        params=sections,
        stage_hashes=dvc_stage_hashes(lock_path),
        start_time=st.start() or began,
    )

    def stage(name: str, **kw):
        return tracker.stage(name, times=st.times(name), about=about(name), reused=st.reused(name), **kw)

    with tracker:
        log_datasets(
            tracker.client,
            tracker.run_id,
            [(ds, "evaluation") for ds in [data.eval] if ds] + [(ds, "training") for ds in trained_on],
        )
        _log_inputs(p, tracker, stage, sections, data, st, baseline_summary)
        version = _log_train(tracker, stage, sections, trained_on)
        _log_outcome(p, tracker, stage, sections, data, st, candidate_summary, decision)
        allowed = os.environ.get("AGENTLOOP_PROMOTE", "on") != "off"
        with tracker.stage("promote", params=sections["promote"], about=about("promote")) as run:
            if decision.promote and allowed:
                against = gated_against_version(p)
                promote(version, decision.model_dump(mode="json"), tracker=tracker, gated_against=against)
            # What the registry says now, not what this process meant to do: a rerun after a kill that landed
            # after the alias moved writes the same record as a run that was never killed.
            champion = champion_version(config)
            moved = decision.promote and allowed and champion == version
            run.set_tags({"agentloop.champion_moved": str(moved).lower()})
            run.log_metrics({"stage_seconds": time.time() - began})
        tracker.log_headline(headline.model_copy(update={"candidate_version": version, "champion_moved": moved}))
        history_plot = paths.REPORT_DIR / "plots" / f"{HISTORY_PLOT}.png"  # the report's, on the iteration run too
        if history_plot.exists():
            tracker.log_artifact(history_plot)
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


def gated_against_version(p: Params) -> Any:
    """The champion's version this iteration was gated against, so promote moves `champion` only if it still points
    there: its baseline's version when fetched from alias `champion`; else what AGENTLOOP_EXPECTED_CHAMPION says
    (None for `none`: there was no champion); else UNCHECKED (a run not planned against the registry)."""
    from pipeline.tracking import UNCHECKED

    version = str(_json(paths.BASELINE_MODEL / AGENT_FILE).get("version") or "")
    if p.baseline.source == "champion" and version:
        return version
    expected = os.environ.get(EXPECTED_CHAMPION_ENV, "").strip()
    if not expected:
        return UNCHECKED
    if expected == "none":
        return None
    if not expected.isdigit():
        raise InputError(f"{EXPECTED_CHAMPION_ENV}={expected!r}: expected a version number or 'none'")
    return expected


def _log_inputs(p: Params, tracker, stage, sections: dict[str, Any], data: LoopData, st: StageTimes, summary) -> None:
    """The stage runs up to training: the evaluation tasks, the baseline and its measurement, the targets, the
    synthesized pool and the curated selection."""
    from pipeline.loop.stages import eval_tasks_file
    from pipeline.tracking import log_datasets

    client = tracker.client
    with stage("eval_tasks", params=sections["world"]) as run:
        run.log_metrics({"eval_tasks": sum(1 for _ in eval_tasks_file(p).open())})
        log_datasets(client, run.run_id, [(data.eval, "output")] if data.eval else [])
    with stage("baseline", role="baseline", params=sections["baseline"]) as run:
        _artifacts(run, paths.BASELINE_MODEL / "agent.json")
        run.set_tags({"agentloop.agent": read_agent_spec(paths.BASELINE_MODEL)})
    with stage("measure", role="baseline", params=sections["measure"]) as run:
        run.log_summary(summary)
        _artifacts(run, paths.BASELINE_RUN / "metrics.json", paths.BASELINE_RUN / "per_task.csv")
        log_datasets(client, run.run_id, [(data.eval, "evaluation")] if data.eval else [])
        _traces(p, tracker, run, paths.BASELINE_RUN, "baseline", data, st.times("measure"))
    with stage("target", params=sections["target"]) as run:
        _artifacts(run, paths.TARGETS)
    with stage("synthesize", params=sections["synthesize"]) as run:
        manifest = _json(paths.SYNTH_DIR / "manifest.json")
        run.log_metrics({"tasks": float(manifest.get("tasks", 0))})
        _artifacts(run, paths.SYNTH_DIR / "manifest.json")
        log_datasets(client, run.run_id, [(ds, "output") for ds in (data.pool, data.anchors) if ds])
    with stage("curate", params=sections["curate"]) as run:
        _artifacts(run, paths.CURATED_DIR / "manifest.json")
        log_datasets(
            client, run.run_id, [(ds, ctx) for ds, ctx in ((data.pool, "pool"), (data.curated, "output")) if ds]
        )


def _log_train(tracker, stage, sections: dict[str, Any], trained_on) -> str:
    """The train stage run, registering the candidate checkpoint; returns its model version."""
    from pipeline.tracking import dataset_tags, log_datasets, register_checkpoint

    with stage("train", role="candidate", params=sections["train"]) as run:
        log_datasets(tracker.client, run.run_id, [(ds, "training") for ds in trained_on])
        with tempfile.TemporaryDirectory(prefix=".register-", dir=paths.CANDIDATE_MODEL.parent) as scratch:
            # what the registry stores names no local path: the directory as is, or a packaged copy of it
            stored = packaged(paths.CANDIDATE_MODEL, Path(scratch) / "model")
            labels = {"agentloop.agent": agent_label(stored), **dataset_tags(trained_on)}
            version = register_checkpoint(tracker, stored, tags=labels)
    return version


def _log_outcome(
    p: Params, tracker, stage, sections: dict[str, Any], data: LoopData, st: StageTimes, summary, decision
) -> None:
    """The stage runs after training: the candidate's measurement, the gate and the report."""
    from pipeline.tracking import log_datasets

    client = tracker.client
    with stage("remeasure", role="candidate", params=sections["measure"]) as run:
        run.log_summary(summary)
        _artifacts(run, paths.CANDIDATE_RUN / "metrics.json", paths.CANDIDATE_RUN / "per_task.csv")
        log_datasets(client, run.run_id, [(data.eval, "evaluation")] if data.eval else [])
        _traces(p, tracker, run, paths.CANDIDATE_RUN, "candidate", data, st.times("remeasure"))
    with stage("gate", params=sections["gate"]) as run:
        run.log_gate(decision.model_dump(mode="json"), propagate=False)
        _artifacts(run, paths.GATE)
        log_datasets(client, run.run_id, [(data.eval, "evaluation")] if data.eval else [])
    with stage("report", params=sections["report"]) as run:
        _artifacts(run, paths.REPORT_DIR / "report.html")
        if (paths.REPORT_DIR / "plots").exists():
            run.log_artifact(paths.REPORT_DIR / "plots", "plots")
