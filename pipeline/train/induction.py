"""A copy circuit planted at initialisation, so the tiny embedded model can copy ids within its CPU budget.

Copying what the customer or a tool wrote (an order number, an email, an item id) needs an induction circuit:
heads that move each token's identity to later positions ("previous-token heads"), and a head that matches
the tokens just written against those moved identities and copies what followed the match. Trained from a
random start on 2 cores, this circuit did not appear within a thousand steps of a synthetic copy task (the
loss sat at its no-copy plateau), so the embedded default starts with it planted; every weight stays trainable.

Layout (residual width H, one constant channel, a few reserved subspaces of width `code`):

- each token embedding holds a code in subspace K (digits get one-hot codes, so ids of digit tokens are matched
  exactly; other tokens random unit codes), a constant in the last channel, and its own random features
  elsewhere; all embeddings get the same norm, so after RMSNorm the constant channel is exactly constant;
- layer 0, heads 0..2: attend to the token 1, 2, 3 positions back (queries and keys read only the constant
  channel; with RoPE, pre-rotating each key pair by θ_i·offset puts the score peak at that offset) and write the
  code of that token into subspace B_1, B_2, B_3;
- layer 1, head 0: at position m the query holds the codes of tokens m, m−1, m−2 (K, B_1, B_2), the key at n
  the codes of n−1, n−2, n−3 (B_1, B_2, B_3): the score counts how many of the three match, so the head finds
  where the last three tokens were written before, and its value/output write the code of the token that
  followed back into K, which the tied unembedding reads as a vote for that token.
"""

from __future__ import annotations

import math

import torch
from transformers import LlamaForCausalLM

DIGITS = "0123456789"


def _rope_theta(config) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    return float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


def _positional(attn, head: int, head_dim: int, channel: int, offset: int, amp: float, freqs: list[float]) -> None:
    """Queries/keys of `head` read the constant channel only; the score peaks `offset` positions back."""
    half = head_dim // 2
    rows = slice(head * head_dim, (head + 1) * head_dim)
    q, k = attn.q_proj.weight, attn.k_proj.weight
    q[rows] = 0.0
    k[rows] = 0.0
    for i, f in enumerate(freqs):
        q[head * head_dim + i, channel] = amp
        k[head * head_dim + i, channel] = amp * math.cos(f * offset)
        k[head * head_dim + half + i, channel] = amp * math.sin(f * offset)


@torch.no_grad()
def plant_copy_circuit(
    model: LlamaForCausalLM,
    tokenizer,
    *,
    code: int = 10,
    offsets: int = 3,
    embed_norm: float = 1.0,
    constant: float = 0.4,
    code_share: float = 0.5,
    pairs: int = 6,
    sharpness: float = 16.0,
    match_logit: float = 5.0,
    vote_gain: float = 4.0,
    seed: int = 0,
) -> None:
    """Plant the copy circuit described in the module doc into a freshly built 2+-layer Llama.

    `embed_norm` is the norm of every token embedding (it bounds the logits of the tied unembedding, so it is
    larger than a default initialisation's); `constant` the constant channel, relative to that norm;
    `code_share` the share of an embedding's squared norm in its code; `match_logit` the attention logit of one
    matching token (three matches beat two by this much); `vote_gain` scales the copied code.
    """
    cfg = model.config
    hidden, heads = cfg.hidden_size, cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    if cfg.num_key_value_heads != heads or cfg.num_hidden_layers < 2 or heads < offsets + 1:
        raise ValueError("plant_copy_circuit needs 2+ layers, one kv head per head, and offsets + 1 heads")
    if code * offsets > head_dim or code * (offsets + 1) + 1 > hidden:
        raise ValueError("code subspaces do not fit the head or the residual width")
    gen = torch.Generator().manual_seed(seed)
    channel = hidden - 1
    basis = torch.linalg.qr(torch.randn(hidden - 1, hidden - 1, generator=gen))[0]  # token channels
    K = basis[:, :code]
    B = [basis[:, code * (o + 1): code * (o + 2)] for o in range(offsets)]
    free = basis[:, code * (offsets + 1):]

    # ---- embeddings: code in K, features elsewhere, constant channel, equal norms ------------------------------
    emb = model.model.embed_tokens.weight
    vocab = emb.size(0)
    codes = torch.nn.functional.normalize(torch.randn(vocab, code, generator=gen), dim=1)
    for d, ch in enumerate(DIGITS[:code]):
        tid = tokenizer.convert_tokens_to_ids(ch)
        if tid is not None and tid >= 0:
            codes[tid] = torch.nn.functional.one_hot(torch.tensor(d), code).float()
    norm = embed_norm
    constant = constant * embed_norm
    feats = torch.nn.functional.normalize(torch.randn(vocab, free.size(1), generator=gen), dim=1)
    c_len, f_len = norm * math.sqrt(code_share), norm * math.sqrt(1 - code_share)
    emb[:, :channel] = c_len * codes @ K.T + f_len * feats @ free.T
    emb[:, channel] = constant
    rms0 = math.sqrt((norm**2 + constant**2) / hidden)
    code0 = c_len / rms0  # length of a code after the layer-0 RMSNorm

    # ---- layer 0: previous-token heads -------------------------------------------------------------------------
    attn0 = model.model.layers[0].self_attn
    freqs = [_rope_theta(cfg) ** (-2 * i / head_dim) for i in range(min(pairs, head_dim // 2))]
    contrast = sum(1 - math.cos(f) for f in freqs)
    amp = math.sqrt(sharpness * math.sqrt(head_dim) / contrast) / (constant / rms0)
    for o in range(offsets):
        rows = slice(o * head_dim, (o + 1) * head_dim)
        _positional(attn0, o, head_dim, channel, o + 1, amp, freqs)
        attn0.v_proj.weight[rows] = 0.0
        attn0.v_proj.weight[o * head_dim: o * head_dim + code, :channel] = K.T  # reads the code (length code0)
        attn0.o_proj.weight[:, rows] = 0.0
        attn0.o_proj.weight[:channel, o * head_dim: o * head_dim + code] = B[o] * (c_len / code0)  # writes length c_len

    # ---- layer 1: the trigram induction head ------------------------------------------------------------------
    rms1 = math.sqrt((norm**2 + offsets * c_len**2 + constant**2) / hidden)
    code1 = c_len / rms1
    alpha = math.sqrt(match_logit * math.sqrt(head_dim)) / code1
    attn1 = model.model.layers[1].self_attn
    q, k = attn1.q_proj.weight, attn1.k_proj.weight
    q[:head_dim] = 0.0
    k[:head_dim] = 0.0
    reads_q = [K, *B[: offsets - 1]]  # tokens m, m-1, m-2
    reads_k = B  # tokens n-1, n-2, n-3
    for j in range(offsets):
        q[j * code:(j + 1) * code, :channel] = alpha * reads_q[j].T
        k[j * code:(j + 1) * code, :channel] = alpha * reads_k[j].T
    v, out = attn1.v_proj.weight, attn1.o_proj.weight
    v[:head_dim] = 0.0
    v[:code, :channel] = K.T
    out[:, :head_dim] = 0.0
    out[:channel, :code] = K * (vote_gain * c_len / code1)


@torch.no_grad()
def offset_attention(model: LlamaForCausalLM, input_ids: torch.Tensor, layer: int, head: int, offset: int) -> float:
    """Mean attention weight from each position to the one `offset` back (1.0 = a perfect positional head)."""
    impl = model.config._attn_implementation
    model.config._attn_implementation = "eager"
    try:
        att = model(input_ids=input_ids, output_attentions=True).attentions[layer][0, head]
    finally:
        model.config._attn_implementation = impl
    n = att.size(0)
    return float(torch.stack([att[i, i - offset] for i in range(offset, n)]).mean())
