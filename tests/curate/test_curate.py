"""Curation: replay-verification rejects tampering, probes band tasks, anchors and targets are mixed, deduplicated."""

from __future__ import annotations

import json
from functools import lru_cache

from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.curate import Bands, CurateConfig, PoolItem, Probed, curate, mix, read_pool, replay_verify
from pipeline.curate.verify import Verified
from pipeline.dataset.io import write_tasks
from pipeline.errors import InputError
from pipeline.grading.grader import grade
from pipeline.synth.config import SynthConfig
from pipeline.synth.synthesize import Synthesizer
from pipeline.world.registry import load_world
from tests.synth.synth_helpers import targets

WORLD = "gen-3-12x40x100"
AGENT = "flawed:plan_adherence=0.2,invention=0.2,misread=0.2"


@lru_cache(maxsize=1)
def pool():
    res = Synthesizer(load_world(WORLD), targets(24), SynthConfig(seed=4, max_generations=3)).run()
    return res.tasks, res.trajectories


def _tampered(traj):
    t = traj.model_copy(deep=True)
    k = next(i for i, m in enumerate(t.messages) if m.role == "tool" and m.name == "get_order_details")
    t.messages[k].content = t.messages[k].content.replace('"status": "', '"status": "totally ', 1)
    return t


def test_replay_verify_accepts_a_true_record_and_rejects_tampering():
    world = load_world(WORLD)
    tasks, trajs = pool()
    by_id = {t.id: t for t in tasks}
    traj = next(t for t in trajs if any(m.name == "get_order_details" for m in t.messages))
    ok = replay_verify(world, by_id, PoolItem("x:1", traj))
    assert isinstance(ok, Verified) and ok.verdict.passed
    bad = replay_verify(world, by_id, PoolItem("x:2", _tampered(traj)))
    assert bad.reason == "replay_mismatch" and "differs from the replay in content" in bad.detail
    recorded = grade(world, by_id[traj.task_id], traj).model_dump(mode="json")
    assert isinstance(replay_verify(world, by_id, PoolItem("x:3", traj, recorded)), Verified)
    lie = {**recorded, "passed": False}
    assert replay_verify(world, by_id, PoolItem("x:4", traj, lie)).reason == "verdict_mismatch"
    assert replay_verify(world, {}, PoolItem("x:5", traj)).reason == "unknown_task"
    elsewhere = traj.model_copy(update={"world": "gen-9"})
    assert replay_verify(world, by_id, PoolItem("x:6", elsewhere)).reason == "wrong_world"


def _probed(i, passes, n=8, template=None):
    from pipeline.dataset.task import Provenance, Task, UserScript
    from pipeline.rollout.trajectory import Trajectory

    prov = Provenance(source="eval", template=template)
    task = Task(id=f"t{i:02d}", world="w", user_script=UserScript(goal="g"), provenance=prov)
    traj = Trajectory(task_id=task.id, agent="a", user="u", world="w")
    return Probed(task, traj, n, passes, Bands().masses(passes, n), Bands().band(passes, n))


def test_mix_keeps_middle_bands_at_the_ratio():
    probed = [_probed(i, c) for i, c in enumerate([0, 8, 8, 1, 2, 3, 3, 2, 1, 5, 6, 7, 6, 4])]
    chosen = mix(probed, Bands(), anchor_ratio=0.25)
    assert all(0 < p.band < 4 for p in chosen)
    roles = [p.role for p in chosen]
    assert roles.count("anchor") == 2 and roles.count("target") == 6  # 6 targets allow 8 in all at 0.25
    assert len(mix(probed, Bands(), anchor_ratio=0.5)) == 10  # 5 anchors available → 5 + 5
    assert len(mix(probed, Bands(), anchor_ratio=0.5, max_items=4)) == 4
    assert {p.role for p in mix(probed, Bands(), anchor_ratio=0.0)} == {"target"}
    only_targets = [p for p in probed if p.role == "target"]
    assert mix(only_targets, Bands(), anchor_ratio=0.3, max_items=3) == mix(only_targets, Bands(), 0.0)[:3]


def test_a_capped_selection_takes_the_templates_in_turn_among_equal_posteriors():
    # one probe: every failed task has the same posterior; ids sort the four returns first
    templates = ["return"] * 4 + ["cancel"] * 3 + ["exchange"] * 2
    probed = [_probed(i, 0, n=1, template=t) for i, t in enumerate(templates)]
    chosen = mix(probed, Bands(), anchor_ratio=0.0, max_items=3)
    assert sorted(p.task.provenance.template for p in chosen) == ["cancel", "exchange", "return"]
    # more mass in the kept bands still goes first, whatever the template
    better = _probed(20, 3, n=8, template="return")
    assert mix([*probed, better], Bands(), anchor_ratio=0.0, max_items=1) == [better]


def _write_pool(tmp_path):
    tasks, trajs = pool()
    write_tasks(tmp_path / "tasks.jsonl", list(tasks))
    lines = [t.model_dump_json() for t in trajs]
    lines.append(
        _tampered(next(t for t in trajs if any(m.name == "get_order_details" for m in t.messages))).model_dump_json()
    )
    lines.append(lines[0])  # the same conversation twice
    lines.append('{"task_id": 3}')
    (tmp_path / "pool.jsonl").write_text("\n".join(lines) + "\n")
    return tasks


def test_curate_end_to_end(tmp_path):
    tasks = _write_pool(tmp_path)
    cfg = CurateConfig(
        pool=[tmp_path / "pool.jsonl"],
        tasks=tmp_path / "tasks.jsonl",
        world=WORLD,
        agent=AGENT,
        probes=6,
        anchor_ratio=0.3,
        max_items=None,
    )
    m = curate(cfg, tmp_path / "out")
    assert m["pool"] == {"trajectories": len(tasks) + 3, "verified": len(tasks) + 1, "tasks_with_demo": len(tasks)}
    assert m["rejections"]["replay_mismatch"] == 1 and m["rejections"]["duplicate_trajectory"] == 1
    assert m["rejections"]["unparseable"] == 1
    assert sum(m["band_histogram"].values()) == len(tasks)
    too = m["rejections"].get("too_hard", 0) + m["rejections"].get("too_easy", 0)
    assert m["kept_tasks"] == len(tasks) - too
    rows = [json.loads(x) for x in (tmp_path / "out" / "selected.jsonl").read_text().splitlines()]
    assert len(rows) == m["selected"] == m["ratio"]["anchors"] + m["ratio"]["targets"] > 0
    assert len({r["task_id"] for r in rows}) == len(rows)
    middle = Bands().labels()[1:-1]
    world, by_id = load_world(WORLD), {t.id: t for t in tasks}
    for r in rows:
        assert r["band"] in middle and r["role"] in ("anchor", "target")
        assert (r["role"] == "anchor") == ((r["passes"] + 0.5) / (r["probes"] + 1) >= 0.5)
        from pipeline.rollout.trajectory import Trajectory

        assert grade(world, by_id[r["task_id"]], Trajectory.model_validate(r["trajectory"])).passed
    assert m["ratio"]["anchors_available"] and m["ratio"]["targets_available"] and m["ratio"]["met"]
    assert abs(m["ratio"]["anchor_share"] - 0.3) <= 1 / len(rows) + 1e-9


def test_cli_reads_a_rollout_file_with_its_verdicts(tmp_path):
    tasks, trajs = pool()
    write_tasks(tmp_path / "tasks.jsonl", list(tasks))
    world, by_id = load_world(WORLD), {t.id: t for t in tasks}
    verdicts = [grade(world, by_id[t.task_id], t).model_dump_json() for t in trajs]
    verdicts[1] = verdicts[1].replace('"passed":true', '"passed":false', 1)  # a record that lies
    (tmp_path / "run.jsonl").write_text("\n".join(t.model_dump_json() for t in trajs) + "\n")
    (tmp_path / "run.verdicts.jsonl").write_text("\n".join(verdicts) + "\n")
    items, errors = read_pool([tmp_path / "run.jsonl"])
    assert len(items) == len(trajs) and not errors and items[0].recorded["task_id"] == trajs[0].task_id
    result = CliRunner().invoke(
        app,
        [
            "curate",
            "--pool",
            str(tmp_path / "run.jsonl"),
            "--tasks",
            str(tmp_path / "tasks.jsonl"),
            "--world",
            WORLD,
            "--agent",
            "oracle",
            "--probes",
            "2",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["rejections"]["verdict_mismatch"] == 1
    assert m["rejections"]["too_easy"] == len(trajs) - 1 and m["selected"] == 0  # the oracle passes everything


def test_probe_verdicts_are_the_same_one_at_a_time_or_batched(tmp_path):
    """Probes go through the rollout executor as measured trials do: batching changes no verdict."""
    _write_pool(tmp_path)
    runs = {}
    for concurrency in (1, 6):
        cfg = CurateConfig(
            pool=[tmp_path / "pool.jsonl"],
            tasks=tmp_path / "tasks.jsonl",
            world=WORLD,
            agent=AGENT,
            probes=4,
            concurrency=concurrency,
        )
        seen = []
        out = tmp_path / f"out{concurrency}"
        curate(cfg, out, on_probe=lambda r, seen=seen: seen.append((r.task.id, r.trial, r.verdict.passed)))
        runs[concurrency] = (sorted(seen), (out / "selected.jsonl").read_bytes(), (out / "manifest.json").read_bytes())
    assert runs[1] == runs[6] and len(runs[1][0]) > 0
    assert {passed for _, _, passed in runs[1][0]} == {True, False}  # the probes tell tasks apart


def test_cli_ray_options_need_the_ray_executor(tmp_path):
    result = CliRunner().invoke(
        app,
        ["curate", "--pool", "x", "--tasks", "x", "--world", WORLD, "--agent", "oracle", "--out", str(tmp_path)]
        + ["--address", "127.0.0.1:6379"],
    )
    assert result.exit_code != 0 and "--ray-address and --workers need --executor ray" in result.output


def test_a_pool_from_another_world_is_refused_not_curated_to_nothing(tmp_path):
    tasks = _write_pool(tmp_path)
    cfg = CurateConfig(
        pool=[tmp_path / "pool.jsonl"], tasks=tmp_path / "tasks.jsonl", world="gen-4-12x40x100", agent=AGENT
    )
    try:
        curate(cfg, tmp_path / "out")
    except InputError as exc:
        assert "belongs with world 'gen-4-12x40x100'" in str(exc) and "wrong_world" in str(exc)
    else:
        raise AssertionError("curated a pool made in another world")
    assert not (tmp_path / "out").exists() and tasks
