"""`agentloop train ...`: the sub-commands exist, validate their settings, and fail with clear messages."""

from __future__ import annotations

from typer.testing import CliRunner

from pipeline.cli import app
from tests.train.helpers import gold, tiny_checkpoint, write_jsonl

runner = CliRunner()


def test_train_lists_its_commands():
    result = runner.invoke(app, ["train", "--help"])
    assert result.exit_code == 0
    assert all(name in result.output for name in ("baseline", "sft", "grpo"))


def test_sft_on_a_missing_checkpoint_fails_clearly(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", gold()[:1])
    result = runner.invoke(
        app, ["train", "sft", "--base", str(tmp_path / "nope"), "--data", str(data), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "not an agentloop checkpoint" in result.output


def test_baseline_rejects_unknown_settings(tmp_path):
    config = tmp_path / "embedded.yaml"
    config.write_text("corpus_taskz: 3\n")
    result = runner.invoke(app, ["train", "baseline", "--out", str(tmp_path / "b"), "--config", str(config)])
    assert result.exit_code == 2 and "corpus_taskz" in result.output


def test_grpo_rejects_a_bad_vllm_mode(tmp_path):
    base = tiny_checkpoint(tmp_path / "base")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("")
    result = runner.invoke(
        app,
        ["train", "grpo", "--base", str(base), "--tasks", str(tasks), "--out", str(tmp_path / "o"), "--vllm", "maybe"],
    )
    assert result.exit_code == 2 and "vllm" in result.output
