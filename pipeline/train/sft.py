"""`agentloop train sft`: supervised fine-tuning on verified trajectories, through TRL's SFTTrainer.

Every conversation is rendered by the one codec (`encode_conversation`, with the codec configuration the base
checkpoint was trained with) and handed to TRL pre-tokenized, with `assistant_masks`: the loss is on assistant
tokens only, and the tokens trained on are exactly those the evaluation prompt is made of. Anchor data (tasks the
model already passes, or the gold corpus it was built from) is mixed in at a set share to avoid forgetting.
Trajectories whose task is at hand are re-graded and dropped unless they pass. The checkpoint written records the
codec hash, the data manifest (files, hashes, counts) and this configuration, and loads in the `hf` backend.

CPU defaults (`SFTConfig`'s, which are the committed params.yaml's `train`; the embedded default, 2 cores): full
fine-tuning, batch 4 × ≤ 2048 tokens, 8 epochs, lr 1e-3: a few hundred trajectories train in minutes. On CPU
each batch is accumulated from micro-batches of one example (no padding, so attention runs its causal kernel
without a mask) and the loss projects only the labelled positions (`pipeline.train.labelled_loss`): the same
optimizer steps on the same loss, about twice as fast (bench/bench_sft_speed.py).

GPU settings (a real model, e.g. a 1–8B instruct model loaded from a local directory):

    agentloop train sft --base ckpt/ --data synth/trajectories.jsonl --anchors curate/anchors.jsonl \\
        --lora --lora-rank 16 --lora-alpha 32 --lr 1e-4 --epochs 2 --batch-size 8 --grad-accum 4 \\
        --max-length 8192 --bf16 --out sft/

`--lora` trains a peft LoRA adapter on the attention and MLP projections and merges it into the weights before
saving, so the checkpoint stays a plain transformers directory (and is what vLLM serves).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pipeline.agents import flushed_denormals
from pipeline.errors import InputError
from pipeline.progress import track
from pipeline.rollout import Trajectory
from pipeline.train.finite import FiniteCallback, NonFiniteTrainingError, first_non_finite
from pipeline.train.lora import peft_config
from pipeline.train.progress_callback import TrackerCallback
from pipeline.train.sft_base import TrainBase, encode_for_sft, fit_length, load_base
from pipeline.train.sft_config import SFTConfig
from pipeline.train.sft_data import file_sha256, load_data, mix_anchors, read_trajectories, verify
from pipeline.train.update import check_update

__all__ = [
    "SFTConfig",
    "SFTResult",
    "encode_for_sft",
    "file_sha256",
    "load_data",
    "mix_anchors",
    "read_trajectories",
    "run_sft",
    "verify",
]
log = logging.getLogger(__name__)


@dataclass
class SFTResult:
    out: Path
    examples: int
    steps: int
    losses: list[float] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    mean_loss: float = float("nan")  # TRL's training loss over all steps (logged even when `losses` is empty)
    train_seconds: float = float("nan")  # the training loop alone (TRL's train_runtime), without set-up and saving

    @property
    def first_loss(self) -> float:
        return self.losses[0] if self.losses else float("nan")

    @property
    def last_loss(self) -> float:
        return self.losses[-1] if self.losses else float("nan")


def _losses(log_history: list[dict]) -> list[float]:
    return [float(e["loss"]) for e in log_history if "loss" in e]


def _cpu_has_bf16() -> bool:
    """Whether this CPU runs bfloat16 products natively (AMX or AVX-512 BF16): only there is bf16 a speed-up."""
    from pipeline.agents.backends.hardware import fast_dtype

    return fast_dtype("cpu") == "bfloat16"


def run_sft(params: SFTConfig, out: Path, trajectories: list[Trajectory] | None = None) -> SFTResult:
    """Fine-tune `params.base` and write the checkpoint to `out`; `trajectories` overrides reading `params.data`."""
    if params.base is None:
        raise InputError("SFT: no base checkpoint to start from (SFTConfig.base, --base)")
    if params.threads:
        torch.set_num_threads(params.threads)
    gpu = torch.cuda.is_available()
    if params.bf16 and not gpu and not _cpu_has_bf16():
        log.info("SFT: bf16 asked for, but this CPU has no bf16 instructions (emulated, slower): float32 instead")
    # LoRA on a GPU in bf16 keeps the frozen base in bf16 (half the memory); otherwise weights train in fp32
    train_dtype = torch.bfloat16 if params.bf16 and gpu and params.lora is not None else torch.float32
    base = load_base(params.base, train_dtype)  # fails fast (no TRL import) on a missing or unreadable checkpoint
    from datasets import Dataset
    from trl import SFTTrainer

    from pipeline.train.labelled_loss import LabelledLossSFTTrainer, supports_labelled_loss

    columns, manifest = _encode(params, base, trajectories)
    dataset = Dataset.from_dict(columns)
    micro = params.micro_batch_size or (params.batch_size if gpu else 1)
    adapter: Path | None = None
    with tempfile.TemporaryDirectory(prefix="agentloop-sft-") as scratch:
        args = _training_args(params, scratch, micro, gpu)
        model = base.model
        model.train()
        labelled = (not gpu) if params.labelled_loss is None else params.labelled_loss
        trainer_class = LabelledLossSFTTrainer if labelled and supports_labelled_loss(model) else SFTTrainer
        trainer = trainer_class(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=base.tokenizer,
            peft_config=peft_config(params.lora),
        )
        with track("SFT", None, "steps") as progress:
            trainer.add_callback(TrackerCallback(progress))
            trainer.add_callback(FiniteCallback(params.learning_rate))
            with flushed_denormals(not gpu):
                result = trainer.train()
        trained: Any = trainer.model  # the model TRL trained (a peft model with LoRA)
        if params.lora is not None:
            if params.lora.save_adapter:  # moved into the checkpoint folder as it is written whole
                adapter = Path(tempfile.mkdtemp(prefix="agentloop-adapter-"))
                trained.save_pretrained(str(adapter))
            trained = trained.merge_and_unload()
        losses = _losses(trainer.state.log_history)
        steps, mean_loss = int(result.global_step), float(result.training_loss)
        train_seconds = float(result.metrics.get("train_runtime", float("nan")))
    bad = first_non_finite(trained, trainable_only=False)
    if bad is not None:  # what the per-step check cannot see (a frozen weight, a merge)
        raise NonFiniteTrainingError(f"trained weight {bad} is not finite; nothing was saved")
    check_update(trained, params.base)  # a weight moved absurdly far (LoRA's alpha 1e9) is refused, named
    base.save(
        Path(out),
        trained,
        adapter=adapter,
        training={"kind": "sft", **params.record(), "steps": steps, "losses": losses},
        data_manifest=manifest,
        parent=str(params.base),
    )
    log.info(
        "SFT: %d examples, %d steps, loss %.4f -> %.4f, wrote %s",
        len(columns["input_ids"]),
        steps,
        losses[0] if losses else float("nan"),
        losses[-1] if losses else float("nan"),
        out,
    )
    return SFTResult(
        out=Path(out),
        examples=len(columns["input_ids"]),
        steps=steps,
        losses=losses,
        manifest=manifest,
        mean_loss=mean_loss,
        train_seconds=train_seconds,
    )


def _encode(
    params: SFTConfig, base: TrainBase, trajectories: list[Trajectory] | None
) -> tuple[dict[str, list], dict[str, Any]]:
    """The training columns (token ids and assistant masks, fitted to the length limit) and the data manifest."""
    if trajectories is None:
        trajectories, manifest = load_data(params)
    else:
        manifest = {"data": "in-memory", "examples": len(trajectories)}
    if not trajectories:
        raise InputError("SFT: no training trajectories left after verification")
    columns = base.encode(trajectories, params.render)
    if not columns["input_ids"]:
        raise InputError(f"SFT: none of the {len(trajectories)} trajectories has an assistant turn to train on")
    columns, manifest["length"] = fit_length(columns, params.max_length, params.overlong, base.format is None)
    manifest["tokens"] = sum(len(x) for x in columns["input_ids"])
    manifest["assistant_tokens"] = sum(sum(m) for m in columns["assistant_masks"])
    return columns, manifest


def _training_args(params: SFTConfig, scratch: str, micro: int, gpu: bool) -> Any:
    """TRL's arguments for this configuration: each batch accumulated from micro-batches of `micro` examples."""
    from trl import SFTConfig as TRLSFTConfig

    return TRLSFTConfig(
        output_dir=scratch,
        num_train_epochs=params.epochs,
        max_steps=params.max_steps,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=params.gradient_accumulation_steps * params.batch_size // micro,
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
        bf16=params.bf16 and (gpu or _cpu_has_bf16()),  # on a CPU: autocast around float32 weights
        use_cpu=not gpu,
        dataloader_num_workers=0,
        disable_tqdm=True,
        dataset_num_proc=None,
    )
