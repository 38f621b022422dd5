"""`SFTConfig`: one SFT run's settings, as TRL keeps a trainer's config beside it.

The same class is params.yaml's `train` section (`pipeline.loop.params.TrainParams` adds the stage's two choices,
`method` and `use_curated`), the options of `agentloop train sft`, and what `run_sft` runs with; its defaults are
the committed params.yaml's. The inputs (`base`, `data`, `anchors`, `tasks`, `held_out`) are the run's files: the
train stage fills them from the loop's outputs, a command or a library call names them. No torch import: params
load fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.train.lora import LoraSpec, lora_record

Overlong = Literal["auto", "drop", "truncate"]
Render = Literal["world", "model_calls"]
INPUTS = ("base", "data", "anchors", "tasks", "held_out")
"""The fields that name the run's files rather than how it trains (in the loop, the train stage sets them)."""
_RECORDED_AS = {"gradient_accumulation_steps": "grad_accum"}


class SFTConfig(BaseModel):
    """One SFT run: base checkpoint, data, optimisation; recorded in the checkpoint's agentloop.json."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    base: Path | None = Field(
        default=None, description="Checkpoint to start from (in the loop: the baseline's); a run needs one."
    )
    data: list[Path] = Field(
        default_factory=list, description="trajectories.jsonl files: the (targeted) training data."
    )
    anchors: list[Path] = Field(
        default_factory=list, description="trajectories.jsonl files replayed against forgetting."
    )
    anchor_share: float = Field(
        default=0.3, ge=0, lt=1, description="Share of the training examples drawn from the anchors (if any)."
    )
    tasks: list[Path] = Field(
        default_factory=list,
        description="tasks.jsonl files: trajectories of these tasks are re-graded; failures dropped.",
    )
    held_out: list[Path] = Field(
        default_factory=list,
        exclude=True,  # a check on the inputs, not how the run trains: the checkpoint's record leaves it out
        description="Held-out tasks.jsonl files: no data, anchor or task may be about one of their customers, or"
        " about an evaluation customer of a world whose customers are split (`pipeline.authoring.heldout`).",
    )
    render: Render = Field(
        default="world",
        description="What an example is: 'world' renders each trajectory's messages with its world's policy and"
        " tools (the prompt agentloop's runner gives a model agent); 'model_calls' renders the model calls an agent"
        " program made, recorded in the trajectory (its own system prompt, tool schemas and layout,"
        " `pipeline.train.sft_calls`).",
    )
    epochs: float = Field(default=8.0, gt=0, description="Passes over the training examples (unless max_steps).")
    max_steps: int = Field(default=-1, description="Stop after this many optimizer steps (-1: epochs decide).")
    learning_rate: float = Field(
        default=1e-3,
        gt=0,
        le=1,
        description="Peak learning rate (warmed up over warmup_ratio, then lr_scheduler; at most 1).",
    )
    lr_scheduler: str = Field(default="cosine", description="transformers scheduler name.")
    warmup_ratio: float = Field(default=0.05, ge=0, lt=1)
    batch_size: int = Field(default=4, ge=1, description="Examples per optimizer step (per device, length-grouped).")
    micro_batch_size: int | None = Field(
        default=None,
        ge=1,
        description="Examples per forward pass; each batch is accumulated from micro-batches of this size (same "
        "loss, same steps). None: 1 on CPU (no padding, so attention needs no mask), the whole batch on GPU.",
    )
    gradient_accumulation_steps: int = Field(
        default=1, ge=1, description="Batches accumulated per optimizer step (the effective batch is the product)."
    )
    labelled_loss: bool | None = Field(
        default=None,
        description="Project only the labelled positions through the LM head (`LabelledLossSFTTrainer`) instead "
        "of TRL's fused head, which scores every position off Triton devices. None: on CPU.",
    )
    max_length: int = Field(default=2048, ge=16, description="Longest example in tokens (see `overlong`).")
    overlong: Overlong = Field(
        default="auto",
        description="Examples longer than max_length: 'drop' them (counted and logged; an error if none is left),"
        " or 'truncate' to their start (TRL's cut). 'auto': truncate for agentloop-codec checkpoints (the embedded"
        " default), drop for a model's own chat template.",
    )
    weight_decay: float = Field(default=0.0, ge=0)
    lora: LoraSpec | None = Field(
        default=None,
        description="LoRA through peft ({rank, alpha, dropout, target_modules, save_adapter}), merged into the saved"
        " weights; null = full fine-tuning.",
    )
    bf16: bool = Field(
        default=False,
        description="bf16 mixed precision: on a GPU (with LoRA the frozen base is held in bf16), or on a CPU with"
        " AMX or AVX-512 BF16 (autocast around float32 weights; float32 on any other CPU).",
    )
    threads: int | None = Field(default=2, ge=1, description="torch CPU threads (None: torch's default).")
    seed: int = Field(default=0, description="Training seed (TRL's: data order, new weights such as LoRA's).")
    logging_steps: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _micro_batches_fill_a_batch(self) -> SFTConfig:
        if self.micro_batch_size is not None and self.batch_size % self.micro_batch_size:
            raise ValueError(f"micro_batch_size {self.micro_batch_size} must divide batch_size {self.batch_size}")
        return self

    def record(self) -> dict[str, Any]:
        """The run as the checkpoint's agentloop.json records it (`training`), in the record's own schema:
        `grad_accum`, and LoRA as {enabled, r, alpha, dropout, target_modules, save_adapter}."""
        out: dict[str, Any] = {}
        for name, value in json.loads(self.model_dump_json()).items():
            if name == "render" and value == "world":  # the default: a record as it always was
                continue
            out[_RECORDED_AS.get(name, name)] = lora_record(self.lora) if name == "lora" else value
        return out
