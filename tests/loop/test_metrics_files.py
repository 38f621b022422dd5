"""`dvc metrics show` / `dvc metrics diff` read the committed headline metrics: every metrics file dvc.yaml names is
in git, holds only scalars DVC can diff, and `dvc metrics diff` loads every one for HEAD."""

from __future__ import annotations

import json
import subprocess

import yaml

from pipeline.loop.metrics_files import gate_metrics, measure_metrics
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


def test_every_metrics_file_in_dvc_yaml_is_committed():
    paths = _metrics_paths()
    assert paths, "dvc.yaml names no metrics"
    tracked = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True, check=True)
    assert sorted(tracked.stdout.split()) == sorted(paths), "a metrics file git does not hold: HEAD has no value"
    for path in paths:
        blob = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=ROOT, capture_output=True, text=True)
        assert blob.returncode == 0, f"{path} is not in HEAD"
        for key, value in _leaves(json.loads(blob.stdout)):
            assert isinstance(value, int | float | str) and not isinstance(value, bool), f"{path}: {key}"


def test_dvc_metrics_diff_loads_head():
    need_tool("dvc", install="pip install dvc")
    done = subprocess.run(
        ["dvc", "metrics", "diff", "HEAD", "--all", "--json"],
        cwd=ROOT,
        env=loop_env(ROOT),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "failed to load" not in done.stderr + done.stdout, done.stderr[-2000:]
    diff = json.loads(done.stdout)
    for path in _metrics_paths():
        assert isinstance(diff[path]["pass^k.k" if "gate" in path else "pass@1"]["old"], int | float), path
