"""The checkpoint format every agentloop-trained model is kept in: the weights and tokenizer as transformers writes
them, and `agentloop.json` beside them (the codec or chat format it renders with, its shape, how it was trained).
Loading a checkpoint reads this module and the formats only; no domain."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from transformers import AutoModelForCausalLM, LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerFast

from pipeline.errors import InputError
from pipeline.formats import CodecConfig, CodecMismatchError, check_tokenizer, codec_hash
from pipeline.outputs import atomic_write

log = logging.getLogger(__name__)
META_FILE = "agentloop.json"


class ModelConfig(BaseModel):
    """Shape of the causal LM (the defaults give ~0.78M parameters with a 2k vocabulary)."""

    model_config = ConfigDict(extra="forbid")

    hidden_size: int = Field(default=128, ge=8, description="Width of the residual stream.")
    intermediate_size: int = Field(default=512, ge=8, description="Width of the MLP.")
    num_layers: int = Field(default=2, ge=1, description="Decoder layers.")
    num_heads: int = Field(default=4, ge=1, description="Attention heads (hidden_size must divide by it).")
    num_kv_heads: int | None = Field(default=None, description="Key/value heads (grouped attention); None = heads.")
    max_position_embeddings: int = Field(default=2048, ge=16, description="Longest sequence (context length).")
    rope_theta: float = Field(default=10000.0, gt=0, description="RoPE base.")
    rope_scaling: dict[str, int | float | str] | None = Field(
        default=None,
        description="transformers rope_parameters beyond the base (e.g. rope_type 'llama3' with its factors);"
        " None = plain RoPE.",
    )
    tie_word_embeddings: bool = Field(default=True, description="Share input and output embeddings.")
    vocab_size: int | None = Field(default=None, description="Vocabulary; None = the tokenizer's length.")
    seed: int = Field(default=0, description="Seed of the random initialisation.")


class CheckpointMeta(BaseModel):
    """What `agentloop.json` records next to the weights."""

    model_config = ConfigDict(extra="forbid")

    format: int = Field(default=1, description="Version of this file's layout.")
    codec_hash: str | None = Field(
        default=None, description="codec_hash(codec_config) when the checkpoint was written (format agentloop)."
    )
    codec_config: CodecConfig | None = Field(
        default=None, description="The codec configuration the model was trained with (format agentloop)."
    )
    model: ModelConfig | None = Field(
        default_factory=ModelConfig, description="The model's shape (the embedded family; None for another)."
    )
    training: dict[str, Any] = Field(default_factory=dict, description="Training configuration (stage params).")
    data_manifest: dict[str, Any] = Field(
        default_factory=dict, description="Training data: files and their hashes, counts, sources."
    )
    parent: str | None = Field(default=None, description="Checkpoint this one was trained from, if any.")
    chat_format: str = Field(
        default="agentloop",
        exclude_if=lambda v: v == "agentloop",
        description="How prompts are rendered and outputs read (pipeline.formats): 'agentloop' = the codec"
        " above; any other name = the model's own chat template with that family's tool-call parser.",
    )
    template_hash: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="For a chat-template format: hash of the format and the tokenizer's template when recorded.",
    )
    architecture: str | None = Field(
        default=None, exclude_if=lambda v: v is None, description="transformers class (e.g. Qwen2ForCausalLM)."
    )
    dtype: str | None = Field(default=None, exclude_if=lambda v: v is None, description="Weights' dtype on disk.")

    @model_validator(mode="after")
    def _codec_recorded(self) -> CheckpointMeta:
        if self.chat_format == "agentloop" and (self.codec_hash is None or self.codec_config is None):
            raise ValueError("a checkpoint in the agentloop format records codec_hash and codec_config")
        return self

    @classmethod
    def for_codec(cls, codec_config: CodecConfig, **fields: Any) -> CheckpointMeta:
        return cls(codec_hash=codec_hash(codec_config), codec_config=codec_config, **fields)


@dataclass
class Checkpoint:
    model: LlamaForCausalLM
    tokenizer: PreTrainedTokenizerFast
    meta: CheckpointMeta
    path: Path


def save_checkpoint(
    directory: str | Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, meta: CheckpointMeta
) -> Path:
    """Write model (safetensors), tokenizer and agentloop.json into `directory`."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path), safe_serialization=True)
    tokenizer.save_pretrained(str(path))
    atomic_write(path / META_FILE, meta.model_dump_json(indent=2) + "\n")
    return path


def read_meta(directory: str | Path) -> CheckpointMeta:
    meta_path = Path(directory) / META_FILE
    if not meta_path.exists():
        raise InputError(f"{meta_path}: not an agentloop checkpoint (no {META_FILE})")
    try:
        return CheckpointMeta.model_validate(json.loads(meta_path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise InputError(f"{meta_path}: not a valid {META_FILE}: {exc}") from None


def verify_codec(directory: str | Path, meta: CheckpointMeta, codec_config: CodecConfig | None = None) -> CodecConfig:
    """The codec configuration to use with this checkpoint; raises when the current codec differs from its own."""
    config = codec_config or meta.codec_config
    current = codec_hash(config)
    if current != meta.codec_hash:
        raise CodecMismatchError(
            f"{Path(directory) / META_FILE}: checkpoint was trained with codec {meta.codec_hash}, but the current"
            f" codec is {current}; retrain or render with the codec it was trained with"
        )
    # every caller passes a meta that records its codec_config (the agentloop format requires one) or a codec_config
    return cast("CodecConfig", config)


def load_checkpoint(directory: str | Path, codec_config: CodecConfig | None = None) -> Checkpoint:
    """Load model, tokenizer and meta; refuses a checkpoint whose codec hash differs from the current codec."""
    path = Path(directory)
    meta = read_meta(path)
    if meta.chat_format != "agentloop":
        raise CodecMismatchError(
            f"{path / META_FILE}: the model renders with its own chat template ({meta.chat_format!r}), not the"
            " codec; training it is not supported yet (it measures and serves through hf:PATH)"
        )
    verify_codec(path, meta, codec_config)
    tokenizer = load_tokenizer(path)
    # an agentloop checkpoint is the embedded family: a LlamaForCausalLM
    model = cast("LlamaForCausalLM", AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True))
    check_finite(model, path)
    model.eval()
    return Checkpoint(model=model, tokenizer=tokenizer, meta=meta, path=path)


class NonFiniteWeightsError(InputError, ValueError):
    """A checkpoint whose weights hold NaN or infinity (a diverged run's, a corrupted file): every reply it gives is
    noise, so it is refused where it is loaded rather than measured as an agent that fails every task."""


_CHUNK = 1 << 24
"""Elements checked at a time: the boolean mask of a large embedding is built in parts, not whole."""


def _nonfinite(tensor: torch.Tensor) -> int:
    """How many values of a floating-point tensor are NaN or ±inf (0 for any other dtype or a meta tensor)."""
    if not tensor.is_floating_point() or tensor.device.type == "meta":
        return 0
    flat = tensor.detach().reshape(-1)
    return sum(int((~torch.isfinite(part)).sum()) for part in flat.split(_CHUNK))


def _refuse_nonfinite(path: Path, found: list[tuple[str, int, int]], total: int) -> None:
    if found:
        name, bad, size = found[0]
        raise NonFiniteWeightsError(
            f"{path}: the weights are not finite: parameter {name!r} holds {bad} NaN/inf of {size} values"
            f" ({len(found)} of {total} parameters hold some); a diverged or corrupted checkpoint is not measured"
        )


@torch.no_grad()
def check_finite(model: torch.nn.Module, path: str | Path) -> None:
    """Refuse a loaded model any of whose parameters holds NaN or infinity (NonFiniteWeightsError naming the
    checkpoint folder and the first such parameter); one pass over the weights, on the device they sit on."""
    params = list(model.named_parameters())
    found = [(name, bad, p.numel()) for name, p in params if (bad := _nonfinite(p))]
    _refuse_nonfinite(Path(path), found, len(params))


def check_finite_files(path: str | Path) -> None:
    """`check_finite` on the safetensors files of a checkpoint folder, for an engine that loads the weights
    itself (vLLM): each tensor read through a memory map, on the CPU."""
    from safetensors import safe_open

    path, total = Path(path), 0
    found: list[tuple[str, int, int]] = []
    for file in sorted(path.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt") as weights:
                for name in weights.keys():  # noqa: SIM118 - a safe_open handle is not iterable
                    tensor = weights.get_tensor(name)
                    total += 1
                    if bad := _nonfinite(tensor):
                        found.append((name, bad, tensor.numel()))
        except (OSError, ValueError, RuntimeError) as exc:  # safetensors' own SafetensorError is an OSError
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{file}: not a readable safetensors file ({first})") from None
    _refuse_nonfinite(path, found, total)


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, directory: str | Path) -> None:
    tokenizer.save_pretrained(str(directory))


def load_tokenizer(directory: str | Path) -> PreTrainedTokenizerFast:
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(directory), local_files_only=True)
    check_tokenizer(tokenizer)
    return tokenizer
