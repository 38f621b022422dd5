"""This iteration's headline (from the stages' files) and the earlier ones (from the tracking store).

The report shows them together as the iteration history; `promote` logs this iteration's headline on its run.
What an iteration started from is named by its registered version where it has one ("v2"), read before
`promote` registers anything, so the report (which runs first) and the run agree.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pipeline.loop import paths
from pipeline.loop.agentref import AGENT_FILE
from pipeline.loop.params import Params
from pipeline.metrics import IterationHeadline, MeasureSummary, headline
from pipeline.tracking import TrackingConfig

log = logging.getLogger(__name__)


def tracking_config(p: Params) -> TrackingConfig:
    location = p.promote.artifact_location
    if location and "://" not in location and not Path(location).is_absolute():
        from pipeline.tracking import repo_root

        location = str(repo_root() / location)
    return TrackingConfig(experiment=p.promote.experiment, model_name=p.promote.model_name, artifact_location=location)


def _registered(source: str, config: TrackingConfig) -> str | None:
    """The version a registry source names: the alias's version now, or the number itself."""
    from pipeline.tracking import challenger_version, champion_version, store_exists

    if source.removeprefix("v").isdigit():
        return source.removeprefix("v")
    if source not in ("champion", "challenger") or not store_exists(config.tracking_uri):
        return None
    try:
        return champion_version(config) if source == "champion" else challenger_version(config)
    except Exception as exc:  # an unreachable server leaves the label unversioned, not the stage failed
        log.warning("%s: could not read alias %r (%s); labelled by its source", config.tracking_uri, source, exc)
        return None


def baseline_label(p: Params, config: TrackingConfig, model_dir: Path = paths.BASELINE_MODEL) -> str:
    """What this iteration started from: `v3` for a registered version, `embedded`, or the agent's kind.

    The registered `version` the baseline stage recorded in the baseline's agent.json wins; else the registry
    source is resolved."""
    ref_path = model_dir / AGENT_FILE
    ref = json.loads(ref_path.read_text()) if ref_path.exists() else {}
    version = ref.get("version") or ref.get("model_version") or _registered(p.baseline.source, config)
    if version:
        return f"v{version}"
    source = p.baseline.source
    return source.removeprefix("agent:").split(":")[0]  # `agent:flawed:invention=0.3` → flawed


def current_headline(p: Params, config: TrackingConfig) -> IterationHeadline:
    """This iteration's headline from runs/*/metrics.json and gate/gate.json (before anything is registered)."""
    read = lambda path: MeasureSummary.model_validate_json(path.read_text())  # noqa: E731
    return headline(
        p.loop.iteration,
        baseline_label(p, config),
        read(paths.BASELINE_RUN / "metrics.json"),
        read(paths.CANDIDATE_RUN / "metrics.json"),
        json.loads(paths.GATE.read_text()),
    )


def iteration_history(p: Params) -> list[IterationHeadline]:
    """Earlier iterations from the store, then this one. A store that cannot be read leaves only this one."""
    from pipeline.tracking import earlier_iterations

    config = tracking_config(p)
    this = current_headline(p, config)
    try:
        earlier = earlier_iterations(config, before=p.loop.iteration)
    except Exception as exc:  # the report still shows this iteration when the store is away
        log.warning("iteration history: could not read %s (%s); showing this iteration only", config.tracking_uri, exc)
        earlier = []
    return [*earlier, this]
