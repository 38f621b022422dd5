"""`promote` moves `champion` compare-and-set against the version the iteration's baseline was fetched from."""

from __future__ import annotations

import json

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
