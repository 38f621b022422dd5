"""A previous-token head planted at initialisation, so a tiny model can learn to copy within its CPU budget.

Copying an id the customer or a tool wrote (order number, email, item id) needs an induction circuit: one head
that moves each token's identity to the next position (a "previous-token head"), and a later head that matches
the current token against those moved identities and copies what followed. Trained from a random start on 2
cores, the first head is what takes long to appear; on our copy warm-up the loss sat on a plateau for over a
thousand steps. Planting it (deterministic weights in one head of the first layer) leaves everything trainable
and lets the induction head form within the warm-up.

How: one residual channel of every token embedding is set to a constant, so after RMSNorm each position carries
a large constant feature. The head's queries and keys read only that feature; with RoPE the score between
positions m and n is then sum_i |q_i||k_i| cos(θ_i (m − n − 1)) when each key pair is pre-rotated by θ_i, which
peaks at m − n = 1: every token attends to the one before it. Its value/output maps copy a projection of the
previous token's (normalised) embedding into the residual stream.
"""

from __future__ import annotations

import math

import torch
from transformers import LlamaForCausalLM


@torch.no_grad()
def plant_previous_token_head(
    model: LlamaForCausalLM,
    *,
    layer: int = 0,
    head: int = 0,
    constant: float = 0.1,
    pairs: int = 6,
    sharpness: float = 16.0,
    copy_gain: float = 5.0,
    seed: int = 0,
) -> None:
    """Make `head` of `layer` attend to the previous position and copy its token's features (see module doc).

    Only the `pairs` highest RoPE frequencies carry the score: low frequencies barely tell neighbours apart and
    would only add a large common term, whose small variations with each token's norm blur the peak.
    """
    cfg = model.config
    hidden = cfg.hidden_size
    head_dim = getattr(cfg, "head_dim", None) or hidden // cfg.num_attention_heads
    if cfg.num_key_value_heads != cfg.num_attention_heads:
        raise ValueError("plant_previous_token_head expects one key/value head per attention head")
    half = head_dim // 2
    pairs = min(pairs, half)
    channel = hidden - 1
    std = cfg.initializer_range
    emb = model.model.embed_tokens.weight
    # equal norms: every token then has the same RMS, so the constant channel is exactly constant after RMSNorm
    emb[:, :channel] *= std * math.sqrt(hidden - 1) / emb[:, :channel].norm(dim=1, keepdim=True).clamp(min=1e-8)
    emb[:, channel] = constant
    attn = model.model.layers[layer].self_attn
    rows = slice(head * head_dim, (head + 1) * head_dim)
    freqs = [_rope_theta(cfg) ** (-2 * i / head_dim) for i in range(pairs)]
    contrast = sum(1 - math.cos(f) for f in freqs)  # score(previous) − score(self or the one before)
    normed = constant / math.sqrt(((hidden - 1) * std * std + constant * constant) / hidden)
    amp = math.sqrt(sharpness * math.sqrt(head_dim) / contrast) / normed
    q, k = attn.q_proj.weight, attn.k_proj.weight
    q[rows] = 0.0
    k[rows] = 0.0
    for i, f in enumerate(freqs):
        q[head * head_dim + i, channel] = amp
        k[head * head_dim + i, channel] = amp * math.cos(f)
        k[head * head_dim + half + i, channel] = amp * math.sin(f)
    # value: an orthonormal projection of the token channels; output: back into the residual stream, `copy_gain`
    # times as large as a token embedding, so the next layer can match against it from the start
    gen = torch.Generator().manual_seed(seed)
    proj = torch.linalg.qr(torch.randn(hidden - 1, head_dim, generator=gen))[0].T  # [head_dim, hidden - 1]
    attn.v_proj.weight[rows] = 0.0
    attn.v_proj.weight[rows, :channel] = proj
    token_rms = std * math.sqrt((hidden - 1) / hidden) / math.sqrt(((hidden - 1) * std * std + constant**2) / hidden)
    out = torch.linalg.qr(torch.randn(hidden - 1, head_dim, generator=gen))[0]  # [hidden - 1, head_dim]
    gain = copy_gain * std / (token_rms * math.sqrt(head_dim / (hidden - 1)))
    attn.o_proj.weight[:, rows] = 0.0
    attn.o_proj.weight[:channel, rows] = out * gain


def _rope_theta(config) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    return float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


@torch.no_grad()
def previous_token_attention(model: LlamaForCausalLM, input_ids: torch.Tensor, layer: int = 0, head: int = 0) -> float:
    """Mean attention weight from each position to the one before it (1.0 = a perfect previous-token head)."""
    out = model(input_ids=input_ids, output_attentions=True)
    att = out.attentions[layer][0, head]  # [q, k]
    n = att.size(0)
    return float(torch.stack([att[i, i - 1] for i in range(1, n)]).mean())
