"""Lean incremental decoding for a small Llama on CPU: the same arithmetic as transformers, without its call stack.

The embedded default is a 2-layer, 128-wide Llama. Generating one token through `LlamaForCausalLM.forward` spends
most of its ~2.5 ms in Python (module hooks, cache objects, output dataclasses), not in the matrix products;
measuring, curating and re-measuring are almost all token-by-token generation, so that overhead is most of the
loop's time. `LeanLlama` runs the same operations (RMSNorm in float32, rotary embeddings from the model's own
`inv_freq` and scaling, scaled-dot-product attention, SiLU MLP, tied or untied head) on the model's parameter
tensors themselves — no copies, so a model being trained is always decoded with its current weights — and keeps
its keys and values in preallocated buffers. `LeanLlama.wrap` returns None for anything else (another
architecture, a GPU, half precision, biases, a peft wrapper), and the caller falls back to transformers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class _Layer:
    ln1: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor
    ln2: torch.Tensor
    gate: torch.Tensor
    up: torch.Tensor
    down: torch.Tensor


class LeanLlama:
    """Forward passes of a `LlamaForCausalLM`'s weights over new tokens, with a `LeanCache` of the earlier ones."""

    def __init__(self, model: torch.nn.Module) -> None:
        llama: Any = model  # a LlamaForCausalLM (`wrap` checks): its submodules and config are read by name
        cfg, inner = llama.config, llama.model
        self.config = cfg
        self.embed: torch.Tensor = inner.embed_tokens.weight
        self.head: torch.Tensor = llama.lm_head.weight
        self.norm: torch.Tensor = inner.norm.weight
        self.eps = float(cfg.rms_norm_eps)
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        self.scaling = self.head_dim**-0.5
        self.inv_freq: torch.Tensor = inner.rotary_emb.inv_freq.float()
        self.rope_scale = float(inner.rotary_emb.attention_scaling)
        self.layers = [
            _Layer(
                ln1=layer.input_layernorm.weight,
                q=layer.self_attn.q_proj.weight,
                k=layer.self_attn.k_proj.weight,
                v=layer.self_attn.v_proj.weight,
                o=layer.self_attn.o_proj.weight,
                ln2=layer.post_attention_layernorm.weight,
                gate=layer.mlp.gate_proj.weight,
                up=layer.mlp.up_proj.weight,
                down=layer.mlp.down_proj.weight,
            )
            for layer in inner.layers
        ]

    @staticmethod
    def wrap(model: torch.nn.Module) -> LeanLlama | None:
        """A `LeanLlama` over `model`, or None where it would not compute what transformers computes."""
        from transformers import LlamaForCausalLM

        if type(model) is not LlamaForCausalLM:
            return None
        cfg = model.config
        param = next(model.parameters())
        rope_type = (getattr(cfg, "rope_parameters", None) or {}).get("rope_type", "default")
        plain = (
            param.device.type == "cpu"
            and param.dtype == torch.float32
            and not getattr(cfg, "attention_bias", False)
            and not getattr(cfg, "mlp_bias", False)
            and getattr(cfg, "hidden_act", "silu") == "silu"
            and getattr(cfg, "pretraining_tp", 1) == 1
            and rope_type in ("default", "llama3", "linear")  # static frequencies: `inv_freq` says it all
        )
        return LeanLlama(model) if plain else None

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, weight.shape, weight, self.eps)

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    @torch.inference_mode()
    def logits(self, ids: list[int], cache: LeanCache) -> torch.Tensor:
        """Run `ids` after the `cache.length` tokens the cache holds (appending theirs); the last position's logits.

        Several tokens (a prompt) take `logits_ragged`'s operations, so a prompt run alone and one run in a batch
        fill the cache alike; one token takes the same operations without its bookkeeping (one at a time, that
        is ~12% of a token's time)."""
        if len(ids) != 1:
            return self.logits_ragged([ids], [cache], keep=[1])[0]
        start = cache.length
        x = self.embed[torch.tensor(ids)]
        freqs = torch.arange(start, start + 1, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos() * self.rope_scale, emb.sin() * self.rope_scale
        for li, layer in enumerate(self.layers):
            h = self._rms(x, layer.ln1)
            q = F.linear(h, layer.q).view(1, self.heads, self.head_dim).transpose(0, 1)
            k = F.linear(h, layer.k).view(1, self.kv_heads, self.head_dim).transpose(0, 1)
            v = F.linear(h, layer.v).view(1, self.kv_heads, self.head_dim).transpose(0, 1)
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            keys_t, values = cache.append(li, k, v)
            if self.kv_heads != self.heads:
                keys_t = keys_t.repeat_interleave(self.heads // self.kv_heads, dim=0)
                values = values.repeat_interleave(self.heads // self.kv_heads, dim=0)
            att = torch.softmax(torch.matmul(q, keys_t) * self.scaling, dim=-1) @ values
            x = x + F.linear(att.transpose(0, 1).reshape(1, self.heads * self.head_dim), layer.o)
            h = self._rms(x, layer.ln2)
            x = x + F.linear(F.silu(F.linear(h, layer.gate)) * F.linear(h, layer.up), layer.down)
        cache.length = start + 1
        return F.linear(self._rms(x[-1], self.norm), self.head)

    @torch.inference_mode()
    def logits_batch(self, ids: list[int], caches: list[LeanCache]) -> torch.Tensor:
        """One new token for each of several sequences, each after the tokens its own cache holds (ragged
        lengths); the last-position logits of each, one row per sequence."""
        return self.logits_ragged([[i] for i in ids], caches)

    @torch.inference_mode()
    def logits_ragged(
        self, seqs: list[list[int]], caches: list[LeanCache], keep: list[int] | None = None
    ) -> torch.Tensor:
        """New tokens for each of several sequences (any number each), each after the tokens its own cache holds;
        the logits of the last `keep[i]` new positions of each (all of them by default), one row per position,
        sequence after sequence. Projections and MLP run on all the new tokens at once, the head on the rows
        kept; attention runs per sequence over its own keys and values (a prompt of one sequence takes the same
        operations alone as in a batch)."""
        rows = [len(s) for s in seqs]
        offsets = [0]
        for n in rows:
            offsets.append(offsets[-1] + n)
        x = self.embed[torch.tensor([t for s in seqs for t in s])]
        positions = torch.tensor(
            [c.length + j for c, n in zip(caches, rows, strict=True) for j in range(n)], dtype=torch.float32
        )
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
        cos, sin = emb.cos() * self.rope_scale, emb.sin() * self.rope_scale
        groups = self.heads // self.kv_heads
        total = offsets[-1]
        future = {n: torch.full((n, n), float("-inf")).triu(1) for n in set(rows) if n > 1}
        for li, layer in enumerate(self.layers):
            h = self._rms(x, layer.ln1)
            q = F.linear(h, layer.q).view(total, self.heads, self.head_dim)
            k = F.linear(h, layer.k).view(total, self.kv_heads, self.head_dim)
            v = F.linear(h, layer.v).view(total, self.kv_heads, self.head_dim)
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            att = torch.empty(total, self.heads, self.head_dim)
            # Per sequence, the same operations as `logits` on one token. Padding the ragged caches to one length
            # for a single batched product was slower (docs/experiments.md): attention reads every cache from
            # memory once a step either way, and padding adds reads.
            for i, cache in enumerate(caches):
                lo, hi = offsets[i], offsets[i + 1]
                keys_t, values = cache.append(li, k[lo:hi].transpose(0, 1), v[lo:hi].transpose(0, 1))
                if groups != 1:
                    keys_t = keys_t.repeat_interleave(groups, dim=0)
                    values = values.repeat_interleave(groups, dim=0)
                scores = torch.matmul(q[lo:hi].transpose(0, 1), keys_t) * self.scaling
                if hi - lo > 1:  # new token j sees the cached keys and new keys 0 .. j
                    scores[..., lo - hi :] += future[hi - lo]
                if hi - lo == 1:
                    torch.matmul(torch.softmax(scores, dim=-1), values, out=att[lo:hi].transpose(0, 1))
                else:
                    att[lo:hi] = torch.matmul(torch.softmax(scores, dim=-1), values).transpose(0, 1)
            x = x + F.linear(att.reshape(total, self.heads * self.head_dim), layer.o)
            h = self._rms(x, layer.ln2)
            x = x + F.linear(F.silu(F.linear(h, layer.gate)) * F.linear(h, layer.up), layer.down)
        for cache, n in zip(caches, rows, strict=True):
            cache.length += n
        if keep is not None:
            x = x[torch.cat([torch.arange(offsets[i + 1] - k, offsets[i + 1]) for i, k in enumerate(keep)])]
        return F.linear(self._rms(x, self.norm), self.head)


class LeanCache:
    """Keys and values per layer in buffers that grow by doubling; `length` tokens are valid, `crop` forgets.

    Keys are stored transposed, (heads, dim, capacity): the scores' product then reads them in the layout the
    matrix product wants, which took a third of the time of a transposed view at ~1,300 cached tokens
    (docs/experiments.md); for two or more queries its results are bit for bit those of the view."""

    def __init__(self, model: LeanLlama, capacity: int = 256) -> None:
        self.length = 0
        self.keys = [torch.empty(model.kv_heads, model.head_dim, capacity) for _ in model.layers]
        self.values = [torch.empty(model.kv_heads, capacity, model.head_dim) for _ in model.layers]

    def crop(self, length: int) -> None:
        self.length = max(0, min(length, self.length))

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store `k`/`v` (heads, n, dim) after the valid tokens; this layer's valid keys so far, transposed
        (heads, dim, tokens), and values (heads, tokens, dim)."""
        end = self.length + k.shape[1]
        capacity = self.values[layer].shape[1]
        if end > capacity:
            size = max(end, 2 * capacity)
            keys, values = self.keys[layer], self.values[layer]
            self.keys[layer] = torch.empty(keys.shape[0], keys.shape[1], size)
            self.keys[layer][:, :, : self.length] = keys[:, :, : self.length]
            self.values[layer] = torch.empty(values.shape[0], size, values.shape[2])
            self.values[layer][:, : self.length] = values[:, : self.length]
        self.keys[layer][:, :, self.length : end] = k.transpose(1, 2)
        self.values[layer][:, self.length : end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :end]
