"""A copy circuit planted at initialisation, so the tiny embedded model can copy ids within its CPU budget.

Copying what the customer or a tool wrote (an order number, an email, an item id) needs an induction circuit:
heads that move each token's identity to later positions ("previous-token heads"), and a head that matches
the tokens just written against those moved identities and copies what followed the match. Trained from a
random start on 2 cores, this circuit did not appear within a thousand steps of a synthetic copy task (the
loss sat at its no-copy plateau), so the embedded default starts with it planted; every weight stays trainable.

Layout (residual width H, one constant channel, reserved subspaces of width `code`):

- each token embedding holds a code in subspace K (the ten digits get nearly orthogonal codes, so ids made of
  digit tokens are matched almost exactly; other tokens get smaller random codes), a constant in the last
  channel, and random features elsewhere; all embeddings have the same norm, so after RMSNorm the constant
  channel is exactly constant;
- layer 0, heads 0..o−1 (o = `offsets`, the key's length): attend to the token 1, 2, …, o positions back —
  queries and keys read only the constant channel, in the fastest RoPE pairs, each key pair pre-rotated by
  θ_i·offset, so the score peaks at that offset — and write the code of that token into subspace B_1 … B_o;
- layer 1, head 0: the query at m holds the codes of tokens m, m−1, …, m−o+1 (K, B_1 … B_{o−1}), the key at n
  those of n−1 … n−o (B_1 … B_o), in the slowest RoPE pairs, where rotation over the whole context is
  negligible: the score counts matching tokens, so the head finds where the last o tokens were written before;
  its value/output copy the token that followed (its code and some of its features) back into the residual
  stream, which the tied unembedding reads as a vote for that token.

A longer key copies more exactly before training: with three tokens the head slips on repeats (`7 7 7` twice in
`0877779`) and on values that share a three-token stretch, four follow them (`bench/embedded/bench_copy_circuit.py`).
The embedded default keeps three: rebuilt with four, its trained candidate was worse (`docs/experiments.md`).

RoPE decides which pairs are fast or slow: the model needs a few fast pairs for the positional heads and enough
slow ones for content matching over its whole context (see `COPY_ROPE`). A large rope_theta alone gives that too,
but then every other head loses its medium-range positional signal, and the model learned markedly slower.
"""

from __future__ import annotations

import math

import torch
from transformers import LlamaForCausalLM

DIGITS = "0123456789"
COPY_ROPE: dict[str, int | float | str] = {
    "rope_type": "llama3",
    "factor": 1e6,
    "low_freq_factor": 1.0,
    "high_freq_factor": 1.3,
    "original_max_position_embeddings": 48,
}
"""RoPE for the copy circuit (ModelConfig.rope_scaling, with rope_theta 1e4 and head_dim 32): the four fastest
pairs keep their usual frequencies (wavelengths up to ~35 tokens, for positional heads), the other twelve are
slowed a million-fold, so content matched in them is the same at any distance within the context."""


def _frame(n: int, dim: int, gen: torch.Generator, steps: int = 300) -> torch.Tensor:
    """`n` unit vectors in R^dim with small pairwise overlaps (exactly orthogonal when n <= dim)."""
    if n <= dim:
        return torch.linalg.qr(torch.randn(dim, dim, generator=gen))[0][:n]
    x = torch.nn.functional.normalize(torch.randn(n, dim, generator=gen), dim=1)
    for _ in range(steps):  # push the most overlapping pairs apart
        gram = x @ x.T - torch.eye(n)
        x = torch.nn.functional.normalize(x - 0.1 * (gram**3) @ x, dim=1)
    return x


def circuit_misfit(heads: int, head_dim: int, offsets: int, code: int) -> str | None:
    """Why a key of `offsets` tokens with `code`-wide codes does not fit heads of this shape, or None if it does.

    Layer 0 needs a head per offset, and layer 1's match reads `offsets` codes in the slow RoPE pairs of one head.
    """
    if offsets < 1 or heads < offsets:
        return f"offsets ({offsets}) needs a layer-0 head per offset, but the model has {heads} heads"
    if offsets * code > head_dim:
        return f"offsets x code ({offsets} x {code}) exceeds the head width ({head_dim})"
    return None


@torch.no_grad()
def plant_copy_circuit(
    model: LlamaForCausalLM,
    tokenizer,
    *,
    code: int = 8,
    offsets: int = 3,
    embed_norm: float = 1.0,
    constant: float = 0.4,
    code_share: float = 0.5,
    word_code: float = 1.0,
    fast_pairs: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0),
    sharpness: float = 16.0,
    match_logit: float = 8.0,
    vote_gain: float = 4.0,
    seed: int = 0,
) -> None:
    """Plant the copy circuit described in the module doc into a freshly built 2+-layer Llama.

    `embed_norm` is the norm of every token embedding (it bounds the logits of the tied unembedding, so it is
    larger than a default initialisation's); `constant` the constant channel, relative to that norm;
    `code_share` the share of an embedding's squared norm in its code, `word_code` the scale of non-digit codes;
    `fast_pairs` the weights of the fastest RoPE pairs in the positional heads; `match_logit` the attention
    logit of one matching token (o matches beat o − 1 by about this much); `vote_gain` scales the copied code;
    `offsets` is the key's length in tokens (one layer-0 head each), `code` the width of each token's code.
    """
    cfg = model.config
    hidden, heads = cfg.hidden_size, cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    half = head_dim // 2
    slow = list(range(half - code * offsets // 2, half))  # the slowest pairs carry the content match
    if cfg.num_key_value_heads != heads or cfg.num_hidden_layers < 2:
        raise ValueError("plant_copy_circuit needs 2+ layers and one kv head per head")
    if misfit := circuit_misfit(heads, head_dim, offsets, code):
        raise ValueError(f"plant_copy_circuit: {misfit}")
    if code * offsets % 2 or len(fast_pairs) > half or code * (offsets + 1) + 1 > hidden:
        raise ValueError("code subspaces do not fit the head or the residual width")
    freqs = model.model.rotary_emb.inv_freq.tolist()  # per pair, as the model applies them
    if freqs[slow[0]] * cfg.max_position_embeddings > 1.0:
        raise ValueError("RoPE turns the content pairs too fast over the context; build the model with COPY_ROPE")
    gen = torch.Generator().manual_seed(seed)
    channel = hidden - 1
    basis = torch.linalg.qr(torch.randn(hidden - 1, hidden - 1, generator=gen))[0]  # token channels
    K = basis[:, :code]
    B = [basis[:, code * (o + 1) : code * (o + 2)] for o in range(offsets)]
    free = basis[:, code * (offsets + 1) :]

    # ---- embeddings: code in K, features elsewhere, constant channel, equal norms ------------------------------
    emb = model.model.embed_tokens.weight
    vocab = emb.size(0)
    codes = torch.nn.functional.normalize(torch.randn(vocab, code, generator=gen), dim=1) * word_code
    digit_codes = _frame(len(DIGITS), code, gen)
    for d, ch in enumerate(DIGITS):
        tid = tokenizer.convert_tokens_to_ids(ch)
        if tid is not None and 0 <= tid < vocab:
            codes[tid] = digit_codes[d]
    norm = embed_norm
    constant = constant * embed_norm
    feats = torch.nn.functional.normalize(torch.randn(vocab, free.size(1), generator=gen), dim=1)
    c_len = norm * math.sqrt(code_share)
    f_len = (norm**2 - (c_len * codes.norm(dim=1, keepdim=True)) ** 2).sqrt()  # every embedding has norm `norm`
    emb[:, :channel] = c_len * codes @ K.T + f_len * feats @ free.T
    emb[:, channel] = constant
    rms0 = math.sqrt((norm**2 + constant**2) / hidden)
    code0 = c_len / rms0  # length of a (digit) code after the layer-0 RMSNorm

    shape = dict(code=code, offsets=offsets, channel=channel, head_dim=head_dim, half=half)
    _plant_previous_token_heads(model, K, B, freqs, fast_pairs, sharpness, constant, rms0, c_len, code0, **shape)
    rms1 = math.sqrt((norm**2 + offsets * c_len**2 + constant**2) / hidden)
    _plant_induction_head(model, K, B, free, slow, c_len, rms1, match_logit, vote_gain, **shape)


def _plant_previous_token_heads(
    model: LlamaForCausalLM,
    K: torch.Tensor,
    B: list[torch.Tensor],
    freqs: list[float],
    fast_pairs: tuple[float, ...],
    sharpness: float,
    constant: float,
    rms0: float,
    c_len: float,
    code0: float,
    *,
    code: int,
    offsets: int,
    channel: int,
    head_dim: int,
    half: int,
) -> None:
    """Layer 0: previous-token heads (queries/keys on the constant channel, fastest RoPE pairs), head `o`
    copying the code of the token `o + 1` back into its subspace B[o]."""
    attn0 = model.model.layers[0].self_attn
    weights = [w / max(fast_pairs) for w in fast_pairs]
    contrast = sum(w * (1 - math.cos(f)) for w, f in zip(weights, freqs, strict=False))
    amp = math.sqrt(sharpness * math.sqrt(head_dim) / contrast) / (constant / rms0)
    for o in range(offsets):
        base = o * head_dim
        rows = slice(base, base + head_dim)
        attn0.q_proj.weight[rows] = 0.0
        attn0.k_proj.weight[rows] = 0.0
        for i, (w, f) in enumerate(zip(weights, freqs, strict=False)):
            attn0.q_proj.weight[base + i, channel] = amp * math.sqrt(w)
            attn0.k_proj.weight[base + i, channel] = amp * math.sqrt(w) * math.cos(f * (o + 1))
            attn0.k_proj.weight[base + half + i, channel] = amp * math.sqrt(w) * math.sin(f * (o + 1))
        attn0.v_proj.weight[rows] = 0.0
        attn0.v_proj.weight[base : base + code, :channel] = K.T  # reads the code (length code0)
        attn0.o_proj.weight[:, rows] = 0.0
        attn0.o_proj.weight[:channel, base : base + code] = B[o] * (c_len / code0)  # writes it with length c_len


def _plant_induction_head(
    model: LlamaForCausalLM,
    K: torch.Tensor,
    B: list[torch.Tensor],
    free: torch.Tensor,
    slow: list[int],
    c_len: float,
    rms1: float,
    match_logit: float,
    vote_gain: float,
    *,
    code: int,
    offsets: int,
    channel: int,
    head_dim: int,
    half: int,
) -> None:
    """Layer 1: the trigram induction head (slowest RoPE pairs), voting for the token that followed the match."""
    code1 = c_len / rms1
    alpha = math.sqrt(match_logit * math.sqrt(head_dim)) / code1
    dims = [p for p in slow] + [p + half for p in slow]  # both members of each slow pair
    slots = [dims[j * code : (j + 1) * code] for j in range(offsets)]
    attn1 = model.model.layers[1].self_attn
    q, k = attn1.q_proj.weight, attn1.k_proj.weight
    q[:head_dim] = 0.0
    k[:head_dim] = 0.0
    reads_q = [K, *B[: offsets - 1]]  # tokens m, m-1, ..., m-offsets+1
    for j, slot in enumerate(slots):
        q[slot, :channel] = alpha * reads_q[j].T
        k[slot, :channel] = alpha * B[j].T  # tokens n-1, ..., n-offsets
    # value/output: the followed token's projection on K plus the first free feature channels (the whole head
    # width), so the vote tells apart any two tokens, not only the digits
    vote = torch.cat([K, free[:, : head_dim - code]], dim=1)  # [hidden - 1, head_dim]
    v, out = attn1.v_proj.weight, attn1.o_proj.weight
    v[:head_dim] = 0.0
    v[:head_dim, :channel] = vote.T
    out[:, :head_dim] = 0.0
    out[:channel, :head_dim] = vote * (vote_gain * rms1)


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
