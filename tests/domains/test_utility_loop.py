"""A domain none of the generic code was built beside (tests/domains/utility: accounts identified by number and PIN,
one `name` field, a write over a list of bills, a free-text write, refusals decided by a record of another table)
runs the loop on the generic path: held-out tasks on its evaluation customers, the generic oracle solving every
held-out and synthesized task, every failure mode named where the generic flawed agent planted it, every customer
addressed by their own name, and no evaluation customer in anything the loop trains on."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pipeline.authoring.partition import partition
from pipeline.dataset.io import read_tasks
from pipeline.dataset.task import Task
from pipeline.grading.failure_modes import analyze
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import score
from pipeline.grading.modes import FAILURE_MODES
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from pipeline.world.tables import World, WorldLoadError
from pipeline.world.tools import execute
from tests.domains.one_world import exp_run_one_world

SPEC = "tests.domains.utility.domain:UTILITY"
HERE = Path(__file__).parent / "utility"
BASELINE = "flawed:invention=0.4,misread=0.4,plan_adherence=0.3"
TOKEN = re.compile(r"[\w.@+-]+")


@pytest.fixture(scope="module")
def world() -> World:
    return load_world("utility", SPEC)


@pytest.fixture(scope="module")
def drawn(world) -> list[Task]:
    """A larger held-out draw than the loop's, for what needs every write and every mode several times."""
    return world.domain.require("tasks")(world, 40, seed=1)


@pytest.fixture(scope="module")
def loop(tmp_path_factory) -> Path:
    """The loop's stage functions, as dvc.yaml runs them, in a fresh folder: scripted agents for the models."""
    from pipeline.loop import stages
    from pipeline.loop.params import Params

    root = tmp_path_factory.mktemp("loop")
    p = Params.model_validate(
        {
            "world": {"eval_tasks": 16, "domain": SPEC, "eval_world": "utility", "train_world": "utility"},
            "baseline": {"source": f"agent:{BASELINE}"},
            "measure": {"trials": 2, "executor": "serial", "resamples": 200},
            "target": {"budget": 12},
            "synthesize": {"config": {"max_generations": 3}, "anchors": 8},
            "curate": {"probes": 1, "executor": "serial"},
            "train": {"method": "agent:oracle"},
            "gate": {"k": 2, "resamples": 300},
        }
    )
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert stages.make_eval_tasks(p) == 16
        stages.build_baseline(p)
        stages.measure_baseline(p)
        stages.make_targets(p)
        assert len(stages.synthesize(p).tasks) >= 12
        assert stages.curate(p)["pool"]["verified"] >= 12
        stages.train_candidate(p)
        stages.remeasure_candidate(p)
        assert stages.gate(p).promote
    finally:
        os.chdir(cwd)
    return root


def _held_out(loop: Path) -> list[Task]:
    return read_tasks(loop / "data" / "eval" / "tasks.jsonl")


def _synthesized(loop: Path) -> list[Task]:
    return read_tasks(loop / "data" / "synth" / "tasks.jsonl")


def _passes(world: World, task: Task, agent) -> bool:
    return grade(world, task, run_episode(world, task, agent, ScriptedUser())).passed


def test_held_out_tasks_are_grounded_in_evaluation_customers_and_carry_out_every_write(world, loop, drawn):
    """Every write of the utility succeeds for some customer's record, so some held-out task carries it out."""
    held = _held_out(loop)
    assert len(held) == 16 and {t.customer_user_id for t in [*held, *drawn]} <= _evaluation_side(world, held)
    assert len(drawn) == 40 and world.domain.tools.of_kind("write") <= {a.name for t in drawn for a in t.gold_actions}


def test_the_generic_oracle_solves_every_held_out_and_synthesized_task(world, loop, drawn):
    oracle = world.domain.require("oracle")()
    tasks = [*_held_out(loop), *drawn, *_synthesized(loop)]
    assert [t.id for t in tasks if not _passes(world, t, oracle)] == []


def test_every_failure_mode_is_named_where_it_was_planted(world, drawn):
    """The generic flawed agent plants each mode of the registry; the classifier names it there, and not
    elsewhere: every one of them (precision and recall 1.0, beyond the bench's bar)."""
    agent = world.domain.require("flaws")(dict.fromkeys(FAILURE_MODES, 0.5), seed=0)
    rows = []
    for task in drawn:
        for trial in range(3):
            trajectory = run_episode(world, task, agent, ScriptedUser(), trial=trial)
            verdict = grade(world, task, trajectory)
            analysis = analyze(task, trajectory, verdict)
            rows.append((agent.planted(task, trial), analysis.modes, analysis.dominant, verdict.passed))
    report = score(rows, FAILURE_MODES)
    for mode in FAILURE_MODES:
        got = report.per_mode[mode]
        assert got.planted and got.recall == 1.0 and got.precision == 1.0, (mode, got)


def test_every_customer_is_addressed_by_their_own_name(world, loop, drawn):
    accounts = world.table("accounts")
    for task in [*_held_out(loop), *drawn, *_synthesized(loop)]:
        goal = task.user_script.goal
        assert accounts[task.customer_user_id].name in goal and "None" not in goal.split(), (task.id, goal)


def test_requests_say_what_a_customer_would(world, loop, drawn):
    """Lists spoken as items, free text in words the domain gave (a docstring's example, a record's, the policy),
    a record id of the customer's own unless the request is about another customer's record on purpose, and
    nothing the customer does not have (these accounts have no email)."""
    own_words = world.policy + json.dumps({t: [r.model_dump() for r in world.table(t).values()]
                                           for t in world.table_names})  # fmt: skip
    own_words += json.dumps(world.domain.tools.schemas())
    for task in [*_held_out(loop), *drawn, *_synthesized(loop)]:
        assert "email" not in task.user_script.goal, (task.id, task.user_script.goal)  # the accounts have none
        parts = task.provenance.dials.get("parts", "")  # the templates of a task of several requests
        for req in task.user_script.requests:
            assert not re.search(r"[\[\]{}\"]", req.utterance), (task.id, req.utterance)
            reason = req.details.get("reason")
            assert reason is None or reason in own_words, (task.id, reason)
            on_purpose = req.expect == "refused" and "other_customer" in f"{task.provenance.template}{parts}"
            if req.record_id and not on_purpose:
                assert _owner(world, req.record_id) in (None, task.customer_user_id), (task.id, req.record_id)


def test_no_evaluation_customer_in_any_training_input(world, loop):
    """Synthesized tasks and their trajectories, the anchors and the curated set (the SFT data; the tasks GRPO
    reads) name no evaluation customer of the world: not as the customer, not by a record of theirs."""
    held = _evaluation_side(world, _held_out(loop))
    assert {t.customer_user_id for t in _held_out(loop)} <= held
    inputs = [loop / "data" / "synth" / f for f in ("tasks.jsonl", "trajectories.jsonl", "anchors.jsonl")]
    inputs.append(loop / "data" / "curated" / "selected.jsonl")
    assert all(f.exists() for f in inputs) and (loop / "data" / "synth" / "anchors.jsonl").read_text().strip()
    for f in inputs:
        leaked = _evaluation_customers(world, held, f.read_text())
        assert not leaked, f"{f.name} names evaluation customers {sorted(leaked)}"


def test_sft_reads_the_loops_training_data_in_the_utilitys_own_words(world, loop):
    """What the train stage would give SFT (curated set, synthesized trajectories, anchors): every trajectory of a
    synthesized task re-grades as passing in its own domain, and the prompt is the utility's policy and tools."""
    from pipeline.train.sft_config import SFTConfig
    from pipeline.train.sft_data import load_data, world_prompt

    synth = loop / "data" / "synth"
    params = SFTConfig(data=[loop / "data" / "curated" / "selected.jsonl", synth / "trajectories.jsonl"],
                       anchors=[synth / "anchors.jsonl"], tasks=[synth / "tasks.jsonl"])  # fmt: skip
    examples, manifest = load_data(params)
    counts = manifest["data_counts"]
    assert counts["verified"] > 0 and counts["failed_verification"] == 0 and manifest["anchor_examples"] > 0
    assert all(world_prompt(t) == (world.policy, world.tools.schemas()) for t in examples[:3])


def test_every_precondition_exploration_keeps_is_lifted_by_its_field_alone(world):
    """A refusal pinned on a field of a record is lifted by that field alone: the explorer's own refused call, that
    field set to a value it allows, succeeds or is refused for a reason not about that field. The record is the one
    the call names, or one it refers to (`on` 'bill_id.meter_id': the bill's meter), so a refusal decided by another
    table's record never stands as a false precondition on the record named."""
    from pipeline.explore.learn import pattern_regex
    from pipeline.explore.probe import world_model

    model, checked = world_model(world), 0
    for tool, write in model.writes.items():
        for group in write.refusals:
            pre = group.precondition
            if pre is None or pre.kind != "field":
                continue
            arg, _, via = (pre.on or write.subject).partition(".")  # via: the named record's field naming another
            table = model.tools[tool].args[arg].table or write.subject_table
            about_field = [pattern_regex(g.pattern) for g in write.refusals
                           if g.precondition and g.precondition.field == pre.field]  # fmt: skip
            lifted = False
            for recipe, value in ((r, v) for r in group.recipes for v in pre.allowed):
                named = recipe.arguments[arg]
                keys, where = named if isinstance(named, list) else [named], table
                if via:  # the record the named one refers to (a bill's meter)
                    keys = [getattr(world.table(table)[k], via) for k in keys]
                    where = next(t for t, m in model.tables.items() if m.key_field == via)
                session = world.session(authenticated_user_id=recipe.user)
                for key in keys:
                    setattr(session.edit(where, key), pre.field, value)
                event = execute(session, tool, recipe.arguments)
                lifted = lifted or event.ok or not any(rx.match(event.error or "") for rx in about_field)
            assert lifted, (tool, group.example, pre)
            checked += 1
    assert checked >= 5


def test_every_conditional_pair_of_a_held_out_draw_is_gold_on_both_branches(world):
    """'If the meter is active, change its tariff; otherwise request reconnection': across a held-out draw every
    pair of heading write and sibling is carried out as gold both ways, each branch the one the record selects, and
    the generic oracle solves them."""
    from pipeline.dataset.branching import branches, condition
    from pipeline.explore.coverage import coverage
    from pipeline.explore.probe import world_model

    model = world_model(world)
    tasks = world.domain.require("tasks")(world, 120, seed=1)
    cov = coverage(model, tasks)["conditional"]
    assert len(cov) >= 3 and all(c["holds"] and c["otherwise"] for c in cov.values()), cov
    oracle, gold = world.domain.require("oracle")(), {}
    for t in tasks:
        for i, req in enumerate(t.user_script.requests):
            pair = branches(req.intent)
            if pair is None:
                continue
            field, allowed = condition(req)
            state = getattr(world.table("meters")[req.record_id], field)
            write = next(a for a in t.gold_actions if a.request == i and a.name in pair)
            assert write.name == (pair[0] if state in allowed else pair[1]), (t.id, state, write.name)
            assert _passes(world, t, oracle), t.id
            gold.setdefault(pair, set()).add(write.name)
    assert len(gold) == len(cov) and all(taken == set(pair) for pair, taken in gold.items()), gold


def test_task_ids_carry_the_worlds_name_not_its_folder(tmp_path):
    folder = tmp_path / "deep" / "utility-copy"
    folder.mkdir(parents=True)
    shutil.copy(HERE / "db.json", folder / "db.json")
    world = load_world(str(folder), SPEC)
    tasks = world.domain.require("tasks")(world, 4, seed=0)
    assert tasks and not [t.id for t in tasks if str(tmp_path) in t.id or "/" in t.id]
    assert all(t.id.startswith(f"{t.world}-") and t.world == "utility-copy" for t in tasks), [t.id for t in tasks]


def test_a_bad_record_is_named_by_file_table_key_and_field(tmp_path):
    raw = json.loads((HERE / "db.json").read_text())
    raw["meters"][next(iter(raw["meters"]))]["status"] = "broken"
    (tmp_path / "db.json").write_text(json.dumps(raw))
    with pytest.raises(WorldLoadError, match=r"db\.json: meters\.MT-\d+\.status: Input should be") as err:
        load_world(str(tmp_path), SPEC)
    assert "\n" not in str(err.value)


def _evaluation_side(world: World, held_out: list[Task]) -> frozenset[str]:
    """The evaluation partition the held-out tasks record (`provenance.dials['partition']`, 'eval:<seed>')."""
    tags = {t.provenance.dials.get("partition") for t in held_out}
    assert len(tags) == 1 and str(next(iter(tags))).startswith("eval:"), tags
    return partition(world, int(str(tags.pop()).split(":")[1])).eval


def _owner(world: World, key: str) -> str | None:
    for table in world.table_names:
        record = world.table(table).get(key)
        if record is not None:
            return world.domain.owner(table, record)
    return None


def _evaluation_customers(world: World, held: frozenset[str], text: str) -> set[str]:
    """The evaluation customers a training file names: by their id or by the key of a record they own."""
    owned = {k: world.domain.owner(t, r) for t in world.table_names for k, r in world.table(t).items()}
    return {owned[tok] for tok in set(TOKEN.findall(text)) if owned.get(tok) in held}


@pytest.mark.slow
def test_exp_run_runs_the_loop_on_it_without_an_evaluation_customer_in_training(tmp_path, world):
    """`dvc exp run` in a copy of the repository, every stage of the loop, with the utility named in params."""
    repo = exp_run_one_world(tmp_path, SPEC, "utility", BASELINE)
    held = _evaluation_side(world, [Task.model_validate_json(line) for line in
                                    (repo / "data" / "eval" / "tasks.jsonl").read_text().splitlines()])  # fmt: skip
    for f in ("synth/tasks.jsonl", "synth/trajectories.jsonl", "synth/anchors.jsonl", "curated/selected.jsonl"):
        leaked = _evaluation_customers(world, held, (repo / "data" / f).read_text())
        assert not leaked, f"{f} names evaluation customers {sorted(leaked)}"
    gate = json.loads((repo / "gate" / "gate.json").read_text())
    assert gate["promote"] is True and gate["pass_hat_k"]["candidate"] > gate["pass_hat_k"]["champion"]
