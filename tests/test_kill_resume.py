"""Kill and resume, byte for byte: every stage that writes (measure, synthesize, curate, train sft and grpo) is killed
with SIGKILL part-way through its writing, run again with the same arguments, and its output is then identical,
file by file and byte by byte, to that of a run never interrupted. (promote: tests/tracking/test_promote_recovery.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
WORLD = "gen-5-8x10x20"
BASELINE = "flawed:invention=0.4,misread=0.3,plan_adherence=0.2"
ENV = {**os.environ, "PYTHONHASHSEED": "0"}
# wall-clock figures and the order trials finished in: by design not reproducible (pipeline.measure.run)
VOLATILE = {"timings.jsonl", "journal.jsonl"}


def agentloop(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    head = ["-m", "tests.killpoint", str(kill_at)] if kill_at else ["-m", "pipeline.cli"]
    return subprocess.run([sys.executable, *head, *args], capture_output=True, text=True, env=ENV, timeout=900)


def ok(*args: str) -> None:
    result = agentloop(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def tree(root: Path) -> dict[str, bytes]:
    """Every file of a file or folder output (the hidden leftovers of a killed run beside it are not part of it)."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in VOLATILE and not p.name.endswith(".lock")
    }


def killed_then_resumed(args: list[str], out: Path, reference: Path, kill_at: int) -> None:
    """Kill the command at its `kill_at`-th flush, check it died there, rerun it, compare with `reference`."""
    killed = agentloop(*args, "--out", str(out), kill_at=kill_at)
    assert killed.returncode == -9, f"finished before flush {kill_at}: {killed.stderr[-2000:]}"
    ok(*args, "--out", str(out))
    want, got = tree(reference), tree(out)
    assert sorted(got) == sorted(want)
    differ = [name for name in want if got[name] != want[name]]
    assert not differ, f"not byte-identical after resume: {differ}"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    ok("tasks", "generate", "--world", WORLD, "--n", "12", "--out", str(root / "eval.jsonl"))
    base = root / "baseline"
    ok("measure", "--world", WORLD, "--tasks", str(root / "eval.jsonl"), "--agent", BASELINE, "--trials", "2",
       "--out", str(base))  # fmt: skip
    ok("target", "--metrics", str(base / "metrics.json"), "--budget", "12", "--verdicts", str(base / "verdicts.jsonl"),
       "--tasks", str(root / "eval.jsonl"), "--out", str(root / "targets.json"))  # fmt: skip
    return root


@pytest.mark.parametrize("kill_at", [3, 30])
def test_measure(inputs, tmp_path, kill_at):
    args = ["measure", "--world", WORLD, "--tasks", str(inputs / "eval.jsonl"), "--agent", BASELINE, "--trials", "3"]
    ok(*args, "--out", str(tmp_path / "reference"))
    killed_then_resumed(args, tmp_path / "run", tmp_path / "reference", kill_at)


SYNTH = ["synthesize", "--world", "gen-7", "--generations", "2"]


@pytest.fixture(scope="module")
def synthesized(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "synth"
    ok(*SYNTH, "--targets", str(inputs / "targets.json"), "--out", str(out))
    return out


@pytest.mark.parametrize("kill_at", [1, 2])
def test_synthesize(inputs, synthesized, tmp_path, kill_at):
    killed_then_resumed([*SYNTH, "--targets", str(inputs / "targets.json")], tmp_path / "synth", synthesized, kill_at)


def test_synthesize_over_a_previous_output(inputs, synthesized, tmp_path):
    """Killed while replacing an older output: the old one stays whole until the new one is complete."""
    out = tmp_path / "synth"
    ok("synthesize", "--world", "gen-7", "--generations", "1", "--targets", str(inputs / "targets.json"), "--out",
       str(out))  # fmt: skip
    old = tree(out)
    killed = agentloop(*SYNTH, "--targets", str(inputs / "targets.json"), "--out", str(out), kill_at=2)
    assert killed.returncode == -9 and tree(out) == old
    ok(*SYNTH, "--targets", str(inputs / "targets.json"), "--out", str(out))
    assert tree(out) == tree(synthesized)


@pytest.mark.parametrize("kill_at", [1, 2])
def test_curate(synthesized, tmp_path, kill_at):
    args = ["curate", "--pool", str(synthesized / "trajectories.jsonl"), "--tasks", str(synthesized / "tasks.jsonl"),
            "--world", "gen-7", "--agent", BASELINE, "--probes", "1"]  # fmt: skip
    ok(*args, "--out", str(tmp_path / "reference"))
    killed_then_resumed(args, tmp_path / "curated", tmp_path / "reference", kill_at)


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    from pipeline.agents.checkpoint import CheckpointMeta, ModelConfig, save_checkpoint
    from pipeline.domains.retail.policy import POLICY_SUMMARY
    from pipeline.embedded.model import build_model
    from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
    from pipeline.formats.codec import CodecConfig
    from pipeline.world.registry import load_world

    tiny = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=1024)
    tokenizer = train_tokenizer(build_corpus(load_world(WORLD), 10), TokenizerConfig(vocab_size=512))
    path = tmp_path_factory.mktemp("base") / "tiny"
    codec = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
    return save_checkpoint(path, build_model(tiny, tokenizer), tokenizer, CheckpointMeta.for_codec(codec, model=tiny))


@pytest.mark.parametrize("kill_at", [1, 2])
def test_train_sft(synthesized, tiny_base, tmp_path, kill_at):
    args = ["train", "sft", "--base", str(tiny_base), "--data", str(synthesized / "trajectories.jsonl"), "--tasks",
            str(synthesized / "tasks.jsonl"), "--max-steps", "2", "--max-length", "1024"]  # fmt: skip
    ok(*args, "--out", str(tmp_path / "reference"))
    killed_then_resumed(args, tmp_path / "model", tmp_path / "reference", kill_at)


GRPO = ["--steps", "1", "--num-generations", "2", "--tasks-per-step", "1", "--max-new-tokens", "8", "--max-turns", "4",
        "--max-tool-calls", "2", "--threads", "1"]  # fmt: skip


@pytest.fixture(scope="module")
def grpo_reference(synthesized, tiny_base, tmp_path_factory):
    out = tmp_path_factory.mktemp("grpo") / "reference"
    ok("train", "grpo", "--base", str(tiny_base), "--tasks", str(synthesized / "tasks.jsonl"), *GRPO, "--out", str(out))
    return out


@pytest.mark.parametrize("kill_at", [1, 2])
def test_train_grpo(synthesized, tiny_base, grpo_reference, tmp_path, kill_at):
    args = ["train", "grpo", "--base", str(tiny_base), "--tasks", str(synthesized / "tasks.jsonl"), *GRPO]
    killed_then_resumed(args, tmp_path / "model", grpo_reference, kill_at)
