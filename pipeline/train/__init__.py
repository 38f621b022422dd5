"""Training through TRL: SFT and GRPO of any checkpoint (the embedded default or an outside model), each trainer
beside its config; LoRA's one type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.lazy import lazy_exports
from pipeline.train.grpo_config import GRPOConfig
from pipeline.train.sft_config import INPUTS, SFTConfig

if TYPE_CHECKING:
    from pipeline.train.grpo import run_grpo
    from pipeline.train.sft import run_sft

__all__ = ["GRPOConfig", "INPUTS", "SFTConfig", "run_grpo", "run_sft"]

_LAZY = {"run_grpo": "pipeline.train.grpo", "run_sft": "pipeline.train.sft"}
"""Exports imported when first used: their modules need peft, safetensors, scipy, …."""

__getattr__ = lazy_exports(__name__, _LAZY)
