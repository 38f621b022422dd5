"""`dvc repro` of a reduced configuration in a temporary git repository: the loop end to end, twice."""

import json

import pytest

from tests.loop.loop_helpers import REDUCED, copy_repo, dvc, set_params

pytestmark = pytest.mark.slow


def test_committed_embedded_checkpoint_is_current(tmp_path):
    """A fresh clone's `dvc repro` skips the CPU build: the code renders the data the committed checkpoint was
    trained on (byte for byte, as dvc.lock records it), and the training code and params are those it recorded."""
    repo = copy_repo(tmp_path)
    dvc(repo, "repro", "embedded_data")
    out = dvc(repo, "status", "embedded").stdout
    assert "up to date" in out, out
    assert (repo / "models" / "embedded" / "model.safetensors").exists()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("loop"))
    set_params(repo, REDUCED)
    return repo


def test_repro_runs_the_loop_then_is_a_noop(repo):
    first = dvc(repo, "repro")
    for stage in (
        "eval_tasks",
        "embedded_data",
        "embedded",
        "baseline",
        "measure",
        "target",
        "synthesize",
        "curate",
        "train",
        "remeasure",
        "gate",
        "report",
        "promote",
    ):
        assert f"Running stage '{stage}'" in first.stdout, stage
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["low"] > 0
    promotion = json.loads((repo / "gate" / "promotion.json").read_text())
    assert promotion["promoted"] is True and promotion["candidate"] == "oracle"
    assert (repo / "report" / "report.html").stat().st_size > 10_000
    second = dvc(repo, "repro")
    assert "Running stage" not in second.stdout
    shown = next(iter(json.loads(dvc(repo, "metrics", "show", "--json").stdout).values()))["data"]  # the workspace
    assert shown["metrics/candidate.json"]["data"]["pass^k"]["2"] == 1.0  # the oracle
    assert shown["metrics/gate.json"]["data"]["outcome"] == "promote"


def test_repro_of_a_clean_checkout_leaves_git_clean(repo):
    """Committed results, every ignored file removed (a fresh clone), `dvc repro` again: every stage after the
    build reruns with the same seeds and writes the same bytes, so neither dvc.lock nor a tracked output changes."""
    import shutil
    import subprocess

    from tests.loop.loop_helpers import loop_env

    env = loop_env(repo)
    dvc(repo, "repro")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "results"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "clean", "-fdXq"], cwd=repo, check=True, env=env)
    shutil.rmtree(repo / ".dvc" / "cache", ignore_errors=True)  # a fresh clone has no run-cache to restore from
    rerun = dvc(repo, "repro").stdout
    assert "Running stage 'measure'" in rerun and "Running stage 'remeasure'" in rerun
    assert "Running stage 'embedded'" not in rerun  # the same data: the build is not repeated
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, env=env, capture_output=True, text=True)
    diff = subprocess.run(["git", "diff", "--stat"], cwd=repo, env=env, capture_output=True, text=True).stdout
    assert status.stdout == "", diff


def test_gate_param_change_reruns_only_gate_report_promote(repo):
    dvc(repo, "repro")
    set_params(repo, {"gate": {"margin": 0.9}})
    out = dvc(repo, "repro").stdout
    ran = {line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")}
    assert ran == {"gate", "report", "promote"}
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is False
    promotion = json.loads((repo / "gate" / "promotion.json").read_text())
    assert promotion["promoted"] is False


def test_second_iteration_starts_from_the_champion_and_shows_in_mlflow(repo):
    import subprocess

    from mlflow import MlflowClient

    from tests.loop.loop_helpers import loop_env

    set_params(repo, {"gate": {"margin": 0.0}})
    dvc(repo, "repro")
    env = loop_env(repo)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "iteration 1", "--allow-empty"], cwd=repo, check=True, env=env)
    dvc(repo, "exp", "run", "-S", "loop.iteration=2", "-S", "baseline.source=champion")
    assert (repo / "models" / "baseline" / "agent.json").read_text().count('"oracle"') == 1  # the promoted champion
    client = MlflowClient(f"sqlite:///{repo / 'mlruns.db'}")
    experiment = client.get_experiment_by_name("agentloop")
    runs = client.search_runs([experiment.experiment_id], filter_string="tags.`agentloop.kind` = 'iteration'")
    names = {r.info.run_name.split(" · ")[0] for r in runs}
    assert {"iter-001", "iter-002"} <= names
    second = next(r for r in runs if r.info.run_name.startswith("iter-002"))
    # oracle vs oracle: every task the same both times, a gain of zero with no spread, which is no finding
    assert second.data.tags["agentloop.decision"] == "inconclusive"
