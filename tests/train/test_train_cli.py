"""`agentloop train ...`: the sub-commands exist, validate their settings, and fail with clear messages."""

from __future__ import annotations

import click
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
    lora = ["--lora", "--lora-r", "2", "--lora-targets", "q_proj,v_proj", "--max-length", "8192", "--save-adapter"]
    result = runner.invoke(app, args + lora)
    assert result.exit_code == 0, result.output
    assert "SFT: 1 examples, 1 steps" in result.output and (out / "model.safetensors").exists()
    assert (out / "adapter" / "adapter_config.json").exists()  # moved into the folder written whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "o", "qwen2"]  # no staging folder left
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


def test_every_grpo_param_has_its_cli_option():
    """GRPOConfig and `train grpo` list the same settings (the CLI's names for the renamed and nested ones)."""
    import typer.main

    from pipeline.rollout.runner import Limits
    from pipeline.train.grpo_config import GRPOConfig
    from pipeline.train.lora import LoraSpec

    command = typer.main.get_command(app).commands["train"].commands["grpo"]
    options = {p.name for p in command.params}
    renamed = {"learning_rate": "lr", "lora": "lora", "limits": None}
    wanted = {renamed.get(f, f) for f in GRPOConfig.model_fields} - {None}
    wanted |= set(Limits.model_fields)
    wanted |= {f"lora_{f}" for f in LoraSpec.model_fields}
    wanted = {{"lora_target_modules": "lora_targets", "lora_save_adapter": "save_adapter"}.get(w, w) for w in wanted}
    assert wanted - options == set()


def test_grpo_cli_max_resamples_bounds_the_replacements_of_a_zero_variance_group(tmp_path):
    """A random model fails every task: each group is replaced `--max-resamples` times, then kept out of the loss."""
    import json

    from pipeline.agents.checkpoint import META_FILE
    from pipeline.dataset.io import write_tasks
    from tests.train.helpers import tasks

    base = tiny_checkpoint(tmp_path / "base")
    pool = tmp_path / "tasks.jsonl"
    write_tasks(pool, list(tasks()[:4]))
    args = ["train", "grpo", "--base", str(base), "--tasks", str(pool), "--steps", "1", "--num-generations", "2"]
    args += ["--tasks-per-step", "1", "--max-new-tokens", "4", "--max-turns", "4", "--threads", "1"]
    for resamples in (0, 2):
        out = tmp_path / f"grpo{resamples}"
        result = runner.invoke(app, [*args, "--out", str(out), "--max-resamples", str(resamples)])
        assert result.exit_code == 0, result.output
        meta = json.loads((out / META_FILE).read_text())
        assert meta["training"]["max_resamples"] == resamples and meta["training"]["limits"]["max_turns"] == 4
        stats = meta["data_manifest"]["rollouts"]
        assert stats["zero_variance"] == resamples + 1 and stats.get("zero_variance_replaced", 0) == resamples
        assert stats["unreplaceable"] == 1 and stats["groups"] == 1
    bad = runner.invoke(app, [*args, "--out", str(tmp_path / "x"), "--max-resamples", "-1"])
    assert bad.exit_code == 2 and "--max-resamples" in click.unstyle(bad.output)  # the option's range: GRPOConfig's
    bad = runner.invoke(app, [*args, "--out", str(tmp_path / "x"), "--loss-type", "dpo"])
    assert bad.exit_code == 2 and "--loss-type" in click.unstyle(bad.output)  # a choice of GRPOConfig's losses


def test_grpo_with_vllm_but_no_vllm_installed_is_one_line(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    base = tiny_checkpoint(tmp_path / "base")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("")
    for mode in ("colocate", "server"):
        args = ["train", "grpo", "--base", str(base), "--tasks", str(tasks), "--out", str(tmp_path / "o")]
        result = runner.invoke(app, [*args, "--vllm", mode])
        assert result.exit_code == 2, result.output
        assert f"vllm '{mode}': vLLM is not installed" in result.output and "Traceback" not in result.output
        assert not (tmp_path / "o").exists()
