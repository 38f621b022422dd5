"""The airline domain replays τ²-bench airline's 50 tasks; the domain registry resolves and refuses by name."""

from __future__ import annotations

import json

import pytest

from pipeline.tau2.replay import write_replay
from pipeline.world.domain import DomainCapabilityError
from pipeline.world.registry import UnknownDomainError, load_world, resolve_domain


def test_all_50_tasks_replay_without_refusals(tau2_airline_dir, tmp_path):
    lines = write_replay(tau2_airline_dir, tmp_path / "air.jsonl")
    assert len(lines) == 50
    assert all(not line["failed_actions"] for line in lines)
    assert sum(1 for line in lines if any(line["changed"].values())) == 26  # as the data's README states
    assert list(lines[0]["changed"]) == ["flights", "users", "reservations"]
    booked = next(line for line in lines if line["task_id"] == "8")["changed"]["reservations"]["HATHAT"]
    assert booked["created_at"] == "2024-05-15T15:00:00" and booked["user_id"] == "sophia_silva_7557"
    assert json.loads((tmp_path / "air.jsonl").read_text().splitlines()[0])["task_id"] == lines[0]["task_id"]


def test_directory_domain_is_found_from_its_tables(tau2_airline_dir):
    world = load_world(str(tau2_airline_dir))
    assert world.domain.name == "airline"
    assert set(world.table_names) == {"flights", "users", "reservations"}


def test_unknown_domain_and_missing_capability_are_named():
    with pytest.raises(UnknownDomainError, match="nope"):
        resolve_domain("nope")
    with pytest.raises(UnknownDomainError, match="no attribute"):
        resolve_domain("pipeline.world.domain:MISSING")
    with pytest.raises(DomainCapabilityError, match="'tests.domains.toy.domain:TOY' does not provide 'tau2_importer'"):
        resolve_domain("tests.domains.toy.domain:TOY").require("tau2_importer")
    assert resolve_domain("pipeline.domains.retail.domain:RETAIL") is resolve_domain("retail")
