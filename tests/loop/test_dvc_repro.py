"""`dvc repro` of a reduced configuration in a temporary git repository: the loop end to end, twice."""

import json

import pytest

from tests.loop.loop_helpers import REDUCED, copy_repo, dvc, set_params

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("loop"))
    set_params(repo, REDUCED)
    return repo


def test_repro_runs_the_loop_then_is_a_noop(repo):
    first = dvc(repo, "repro")
    for stage in (
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
    shown = dvc(repo, "metrics", "show", "--json").stdout
    assert "pass_hat_k" in shown


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
