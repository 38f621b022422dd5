"""Resume after a kill: the trial journal (torn lines, duplicates, another run's journal, trials lost to
infrastructure errors offered again), and `agentloop measure` killed with SIGKILL mid-run and started again,
which must end with the uninterrupted run's metrics, no trial lost and none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.measure import MeasureConfig, measure
from pipeline.trials.executor import SerialExecutor
from pipeline.trials.ray_executor import lost_result
from pipeline.trials.resume import ResumeMismatchError, TrialJournal
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

WORLD = "gen-4-12x60x120"


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 6, seed=1)


def test_journal_survives_torn_lines_and_duplicates(world, tasks, tmp_path):
    results = list(SerialExecutor().run(world, tasks[:3], OracleAgent(), ScriptedUser(), trials=2))
    path = tmp_path / "journal.jsonl"
    with TrialJournal(path, "fp1") as journal:
        for r in results[:4]:
            journal.append(r)
        journal.append(results[1])  # a duplicate (e.g. a result written twice around a crash)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"task_id": "torn", "tri')  # killed mid-write
    done, broken = TrialJournal(path, "fp1").load(tasks)
    assert sorted(done) == sorted((r.task.id, r.trial) for r in results[:4]) and not broken
    assert path.read_bytes() == whole  # the torn tail is cut, so the next record starts on a fresh line
    assert done[(results[1].task.id, 1)].trajectory == results[1].trajectory
    assert done[(results[1].task.id, 1)].verdict == results[1].verdict
    with TrialJournal(path, "fp1") as journal:
        journal.append(results[4])
    assert len(TrialJournal(path, "fp1").load(tasks)[0]) == 5
    with pytest.raises(ResumeMismatchError, match="holds another run"):
        TrialJournal(path, "fp2").load(tasks)


def test_a_resumed_trial_keeps_the_node_that_ran_it(world, tasks, tmp_path):
    result = next(SerialExecutor().run(world, tasks[:1], OracleAgent(), ScriptedUser(), trials=1))
    result.node, result.node_ip = "f" * 56, "10.0.0.7"  # as a Ray worker tags it
    with TrialJournal(tmp_path / "journal.jsonl", "fp") as journal:
        journal.append(result)
    (back,) = TrialJournal(tmp_path / "journal.jsonl", "fp").load(tasks)[0].values()
    assert (back.node, back.node_ip) == ("f" * 56, "10.0.0.7")


def test_trials_lost_to_infrastructure_are_offered_again(world, tasks, tmp_path):
    task = tasks[0]
    lost = lost_result(world, task, 0, 0, OracleAgent(), ScriptedUser(), "endpoint down")
    good = next(iter(SerialExecutor().run(world, [task], OracleAgent(), ScriptedUser(), trials=1)))
    path = tmp_path / "journal.jsonl"
    with TrialJournal(path, "fp") as journal:
        journal.append(lost)
    done, broken = TrialJournal(path, "fp").load(tasks)
    assert not done and list(broken) == [(task.id, 0)]
    with TrialJournal(path, "fp") as journal:
        journal.append(good)
    done, broken = TrialJournal(path, "fp").load(tasks)
    assert list(done) == [(task.id, 0)] and not broken and done[(task.id, 0)].verdict.passed


def test_measure_resumes_from_a_partial_journal(tasks, tmp_path):
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    cfg = MeasureConfig(world=WORLD, tasks=path, agent="flawed:invention=0.5,misread=0.3", trials=3, resamples=100)
    measure(cfg, tmp_path / "full")
    run = tmp_path / "partial"
    run.mkdir()
    lines = (tmp_path / "full" / "journal.jsonl").read_bytes().splitlines(keepends=True)
    (run / "journal.jsonl").write_bytes(b"".join(lines[:8] + lines[3:5]) + lines[8][:50])  # dupes + a torn line
    ran = []
    measure(cfg, run, on_trial=lambda rec: ran.append((rec.task_id, rec.trial)))
    assert len(ran) == len(set(ran)) == 18
    for name in ("metrics.json", "per_task.csv", "verdicts.jsonl"):
        assert (run / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name
    keys = [(row["task_id"], row["trial"]) for row in map(json.loads, (run / "trajectories.jsonl").open())]
    assert keys == [(t.id, k) for t in tasks for k in range(3)]
    other = cfg.model_copy(update={"seed": 1})
    with pytest.raises(ResumeMismatchError):
        measure(other, run)


@pytest.mark.slow
def test_measure_killed_with_sigkill_resumes_to_the_same_metrics(world, tmp_path):
    path = tmp_path / "tasks.jsonl"
    task_list = generate_tasks(world, 150, seed=7)
    write_tasks(path, task_list)
    trials, total = 4, 4 * len(task_list)
    args = [
        "--world",
        WORLD,
        "--tasks",
        str(path),
        "--agent",
        "flawed:plan_adherence=0.3,invention=0.3",
        "--trials",
        str(trials),
        "--seed",
        "3",
    ]
    run = tmp_path / "killed"
    cmd = [sys.executable, "-m", "pipeline.cli", "measure", *args, "--out", str(run)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = run / "journal.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") > 40:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    finished_at_kill = journal.read_bytes().count(b"\n") - 1
    assert 0 < finished_at_kill < total and not (run / "metrics.json").exists()

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    reference = tmp_path / "uninterrupted"
    measure(
        MeasureConfig(world=WORLD, tasks=path, agent="flawed:plan_adherence=0.3,invention=0.3", trials=trials, seed=3),
        reference,
    )
    assert (run / "metrics.json").read_bytes() == (reference / "metrics.json").read_bytes()
    assert (run / "per_task.csv").read_bytes() == (reference / "per_task.csv").read_bytes()
    keys = [(row["task_id"], row["trial"]) for row in map(json.loads, (run / "trajectories.jsonl").open())]
    assert keys == [(t.id, k) for t in task_list for k in range(trials)]  # none lost, none twice
    records = journal.read_bytes().count(b"\n") - 1
    assert records == total  # the resumed run ran only the trials the killed one had not journaled


def test_a_checkpoint_retrained_in_place_is_another_run(tasks, tmp_path):
    """The spec names a path; a journal measured with the old weights there must not be resumed with the new."""
    from pipeline.agents.checkpoint import CheckpointMeta, ModelConfig, save_checkpoint
    from pipeline.embedded.model import build_model
    from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
    from pipeline.formats.codec import CodecConfig

    tiny = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=512)
    codec = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
    tokenizer = train_tokenizer(build_corpus(load_world(WORLD), 10), TokenizerConfig(vocab_size=512))
    ckpt = tmp_path / "ckpt"

    def train(step: float) -> None:  # stands in for a training run: same files, other weights
        import torch

        model = build_model(tiny, tokenizer)
        with torch.no_grad():
            next(model.parameters()).add_(step)
        save_checkpoint(ckpt, model, tokenizer, CheckpointMeta.for_codec(codec, model=tiny))

    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks[:2])
    cfg = MeasureConfig(world=WORLD, tasks=path, agent=f"hf:{ckpt},max_new_tokens=8", trials=1, resamples=100)
    train(0.0)
    measure(cfg, tmp_path / "run")
    journal = (tmp_path / "run" / "journal.jsonl").read_bytes()
    measure(cfg, tmp_path / "run")
    assert (tmp_path / "run" / "journal.jsonl").read_bytes() == journal  # same weights: resumed, nothing rerun
    train(0.5)  # retrained in place: same spec, other weights
    with pytest.raises(ResumeMismatchError, match="holds another run"):
        measure(cfg, tmp_path / "run")
