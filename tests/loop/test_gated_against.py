"""`promote` moves `champion` compare-and-set against the version the iteration's baseline was fetched from."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import InputError
from pipeline.loop import paths
from pipeline.loop.params import Params
from pipeline.loop.track import gated_against_version
from pipeline.tracking import UNCHECKED


def test_the_champion_a_run_was_gated_against_is_its_baselines_version(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    champion = Params.model_validate({"baseline": {"source": "champion"}})
    assert gated_against_version(champion) is UNCHECKED  # no baseline recorded: nothing to compare
    paths.BASELINE_MODEL.mkdir(parents=True)
    (paths.BASELINE_MODEL / "agent.json").write_text(json.dumps({"source": "champion", "version": "3"}))
    assert gated_against_version(champion) == "3"
    for source in ("embedded", "challenger", "3", "agent:oracle"):
        assert gated_against_version(Params.model_validate({"baseline": {"source": source}})) is UNCHECKED


def test_a_run_planned_against_the_registry_is_gated_against_what_it_found(tmp_path, monkeypatch):
    """next_iteration's AGENTLOOP_EXPECTED_CHAMPION: `none` for a first iteration (so of two first iterations
    racing only one moves `champion`), a version otherwise; the baseline fetched from `champion` wins."""
    monkeypatch.chdir(tmp_path)
    first = Params.model_validate({"baseline": {"source": "agent:flawed"}})
    monkeypatch.setenv("AGENTLOOP_EXPECTED_CHAMPION", "none")
    assert gated_against_version(first) is None
    monkeypatch.setenv("AGENTLOOP_EXPECTED_CHAMPION", "2")
    assert gated_against_version(first) == "2"
    paths.BASELINE_MODEL.mkdir(parents=True)
    (paths.BASELINE_MODEL / "agent.json").write_text(json.dumps({"source": "champion", "version": "3"}))
    assert gated_against_version(Params.model_validate({"baseline": {"source": "champion"}})) == "3"
    monkeypatch.setenv("AGENTLOOP_EXPECTED_CHAMPION", "v2")
    with pytest.raises(InputError, match="AGENTLOOP_EXPECTED_CHAMPION='v2'"):
        gated_against_version(first)
