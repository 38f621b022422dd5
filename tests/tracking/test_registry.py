"""Checkpoint registration and the champion / challenger aliases on a file sqlite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.tracking import (
    IterationTracker,
    PromotionRefused,
    challenger_version,
    champion_checkpoint,
    champion_version,
    promote,
    register_checkpoint,
)

PASS = {"promote": True, "interval": [0.04, 0.3], "reasons": ["lower bound 0.04 > margin 0.0"]}
BLOCK = {"promote": False, "interval": [-0.1, 0.2], "reasons": ["lower bound -0.1 <= margin 0.0"]}


def _checkpoint(root: Path, tag: str) -> Path:
    d = root / f"ckpt-{tag}"
    (d / "tokenizer").mkdir(parents=True)
    (d / "model.safetensors").write_bytes(f"weights {tag}".encode() * 100)
    (d / "config.json").write_text(f'{{"iteration": "{tag}"}}')
    (d / "tokenizer" / "vocab.json").write_text(f'["{tag}"]')
    return d


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _iteration(config, n: int, ckpt: Path, decision: dict) -> str:
    with IterationTracker(config, iteration=n, agent=f"hf:{ckpt}", commit=f"c{n}") as it:
        with it.stage("train") as st:
            version = register_checkpoint(it, ckpt)
            assert it.active is st
        with it.stage("gate") as st:
            if st.log_gate(decision):
                promote(version, decision, tracker=it)
    return version


def test_challenger_follows_every_candidate_and_only_a_passing_gate_moves_champion(tracking, tmp_path):
    ck1, ck2, ck3 = (_checkpoint(tmp_path, t) for t in ("1", "2", "3"))
    assert champion_version(tracking) is None and challenger_version(tracking) is None
    assert champion_checkpoint(tmp_path / "none", tracking) is None and not (tmp_path / "none").exists()

    v1 = _iteration(tracking, 1, ck1, PASS)
    assert (challenger_version(tracking), champion_version(tracking)) == (v1, v1)

    v2 = _iteration(tracking, 2, ck2, BLOCK)
    assert v2 != v1
    assert (challenger_version(tracking), champion_version(tracking)) == (v2, v1)

    dst = tmp_path / "baseline" / "checkpoint"
    dst.mkdir(parents=True)
    (dst / "stale.bin").write_text("left over from an earlier run")
    assert champion_checkpoint(dst, tracking) == dst
    assert _files(dst) == _files(ck1)  # the champion's files, not the newer blocked challenger's
    assert [p.name for p in dst.parent.iterdir()] == ["checkpoint"]  # no temporary directory left behind

    v3 = _iteration(tracking, 3, ck3, PASS)
    assert (challenger_version(tracking), champion_version(tracking)) == (v3, v3)
    champion_checkpoint(dst, tracking)
    assert _files(dst) == _files(ck3)

    client = tracking.client()
    mv = client.get_model_version(tracking.model_name, v3)
    assert mv.run_id and client.get_run(mv.run_id).data.tags["agentloop.stage"] == "train"
    assert mv.tags["agentloop.iteration"] == "3" and mv.tags["agentloop.promoted_over"] == v1
    runs = client.search_runs([client.get_experiment_by_name(tracking.experiment).experiment_id])
    parents = {r.data.tags["agentloop.iteration"]: r for r in runs if r.data.tags["agentloop.kind"] == "iteration"}
    assert parents["3"].data.tags["agentloop.model_version"] == v3
    assert parents["3"].data.tags["agentloop.promoted_version"] == v3
    assert "agentloop.promoted_version" not in parents["2"].data.tags


def test_promote_refuses_a_blocked_decision(tracking, tmp_path):
    v1 = _iteration(tracking, 1, _checkpoint(tmp_path, "1"), PASS)
    with IterationTracker(tracking, iteration=2, agent="x", commit="c") as it:
        v2 = register_checkpoint(it, _checkpoint(tmp_path, "2"))
    with pytest.raises(PromotionRefused, match="lower bound -0.1"):
        promote(v2, BLOCK, config=tracking)
    assert champion_version(tracking) == v1
    with pytest.raises(InputError):
        register_checkpoint(it, tmp_path / "missing")


def test_a_create_retried_after_it_landed_leaves_one_version(tracking, tmp_path, monkeypatch):
    """MLflow's client retries a POST whose reply was lost (a timeout, a 5xx from a proxy): the first try may
    have created the version, so the retry makes a second one with the same checkpoint. Registration keeps the
    first and deletes the duplicate, so no version is left without its alias."""
    from mlflow import MlflowClient

    real = MlflowClient.create_model_version

    def landed_twice(self, *args, **kwargs):
        real(self, *args, **kwargs)  # the try whose reply was lost
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "create_model_version", landed_twice)
    version = _iteration(tracking, 1, _checkpoint(tmp_path, "1"), PASS)
    versions = [mv.version for mv in tracking.client().search_model_versions("name = 'agentloop-agent'")]
    assert version == "1" and [str(v) for v in versions] == ["1"]
    assert (challenger_version(tracking), champion_version(tracking)) == ("1", "1")


def test_two_checkpoints_registered_through_one_reused_stage_run_keep_their_own_files(tracking, tmp_path):
    """An iteration logged again reuses its finished stage runs; a second checkpoint registered there is written
    beside the first version's files, never over them (each version fetches the files its digest names)."""
    from pipeline.tracking.registry import fetch_version

    ck1, ck2 = _checkpoint(tmp_path, "1"), _checkpoint(tmp_path, "2")
    versions = []
    for ckpt in (ck1, ck2):
        with IterationTracker(tracking, iteration=1, agent="hf:ckpt", commit="c") as it, it.stage("train"):
            versions.append(register_checkpoint(it, ckpt))
    assert versions[0] != versions[1]
    for version, ckpt in zip(versions, (ck1, ck2), strict=True):
        fetch_version(tmp_path / f"fetched-{version}", version, tracking)
        assert _files(tmp_path / f"fetched-{version}") == _files(ckpt)
