"""The checkpoint SFT starts from, how it renders examples, how long they may be, and how the result is saved.

Two kinds of base: an agentloop checkpoint (the embedded default and what the loop trains from it) renders with
the codec and is loaded and saved exactly as it always was (fp32); any other transformers directory renders with
its chat format (`pipeline.formats`, its own template) and is saved in its own architecture and dtype
with `agentloop.json` recording the format, so `hf:OUT` loads it as it loaded the base.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from transformers import PreTrainedModel

from pipeline.agents import META_FILE, CheckpointMeta, load_checkpoint, read_meta, save_checkpoint
from pipeline.errors import InputError
from pipeline.formats import CODEC, ChatFormat, CodecConfig, encode_conversation
from pipeline.outputs import staged_folder
from pipeline.rollout import Trajectory
from pipeline.train.sft_calls import encode_model_calls
from pipeline.train.sft_config import Overlong, Render
from pipeline.train.sft_data import world_prompt
from pipeline.train.sft_template import encode_with_template

log = logging.getLogger(__name__)


def encode_for_sft(trajectories: list[Trajectory], tokenizer: Any, codec: CodecConfig | None) -> dict[str, list]:
    """Columns `input_ids` / `assistant_masks`, rendered by the codec (TRL builds labels from the mask)."""
    ids, masks = [], []
    prompts: dict[tuple[str, str], tuple[str, list[dict]]] = {}
    for traj in trajectories:
        policy, tools = prompts.setdefault((traj.world, traj.domain), world_prompt(traj))
        enc = encode_conversation(traj.messages, tools, policy, tokenizer, codec)
        if sum(enc.assistant_mask):
            ids.append(enc.ids)
            masks.append(enc.assistant_mask)
    return {"input_ids": ids, "assistant_masks": masks}


@dataclass
class TrainBase:
    model: PreTrainedModel
    tokenizer: Any
    meta: CheckpointMeta
    path: Path
    format: ChatFormat | None = None  # None: the codec (`meta.codec_config`)
    dtype: torch.dtype = torch.float32  # what the trained weights are saved in

    @property
    def codec(self) -> CodecConfig | None:
        return self.meta.codec_config if self.format is None else None

    def encode(self, trajectories: list[Trajectory], render: Render = "world") -> dict[str, list]:
        """Columns `input_ids` / `assistant_masks`: the loss is on assistant tokens only, as the model renders them
        (`render`: the trajectories' messages in their world's prompt, or a program's recorded model calls)."""
        if render == "model_calls":
            return encode_model_calls(trajectories, self.tokenizer, self.format, self.codec)
        if self.format is None:
            return encode_for_sft(trajectories, self.tokenizer, self.codec)
        return encode_with_template(trajectories, self.tokenizer, self.format)

    def save(self, out: Path, trained: torch.nn.Module, adapter: Path | None = None, **meta_fields: Any) -> Path:
        """Write the trained model (agentloop: fp32 as always; outside: its own class and dtype) and its meta,
        whole or not at all: into a staging folder renamed over `out` when complete (`staged_folder`), so a run
        killed while saving leaves the previous checkpoint (or none), never a torn one. `adapter`: a saved LoRA
        adapter folder, moved in as `adapter/`."""
        try:
            with staged_folder(out) as staging:
                if adapter is not None:
                    shutil.move(str(adapter), str(staging / "adapter"))
                self._save_into(staging, trained, meta_fields)
        finally:
            if adapter is not None:
                shutil.rmtree(adapter, ignore_errors=True)
        return Path(out)

    def _save_into(self, out: Path, trained: torch.nn.Module, meta_fields: dict[str, Any]) -> None:
        if self.format is None:
            codec = self.meta.codec_config
            assert codec is not None  # a checkpoint in the codec format records it (CheckpointMeta's validator)
            meta = CheckpointMeta.for_codec(codec, model=self.meta.model, **meta_fields)
            save_checkpoint(out, cast(PreTrainedModel, trained.to("cpu").float().eval()), self.tokenizer, meta)
            return
        trained = trained.to("cpu").to(self.dtype).eval()
        meta = CheckpointMeta(
            chat_format=self.format.name,
            template_hash=self.format.template_hash(self.tokenizer),
            model=None,
            architecture=type(trained).__name__,
            dtype=str(self.dtype).removeprefix("torch."),
            **meta_fields,
        )
        save_checkpoint(out, cast(PreTrainedModel, trained), self.tokenizer, meta)


def load_base(path: str | Path, train_dtype: torch.dtype = torch.float32) -> TrainBase:
    """The base checkpoint; an outside one loads in `train_dtype` (fp32, or bf16 for LoRA on a GPU)."""
    path = Path(path)
    if not (path / META_FILE).exists() and not (path / "config.json").exists():
        raise InputError(
            f"{path}: not a checkpoint: neither an agentloop checkpoint ({META_FILE}) nor a transformers model"
            " directory (config.json)"
        )
    if (path / META_FILE).exists() and read_meta(path).chat_format == CODEC:
        ckpt = load_checkpoint(path)  # exactly as agentloop checkpoints always loaded
        return TrainBase(ckpt.model, ckpt.tokenizer, ckpt.meta, path)
    from pipeline.agents import load_model

    loaded = load_model(path, dtype=str(train_dtype).removeprefix("torch."))
    if loaded.format.name == CODEC:  # an outside directory in the codec format: recorded now, load it as ours
        return load_base(path, train_dtype)
    own = getattr(torch, loaded.meta.dtype or "float32", torch.float32)
    model = cast(PreTrainedModel, loaded.model)  # a transformers model, loaded by its auto class
    return TrainBase(model, loaded.tokenizer, loaded.meta, path, loaded.format, own)


def fit_length(
    columns: dict[str, list], max_length: int, mode: Overlong, codec: bool
) -> tuple[dict[str, list], dict[str, Any]]:
    """Examples longer than `max_length`: dropped (whole conversations, the default for chat-template models) or
    cut to their start by TRL ('truncate', the agentloop codec's default: the embedded default always trained
    so). Counted and logged either way; an error naming max_length when nothing trainable is left."""
    mode = ("truncate" if codec else "drop") if mode == "auto" else mode
    lengths = [len(x) for x in columns["input_ids"]]
    over = [i for i, n in enumerate(lengths) if n > max_length]
    counts: dict[str, Any] = {"mode": mode, "max_length": max_length, "over_length": len(over)}
    counts["longest"] = max(lengths, default=0)
    if mode == "drop":
        keep = [i for i, n in enumerate(lengths) if n <= max_length]
        unusable = len(over)
    else:  # TRL cuts to the first max_length tokens and drops examples left without an assistant token
        keep = list(range(len(lengths)))
        unusable = sum(1 for i in over if not any(columns["assistant_masks"][i][:max_length]))
    counts["dropped"] = unusable
    if lengths and unusable == len(lengths):
        raise InputError(
            f"SFT: all {len(lengths)} examples are longer than max_length={max_length} tokens"
            f"{'' if mode == 'drop' else ' before their first assistant token'} (the longest is {counts['longest']}"
            " tokens); raise max_length"
        )
    if over and mode == "drop":
        log.warning(
            "SFT: dropped %d of %d examples longer than max_length=%d tokens (the longest is %d)",
            len(over), len(lengths), max_length, counts["longest"],
        )  # fmt: skip
    elif over:
        log.warning(
            "SFT: %d of %d examples are longer than max_length=%d tokens and are cut to their start (%d left without"
            " an assistant token are dropped; the longest is %d)",
            len(over), len(lengths), max_length, unusable, counts["longest"],
        )  # fmt: skip
    if len(keep) < len(lengths):
        columns = {k: [v[i] for i in keep] for k, v in columns.items()}
    return columns, counts
