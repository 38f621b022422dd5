"""`dvc metrics show` / `dvc metrics diff` read the committed headline metrics: no metrics file dvc.yaml names is
git-ignored, each holds only scalars DVC can diff, and `dvc metrics diff` loads them from a commit."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from pipeline.loop.metrics_files import gate_metrics, measure_metrics, write_metrics
from tests.loop.loop_helpers import ROOT, loop_env
from tests.needs import need_tool
from tests.tracking.conftest import make_summary


def _metrics_paths() -> list[str]:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    out = []
    for stage in stages.values():
        for entry in stage.get("metrics", []):
            out += list(entry) if isinstance(entry, dict) else [entry]
    return out


def _leaves(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def test_the_files_are_scalars_a_person_reads():
    summary = make_summary("oracle", {"a-1": [True, False, True, True], "a-2": [True] * 4})
    m = measure_metrics(summary)
    assert m["pass@1"] == 0.875 and m["pass^k"] == {"1": 0.875, "2": 0.75, "3": 0.625, "4": 0.5}
    assert set(m["failure_modes"]) == set(summary.failure_modes) and m["failure_modes"]["invention"] == 0.125
    assert not any(k.startswith("cost_per_success") for k in m)  # unpriced: no price of 0
    priced = summary.model_copy(update={"cost": summary.cost.model_copy(update={"priced": True})})
    assert measure_metrics(priced)["cost_per_success_USD"] == round(summary.cost.cost_per_success, 4)
    gate = {
        "outcome": "block",
        "pass_hat_k": {
            "k": 4,
            "candidate": 0.3,
            "champion": 0.31,
            "diff": -0.01,
            "low": -0.1,
            "high": 0.08,
            "mde": 0.2,
        },
    }
    assert gate_metrics(gate) == {
        "outcome": "block",
        "pass^k": {"k": 4, "champion": 0.31, "candidate": 0.3, "gain": -0.01, "low": -0.1, "high": 0.08, "mde": 0.2},
    }
    for key, value in [*_leaves(m), *_leaves(gate_metrics(gate))]:
        assert isinstance(value, int | float | str) and not isinstance(value, bool), key


def test_no_metrics_file_is_git_ignored():
    """The cause of "DVC failed to load some metrics for following revisions: 'HEAD'": a metrics file under an
    ignored directory (runs/) is in no commit."""
    paths = _metrics_paths()
    assert sorted(paths) == ["metrics/baseline.json", "metrics/candidate.json", "metrics/gate.json"]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout == "", f"git ignores {ignored.stdout.split()}"


def test_dvc_metrics_diff_compares_a_commit_with_the_workspace(tmp_path):
    """The project's dvc.yaml and .gitignore in a fresh repository, the metrics as the stages write them, committed;
    a new measurement in the workspace: `dvc metrics diff` loads both sides and gives old, new and the change."""
    need_tool("dvc", install="pip install dvc")
    env = loop_env(tmp_path)
    for name in ("dvc.yaml", "params.yaml", ".gitignore"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    run = lambda *cmd: subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # noqa: E731
    assert run("git", "init", "-q").returncode == 0 and run("dvc", "init", "-q").returncode == 0
    before = make_summary("flawed", {"a-1": [True, False, False, False], "a-2": [True] * 4})
    after = make_summary("trained", {"a-1": [True, True, True, False], "a-2": [True] * 4})
    gate = {
        "outcome": "block",
        "pass_hat_k": {"k": 4, "candidate": 0.5, "champion": 0.5, "diff": 0.0, "low": -0.5, "high": 0.5, "mde": 0.6},
    }
    write_metrics(tmp_path / "metrics" / "baseline.json", measure_metrics(before))
    write_metrics(tmp_path / "metrics" / "candidate.json", measure_metrics(before))
    write_metrics(tmp_path / "metrics" / "gate.json", gate_metrics(gate))
    assert run("git", "add", "-A").returncode == 0 and run("git", "commit", "-qm", "iteration 1").returncode == 0
    write_metrics(tmp_path / "metrics" / "candidate.json", measure_metrics(after))
    write_metrics(tmp_path / "metrics" / "gate.json", gate_metrics({**gate, "outcome": "promote"}))

    done = run("dvc", "metrics", "diff", "--json")
    assert done.returncode == 0 and "failed to load" not in done.stderr + done.stdout, done.stderr[-2000:]
    diff = json.loads(done.stdout)
    assert diff["metrics/candidate.json"]["pass@1"] == {"old": 0.625, "new": 0.875, "diff": pytest.approx(0.25)}
    assert diff["metrics/gate.json"]["outcome"] == {"old": "block", "new": "promote"}
    table = run("dvc", "metrics", "diff").stdout
    assert re.search(r"metrics/candidate.json\s+pass@1\s+0.625\s+0.875\s+0.25", table), table


def test_the_headline_files_carry_the_split_by_expected_outcome():
    from pipeline.metrics import TrialRecord, summarize

    records = [
        TrialRecord(task_id=t, trial=i, template=t, expected=e, passed=e == "refuse")
        for t, e in (("a-1", "act"), ("a-2", "act"), ("r-1", "refuse"))
        for i in range(2)
    ]
    m = measure_metrics(summarize(records, agent="never-acts", max_k=2, resamples=50))
    assert m["by_expected"] == {
        "act": {"tasks": 2, "pass@1": 0.0, "pass^k": {"1": 0.0, "2": 0.0}},
        "refuse": {"tasks": 1, "pass@1": 1.0, "pass^k": {"1": 1.0, "2": 1.0}},
    }
    assert "by_expected" not in measure_metrics(make_summary("x", {"a-1": [True] * 4}))  # no split: none
    gate = {
        "outcome": "block",
        "pass_hat_k": {"k": 2, "candidate": 0.3, "champion": 0.3, "diff": 0.0, "low": -0.1, "high": 0.1},
        "by_expected": {
            "act": {"tasks": 2, "candidate": 0.0, "champion": 1.0, "diff": -1.0, "low": -1.0, "high": -1.0},
            "refuse": {"tasks": 0, "candidate": None, "champion": None, "diff": None, "low": None, "high": None},
        },
    }
    g = gate_metrics(gate)
    assert g["by_expected"] == {
        "act": {"tasks": 2, "champion": 1.0, "candidate": 0.0, "gain": -1.0, "low": -1.0, "high": -1.0},
        "refuse": {"tasks": 0},
    }
    for key, value in [*_leaves(m), *_leaves(g)]:
        assert isinstance(value, int | float | str) and not isinstance(value, bool), key
