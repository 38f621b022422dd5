"""The own-model path of docs/models.md, command by command, on a random-weight tiny checkpoint of each family (Qwen2.5,
Qwen3, Llama 3.1, Gemma 3 templates): measure → target → synthesize → SFT with LoRA → measure → GRPO, through
`agentloop` (the typer app the console script runs), offline on CPU. Every step writes its artifact, every
checkpoint stays in the base's own architecture and chat format, and both measures grade every trial."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from pipeline.cli import app
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

pytestmark = pytest.mark.slow
EVAL_WORLD, TRAIN_WORLD = "gen-5-8x30x60", "gen-6-8x30x60"
runner = CliRunner()
TIMES: dict[str, float] = {}


def agentloop(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, f"agentloop {' '.join(map(str, args))}:\n{result.output}"
    return result.output


def _measure(spec: str, tasks: Path, out: Path) -> None:
    agentloop("measure", "--world", EVAL_WORLD, "--tasks", tasks, "--agent", spec, "--trials", "1", "--out", out)
    metrics = json.loads((out / "metrics.json").read_text())
    verdicts = [json.loads(line)["verdict"] for line in (out / "verdicts.jsonl").open()]
    assert len(verdicts) == 2 and all(isinstance(v["passed"], bool) and not v["infra_error"] for v in verdicts)
    assert metrics["valid_trials"] == 2 and metrics["infra_errors"] == 0


def _model_type(path: Path) -> str:
    return json.loads((path / "config.json").read_text())["model_type"]


def _changed(a: Path, b: Path) -> bool:
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return wa.keys() == wb.keys() and any(not torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def texts():
    return corpus()


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_measure_sft_measure_grpo_through_the_cli(name, texts, tmp_path):
    family = FAMILIES[name]
    t0 = time.perf_counter()
    base = build_checkpoint(family, tmp_path / name, texts)
    model_type = _model_type(base)
    eval_tasks = tmp_path / "eval.jsonl"
    agentloop("tasks", "generate", "--world", EVAL_WORLD, "--n", "2", "--seed", "1", "--out", eval_tasks)

    _measure(f"hf:{base},max_new_tokens=8,temperature=1.0", eval_tasks, tmp_path / "runs" / "m1")
    agentloop(
        "target", "--metrics", tmp_path / "runs/m1/metrics.json", "--budget", "2", "--out", tmp_path / "targets.json",
        "--verdicts", tmp_path / "runs/m1/verdicts.jsonl", "--tasks", eval_tasks,
    )  # fmt: skip
    synth = tmp_path / "synth"
    agentloop("synthesize", "--world", TRAIN_WORLD, "--targets", tmp_path / "targets.json", "--out", synth,
              "--generations", "0")  # fmt: skip
    assert (synth / "trajectories.jsonl").stat().st_size > 0

    sft = tmp_path / "sft"
    out = agentloop(
        "train", "sft", "--base", base, "--data", synth / "trajectories.jsonl", "--tasks", synth / "tasks.jsonl",
        "--out", sft, "--lora", "--lora-rank", "4", "--lora-alpha", "8", "--lr", "5e-2", "--batch-size", "1",
        "--max-steps", "2", "--max-length", "8192",
    )  # fmt: skip
    assert "2 steps" in out  # the first is warm-up (learning rate 0), the second moves the weights
    meta = json.loads((sft / "agentloop.json").read_text())
    assert _model_type(sft) == model_type and meta["architecture"] == family.cls
    assert meta["chat_format"] == family.format and meta["dtype"] == str(family.dtype).removeprefix("torch.")
    assert meta["training"]["kind"] == "sft" and meta["training"]["lora"]["enabled"] and _changed(base, sft)

    _measure(f"hf:{sft},max_new_tokens=8,temperature=1.0", eval_tasks, tmp_path / "runs" / "m2")

    grpo = tmp_path / "grpo"
    out = agentloop(
        "train", "grpo", "--base", sft, "--tasks", synth / "tasks.jsonl", "--out", grpo, "--steps", "2",
        "--num-generations", "2", "--tasks-per-step", "1", "--max-new-tokens", "6", "--max-turns", "4",
        "--max-resamples", "0", "--lora", "--lora-rank", "4", "--lora-alpha", "8", "--threads", "1",
    )  # fmt: skip
    assert "GRPO: 2 steps" in out
    meta = json.loads((grpo / "agentloop.json").read_text())
    assert _model_type(grpo) == model_type and meta["architecture"] == family.cls
    assert meta["chat_format"] == family.format and meta["parent"] == str(sft)
    assert meta["training"]["kind"] == "grpo" and meta["data_manifest"]["rollouts"]["groups"] == 2
    TIMES[name] = time.perf_counter() - t0
    print(f"{name}: measure → SFT → measure → GRPO in {TIMES[name]:.1f} s")
