"""`agentloop model deploy` / `rollback`: a deployment alias moved to the champion (or a given version), the
version it replaced recorded, and moved back in one command; each refusal one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.tracking import (
    PRODUCTION,
    DeployError,
    IterationTracker,
    RegistryError,
    TrackingConfig,
    TrackingUnavailableError,
    alias_version,
    deploy,
    promote,
    register_checkpoint,
    rollback,
)

PASS = {"promote": True, "interval": [0.04, 0.3], "reasons": ["lower bound 0.04 > margin 0.0"]}
runner = CliRunner()


def _version(config, tmp_path: Path, tag: str, champion: bool = True) -> str:
    d = tmp_path / f"ckpt-{tag}"
    d.mkdir()
    (d / "config.json").write_text(f'{{"tag": "{tag}"}}')
    with IterationTracker(config, iteration=1, agent=f"hf:{d}", commit="c") as it, it.stage("train"):
        version = register_checkpoint(it, d)
    if champion:
        promote(version, PASS, config=config)
    return version


def test_deploy_follows_the_champion_and_rollback_walks_back(tracking, tmp_path):
    v1 = _version(tracking, tmp_path, "1")
    assert deploy(config=tracking) == {"alias": PRODUCTION, "version": v1, "previous": None}
    assert deploy(config=tracking)["previous"] == v1  # again: nothing moves
    v2 = _version(tracking, tmp_path, "2")
    v3 = _version(tracking, tmp_path, "3", champion=False)
    assert deploy(config=tracking) == {"alias": PRODUCTION, "version": v2, "previous": v1}
    assert deploy(PRODUCTION, v3, tracking) == {"alias": PRODUCTION, "version": v3, "previous": v2}
    assert alias_version(PRODUCTION, tracking) == v3
    assert rollback(config=tracking) == {"alias": PRODUCTION, "version": v2, "previous": v3}
    assert rollback(config=tracking) == {"alias": PRODUCTION, "version": v1, "previous": v2}
    with pytest.raises(DeployError, match=f"version {v1}\\) records no earlier version"):
        rollback(config=tracking)
    assert alias_version(PRODUCTION, tracking) == v1
    assert alias_version("champion", tracking) == v2  # deployment never touches the loop's aliases


def test_deploy_refuses_what_it_cannot_do(tracking, tmp_path):
    with pytest.raises(RegistryError, match="has no champion yet"):
        deploy(config=tracking)
    _version(tracking, tmp_path, "1")
    with pytest.raises(RegistryError, match="has no version 9"):
        deploy(PRODUCTION, "9", tracking)
    with pytest.raises(DeployError, match="--alias champion: moved by the loop itself"):
        deploy("champion", config=tracking)
    with pytest.raises(DeployError, match="has no alias staging"):
        rollback("staging", tracking)


def test_an_unreachable_registry_is_one_line():
    config = TrackingConfig(tracking_uri="http://127.0.0.1:1")
    for call in (lambda: deploy(config=config), lambda: rollback(config=config)):
        with pytest.raises(TrackingUnavailableError, match=r"MLflow at http://127.0.0.1:1 is not reachable"):
            call()


def test_the_commands(tracking, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking.tracking_uri)
    v1 = _version(tracking, tmp_path, "1")
    v2 = _version(tracking, tmp_path, "2", champion=False)
    out = runner.invoke(app, ["model", "deploy", "--alias", "production"])
    assert out.exit_code == 0 and f"agentloop-agent production: version {v1} (was unset)" in out.output
    out = runner.invoke(app, ["model", "deploy", "--alias", "production", "--version", v2])
    assert out.exit_code == 0 and f"version {v2} (was {v1})" in out.output
    out = runner.invoke(app, ["model", "rollback", "--alias", "production"])
    assert out.exit_code == 0 and f"rolled back to version {v1} (was {v2})" in out.output
    out = runner.invoke(app, ["model", "deploy", "--version", "7"])
    assert out.exit_code == 2 and "error: agentloop-agent has no version 7" in out.output
    assert len(out.output.strip().splitlines()) == 1
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    out = runner.invoke(app, ["model", "rollback"])
    assert out.exit_code == 2 and "error: MLflow at http://127.0.0.1:1 is not reachable" in out.output
    assert len(out.output.strip().splitlines()) == 1
