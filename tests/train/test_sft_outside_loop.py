"""The loop's `train` stage on an outside checkpoint: a tiny Qwen2 (real template) is measured, fine-tuned with
LoRA from `train` params (train.lora), and the candidate is measured again through the same `hf:` options."""

from __future__ import annotations

import json

import pytest

from pipeline.agents.checkpoint import META_FILE
from pipeline.dataset.io import write_tasks
from pipeline.loop import paths
from pipeline.loop.agentref import read_agent_spec, write_agent_ref
from pipeline.loop.params import Params
from pipeline.loop.stages import train_candidate
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.runner import Limits
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus
from tests.train.helpers import WORLD, gold, tasks, write_jsonl

pytestmark = pytest.mark.slow


def _measure(spec: str, task_file, out) -> object:
    cfg = MeasureConfig(world=WORLD, tasks=task_file, agent=spec, trials=1, resamples=20, limits=Limits(max_turns=4))
    return measure(cfg, out)


def test_measure_sft_with_lora_measure_on_a_tiny_qwen2(tmp_path, monkeypatch):
    base = build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", corpus())
    monkeypatch.chdir(tmp_path)
    eval_tasks = paths.EVAL_TASKS  # the loop's held-out tasks: the train stage checks its data against them
    eval_tasks.parent.mkdir(parents=True)
    write_tasks(eval_tasks, list(tasks()[8:10]))
    spec = f"hf:{base},max_new_tokens=12,temperature=1.0"
    before = _measure(spec, eval_tasks, tmp_path / "runs" / "baseline")
    assert before.infra_errors == 0 and before.valid_trials == 2

    write_agent_ref(paths.BASELINE_MODEL, spec, source=f"agent:{spec}")
    paths.SYNTH_DIR.mkdir(parents=True)
    write_jsonl(paths.SYNTH_DIR / "trajectories.jsonl", gold()[:4])
    write_tasks(paths.SYNTH_DIR / "tasks.jsonl", list(tasks()[:8]))  # never a held-out task
    p = Params.model_validate(
        {"train": {"epochs": 1.0, "learning_rate": 5.0e-2, "batch_size": 2, "max_length": 8192,
                   "use_curated": False, "lora": {"rank": 4, "alpha": 8}}}
    )  # fmt: skip
    candidate = train_candidate(p)
    assert candidate == f"hf:{paths.CANDIDATE_MODEL / 'checkpoint'},max_new_tokens=12,temperature=1.0"
    assert read_agent_spec(paths.CANDIDATE_MODEL) == candidate
    meta = json.loads((paths.CANDIDATE_MODEL / "checkpoint" / META_FILE).read_text())
    assert meta["architecture"] == "Qwen2ForCausalLM" and meta["dtype"] == "bfloat16"
    assert meta["training"]["lora"]["enabled"] and meta["data_manifest"]["data_counts"]["verified"] == 4
    assert meta["training"]["steps"] == 2

    after = _measure(candidate, eval_tasks, tmp_path / "runs" / "candidate")
    assert after.infra_errors == 0 and after.valid_trials == 2
