"""Two iterations in a row from the registry, with a trained checkpoint: `dvc repro`, then the README's
`dvc exp run -S loop.iteration=2 -S baseline.source=champion`, in a copy of the repository.

The model is the toy embedded build (a few steps, random-ish), so nothing here is about quality: the gate is set to
promote whatever it sees (margin -1, nothing tracked; six tasks, so that even a gain of zero spread is one the sign
test accepts), so that iteration 2 has a champion to start from."""

import json
import subprocess

import pytest
import yaml

from pipeline.agents.registry import directory_digest
from tests.loop.loop_helpers import TINY_EMBEDDED, copy_repo, dvc, loop_env, set_params

pytestmark = pytest.mark.slow

SMALL = {
    "embedded": TINY_EMBEDDED,
    "world": {"eval_world": "gen-101-20x80x160", "train_world": "gen-7-20x80x160", "eval_tasks": 6},
    # a checkpoint agent (the embedded build) with short replies, so that episodes of a random-ish model end soon
    "baseline": {"source": "agent:hf:models/embedded,max_new_tokens=12"},
    "measure": {"trials": 1, "resamples": 100, "executor": "serial", "concurrency": 4},
    "target": {"budget": 6},
    "synthesize": {"anchors": 8},
    "curate": {"probes": 1, "executor": "serial", "max_items": 6},
    "train": {"method": "sft", "epochs": 1.0, "max_length": 1024},
    "gate": {"k": 1, "resamples": 200, "margin": -1.0, "tracked": []},
    "promote": {"traces": False},
}


def _commit(repo, message: str) -> None:
    env = loop_env(repo)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message, "--allow-empty"], cwd=repo, check=True, env=env)


def _json(path):
    return json.loads(path.read_text())


@pytest.mark.timeout(1800)  # two whole loops through DVC: 9 min on 2 cores at load average ~7, 20 at 15-20
def test_two_iterations_in_a_row_the_second_measures_the_first_ones_promoted_candidate(tmp_path):
    from mlflow import MlflowClient

    repo = copy_repo(tmp_path)
    set_params(repo, SMALL)
    dvc(repo, "repro")
    first = _json(repo / "gate" / "promotion.json")
    assert (first["model_version"], first["champion_version"], first["champion_moved"]) == ("1", "1", True)
    candidate = _json(repo / "models" / "candidate" / "agent.json")
    assert candidate["checkpoint"] == "checkpoint" and "spec" not in candidate  # relative to its own directory
    promoted = candidate["checkpoint_digest"]
    assert promoted == directory_digest(repo / "models" / "candidate" / "checkpoint")
    assert _json(repo / "data" / "synth" / "manifest.json")["world"] == "gen-7-20x80x160"
    eval_tasks = (repo / "data" / "eval" / "tasks.jsonl").read_bytes()
    first_trials = (repo / "runs" / "candidate" / "trajectories.jsonl").read_bytes()
    _commit(repo, "iteration 1")

    dvc(repo, "exp", "run", "-S", "loop.iteration=2", "-S", "baseline.source=champion")
    baseline = _json(repo / "models" / "baseline" / "agent.json")
    assert (baseline["source"], baseline["version"]) == ("champion", "1")
    assert baseline["checkpoint_digest"] == promoted == directory_digest(repo / "models" / "baseline" / "checkpoint")
    # the champion measured again is the candidate iteration 1 measured: the same trials, byte for byte
    assert (repo / "runs" / "baseline" / "trajectories.jsonl").read_bytes() == first_trials
    second = _json(repo / "gate" / "promotion.json")
    assert (second["iteration"], second["model_version"], second["champion_version"]) == (2, "2", "2")
    # fresh data: iteration 2 synthesized in a world of its own seed; the evaluation tasks are the same
    assert _json(repo / "data" / "synth" / "manifest.json")["world"] == "gen-8-20x80x160"
    assert (repo / "data" / "eval" / "tasks.jsonl").read_bytes() == eval_tasks
    assert yaml.safe_load((repo / "params.yaml").read_text())["loop"]["iteration"] == 2

    client = MlflowClient(f"sqlite:///{repo / 'mlruns.db'}")
    versions = {str(v.version): v for v in client.search_model_versions("name = 'agentloop-agent'")}
    assert sorted(versions) == ["1", "2"]
    assert {v.tags["agentloop.agent"] for v in versions.values()} == {"hf:checkpoint,max_new_tokens=12"}
    registered = list((repo / "mlartifacts").glob("*/artifacts/checkpoint/agent.json"))  # the versions' files
    assert len(registered) == 2 and all("models/" not in p.read_text() for p in registered)
