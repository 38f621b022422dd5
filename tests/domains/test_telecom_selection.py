"""Telecom's held-out tasks, its training pool, and synthesis by selection from that pool (quick: a handful of
verified tasks)."""

import json

import pytest

from pipeline.authoring.selection_kit import cells_by_mode
from pipeline.domains.telecom.synthesis import TELECOM_KIT
from pipeline.domains.telecom.tasks import held_out, parse_id, scenario, training_pool
from pipeline.errors import TaskError
from pipeline.synth.config import SynthConfig
from pipeline.synth.select import select
from pipeline.target.split import ModeTarget, Targets
from pipeline.world.registry import load_world
from pipeline.world.tables import WorldLoadError
from tests.needs import need_tau2


@pytest.fixture(scope="module")
def telecom_dir():
    return need_tau2("telecom")


@pytest.fixture(scope="module")
def world(telecom_dir):
    return load_world(str(telecom_dir), "telecom")


def test_held_out_is_the_test_split_and_the_pool_shares_no_scenario(world, telecom_dir):
    split = json.loads((telecom_dir / "split_tasks.json").read_text())
    held = held_out(world)
    test = set(split["test"])
    base = [x["id"] for x in json.loads((telecom_dir / "tasks.json").read_text())]
    assert [t.id for t in held] == [i for i in base if i in test] and len(held) == len(test)
    pool = training_pool(world)
    ids = {t.id for t in pool}
    assert len(ids) == len(pool)
    assert set(split["train"]) <= ids
    assert not {scenario(t.id) for t in pool} & {scenario(t.id) for t in held}
    if (telecom_dir / "tasks_full.json").exists():
        assert len(pool) > 2000
    assert world.domain.require("tasks")(world, 5) == held[:5]


def test_task_ids_parse_into_issue_faults_and_persona():
    assert parse_id("[mms_issue]airplane_mode_on|unseat_sim_card[PERSONA:Easy]") == (
        "mms_issue",
        ("airplane_mode_on", "unseat_sim_card"),
        "Easy",
    )
    assert scenario("[service_issue]lock_sim_card_pin[PERSONA:None]") == "[service_issue]lock_sim_card_pin"
    with pytest.raises(TaskError, match="task id 'task-1'"):
        parse_id("task-1")


def test_a_world_not_read_from_a_data_directory_says_so(world):
    from pipeline.world.tables import World

    bare = World({}, policy="", name="bare", domain=world.domain)
    with pytest.raises(WorldLoadError, match="not loaded from a τ²-bench data directory"):
        held_out(bare)


def test_selection_aims_at_the_measured_cell_and_verifies_each_task(world):
    cell = "mms_issue/unseat_sim_card/done"
    mode = ModeTarget(count=3, rate=0.5, weight=1.0, score=0.5, floor=0, dials={})
    targets = Targets(budget=3, modes={"plan_adherence": mode}, cells={"plan_adherence": {cell: 1.0}})
    config = SynthConfig(measured_share=1.0, verify={"limits": {"max_turns": 60}})
    result = select(world, targets, config, TELECOM_KIT)
    assert len(result.tasks) == 3 and len(result.trajectories) == 3
    for task in result.tasks:
        assert cell in TELECOM_KIT.cells(task)
        assert task.provenance.failure_mode == "plan_adherence" and task.provenance.dials["aim"] == "measured"
    assert {t.task_id for t in result.trajectories} == {t.id for t in result.tasks}
    assert result.manifest["flaw_check"]["plan_adherence"] == {"detected": 3}
    assert result.manifest["verification"] == {"ok": 3}
    assert cells_by_mode(TELECOM_KIT, result.tasks[0])["misread"] == sorted(TELECOM_KIT.cells(result.tasks[0]))
    again = select(world, targets, config, TELECOM_KIT)
    assert [t.id for t in again.tasks] == [t.id for t in result.tasks]
