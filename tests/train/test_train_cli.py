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
    assert result.exit_code == 2 and "not a checkpoint" in result.output and "config.json" in result.output


def test_sft_cli_trains_an_outside_checkpoint_with_lora(tmp_path):
    from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

    base = build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", corpus())
    data = write_jsonl(tmp_path / "d.jsonl", gold()[:1])
    out = tmp_path / "o"
    args = ["train", "sft", "--base", str(base), "--data", str(data), "--out", str(out), "--max-steps", "1"]
    lora = ["--lora", "--lora-r", "2", "--lora-targets", "q_proj,v_proj", "--max-length", "8192"]
    result = runner.invoke(app, args + lora)
    assert result.exit_code == 0, result.output
    assert "SFT: 1 examples, 1 steps" in result.output and (out / "model.safetensors").exists()
    result = runner.invoke(app, args + ["--max-length", "100"])
    assert result.exit_code == 2 and "max_length=100" in result.output


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
