"""The embedded default model's architecture: a small Llama built from a transformers config (its shape,
`ModelConfig`, and the checkpoint format are `pipeline.agents.checkpoint`'s)."""

from __future__ import annotations

import logging

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from pipeline.agents import ModelConfig
from pipeline.formats import IM_END

log = logging.getLogger(__name__)


def build_model(
    config: ModelConfig | None = None, tokenizer: PreTrainedTokenizerFast | None = None
) -> LlamaForCausalLM:
    """A freshly initialised LlamaForCausalLM (seeded), sized to the tokenizer."""
    config = config or ModelConfig()
    vocab = config.vocab_size or (len(tokenizer) if tokenizer is not None else None)
    if vocab is None:
        raise ValueError("build_model needs a vocab_size or a tokenizer")
    end = tokenizer.convert_tokens_to_ids(IM_END) if tokenizer is not None else None
    pad = tokenizer.pad_token_id if tokenizer is not None else None
    hf_config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads or config.num_heads,
        max_position_embeddings=config.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta, **(config.rope_scaling or {})},
        tie_word_embeddings=config.tie_word_embeddings,
        bos_token_id=None,
        eos_token_id=end,
        pad_token_id=pad,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = LlamaForCausalLM(hf_config)
    if model.generation_config is not None:
        model.generation_config.eos_token_id = end
        model.generation_config.pad_token_id = pad
    log.info("built model: %d parameters", count_parameters(model))
    return model


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied weights are counted once by parameters()
