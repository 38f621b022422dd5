"""No evaluation customer in any training input: the loop's stage functions on a one-world domain (the library,
its customers split) and on generator domains on the generic path, then each kind of training input with an
evaluation customer planted, refused where training reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.authoring.heldout import HeldOut, HeldOutCustomerError
from pipeline.authoring.partition import evaluation_customers, partition
from pipeline.dataset.io import read_tasks, write_tasks
from pipeline.rollout.trajectory import Trajectory
from pipeline.world.registry import load_world
from tests.needs import need_tau2

LIBRARY = "tests.domains.library.domain:LIBRARY"
BASELINE = "flawed:invention=0.4,misread=0.4,plan_adherence=0.3"


def _params(domain: str, eval_world: str, train_world: str, eval_tasks: int = 12):
    from pipeline.loop.params import Params

    return Params.model_validate(
        {
            "world": {
                "eval_tasks": eval_tasks, "domain": domain, "eval_world": eval_world, "train_world": train_world,
            },
            "baseline": {"source": f"agent:{BASELINE}"},
            "measure": {"trials": 1, "executor": "serial", "resamples": 100},
            "target": {"budget": 8},
            "synthesize": {"config": {"max_generations": 1}, "anchors": 6},
            "curate": {"probes": 1, "executor": "serial"},
            "train": {"method": "agent:oracle"},
            "gate": {"k": 1, "resamples": 100},
        }
    )  # fmt: skip


def _loop_inputs(p) -> None:
    """The stages up to curation: held-out tasks, measure, target, synthesize (and anchors), curate."""
    from pipeline.loop import stages

    assert stages.make_eval_tasks(p) > 0
    stages.build_baseline(p)
    stages.measure_baseline(p)
    stages.make_targets(p)
    stages.synthesize(p)
    stages.curate(p)


def _trajectories(path: Path) -> list[Trajectory]:
    from pipeline.train.sft_data import read_trajectories

    return read_trajectories(path)


def _training_pairs() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(world, customer) of every held-out task, and of every training input the stages wrote."""
    from pipeline.loop import paths

    held = {(t.world, t.customer_user_id) for t in read_tasks(paths.EVAL_TASKS)}
    synth = {t.id: t for t in read_tasks(paths.SYNTH_DIR / "tasks.jsonl")}
    trained = {(t.world, t.customer_user_id) for t in synth.values()}
    for path in (paths.SYNTH_DIR / "trajectories.jsonl", paths.ANCHORS, paths.CURATED_DIR / "selected.jsonl"):
        for traj in _trajectories(path):
            task = synth.get(traj.task_id)
            if task is not None:
                trained.add((traj.world, task.customer_user_id))
            trained |= {(traj.world, e["authenticated_user_id"]) for e in traj.world_log if e["authenticated_user_id"]}
    return held, trained


def test_the_library_loop_trains_on_no_evaluation_customer(tmp_path, monkeypatch):
    """A one-world domain: held-out tasks in the evaluation partition, synthesis, anchors and curation in the
    training one; SFT's and GRPO's readers accept what the loop made."""
    from pipeline.loop import paths

    monkeypatch.chdir(tmp_path)
    p = _params(LIBRARY, "library", "library")
    _loop_inputs(p)
    world = load_world("library", LIBRARY)
    part = partition(world)
    held, trained = _training_pairs()
    assert {c for _, c in held} <= part.eval
    assert trained and {c for _, c in trained} <= part.train and not held & trained
    anchors = _trajectories(paths.ANCHORS)
    assert anchors and {e["authenticated_user_id"] for a in anchors for e in a.world_log} - {None} <= part.train
    assert len(read_tasks(paths.SYNTH_DIR / "tasks.jsonl")) > 0


@pytest.mark.parametrize(
    ("domain", "data"),
    [("airline+generic", "airline"), ("retail+generic", "retail"), ("retail", "retail")],
)
def test_a_generator_domain_trains_in_its_generated_world_only(tmp_path, monkeypatch, domain, data):
    """Held-out tasks in τ²-bench's world, every training input in gen-0: no (world, customer) pair shared."""
    eval_world = str(need_tau2(data))
    monkeypatch.chdir(tmp_path)
    p = _params(domain, eval_world, "gen-0-30x30x60" if data == "retail" else "gen-0-40x30x60", eval_tasks=6)
    _loop_inputs(p)
    held, trained = _training_pairs()
    assert trained and not held & trained
    assert {w for w, _ in trained} == {load_world(p.train_world(), domain).name}


# ------------------------------------------------------------------------------------------------------------------
# Planted: an evaluation customer in each kind of training input, refused where it is read, named.


@pytest.fixture(scope="module")
def library_run(tmp_path_factory):
    """The library's loop inputs, made once (the stage functions in a folder of their own)."""
    import os

    where = tmp_path_factory.mktemp("library")
    before = os.getcwd()
    os.chdir(where)
    try:
        _loop_inputs(_params(LIBRARY, "library", "library"))
    finally:
        os.chdir(before)
    return where


def _planted(run: Path, out: Path) -> tuple[Path, Path, str, str]:
    """A copy of the synthesized tasks and trajectories whose first task is moved onto an evaluation customer
    (its id kept, so its trajectory resolves to it): (tasks file, trajectories file, task id, customer)."""
    customer = read_tasks(run / "data/eval/tasks.jsonl")[0].customer_user_id
    assert customer in evaluation_customers(load_world("library", LIBRARY))
    tasks = read_tasks(run / "data/synth/tasks.jsonl")
    tasks[0] = tasks[0].model_copy(update={"customer_user_id": customer})
    out.mkdir(parents=True, exist_ok=True)
    write_tasks(out / "tasks.jsonl", tasks)
    lines = (run / "data/synth/trajectories.jsonl").read_text().splitlines()
    (out / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    return out / "tasks.jsonl", out / "trajectories.jsonl", tasks[0].id, customer


def _refused(exc: pytest.ExceptionInfo, task_id: str, customer: str, where: str) -> None:
    text = str(exc.value)
    assert task_id in text and repr(customer) in text and "'library'" in text and where in text, text
    assert "\n" not in text


def test_a_planted_task_is_refused_by_synthesis_curation_sft_and_grpo(library_run, tmp_path):
    from pipeline.curate import CurateConfig, curate
    from pipeline.train.grpo import build_trainer
    from pipeline.train.grpo_config import GRPOConfig
    from pipeline.train.sft_config import SFTConfig
    from pipeline.train.sft_data import load_data

    tasks, trajs, task_id, customer = _planted(library_run, tmp_path / "planted")
    held = library_run / "data/eval/tasks.jsonl"
    # synthesize's output, as the stage checks it before writing
    with pytest.raises(HeldOutCustomerError) as exc:
        HeldOut.read([held]).add_world(load_world("library", LIBRARY)).check_tasks(read_tasks(tasks), str(tasks))
    _refused(exc, task_id, customer, str(tasks))
    # curation's pool (trajectories resolved through their tasks)
    config = CurateConfig(pool=[trajs], tasks=tasks, world="library", domain=LIBRARY, agent="oracle", held_out=held)
    with pytest.raises(HeldOutCustomerError) as exc:
        curate(config, tmp_path / "curated")
    _refused(exc, task_id, customer, str(tasks))
    # SFT: its tasks, its data
    with pytest.raises(HeldOutCustomerError) as exc:
        load_data(SFTConfig(data=[trajs], tasks=[tasks], held_out=[held]))
    _refused(exc, task_id, customer, str(tasks))
    # GRPO's task pool, refused before any model loads
    with pytest.raises(HeldOutCustomerError) as exc:
        build_trainer(GRPOConfig(base=tmp_path / "no-model", tasks=[tasks], held_out=[held]), str(tmp_path / "s"))
    _refused(exc, task_id, customer, str(tasks))


def test_a_planted_trajectory_or_anchor_is_refused_by_whom_it_authenticated(library_run, tmp_path):
    """Anchors have no task file: a trajectory is also checked by every customer its world log authenticated."""
    from pipeline.train.sft_config import SFTConfig
    from pipeline.train.sft_data import load_data

    world = load_world("library", LIBRARY)
    customer = sorted(evaluation_customers(world))[0]
    anchors = (library_run / "data/synth/anchors.jsonl").read_text().splitlines()
    first = json.loads(anchors[0])
    for event in first["world_log"]:
        if event["authenticated_user_id"]:
            event["authenticated_user_id"] = customer
    planted = tmp_path / "anchors.jsonl"
    planted.write_text("\n".join([json.dumps(first), *anchors[1:]]) + "\n")
    synth = library_run / "data/synth"
    params = SFTConfig(data=[synth / "trajectories.jsonl"], anchors=[planted], tasks=[synth / "tasks.jsonl"])
    with pytest.raises(HeldOutCustomerError) as exc:
        load_data(params)  # no held-out file: the world's evaluation partition is enough
    _refused(exc, first["task_id"], customer, str(planted))
    # the curated selection's rows wrap the trajectory: the same check reads them
    rows = (library_run / "data/curated/selected.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    for event in row["trajectory"]["world_log"]:
        if event["authenticated_user_id"]:
            event["authenticated_user_id"] = customer
    selected = tmp_path / "selected.jsonl"
    selected.write_text("\n".join([json.dumps(row), *rows[1:]]) + "\n")
    with pytest.raises(HeldOutCustomerError) as exc:
        load_data(SFTConfig(data=[selected], tasks=[synth / "tasks.jsonl"]))
    _refused(exc, row["task_id"], customer, str(selected))


def test_a_held_out_task_is_refused_by_its_id_and_its_customer(library_run, tmp_path):
    """The held-out file's own tasks, whatever world split: refused as held-out tasks, and a task of another id
    about a held-out task's customer as an evaluation customer."""
    held = library_run / "data/eval/tasks.jsonl"
    tasks = read_tasks(held)
    guard = HeldOut.read([held])
    with pytest.raises(HeldOutCustomerError, match="is a held-out task"):
        guard.check_tasks(tasks[:1], "planted.jsonl", LIBRARY)
    moved = tasks[0].model_copy(update={"id": "another-id"})
    with pytest.raises(HeldOutCustomerError, match=f"customer {tasks[0].customer_user_id!r}, an evaluation"):
        guard.check_tasks([moved], "planted.jsonl", LIBRARY)


def test_held_out_generation_and_synthesis_share_one_split():
    """The evaluation side is the world's: held-out tasks ground in it, the anchors' side and synthesis in the
    rest, with no seed to set apart."""
    from pipeline.authoring.templates import generate_tasks
    from pipeline.synth.config import SynthConfig

    world = load_world("library", LIBRARY)
    part = partition(world)
    assert "partition_seed" not in SynthConfig.model_fields
    assert {t.customer_user_id for t in generate_tasks(world, 6)} <= part.eval
    train = generate_tasks(world, 6, seed=3, side="train")
    assert train and {t.customer_user_id for t in train} <= part.train
    assert {t.provenance.dials["partition"] for t in train} == {"train:0"}


def test_the_commands_refuse_it_in_one_line(library_run, tmp_path):
    """`--held-out` on curate and train grpo (before any model loads): exit 2, one line naming the task and the
    customer."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    tasks, trajs, task_id, customer = _planted(library_run, tmp_path / "planted")
    held = str(library_run / "data/eval/tasks.jsonl")
    runs = {
        "curate": ["curate", "--pool", str(trajs), "--tasks", str(tasks), "--world", "library", "--domain", LIBRARY,
                   "--agent", "oracle", "--out", str(tmp_path / "cur"), "--held-out", held],
        "train grpo": ["train", "grpo", "--base", str(tmp_path / "no-model"), "--tasks", str(tasks), "--out",
                       str(tmp_path / "ckpt"), "--held-out", held],
    }  # fmt: skip
    for name, args in runs.items():
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (name, result.output)
        line = " ".join(result.output.split())
        assert task_id in line and repr(customer) in line and "an evaluation customer" in line, (name, line)


def test_a_record_of_an_evaluation_customer_named_in_training_data_is_refused(library_run):
    """A request about another customer's record (or a call's argument) naming an evaluation customer's record:
    the record's key is that customer as much as their id is."""
    world = load_world("library", LIBRARY)
    evaluation = evaluation_customers(world)
    loan = next(k for k, r in world.table("loans").items() if world.domain.owner("loans", r) in evaluation)
    owner = world.domain.owner("loans", world.table("loans")[loan])
    tasks = read_tasks(library_run / "data/synth/tasks.jsonl")
    task = next(t for t in tasks if t.gold_actions)
    action = task.gold_actions[-1].model_copy(update={"arguments": {"loan_id": loan}})
    planted = task.model_copy(update={"gold_actions": [*task.gold_actions[:-1], action]})
    guard = HeldOut().add_world(world)
    guard.check_tasks(tasks, "tasks.jsonl")  # what synthesis made names none
    with pytest.raises(HeldOutCustomerError) as exc:
        guard.check_tasks([planted], "tasks.jsonl")
    assert f"names loans record {loan!r} of customer {owner!r}, an evaluation customer" in str(exc.value)
