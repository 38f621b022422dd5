"""`decide` on real measure runs: re-grades trajectories, decides, records its inputs, refuses bad inputs."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pipeline.gate import GateConfig, GateInputError, decide, read_gate, write_gate
from pipeline.world.registry import load_world

from .conftest import N_TASKS, WORLD


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_clear_win_promotes(runs):
    d = decide(runs.oracle, runs.weak, runs.tasks, runs.world)
    assert d.promote
    assert d.pass_hat_k.candidate == 1.0 and d.pass_hat_k.champion < 0.6
    assert d.pass_hat_k.low > 0.0
    assert not any(t.worse for t in d.tests)
    inputs = d.inputs
    assert inputs.n_tasks == N_TASKS and inputs.world == runs.world.name
    assert inputs.candidate.trials == inputs.candidate.valid_trials == inputs.candidate.passes == 4 * N_TASKS
    assert inputs.candidate.trajectories_sha256 == _sha(runs.oracle / "trajectories.jsonl")
    assert inputs.champion.trajectories_sha256 == _sha(runs.weak / "trajectories.jsonl")
    assert inputs.tasks_sha256 == _sha(runs.tasks)
    assert inputs.config == GateConfig()


def test_clear_loss_is_blocked_naming_pass_hat_k(runs):
    d = decide(runs.weak, runs.oracle, runs.tasks, runs.world)
    assert not d.promote
    assert d.pass_hat_k.high < 0.0
    assert d.reasons[0].startswith("pass^4 gain") and "no demonstrated pass^4 improvement" in d.reasons[0]
    assert {t.name for t in d.tests if t.worse} >= {"pass@1", "plan_adherence"}


def test_noise_is_blocked(runs):
    reseeded = decide(runs.weak_reseeded, runs.weak, runs.tasks, runs.world)
    assert not reseeded.promote
    assert reseeded.pass_hat_k.low <= 0.0 <= reseeded.pass_hat_k.high
    assert not any(t.worse for t in reseeded.tests)
    identical = decide(runs.weak, runs.weak, runs.tasks, runs.world)
    assert not identical.promote
    assert identical.pass_hat_k.diff == identical.pass_hat_k.low == 0.0
    assert all(t.p_value == 1.0 for t in identical.tests)


def test_failure_mode_regression_blocks_despite_pass_hat_k_gain(runs):
    # inventions fixed, misreads introduced: pass^4 rises, the misread rate goes from 0 to ~0.13.
    d = decide(runs.misreads, runs.invents, runs.tasks, runs.world)
    assert d.pass_hat_k.low > 0.0
    assert not d.promote
    misread = next(t for t in d.tests if t.name == "misread")
    assert misread.champion == 0.0 and misread.candidate > 0.05 and misread.worse
    assert [r for r in d.reasons if "got significantly worse" in r] == [
        r for r in d.reasons if r.startswith("misread rate got significantly worse")
    ]


def test_tampered_run_files_have_no_effect(runs, tmp_path):
    tampered = tmp_path / "weak_tampered"
    shutil.copytree(runs.weak, tampered)
    for name in ("metrics.json", "verdicts.jsonl", "per_task.csv"):  # claim the oracle's results
        shutil.copy(runs.oracle / name, tampered / name)
    honest = decide(runs.weak, runs.oracle, runs.tasks, runs.world)
    forged = decide(tampered, runs.oracle, runs.tasks, runs.world)
    assert not forged.promote
    assert forged.model_dump(exclude={"inputs"}) == honest.model_dump(exclude={"inputs"})
    assert forged.inputs.candidate.passes == honest.inputs.candidate.passes


def test_tampered_end_states_in_trajectories_are_caught_by_regrading(runs, tmp_path):
    oracle = {(t["task_id"], t["trial"]): t for t in map(json.loads, (runs.oracle / "trajectories.jsonl").open())}
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir()
    with (forged_dir / "trajectories.jsonl").open("w") as out:
        for line in (runs.weak / "trajectories.jsonl").open():
            t = json.loads(line)
            good = oracle[(t["task_id"], t["trial"])]
            t["final_changed"], t["final_hash"] = good["final_changed"], good["final_hash"]  # claim success
            out.write(json.dumps(t) + "\n")
    honest = decide(runs.weak, runs.oracle, runs.tasks, runs.world)
    forged = decide(forged_dir, runs.oracle, runs.tasks, runs.world)
    assert forged.inputs.candidate.passes == honest.inputs.candidate.passes < 4 * N_TASKS
    assert not forged.promote


def test_mismatched_task_sets_are_clear_errors(runs, tmp_path):
    with pytest.raises(GateInputError, match=r"champion: 28 held-out task\(s\) were not measured: \['gen-3"):
        decide(runs.oracle, runs.oracle_first20, runs.tasks, runs.world)
    subset = GateConfig(require_all_tasks=False)
    with pytest.raises(GateInputError, match=r"different tasks: 28 only in candidate \['gen-3.*0 only in champion"):
        decide(runs.oracle, runs.oracle_first20, runs.tasks, runs.world, subset)
    first20 = tmp_path / "tasks20.jsonl"
    first20.write_text("".join(runs.tasks.read_text().splitlines(keepends=True)[:20]))
    with pytest.raises(GateInputError, match=r"candidate: 28 task\(s\) not in the held-out task file"):
        decide(runs.oracle, runs.oracle_first20, first20, runs.world)


def test_too_few_valid_trials_and_infra_errors(runs, tmp_path):
    with pytest.raises(GateInputError, match=r"fewer than k=5 valid trials: gen-3.* \(n=4\)"):
        decide(runs.oracle, runs.weak, runs.tasks, runs.world, GateConfig(k=5))
    lines = (runs.oracle / "trajectories.jsonl").read_text().splitlines()
    lost = json.loads(lines[0])
    lost["termination"], lost["error"] = "infra_error", "model server timed out"
    (tmp_path / "trajectories.jsonl").write_text("\n".join([json.dumps(lost), *lines[1:]]) + "\n")
    with pytest.raises(
        GateInputError, match=rf"candidate: 1 task\(s\) have fewer than k=4 valid trials: {lost['task_id']}"
    ):
        decide(tmp_path, runs.weak, runs.tasks, runs.world)
    d = decide(tmp_path, runs.weak, runs.tasks, runs.world, GateConfig(k=3))
    assert (d.inputs.candidate.infra_errors, d.inputs.candidate.valid_trials) == (1, 4 * N_TASKS - 1)


def test_bad_inputs_are_clear_errors(runs, tmp_path):
    with pytest.raises(GateInputError, match="not a run directory"):
        decide(tmp_path / "nope", runs.oracle, runs.tasks, runs.world)
    with pytest.raises(GateInputError, match="no trajectories.jsonl"):
        decide(tmp_path, runs.oracle, runs.tasks, runs.world)
    with pytest.raises(GateInputError, match="file not found"):
        decide(runs.oracle, runs.weak, tmp_path / "tasks.jsonl", runs.world)
    with pytest.raises(GateInputError, match=r"ran in world\(s\) \['gen-3-12x40x100'\], not 'gen-4-12x40x100'"):
        decide(runs.oracle, runs.weak, runs.tasks, load_world("gen-4-12x40x100"))
    (tmp_path / "trajectories.jsonl").write_text('{"task_id": "x"}\n')
    with pytest.raises(GateInputError, match=r"trajectories.jsonl:1: invalid trajectory"):
        decide(tmp_path, runs.oracle, runs.tasks, runs.world)


def test_first_iteration_without_champion(runs):
    d = decide(runs.oracle, None, runs.tasks, WORLD)  # a world reference works as well as a loaded world
    assert d.promote and d.tests == [] and d.inputs.champion is None
    assert d.pass_hat_k.champion is None and d.pass_hat_k.diff == 1.0
    weak = decide(runs.weak, None, runs.tasks, runs.world, GateConfig(margin=0.6))
    assert not weak.promote


def test_gate_json_round_trips_and_is_stable(runs, tmp_path):
    d = decide(runs.oracle, runs.weak, runs.tasks, runs.world)
    a, b = write_gate(d, tmp_path / "a" / "gate.json"), write_gate(d, tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    assert read_gate(a) == d
    again = decide(runs.oracle, runs.weak, runs.tasks, runs.world)
    assert again == d


def test_gate_json_splits_pass_hat_k_by_expected_outcome(runs, tmp_path):
    from pipeline.measure import MeasureConfig, measure

    never = tmp_path / "never"
    measure(MeasureConfig(world=WORLD, tasks=runs.tasks, agent="flawed:inaction=1.0,seed=1", trials=4), never)
    d = decide(never, runs.oracle, runs.tasks, runs.world)
    act, refuse = d.by_expected["act"], d.by_expected["refuse"]
    assert act.tasks + refuse.tasks == N_TASKS and act.tasks and refuse.tasks
    assert (act.champion, act.candidate, refuse.champion, refuse.candidate) == (1.0, 0.0, 1.0, 1.0)
    assert act.high < 0.0 and refuse.low == refuse.high == 0.0
    assert next(t for t in d.tests if t.name == "act pass^k").worse and d.outcome == "block"
    assert any(r.startswith(f"act tasks ({act.tasks}; the gold changes the world)") for r in d.reasons)
    written = json.loads(write_gate(d, tmp_path / "gate.json").read_text())
    assert written["by_expected"]["act"]["candidate"] == 0.0
    assert read_gate(tmp_path / "gate.json") == d
