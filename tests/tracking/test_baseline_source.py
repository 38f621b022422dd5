"""The baseline stage from the registry: `champion`, `challenger` or a version number, fetched as registered.

What is registered names no local path (a checkpoint is referenced relative to its own directory, one given by
path is packaged with it), so a version measures the same wherever it is fetched; the fetched files are checked
against the digest registered with them, and a mismatch names both digests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.agents.registry import directory_digest
from pipeline.loop import paths
from pipeline.loop.agentref import (
    AgentRefError,
    agent_label,
    packaged,
    read_agent_ref,
    read_agent_spec,
    write_agent_ref,
    write_checkpoint_ref,
)
from pipeline.loop.params import Params
from pipeline.loop.stages import build_baseline
from pipeline.tracking import IterationTracker, RegistryError, promote, register_checkpoint
from pipeline.tracking.registry import DIGEST_TAG

PASS = {"promote": True, "interval": [0.04, 0.3], "reasons": ["lower bound 0.04 > margin 0.0"]}
BLOCK = {"promote": False, "interval": [-0.1, 0.2], "reasons": ["lower bound -0.1 <= margin 0.0"]}


def _weights(d: Path, tag: str) -> Path:
    (d / "tokenizer").mkdir(parents=True)
    (d / "model.safetensors").write_bytes(f"weights {tag}".encode() * 100)
    (d / "config.json").write_text(f'{{"iteration": "{tag}"}}')
    (d / "tokenizer" / "vocab.json").write_text(f'["{tag}"]')
    return d


def _candidate(workspace: Path, tag: str, options: str = "draft=4") -> Path:
    """A trained candidate as the train stage leaves it: `models/candidate/{agent.json, checkpoint/}`."""
    model = workspace / "models" / "candidate"
    _weights(model / "checkpoint", tag)
    write_checkpoint_ref(model, "hf", options, method="sft")
    return model


def _register(tracking, n: int, model: Path, decision: dict, scratch: Path) -> str:
    with IterationTracker(tracking, iteration=n, agent=read_agent_spec(model), commit=f"c{n}") as it:
        with it.stage("train"):
            stored = packaged(model, scratch / f"pack-{n}")
            version = register_checkpoint(it, stored, tags={"agentloop.agent": agent_label(stored)})
        with it.stage("gate") as st:
            if st.log_gate(decision):
                promote(version, decision, tracker=it)
    return version


@pytest.fixture
def loop(tracking, tmp_path, monkeypatch):
    """A workspace of its own for the stage (the tracking fixture's cwd must stay empty)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking.tracking_uri)
    ws = tmp_path / "next"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


def _baseline(source: str) -> str:
    return build_baseline(Params.model_validate({"baseline": {"source": source}}))


def test_a_version_is_measured_from_its_own_files_wherever_it_is_fetched(tracking, loop, tmp_path):
    first = tmp_path / "first"
    model = _candidate(first, "1")
    trained = read_agent_ref(model)["checkpoint_digest"]
    v1 = _register(tracking, 1, model, PASS, tmp_path)
    registered = tracking.client().get_model_version(tracking.model_name, v1)
    assert registered.tags["agentloop.agent"] == "hf:checkpoint,draft=4"  # no workspace path in the registry
    shutil.rmtree(first)  # the workspace that trained it is gone: nothing may point into it

    spec = _baseline("champion")
    assert spec == "hf:models/baseline/checkpoint,draft=4"
    ref = read_agent_ref(paths.BASELINE_MODEL)
    assert ref["checkpoint_digest"] == trained == directory_digest(paths.BASELINE_MODEL / "checkpoint")
    assert (ref["source"], ref["version"], ref["registered_digest"]) == ("champion", v1, registered.tags[DIGEST_TAG])
    assert sorted(p.name for p in paths.BASELINE_MODEL.iterdir()) == ["agent.json", "checkpoint"]


def test_champion_challenger_and_a_number_each_fetch_their_version(tracking, loop, tmp_path):
    digests = {}
    for n, decision in ((1, PASS), (2, BLOCK)):
        model = _candidate(tmp_path / f"ws{n}", str(n))
        digests[n] = read_agent_ref(model)["checkpoint_digest"]
        assert _register(tracking, n, model, decision, tmp_path) == str(n)
    for source, n in (("champion", 1), ("challenger", 2), ("1", 1), ("2", 2)):
        _baseline(source)
        ref = read_agent_ref(paths.BASELINE_MODEL)
        assert (ref["version"], ref["checkpoint_digest"]) == (str(n), digests[n]), source
    with pytest.raises(RegistryError, match=r"agentloop-agent has no version 7"):
        _baseline("7")


def test_an_empty_registry_is_an_error_naming_the_alias(tracking, loop):
    with pytest.raises(RegistryError, match=r"agentloop-agent has no champion yet"):
        _baseline("champion")
    with pytest.raises(RegistryError, match=r"has no challenger yet"):
        _baseline("challenger")


def test_files_that_are_not_the_registered_ones_are_refused_naming_both_digests(tracking, loop, tmp_path):
    v1 = _register(tracking, 1, _candidate(tmp_path / "ws", "1"), PASS, tmp_path)
    want = tracking.client().get_model_version(tracking.model_name, v1).tags[DIGEST_TAG]
    store = Path(tracking.tracking_uri.removeprefix("sqlite:///")).parent
    (stored,) = [p for p in store.rglob("model.safetensors") if "checkpoint" in p.parts]
    stored.write_bytes(b"weights replaced in the artifact store")
    (loop / "models" / "baseline").mkdir(parents=True)
    (loop / "models" / "baseline" / "kept.txt").write_text("the previous baseline")
    with pytest.raises(RegistryError) as err:
        _baseline("champion")
    message = str(err.value)
    assert f"registered {DIGEST_TAG} {want}" in message and "version 1 (champion)" in message
    got = message.split("digest ")[1].split(" ")[0]
    assert len(got) == 64 and got != want
    assert not (loop / "models" / "baseline" / "checkpoint").exists()  # nothing half-fetched is measured


def test_a_checkpoint_given_by_path_is_registered_with_its_files(tracking, loop, tmp_path):
    outside = _weights(tmp_path / "outside" / "ckpt", "x")
    model = tmp_path / "ws" / "models" / "candidate"
    write_agent_ref(model, f"hf:{outside},temperature=0.5", method=f"agent:hf:{outside},temperature=0.5")
    v = _register(tracking, 1, model, PASS, tmp_path)
    shutil.rmtree(tmp_path / "outside")
    assert _baseline(v) == "hf:models/baseline/checkpoint,temperature=0.5"
    assert read_agent_ref(paths.BASELINE_MODEL)["checkpoint_digest"] == directory_digest(
        paths.BASELINE_MODEL / "checkpoint"
    )
    assert str(tmp_path) not in (paths.BASELINE_MODEL / "agent.json").read_text()


def test_a_version_registered_with_a_workspace_spec_is_measured_from_its_own_checkpoint(tracking, loop, tmp_path):
    """Versions registered before references were relative named `hf:models/candidate/checkpoint`."""
    model = tmp_path / "old" / "models" / "candidate"
    _weights(model / "checkpoint", "old")
    (model / "agent.json").write_text(json.dumps({"spec": "hf:models/candidate/checkpoint", "method": "sft"}))
    _register(tracking, 1, model, PASS, tmp_path)
    _weights(loop / "models" / "candidate" / "checkpoint", "the workspace's, not the champion")
    assert _baseline("champion") == "hf:models/baseline/checkpoint"
    assert read_agent_ref(paths.BASELINE_MODEL)["checkpoint_digest"] == directory_digest(model / "checkpoint")


def test_an_agent_without_files_is_fetched_as_its_spec(tracking, loop, tmp_path):
    model = tmp_path / "ws" / "models" / "candidate"
    write_agent_ref(model, "oracle", method="agent:oracle")
    _register(tracking, 1, model, PASS, tmp_path)
    assert _baseline("champion") == "oracle"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"spec": "oracle", "checkpoint": "checkpoint"}, "exactly one of 'spec'"),
        ({"backend": "hf", "checkpoint": "../candidate/checkpoint"}, "inside the model directory"),
        ({"backend": "hf", "checkpoint": "/abs/checkpoint"}, "inside the model directory"),
        ({"backend": "tf", "checkpoint": "checkpoint"}, "backend 'tf'"),
    ],
)
def test_a_reference_that_leaves_its_directory_is_refused(tmp_path, ref, message):
    (tmp_path / "agent.json").write_text(json.dumps(ref))
    with pytest.raises(AgentRefError, match=message):
        read_agent_spec(tmp_path)
