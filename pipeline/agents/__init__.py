"""Agents: the specs that name them (`registry`), the checkpoint format, the model backends and the scripted kit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.agents.registry import FromDomain, by_domain, checkpoint_digest, directory_digest, make_agent
from pipeline.agents.scripted.flaws import (
    DUAL_CONTROL_MODES,
    INACTION,
    MODES,
    FlawConfig,
    Mode,
    PlantingAgent,
    default_rates,
    inaction_variants,
    unit,
)
from pipeline.agents.scripted.inaction import InactionEpisode, not_acting
from pipeline.agents.scripted.phrases import ANYTHING_ELSE, TRANSFER, YES_NO, money
from pipeline.agents.scripted.script import YES, ScriptedEpisode, Steps, appears_in, evidence
from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.agents.backends.denormals import flushed_denormals
    from pipeline.agents.backends.gguf import import_gguf
    from pipeline.agents.backends.hf import HFAgent, HFAgentEpisode, PrefixCache, episode_seed, sample
    from pipeline.agents.backends.hf_padded import PaddedBatch, TokenRow
    from pipeline.agents.backends.lean import LeanLlama
    from pipeline.agents.backends.loading import import_model, load_model
    from pipeline.agents.checkpoint import (
        META_FILE,
        CheckpointMeta,
        ModelConfig,
        load_checkpoint,
        load_tokenizer,
        read_meta,
        save_checkpoint,
        save_tokenizer,
    )

__all__ = [
    "ANYTHING_ELSE",
    "CheckpointMeta",
    "DUAL_CONTROL_MODES",
    "FlawConfig",
    "FromDomain",
    "HFAgent",
    "HFAgentEpisode",
    "INACTION",
    "InactionEpisode",
    "LeanLlama",
    "META_FILE",
    "MODES",
    "Mode",
    "ModelConfig",
    "PaddedBatch",
    "PlantingAgent",
    "PrefixCache",
    "ScriptedEpisode",
    "Steps",
    "TRANSFER",
    "TokenRow",
    "YES",
    "YES_NO",
    "appears_in",
    "by_domain",
    "checkpoint_digest",
    "default_rates",
    "directory_digest",
    "episode_seed",
    "evidence",
    "flushed_denormals",
    "import_gguf",
    "import_model",
    "inaction_variants",
    "load_checkpoint",
    "load_model",
    "load_tokenizer",
    "make_agent",
    "money",
    "not_acting",
    "read_meta",
    "sample",
    "save_checkpoint",
    "save_tokenizer",
    "unit",
]

_LAZY = {
    "CheckpointMeta": "pipeline.agents.checkpoint",
    "HFAgent": "pipeline.agents.backends.hf",
    "HFAgentEpisode": "pipeline.agents.backends.hf",
    "LeanLlama": "pipeline.agents.backends.lean",
    "META_FILE": "pipeline.agents.checkpoint",
    "ModelConfig": "pipeline.agents.checkpoint",
    "PaddedBatch": "pipeline.agents.backends.hf_padded",
    "PrefixCache": "pipeline.agents.backends.hf",
    "TokenRow": "pipeline.agents.backends.hf_padded",
    "episode_seed": "pipeline.agents.backends.hf",
    "flushed_denormals": "pipeline.agents.backends.denormals",
    "import_gguf": "pipeline.agents.backends.gguf",
    "import_model": "pipeline.agents.backends.loading",
    "load_checkpoint": "pipeline.agents.checkpoint",
    "load_model": "pipeline.agents.backends.loading",
    "load_tokenizer": "pipeline.agents.checkpoint",
    "read_meta": "pipeline.agents.checkpoint",
    "sample": "pipeline.agents.backends.hf",
    "save_checkpoint": "pipeline.agents.checkpoint",
    "save_tokenizer": "pipeline.agents.checkpoint",
}
"""Exports imported when first used: their modules need safetensors, scipy, tokenizers, …."""

__getattr__ = lazy_exports(__name__, _LAZY)
