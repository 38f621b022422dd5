"""`agentloop train sft`: supervised fine-tuning on verified trajectories, through TRL's SFTTrainer.

Every conversation is rendered by the one codec (`encode_conversation`, with the codec configuration the base
checkpoint was trained with) and handed to TRL pre-tokenized, with `assistant_masks`: the loss is on assistant
tokens only, and the tokens trained on are exactly those the evaluation prompt is made of. Anchor data (tasks the
model already passes, or the gold corpus it was built from) is mixed in at a set share to avoid forgetting.
Trajectories whose task is at hand are re-graded and dropped unless they pass. The checkpoint written records the
codec hash, the data manifest (files, hashes, counts) and this configuration, and loads in the `hf` backend.

CPU defaults (the embedded default, 2 cores): full fine-tuning, batch 4 × ~2k tokens, 2 epochs, lr 1e-3: a few
hundred trajectories train in a few minutes. On CPU each batch is accumulated from micro-batches of one example
(no padding, so attention runs its causal kernel without a mask) and the loss projects only the labelled positions
(`pipeline.train.labelled_loss`): the same optimizer steps on the same loss, about twice as fast
(bench/bench_sft_speed.py).

GPU settings (a real model, e.g. a 1–8B instruct model loaded from a local directory):

    agentloop train sft --base ckpt/ --data synth/trajectories.jsonl --anchors curate/anchors.jsonl \\
        --lora --lora-r 16 --lora-alpha 32 --lr 1e-4 --epochs 2 --batch-size 8 --grad-accum 4 \\
        --max-length 8192 --bf16 --out sft/

`--lora` trains a peft LoRA adapter on the attention and MLP projections and merges it into the weights before
saving, so the checkpoint stays a plain transformers directory (and is what vLLM serves).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.agents.codec import CodecConfig, encode_conversation
from pipeline.dataset.io import read_tasks
from pipeline.dataset.task import Task
from pipeline.grading.grader import grade
from pipeline.loop.progress import track
from pipeline.rollout.trajectory import Trajectory
from pipeline.train.model import CheckpointMeta, load_checkpoint, save_checkpoint
from pipeline.train.progress_callback import TrackerCallback
from pipeline.world.registry import load_world
from pipeline.world.retail.policy import load_policy
from pipeline.world.retail.state import WorldLoadError
from pipeline.world.retail.tools import TOOLS

log = logging.getLogger(__name__)
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=False, description="Train a LoRA adapter (merged before saving) instead of all weights."
    )
    r: int = Field(default=16, ge=1, description="Adapter rank.")
    alpha: int = Field(default=32, ge=1, description="Adapter scaling numerator.")
    dropout: float = Field(default=0.0, ge=0, lt=1)
    target_modules: list[str] = Field(default_factory=lambda: list(LORA_TARGETS))

    def peft_config(self) -> Any:
        """The peft LoraConfig these settings describe, or None when LoRA is off (SFT and GRPO share it)."""
        if not self.enabled:
            return None
        from peft import LoraConfig

        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=list(self.target_modules),
            task_type="CAUSAL_LM",
        )


class SFTParams(BaseModel):
    """One SFT run: base checkpoint, data, optimisation; recorded in the checkpoint's agentloop.json."""

    model_config = ConfigDict(extra="forbid")

    base: Path = Field(description="Checkpoint to start from (an agentloop checkpoint directory).")
    data: list[Path] = Field(description="trajectories.jsonl files: the (targeted) training data.")
    anchors: list[Path] = Field(
        default_factory=list, description="trajectories.jsonl files replayed against forgetting."
    )
    anchor_share: float = Field(
        default=0.25, ge=0, lt=1, description="Share of the training examples drawn from the anchors (if any)."
    )
    tasks: list[Path] = Field(
        default_factory=list,
        description="tasks.jsonl files: trajectories of these tasks are re-graded; failures dropped.",
    )
    epochs: float = Field(default=2.0, gt=0)
    max_steps: int = Field(default=-1, description="Stop after this many optimizer steps (-1: epochs decide).")
    learning_rate: float = Field(default=1e-3, gt=0)
    lr_scheduler: str = Field(default="cosine", description="transformers scheduler name.")
    warmup_ratio: float = Field(default=0.05, ge=0, lt=1)
    batch_size: int = Field(default=4, ge=1, description="Per-device batch size (length-grouped).")
    micro_batch_size: int | None = Field(
        default=None,
        ge=1,
        description="Examples per forward pass; each batch is accumulated from micro-batches of this size (same "
        "loss, same steps). None: 1 on CPU (no padding, so attention needs no mask), the whole batch on GPU.",
    )
    grad_accum: int = Field(default=1, ge=1)
    labelled_loss: bool | None = Field(
        default=None,
        description="Project only the labelled positions through the LM head (`LabelledLossSFTTrainer`) instead "
        "of TRL's fused head, which scores every position off Triton devices. None: on CPU.",
    )
    max_length: int = Field(default=4096, ge=16, description="Examples longer than this are cut.")
    weight_decay: float = Field(default=0.0, ge=0)
    lora: LoraParams = Field(default_factory=LoraParams)
    bf16: bool = Field(default=False, description="bf16 mixed precision (GPU).")
    threads: int | None = Field(default=2, ge=1, description="torch CPU threads (None: torch's default).")
    seed: int = Field(default=0)
    logging_steps: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _micro_batches_fill_a_batch(self) -> SFTParams:
        if self.micro_batch_size is not None and self.batch_size % self.micro_batch_size:
            raise ValueError(f"micro_batch_size {self.micro_batch_size} must divide batch_size {self.batch_size}")
        return self


@dataclass
class SFTResult:
    out: Path
    examples: int
    steps: int
    losses: list[float] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def first_loss(self) -> float:
        return self.losses[0] if self.losses else float("nan")

    @property
    def last_loss(self) -> float:
        return self.losses[-1] if self.losses else float("nan")


# ---- data --------------------------------------------------------------------------------------------------
def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories, one per line: bare, or wrapped under "trajectory" (a curated selection's rows)."""
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(Trajectory.model_validate(row.get("trajectory", row) if isinstance(row, dict) else row))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a trajectory: {str(exc).splitlines()[0]}") from None
    return out


def _policy(world_name: str) -> str:
    try:
        return load_world(world_name).policy
    except (WorldLoadError, FileNotFoundError, ValueError):
        return load_policy()


def verify(trajectories: list[Trajectory], tasks: dict[str, Task]) -> tuple[list[Trajectory], dict[str, int]]:
    """Keep trajectories whose task is known and whose re-graded verdict passes; unknown tasks are kept as given."""
    kept, counts = [], {"verified": 0, "failed_verification": 0, "unverified": 0, "infra_error": 0}
    for traj in trajectories:
        if traj.infra_error:
            counts["infra_error"] += 1
            continue
        task = tasks.get(traj.task_id)
        if task is None:
            counts["unverified"] += 1
            kept.append(traj)
            continue
        try:
            passed = grade(load_world(task.world), task, traj).passed
        except (WorldLoadError, ValueError) as exc:
            log.warning("cannot re-grade %s: %s", traj.task_id, exc)
            passed = False
        counts["verified" if passed else "failed_verification"] += 1
        if passed:
            kept.append(traj)
    return kept, counts


def encode_for_sft(trajectories: list[Trajectory], tokenizer: Any, codec: CodecConfig) -> dict[str, list]:
    """Columns `input_ids` / `assistant_masks`, rendered by the codec (TRL builds labels from the mask)."""
    ids, masks = [], []
    policies: dict[str, str] = {}
    for traj in trajectories:
        policy = policies.setdefault(traj.world, _policy(traj.world))
        enc = encode_conversation(traj.messages, TOOLS.schemas(), policy, tokenizer, codec)
        if sum(enc.assistant_mask):
            ids.append(enc.ids)
            masks.append(enc.assistant_mask)
    return {"input_ids": ids, "assistant_masks": masks}


def mix_anchors(data: list[Trajectory], anchors: list[Trajectory], share: float, seed: int) -> list[Trajectory]:
    """`data` plus anchors making up `share` of the result (sampled without replacement while they last)."""
    if not anchors or share <= 0:
        return list(data)
    want = round(len(data) * share / (1 - share))
    rng = random.Random(seed)
    picked = rng.sample(anchors, min(want, len(anchors)))
    while len(picked) < want:
        picked.append(rng.choice(anchors))
    mixed = data + picked
    rng.shuffle(mixed)
    return mixed


def load_data(params: SFTParams) -> tuple[list[Trajectory], dict[str, Any]]:
    tasks = {t.id: t for path in params.tasks for t in read_tasks(path)}
    data: list[Trajectory] = [t for p in params.data for t in read_trajectories(p)]
    anchors: list[Trajectory] = [t for p in params.anchors for t in read_trajectories(p)]
    data, data_counts = verify(data, tasks)
    anchors, anchor_counts = verify(anchors, tasks)
    mixed = mix_anchors(data, anchors, params.anchor_share, params.seed)
    manifest = {
        "data": [{"path": str(p), "sha256": file_sha256(p)} for p in params.data],
        "anchors": [{"path": str(p), "sha256": file_sha256(p)} for p in params.anchors],
        "tasks": [{"path": str(p), "sha256": file_sha256(p)} for p in params.tasks],
        "data_counts": data_counts,
        "anchor_counts": anchor_counts,
        "examples": len(mixed),
        "anchor_examples": len(mixed) - len(data),
    }
    return mixed, manifest


# ---- training -------------------------------------------------------------------------------------------------
def _losses(log_history: list[dict]) -> list[float]:
    return [float(e["loss"]) for e in log_history if "loss" in e]


def run_sft(params: SFTParams, out: Path, trajectories: list[Trajectory] | None = None) -> SFTResult:
    """Fine-tune `params.base` and write the checkpoint to `out`; `trajectories` overrides reading `params.data`."""
    if params.threads:
        torch.set_num_threads(params.threads)
    ckpt = load_checkpoint(params.base)  # fails fast (no TRL import) on a missing or foreign checkpoint
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from pipeline.train.labelled_loss import LabelledLossSFTTrainer, supports_labelled_loss

    codec = ckpt.meta.codec_config
    if trajectories is None:
        trajectories, manifest = load_data(params)
    else:
        manifest = {"data": "in-memory", "examples": len(trajectories)}
    if not trajectories:
        raise ValueError("SFT: no training trajectories left after verification")
    columns = encode_for_sft(trajectories, ckpt.tokenizer, codec)
    manifest["tokens"] = sum(len(x) for x in columns["input_ids"])
    manifest["assistant_tokens"] = sum(sum(m) for m in columns["assistant_masks"])
    dataset = Dataset.from_dict(columns)
    gpu = torch.cuda.is_available()
    micro = params.micro_batch_size or (params.batch_size if gpu else 1)
    with tempfile.TemporaryDirectory(prefix="agentloop-sft-") as scratch:
        args = SFTConfig(
            output_dir=scratch,
            num_train_epochs=params.epochs,
            max_steps=params.max_steps,
            per_device_train_batch_size=micro,
            gradient_accumulation_steps=params.grad_accum * params.batch_size // micro,
            learning_rate=params.learning_rate,
            lr_scheduler_type=params.lr_scheduler,
            warmup_steps=params.warmup_ratio,  # a float below 1 is a share of the steps
            weight_decay=params.weight_decay,
            max_length=params.max_length,
            train_sampling_strategy="group_by_length",
            # TRL turns it on by default; on CPU a small model's activations fit, and recomputing them costs a
            # forward pass per step (a quarter of the loop's SFT time) for nothing.
            gradient_checkpointing=gpu,
            logging_steps=params.logging_steps,
            save_strategy="no",
            report_to=[],
            seed=params.seed,
            bf16=params.bf16 and gpu,
            use_cpu=not gpu,
            dataloader_num_workers=0,
            disable_tqdm=True,
            dataset_num_proc=None,
        )
        peft_config = params.lora.peft_config()
        model = ckpt.model
        model.train()
        labelled = (not gpu) if params.labelled_loss is None else params.labelled_loss
        trainer_class = LabelledLossSFTTrainer if labelled and supports_labelled_loss(model) else SFTTrainer
        trainer = trainer_class(
            model=model, args=args, train_dataset=dataset, processing_class=ckpt.tokenizer, peft_config=peft_config
        )
        with track("SFT", None, "steps") as progress:
            trainer.add_callback(TrackerCallback(progress))
            result = trainer.train()
        trained = trainer.model
        if params.lora.enabled:
            trained = trained.merge_and_unload()
        trained = trained.to("cpu").float().eval()
        losses = _losses(trainer.state.log_history)
        steps = int(result.global_step)
    meta = CheckpointMeta.for_codec(
        codec,
        model=ckpt.meta.model,
        training={"kind": "sft", **json.loads(params.model_dump_json()), "steps": steps, "losses": losses},
        data_manifest=manifest,
        parent=str(params.base),
    )
    save_checkpoint(out, trained, ckpt.tokenizer, meta)
    log.info(
        "SFT: %d examples, %d steps, loss %.4f -> %.4f, wrote %s",
        len(trajectories),
        steps,
        losses[0] if losses else float("nan"),
        losses[-1] if losses else float("nan"),
        out,
    )
    return SFTResult(out=Path(out), examples=len(columns["input_ids"]), steps=steps, losses=losses, manifest=manifest)
