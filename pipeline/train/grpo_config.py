"""`GRPOConfig`: one GRPO run's settings, as TRL keeps a trainer's config beside it; the options of `agentloop train
grpo` parse into it and `run_grpo` runs with it. No torch import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.rollout import Limits
from pipeline.train.lora import LoraSpec, lora_record


class GRPOConfig(BaseModel):
    """One GRPO run; recorded in the checkpoint's agentloop.json."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    base: Path = Field(description="Checkpoint to start from.")
    tasks: list[Path] = Field(description="tasks.jsonl files: the task pool (generated worlds only).")
    world: str | None = Field(default=None, description="World reference; None = the tasks' own world field.")
    domain: str | None = Field(
        default=None, description="Domain name or module:attribute (None: found from the world reference)."
    )
    held_out: list[Path] = Field(
        default_factory=list,
        exclude=True,  # a check on the inputs, not how the run trains: the checkpoint's record leaves it out
        description="Held-out tasks.jsonl files: no task of the pool may be about one of their customers, or about an"
        " evaluation customer of a world whose customers are split (`pipeline.authoring.heldout`).",
    )
    steps: int = Field(default=3, ge=1, description="Optimizer steps (the most; see max_minutes).")
    max_minutes: float | None = Field(
        default=None,
        gt=0,
        description="Wall-clock budget: stop before a step that would end past it (at least one step runs; the"
        " learning-rate schedule still spans `steps`). None: run every step.",
    )
    num_generations: int = Field(default=4, ge=2, description="Episodes per task (the GRPO group).")
    tasks_per_step: int = Field(default=2, ge=1, description="Groups per optimizer step.")
    learning_rate: float = Field(default=1e-4, gt=0, le=1, description="Learning rate (at most 1).")
    beta: float = Field(default=0.0, ge=0, description="KL coefficient (0: no reference model).")
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"] = Field(
        default="dapo", description="TRL loss; 'dapo' normalises by active tokens (see module)."
    )
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature of the episodes.")
    max_new_tokens: int = Field(default=256, ge=1, description="Tokens per assistant turn.")
    max_prompt_length: int | None = Field(
        default=None, ge=1, description="Longest first prompt; a task over it is set aside. None: context - turn."
    )
    max_resamples: int = Field(default=4, ge=0, description="Zero-variance replacements tried per group.")
    max_infra_retries: int = Field(default=2, ge=0, description="Retries of an episode lost to infrastructure.")
    limits: Limits = Field(default_factory=lambda: Limits(max_turns=40, max_tool_calls=20))
    lora: LoraSpec | None = Field(
        default=None,
        description="LoRA through peft ({rank, alpha, dropout, target_modules, save_adapter}), merged into the saved"
        " weights; null = full fine-tuning.",
    )
    vllm: Literal["off", "colocate", "server"] = Field(default="off", description="vLLM generation (GPU only).")
    vllm_gpu_memory: float = Field(default=0.3, gt=0, le=1, description="colocate: share of GPU memory for vLLM.")
    vllm_host: str = Field(default="127.0.0.1", description="server: host of `trl vllm-serve`.")
    vllm_port: int = Field(default=8000, description="server: port of `trl vllm-serve`.")
    bf16: bool = Field(default=False, description="bf16 mixed precision on a GPU.")
    threads: int | None = Field(default=2, ge=1, description="torch CPU threads (None: torch's default).")
    seed: int = Field(default=0, description="Seed of the training (TRL's) and of the episodes.")

    def record(self) -> dict[str, Any]:
        """The run as the checkpoint's agentloop.json records it (`training`), LoRA in the record's schema."""
        out = json.loads(self.model_dump_json())
        out["lora"] = lora_record(self.lora)
        return out
