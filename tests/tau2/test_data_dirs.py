"""Where τ²-bench's data sets are found: a data set's own variable, then AGENTLOOP_SHARED, then `../shared` beside
the repository, the git top level and the current directory; a variable that is set and wrong is an error."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.tau2.data import DATASETS, Tau2DataNotFound, dataset_var, shared_roots, tau2_data_dir

REPO = Path(__file__).resolve().parents[2]


def _dataset(root: Path, name: str) -> Path:
    path = root / f"tau2_{name}"
    path.mkdir(parents=True)
    (path / "db.json").write_text("{}")
    return path


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    for name in DATASETS:
        monkeypatch.delenv(dataset_var(name), raising=False)
    monkeypatch.delenv("AGENTLOOP_SHARED", raising=False)


def test_a_data_sets_own_variable_comes_first(tmp_path, monkeypatch):
    own, shared = _dataset(tmp_path / "own", "airline"), _dataset(tmp_path / "shared", "airline")
    monkeypatch.setenv("AGENTLOOP_SHARED", str(shared.parent))
    monkeypatch.setenv("AGENTLOOP_TAU2_AIRLINE", str(own))
    assert tau2_data_dir("airline") == own.resolve()


def test_the_shared_root_names_every_data_set(tmp_path, monkeypatch):
    retail, airline = _dataset(tmp_path, "retail"), _dataset(tmp_path, "airline")
    monkeypatch.setenv("AGENTLOOP_SHARED", str(tmp_path))
    assert (tau2_data_dir("retail"), tau2_data_dir("airline")) == (retail.resolve(), airline.resolve())


def test_a_variable_that_misses_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_TAU2_RETAIL", str(tmp_path / "nowhere"))
    with pytest.raises(Tau2DataNotFound, match=r"AGENTLOOP_TAU2_RETAIL=.*nowhere: no db\.json"):
        tau2_data_dir("retail")
    monkeypatch.delenv("AGENTLOOP_TAU2_RETAIL")
    monkeypatch.setenv("AGENTLOOP_SHARED", str(tmp_path))  # exists, but holds no tau2_retail
    with pytest.raises(Tau2DataNotFound, match=r"AGENTLOOP_SHARED=.*: no tau2_retail/db\.json"):
        tau2_data_dir("retail")


def test_shared_beside_the_git_top_level_and_the_current_directory(tmp_path):
    checkout = tmp_path / "work" / "clone"
    (checkout / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    roots = shared_roots(cwd=checkout / "sub")
    assert roots[0] == (REPO.parent / "shared").resolve()  # beside the checkout this package came from
    assert (tmp_path / "work" / "shared").resolve() in roots  # beside the git top level
    assert (checkout / "shared").resolve() in roots  # beside the current directory
    assert len(roots) == len(set(roots))


def test_found_beside_the_current_checkout_and_named_where_missing(tmp_path, monkeypatch):
    checkout = tmp_path / "clone"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    telecom = _dataset(tmp_path / "shared", "telecom")
    import pipeline.tau2.data as data

    monkeypatch.setattr(data, "__file__", str(tmp_path / "elsewhere" / "pipeline" / "tau2" / "data.py"))
    assert tau2_data_dir("telecom", cwd=checkout) == telecom.resolve()
    with pytest.raises(Tau2DataNotFound, match=r"AGENTLOOP_TAU2_AIRLINE.*AGENTLOOP_SHARED") as err:
        tau2_data_dir("airline", cwd=checkout)
    assert str(tmp_path / "shared" / "tau2_airline") in str(err.value)
    with pytest.raises(InputError, match="unknown τ²-bench data set 'mock'"):
        tau2_data_dir("mock")
