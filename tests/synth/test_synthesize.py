"""Targeted synthesis: budgets met, evolution and coverage, oracle-verified and discriminative tasks, no eval data."""

from __future__ import annotations

import json

import pytest

from pipeline.authoring.coverage import task_cells
from pipeline.dataset.io import read_tasks
from pipeline.dataset.replay import replay_gold
from pipeline.domains.retail.flawed import FlawConfig, FlawedAgent
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.phrases import ASK_ORDER
from pipeline.domains.retail.synthesis import RETAIL_KIT, TAXONOMY
from pipeline.grading.grader import grade
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Trajectory
from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import EvalWorldError, Synthesizer, synthesize
from pipeline.target import Targets, split_budget
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import small_world, unsupported_write_values
from tests.synth.synth_helpers import BUDGET, synthesized, targets


def test_budget_per_mode_and_manifest_counts():
    res = synthesized()
    m = res.manifest
    assert len(res.tasks) == BUDGET == m["tasks"]
    assert m["counts"]["by_mode"] == {k: v for k, v in sorted(m["targets"].items())}
    assert sum(m["counts"]["by_template"].values()) == BUDGET == sum(m["counts"]["by_depth"].values())
    assert len({t.id for t in res.tasks}) == BUDGET
    for t in res.tasks:
        assert (
            t.provenance.source == "synthesized" and t.provenance.failure_mode in TAXONOMY[t.provenance.template].modes
        )


def test_evolution_starts_from_every_atomic_action_and_grows_deeper():
    res = synthesized()
    roots = [t for t in res.tasks if t.provenance.depth == 0]
    assert {t.provenance.template for t in roots} == set(TAXONOMY)
    by_id = {t.id: t for t in res.tasks}
    deep = [t for t in res.tasks if t.provenance.depth >= 2]
    assert deep
    for t in res.tasks:
        if t.provenance.depth > 0 and t.provenance.parent in by_id:
            parent = by_id[t.provenance.parent]
            assert parent.provenance.template == t.provenance.template
            assert parent.provenance.depth < t.provenance.depth
    assert max(int(t.provenance.dials["requests"]) for t in res.tasks) >= 2


def test_coverage_includes_no_outcomes_and_every_dial():
    m = synthesized().manifest
    cov = m["coverage"]
    assert cov["by_outcome"]["refused"]["covered"] >= cov["by_outcome"]["refused"]["cells"] * 0.6
    assert cov["covered"] == sum(1 for n in cov["counts"].values() if n)
    for dial, n in m["counts"]["by_dial"].items():
        assert n > 0, dial
    assert m["counts"]["by_outcome"].get("refused", 0) > 0 and m["counts"]["by_outcome"].get("mixed", 0) > 0
    recorded = {"/".join(c) for t in synthesized().tasks for c in task_cells(RETAIL_KIT, t)}
    assert recorded == {c for c, n in cov["counts"].items() if n}


def test_rework_statistics_are_complete():
    rw = synthesized().manifest["rework"]
    totals = rw["totals"]
    assert totals["first_try"] + totals["reworked"] == BUDGET
    per = rw["by_template"].values()
    for key in ("first_try", "reworked", "dropped"):
        assert sum(s[key] for s in per) == totals[key]


def test_sample_solved_by_oracle_and_failed_by_the_flawed_agent_it_targets():
    world, user = small_world(), ScriptedUser()
    res = synthesized()
    plantable = 0
    for task in res.tasks[::3]:
        traj = run_episode(world, task, OracleAgent(), user, trial=1)  # another persona than the verified trial
        assert grade(world, task, traj).passed, task.id
        flawed = FlawedAgent(FlawConfig(rates={task.provenance.failure_mode: 1.0}, seed=0))
        if not flawed.planted(task, 0):
            assert all(r.expect == "refused" for r in task.user_script.requests), task.id
            continue
        plantable += 1
        bad = run_episode(world, task, flawed, user, trial=0)
        assert not grade(world, task, bad).passed, (task.id, flawed.planted_variants(task, 0))
    assert plantable >= len(res.tasks[::3]) // 2


def test_gold_trajectories_are_the_oracles_passing_runs():
    world = small_world()
    res = synthesized()
    assert [t.task_id for t in res.trajectories] == [t.id for t in res.tasks]
    for task, traj in zip(res.tasks, res.trajectories, strict=True):
        assert traj.agent == "oracle" and grade(world, task, traj).passed
        assert unsupported_write_values(traj.messages) == []
        assert traj.final_hash == replay_gold(world, task).state_hash()


def test_underspecified_requests_are_asked_about_before_any_lookup():
    res = synthesized()
    pairs = [(t, tr) for t, tr in zip(res.tasks, res.trajectories, strict=True) if t.provenance.dials["underspecified"]]
    assert pairs
    for task, traj in pairs:
        first = task.user_script.requests[0]
        assert first.order_id not in first.utterance or len(task.user_script.requests) > 1
        for k, msg in enumerate(traj.messages):
            for call in msg.tool_calls:
                if call.name == "get_order_details":
                    said = " ".join(m.content or "" for m in traj.messages[:k] if m.role == "user")
                    assert call.arguments["order_id"] in said, task.id
        assert any(m.content == ASK_ORDER for m in traj.messages)


def test_dials_limit_what_evolution_turns_on():
    allowed = ["forgot_email", "vague_item", "refusal"]
    res = Synthesizer(small_world(), targets(), SynthConfig(seed=0, dials=allowed)).run()
    by_dial = res.manifest["counts"]["by_dial"]
    assert res.manifest["dials"] == allowed and by_dial["forgot_email"] > 0 and by_dial["refusal"] > 0
    # messes that are not allowed never come up ('with_write' counts any refusal beside a write)
    assert by_dial["underspecified"] == by_dial["pushback"] == by_dial["also_request"] == 0, by_dial
    with pytest.raises(ValueError, match="unknown dial.*'rudeness'"):
        SynthConfig(dials=["forgot_email", "rudeness"])


def test_same_seed_same_tasks():
    again = Synthesizer(small_world(), targets(), SynthConfig(seed=0)).run()
    assert [t.model_dump() for t in again.tasks] == [t.model_dump() for t in synthesized().tasks]
    other = Synthesizer(small_world(), targets(), SynthConfig(seed=1)).run()
    assert [t.model_dump() for t in other.tasks] != [t.model_dump() for t in again.tasks]


def test_writes_outputs(tmp_path):
    res = synthesize(small_world(), targets(20), tmp_path, SynthConfig(seed=2, max_generations=2))
    tasks = read_tasks(tmp_path / "tasks.jsonl")
    assert [t.id for t in tasks] == [t.id for t in res.tasks]
    lines = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    assert [Trajectory.model_validate_json(x).task_id for x in lines] == [t.id for t in tasks]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["tasks"] == len(tasks) and manifest["generations"] <= 2


def test_a_rerun_writes_the_same_bytes(tmp_path):
    """Wall-clock figures stay out of the gold trajectories, so DVC sees a rerun as no change downstream."""
    for run in ("a", "b"):
        synthesize(small_world(), targets(20), tmp_path / run, SynthConfig(seed=2, max_generations=2))
    for name in ("tasks.jsonl", "trajectories.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    first = Trajectory.model_validate_json((tmp_path / "a" / "trajectories.jsonl").read_text().splitlines()[0])
    assert first.timings.wall_s == 0 and all(m.latency_s is None for m in first.messages)


def test_refuses_the_evaluation_world(tau2_world):
    with pytest.raises(EvalWorldError, match="evaluation world"):
        Synthesizer(tau2_world, targets())


def test_never_references_the_evaluation_worlds_entities(tau2_world):
    text = "\n".join(t.model_dump_json() for t in synthesized().tasks)
    text += "\n".join(t.model_dump_json() for t in synthesized().trajectories)
    db = tau2_world.db
    for name, ids in [
        ("user id", db.users),
        ("email", [u.email for u in db.users.values()]),
        ("order id", db.orders),
        ("payment method", [p for u in db.users.values() for p in u.payment_methods if p != "paypal"]),
    ]:
        leaked = [x for x in ids if x in text]
        assert leaked == [], (name, leaked[:5])


def test_cli_target_then_synthesize_and_refuse_the_eval_directory(tmp_path, tau2_dir):
    from typer.testing import CliRunner

    from pipeline.cli import app

    tfile = tmp_path / "targets.json"
    targets(16).write(tfile)
    runner = CliRunner()
    out = tmp_path / "syn"
    result = runner.invoke(
        app,
        ["synthesize", "--world", "gen-3-12x40x100", "--targets", str(tfile), "--out", str(out), "--generations", "2"],
    )
    assert result.exit_code == 0, result.output
    assert len(read_tasks(out / "tasks.jsonl")) == json.loads((out / "manifest.json").read_text())["tasks"] >= 14
    bad = runner.invoke(app, ["synthesize", "--world", str(tau2_dir), "--targets", str(tfile), "--out", str(out)])
    assert bad.exit_code == 2 and "evaluation world" in bad.output


def test_descendants_aim_at_the_cells_the_measurement_failed_in():
    cells = {
        "invention": {"cancel/plain/done": 0.5, "return/forgot_email/done": 0.5},
        "misread": {"cancel_wrong_status/pushback/refused": 1.0},
    }
    aimed = targets().model_copy(update={"cells": cells})
    res = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0)).run()
    by_aim = res.manifest["counts"]["by_aim"]
    assert by_aim["atomic"] == len(TAXONOMY) and by_aim["measured"] > 0
    for t in res.tasks:
        mode, aim = t.provenance.failure_mode, t.provenance.dials["aim"]
        if aim == "atomic":
            continue
        # a mode with measured cells aims every descendant at one of them; one without falls back to coverage
        assert aim == ("measured" if mode in cells else "coverage"), t.id
        if aim == "measured":
            assert {"/".join(c) for c in task_cells(RETAIL_KIT, t)} & set(cells[mode]), t.id
            assert t.provenance.dials["requests"] == 1 and t.provenance.depth == 1, t.id
    assert synthesized().manifest["counts"]["by_aim"].get("measured", 0) == 0  # no cells in the targets
    # a reworked candidate keeps the generation and aim it was built for
    assert all({"generation", "aim"} <= set(t.provenance.dials) for t in [*res.tasks, *synthesized().tasks])
    assert any("reworks" in t.provenance.dials for t in [*res.tasks, *synthesized().tasks])


def test_twins_make_the_refused_write_where_the_policy_allows_it():
    cells = {"misread": {"gift_card_short/plain/refused": 0.5, "cancel_wrong_status/pushback/refused": 0.5}}
    aimed = targets().model_copy(update={"cells": cells})
    res = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0, twin_share=0.5)).run()
    by_aim = res.manifest["counts"]["by_aim"]
    assert by_aim["twin"] > 0 and by_aim["measured"] > 0
    twins = [t for t in res.tasks if t.provenance.dials["aim"] == "twin"]
    assert {t.id.rsplit("-", 1)[1] for t in twins} <= {"modify_payment", "cancel"}
    for t in twins:  # the write the refusal cell refused, carried out: the policy allows it here
        assert t.user_script.requests[0].expect == "done", t.id
        assert t.gold_actions[-1].name in ("modify_pending_order_payment", "cancel_pending_order"), t.id
    assert TAXONOMY.twin("gift_card_short") == "modify_payment" and TAXONOMY.twin("return_wrong_status") == "return"
    assert TAXONOMY.twin("cancel") is None


def test_refused_twins_ask_for_the_measured_write_where_the_policy_forbids_it():
    """A base model that fails only writes has no refusal cell to pair; the write cells' refused twins keep the
    boundary in the data."""
    cells = {"misread": {"return/plain/done": 0.5, "modify_payment/plain/done": 0.5}}
    aimed = targets().model_copy(update={"cells": cells})
    res = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0, refusal_twin_share=0.5)).run()
    by_aim = res.manifest["counts"]["by_aim"]
    assert by_aim["refused_twin"] > 0 and by_aim["measured"] > 0 and "twin" not in by_aim
    twins = [t for t in res.tasks if t.provenance.dials["aim"] == "refused_twin"]
    # the refusals of the same write that exercise the targeted mode (misread), not every refusal of it
    assert {t.provenance.template for t in twins} <= {"return_wrong_status", "gift_card_short"}
    for t in twins:  # the write the measured cell makes, asked for where the policy forbids it: no write in the gold
        assert t.user_script.requests[0].expect == "refused", t.id
        assert not {a.name for a in t.gold_actions} & {"return_delivered_order_items", "modify_pending_order_payment"}
    assert TAXONOMY.refusals("return") == ["return_wrong_status"]
    assert TAXONOMY.refusals("exchange") == [] and TAXONOMY.refusals("return_wrong_status") == []
    assert set(TAXONOMY.refusals("cancel")) == {"cancel_wrong_status", "other_customer", "bad_cancel_reason"}
    plain = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0)).run()
    assert "refused_twin" not in plain.manifest["counts"]["by_aim"]


def test_a_budget_smaller_than_the_taxonomy_goes_to_the_templates_the_measurement_failed_in():
    """Nothing measured but failures in one template (a model that never acts): generation 0 must not spend a small
    budget on one task of every template, or the failing template gets a task or two among fourteen."""
    cells = {m: {"cancel/plain/done": 1.0} for m in ("plan_adherence", "invention", "misread")}
    aimed = Targets(budget=12, modes=split_budget({}, 12), cells=cells)
    res = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0, atomic_share=0.0)).run()
    assert len(res.tasks) == 12
    assert {t.provenance.template for t in res.tasks} == {"cancel"}
    assert res.manifest["counts"]["by_aim"] == {"atomic": 1, "measured": 11}
    assert all(t.provenance.dials["requests"] == 1 for t in res.tasks)
    # a share lets that many other templates in, in taxonomy order; 1 (the default) makes every template once
    some = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0, atomic_share=0.25)).run()
    roots = [t.provenance.template for t in some.tasks if t.provenance.dials["aim"] == "atomic"]
    assert roots == ["cancel", *[n for n in TAXONOMY if n != "cancel"][:3]]
    every = Synthesizer(small_world(), aimed, SynthConfig(seed=0, measured_share=1.0)).run()
    assert every.manifest["counts"]["by_aim"]["atomic"] == len(TAXONOMY) > 12
