"""The lean decoder computes what transformers computes: logits over chunks and crops, and the same samples."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from pipeline.agents.backends.hf import PrefixCache, sample
from pipeline.agents.backends.lean import LeanLlama
from pipeline.embedded.copy_circuit import COPY_ROPE


def tiny(kv_heads: int = 4, rope: dict | None = None, **extra) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=97,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        rope_parameters={"rope_theta": 10000.0, **(rope or {"rope_type": "default"})},
        tie_word_embeddings=True,
        **extra,
    )
    return LlamaForCausalLM(config).eval()


@pytest.mark.parametrize(
    "model", [tiny(), tiny(kv_heads=2), tiny(rope=dict(COPY_ROPE))], ids=["mha", "gqa", "copy-rope"]
)
def test_logits_match_transformers_over_chunks_crops_and_growth(model):
    hf, lean = PrefixCache(model, lean=False), PrefixCache(model, lean=True)
    assert hf.lean is None and lean.lean is not None
    rng = torch.Generator().manual_seed(1)
    prompt = torch.randint(3, 97, (300,), generator=rng).tolist()  # longer than the 256-token first buffer
    for ids in (prompt[:120], prompt[:300], prompt[:200] + [5, 6, 7], prompt[:200] + [5, 6, 7, 8]):
        for cache in (hf, lean):
            new = ids[cache.reuse(ids) :]
            cache.ids = list(ids)
            cache.last = cache.logits(new)
        torch.testing.assert_close(lean.last, hf.last.detach(), rtol=1e-4, atol=1e-4)


def test_sampling_gives_the_same_tokens_either_way():
    model = tiny(rope=dict(COPY_ROPE))
    prompt = list(range(3, 60))
    runs = []
    for lean in (False, True):
        cache, gen = PrefixCache(model, lean=lean), torch.Generator().manual_seed(7)
        first = sample(model, prompt, max_new_tokens=40, stop_ids=set(), temperature=0.8, generator=gen, prefix=cache)
        again = prompt + first[:20] + [4, 5]  # the next turn extends the conversation, minus a discarded tail
        second = sample(model, again, max_new_tokens=40, stop_ids=set(), temperature=0.8, generator=gen, prefix=cache)
        runs.append((first, second))
    assert runs[0] == runs[1]


def test_anything_but_a_plain_cpu_float32_llama_falls_back_to_transformers():
    assert LeanLlama.wrap(tiny(attention_bias=True)) is None
    assert LeanLlama.wrap(tiny().to(torch.float64)) is None
    assert LeanLlama.wrap(tiny(rope={"rope_type": "dynamic", "factor": 2.0})) is None
    assert LeanLlama.wrap(torch.nn.Linear(2, 2)) is None
    assert PrefixCache(tiny(attention_bias=True)).lean is None
