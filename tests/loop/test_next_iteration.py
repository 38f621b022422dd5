"""The next iteration comes from the registry: one past the latest iteration that moved `champion`, from the
champion, in a training world of its own; a blocked or pull-request iteration moved nothing and is run again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pipeline.errors import TrackingError
from pipeline.loop.next_iteration import main, next_iteration
from pipeline.loop.params import load_params
from pipeline.metrics.headline import example
from pipeline.tracking import TrackingConfig
from pipeline.tracking.headline import HEADLINE_TAG

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path):
    return TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlruns.db'}")


@pytest.fixture
def params(tmp_path):
    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    return path


def _iteration(config: TrackingConfig, iteration: int, *, moved: bool, version: str | None = None) -> str:
    """An iteration run as `promote` leaves it; with `version`, a registered version (alias champion if moved)."""
    client = config.client()
    exp = config.experiment_id(client)
    headline = example().model_copy(
        update={"iteration": iteration, "champion_moved": moved, "outcome": "promote" if moved else "block"}
    )
    run = client.create_run(exp, tags={"agentloop.kind": "iteration", HEADLINE_TAG: headline.model_dump_json()})
    client.set_terminated(run.info.run_id)
    if version is None:
        return ""
    try:
        client.get_registered_model(config.model_name)
    except Exception:
        client.create_registered_model(config.model_name)
    mv = client.create_model_version(
        config.model_name, source="file:///nowhere", run_id=run.info.run_id, tags={"agentloop.iteration": version}
    )
    if moved:
        client.set_registered_model_alias(config.model_name, "champion", mv.version)
    return str(mv.version)


def test_without_a_champion_it_is_iteration_one_from_the_committed_baseline(params, store):
    p = load_params(params)
    plan = next_iteration(p, store)
    assert (plan.iteration, plan.baseline, plan.champion) == (1, p.baseline.source, None)
    assert plan.train_world == p.world.train_world and plan.eval_world == p.world.eval_world
    assert not Path(store.tracking_uri.removeprefix("sqlite:///")).exists()  # reading created no store

    _iteration(store, 1, moved=False)  # a pull request's (or a blocked) iteration 1 moved nothing
    assert next_iteration(p, store).iteration == 1


def test_after_promotions_the_next_iteration_starts_from_the_champion_in_a_world_of_its_own(params, store):
    p = load_params(params)
    v1 = _iteration(store, 1, moved=True, version="1")
    plan = next_iteration(p, store)
    assert (plan.iteration, plan.baseline, plan.champion, plan.last_promoted) == (2, "champion", v1, 1)
    assert plan.train_world == "gen-8" and plan.eval_world == p.world.eval_world  # held-out fixed
    _iteration(store, 2, moved=False, version="2")  # blocked: iteration 2 again, from v1
    assert (next_iteration(p, store).iteration, next_iteration(p, store).champion) == (2, v1)
    v3 = _iteration(store, 2, moved=True, version="2")  # its retry promoted
    _iteration(store, 3, moved=False)  # a pull request since (ended last) moved nothing
    plan = next_iteration(p, store)
    assert (plan.iteration, plan.champion, plan.train_world) == (3, v3, "gen-9")


def test_a_champion_whose_version_repeats_an_earlier_one_still_counts_the_iteration_that_moved_it(params, store):
    """The same checkpoint registered again is the earlier version (its iteration tag says 1): the iteration runs
    that promoted it say how far the loop got."""
    p = load_params(params)
    _iteration(store, 1, moved=True, version="1")
    _iteration(store, 2, moved=True)  # promoted version 1 again (same digest)
    assert next_iteration(p, store).iteration == 3


def test_write_sets_iteration_and_source_keeping_the_file(params, store, monkeypatch, capsys, tmp_path):
    _iteration(store, 1, moved=True, version="1")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.tracking_uri)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("GITHUB_ENV", str(tmp_path / "env"))
    before = params.read_text()
    assert main(["--params", str(params), "--write"]) == 0
    assert capsys.readouterr().out.startswith("iteration 2 from champion v1 (iteration 1 promoted it); trains in gen-8")
    after = params.read_text()
    data = yaml.safe_load(after)
    assert data["loop"]["iteration"] == 2 and data["baseline"]["source"] == "champion"
    assert data["world"] == yaml.safe_load(before)["world"]  # the evaluation world is never moved
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("  iteration: 1", "  iteration: 2"), ("  source: embedded", "  source: champion")]
    assert (tmp_path / "out").read_text() == "iteration=2\nbaseline=champion\ntrain_world=gen-8\n"
    assert (tmp_path / "env").read_text() == "AGENTLOOP_EXPECTED_CHAMPION=1\n"  # what promote is gated against


def test_a_first_iteration_is_planned_against_no_champion(params, store, monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.tracking_uri)
    monkeypatch.setenv("GITHUB_ENV", str(tmp_path / "env"))
    assert main(["--params", str(params), "--write"]) == 0
    assert (tmp_path / "env").read_text() == "AGENTLOOP_EXPECTED_CHAMPION=none\n"


def test_an_unreachable_registry_is_one_line_and_leaves_params_alone(params, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens on the discard port
    before = params.read_text()
    assert main(["--params", str(params), "--write"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: next iteration: MLflow at http://127.0.0.1:9 is not reachable") and "\n" not in err
    assert params.read_text() == before
    with pytest.raises(TrackingError):
        next_iteration(load_params(params))
