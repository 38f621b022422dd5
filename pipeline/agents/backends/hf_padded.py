"""Continuous batching for any checkpoint the hf backend loads: one forward pass of the model's own per step.

The lean decoder (`hf_batch`) runs the embedded Llama's arithmetic by hand on CPU. Everything else — a Qwen,
Llama or Mistral checkpoint with its chat template, on CPU or a GPU, in any dtype — goes through transformers.
Each reply's new prompt tokens run alone, as `sample` runs them, against its episode's cached prefix; an
episode's opening prompt starts from the keys and values of the last opening prompt for the tokens they share
(the system prompt and tools). The replies that are generating then share one forward pass per token: their
key/value caches are rows of one batched `DynamicCache` (its layers growing in place), left-padded to the
longest, with a 2-D attention mask over the padding and each row's own position ids, so a row's logits are those
it gets alone up to float rounding. When the batch changes (replies ended in the last pass, new ones have their
first token) the next pass first rebuilds the rows in one copy, about what the pass reads anyway; an ended reply's
row goes back to its prefix cache, so the episode's next turn reuses it. Each token is drawn by `pick` from the
reply's own stream, in order, so tokens do not depend on the batch.

`PaddedBatch` is the token-level engine (GRPO's in-memory rollouts use it through `local_generate_batch`);
`PaddedDecoder` is the hf agent's `TurnDecoder` over it. Models whose caches are not plain growing key/value
layers (sliding windows, linear attention) are decoded one at a time (`PaddedBatch.supports`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from pipeline.agents.backends.denormals import flushed_denormals
from pipeline.agents.backends.draws import pick
from pipeline.agents.backends.loading import cache_argument
from pipeline.agents.backends.tokens import common_prefix

if TYPE_CHECKING:
    from pipeline.agents.backends.hf import HFAgent, HFAgentEpisode, PrefixCache
    from pipeline.rollout import Message

    class _KVLayer(Protocol):
        """A cache layer as the batch reads it: a `DynamicLayer` holding tokens (`supports` admits no other)."""

        keys: torch.Tensor
        values: torch.Tensor

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    class _KVCache(Protocol):
        """A `DynamicCache` of such layers (a prefix cache here never is a `LeanCache`: the model is not lean)."""

        layers: list[_KVLayer]


SHARED_MIN = 32  # prompt tokens in common with the last opening prompt below which its cache is not reused


@dataclass(eq=False)
class TokenRow:
    """One reply being generated: its prompt, the cache of what precedes it, its random stream and its tokens."""

    prefix: PrefixCache
    generator: torch.Generator
    prompt: list[int]
    room: int  # most tokens it may draw
    logprobs: list[float] | None = None  # each drawn token's, under the temperature-scaled logits, when asked
    tag: Any = None  # the caller's
    out: list[int] = field(default_factory=list)
    length: int = 0  # tokens its cache holds


class PaddedBatch:
    """Replies in flight through one model: `start` runs a reply's prompt and draws its first token; `step` runs
    one pass over every reply still generating and returns those that ended."""

    def __init__(self, model: torch.nn.Module, stop_ids: set[int], temperature: float, top_p: float = 1.0) -> None:
        self.model, self.stop_ids, self.temperature, self.top_p = model, stop_ids, temperature, top_p
        self.device = next(model.parameters()).device
        self.cache_argument = cache_argument(model)
        self.layers = len(DynamicCache(config=cast(Any, model).config).layers)
        self.rows: list[TokenRow] = []  # the rows of `cache`, in order
        self.joining: list[TokenRow] = []  # first token drawn, cache in its prefix; joins at the next pass
        self.left: set[int] = set()  # rows whose reply ended in the last pass; dropped at the next
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None  # (rows, cached positions): 1 where a row has a token
        self.opening: tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]] | None = None  # see `_seed`
        self.passes = self.rebuilds = self.shared_tokens = 0

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """Whether every layer's cache is a plain growing key/value store (what left-padding rows needs)."""
        try:
            cache = DynamicCache(config=cast(Any, model).config)
        except Exception:  # a config transformers cannot lay a cache out for
            return False
        return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)

    @property
    def busy(self) -> bool:
        """Whether a reply is still generating."""
        return len(self.rows) > len(self.left) or bool(self.joining)

    def start(self, row: TokenRow) -> bool:
        """Run the new prompt tokens against the cached prefix and draw the first token, as `sample` does; False
        when that token already ends the reply."""
        with flushed_denormals(self.device.type == "cpu"), torch.inference_mode():
            prefix = row.prefix
            opening = not prefix.ids
            if opening and self.opening is not None:
                self._seed(prefix, row.prompt)
            begin = prefix.reuse(row.prompt)
            prefix.ids = list(row.prompt)
            self._draw(row, prefix.logits(row.prompt[begin:]))
            if opening:  # its keys and values as they are now: later updates make new tensors, never touch these
                self.opening = (
                    row.prompt,
                    [(layer.keys, layer.values) for layer in cast("_KVCache", prefix.cache).layers],
                )
        if self._ended(row):
            return False
        row.length = len(prefix.ids)
        self.joining.append(row)
        return True

    def _seed(self, prefix: PrefixCache, prompt: list[int]) -> None:
        """Start an empty prefix with the last opening prompt's keys and values for the tokens `prompt` shares
        with it (the system prompt and tools every episode of a world begins with), where that is worthwhile."""
        assert self.opening is not None  # `start` seeds only from a recorded opening
        ids, layers = self.opening
        common = common_prefix(ids, prompt)
        if common < SHARED_MIN:
            return
        cache = DynamicCache(config=cast(Any, self.model).config)
        for own, (keys, values) in zip(cast("_KVCache", cache).layers, layers, strict=True):
            own.update(keys[:, :, :common], values[:, :, :common])
        prefix.cache, prefix.ids = cache, ids[:common]
        self.shared_tokens += common

    def step(self) -> list[TokenRow]:
        """One pass over every generating row: run its last token, draw the next; the rows that ended."""
        if not self.busy:
            return []
        with flushed_denormals(self.device.type == "cpu"), torch.inference_mode():
            return self._step()

    def _step(self) -> list[TokenRow]:
        if self.joining or self.left:  # one copy for the rows that left in the last pass and those that join
            going = [i for i in range(len(self.rows)) if i not in self.left]
            self._rebuild([self.rows[i] for i in going], self.joining, keep=going)
            self.joining, self.left = [], set()
            if not self.rows:
                return []
        rows = self.rows
        tokens = torch.tensor([[r.out[-1]] for r in rows], device=self.device)
        positions = torch.tensor([[r.length] for r in rows], device=self.device)
        assert self.mask is not None  # the batch has rows, and `_rebuild` gave them their mask
        self.mask = torch.cat([self.mask, self.mask.new_ones(len(rows), 1)], dim=1)
        logits = self.model(
            input_ids=tokens,
            attention_mask=self.mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_argument: self.cache},
        ).logits[:, -1]
        self.passes += 1
        ended = []
        for i, r in enumerate(rows):
            r.prefix.ids.append(r.out[-1])
            r.length += 1
            self._draw(r, logits[i])
            if self._ended(r):
                self._give_back(i, r)
                self.left.add(i)
                ended.append(r)
        if len(self.left) == len(rows):  # nothing left generating: let the cache go now
            self._rebuild([], [])
            self.left = set()
        return ended

    def _draw(self, row: TokenRow, logits: torch.Tensor) -> None:
        logits = logits.float()
        token = pick(logits, self.temperature, self.top_p, row.generator)
        row.out.append(token)
        if row.logprobs is not None:  # as `sample` records them
            scaled = logits / self.temperature if self.temperature > 0 else logits
            row.logprobs.append(float(torch.log_softmax(scaled, dim=-1)[token]))

    def _ended(self, row: TokenRow) -> bool:
        return row.out[-1] in self.stop_ids or len(row.out) >= row.room

    def _give_back(self, i: int, row: TokenRow) -> None:
        """Row `i`'s keys and values (without padding) as its prefix's own cache."""
        cache = DynamicCache(config=cast(Any, self.model).config)
        for layer, own in zip(cast("_KVCache", self.cache).layers, cast("_KVCache", cache).layers, strict=True):
            own.update(layer.keys[i : i + 1, :, -row.length :], layer.values[i : i + 1, :, -row.length :])
        row.prefix.cache = cache

    def _rebuild(self, rows: list[TokenRow], joining: list[TokenRow], keep: list[int] | None = None) -> None:
        """The batch as `rows` (rows `keep` of the current cache, all of them by default) then `joining`, padded
        on the left to the longest and no further."""
        self.rebuilds += 1
        if not rows and not joining:
            self.rows, self.cache, self.mask = [], None, None
            return
        width = max(r.length for r in [*rows, *joining])
        parts_k: list[list[torch.Tensor]] = [[] for _ in range(self.layers)]
        parts_v: list[list[torch.Tensor]] = [[] for _ in range(self.layers)]
        masks = []
        if rows:
            index = torch.tensor(keep if keep is not None else range(len(rows)), device=self.device)
            mask = cast("torch.Tensor", self.mask)  # `rows` are rows of the batch: its cache and mask are there
            have = mask.shape[1]
            for li, layer in enumerate(cast("_KVCache", self.cache).layers):
                parts_k[li].append(_fit(layer.keys.index_select(0, index), have, width))
                parts_v[li].append(_fit(layer.values.index_select(0, index), have, width))
            masks.append(_fit(mask.index_select(0, index), have, width))
        for r in joining:
            for li, layer in enumerate(cast("_KVCache", r.prefix.cache).layers):
                parts_k[li].append(_fit(layer.keys, r.length, width))
                parts_v[li].append(_fit(layer.values, r.length, width))
            masks.append(_fit(torch.ones(1, r.length, dtype=torch.long, device=self.device), r.length, width))
        cache = DynamicCache(config=cast(Any, self.model).config)
        cast(Any, cache).layers = [GrowingLayer() for _ in cache.layers]  # `supports`: all were DynamicLayer
        for li, own in enumerate(cast("_KVCache", cache).layers):
            own.update(torch.cat(parts_k[li]), torch.cat(parts_v[li]))
        self.rows, self.cache, self.mask = [*rows, *joining], cache, torch.cat(masks)


class GrowingLayer(DynamicLayer):
    """A batch's keys and values in buffers with room for more positions: a decoding step writes its token in
    place, where `DynamicLayer` copies the whole cache (`torch.cat`: 30% of a bfloat16 step at 24 rows × 1,500
    positions). The room grows by a quarter when it runs out, so the copies left are a few per reply."""

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            self.length = 0
            self.buffers = (key_states[..., :0, :], value_states[..., :0, :])
        need = self.length + key_states.shape[-2]
        if need > self.buffers[0].shape[-2]:
            room = need + max(64, need // 4)
            self.buffers = (_grown(self.buffers[0], self.length, room), _grown(self.buffers[1], self.length, room))
        for buffer, new in zip(self.buffers, (key_states, value_states), strict=True):
            buffer[..., self.length : need, :] = new
        self.length = need
        self.keys, self.values = (b[..., :need, :] for b in self.buffers)
        return self.keys, self.values

    def crop(self, max_length: int) -> None:
        super().crop(max_length)
        self.length = cast(torch.Tensor, self.keys).shape[-2]


def _grown(buffer: torch.Tensor, length: int, room: int) -> torch.Tensor:
    """`buffer`'s first `length` positions in a new buffer of `room` positions."""
    shape = list(buffer.shape)
    shape[-2] = room
    out = buffer.new_empty(shape)
    out[..., :length, :] = buffer[..., :length, :]
    return out


def _fit(t: torch.Tensor, have: int, width: int) -> torch.Tensor:
    """`t`'s last `have` positions (dim 2 for keys and values, 1 for a mask) padded with zeros on the left to
    `width`."""
    dim = 2 if t.dim() == 4 else 1
    t = t.narrow(dim, t.shape[dim] - min(have, width), min(have, width))
    short = width - t.shape[dim]
    if short == 0:
        return t
    pad = list(t.shape)
    pad[dim] = short
    return torch.cat([t.new_zeros(pad), t], dim=dim)


class PaddedDecoder:
    """The `TurnDecoder` of an `HFAgent` whose model runs through transformers."""

    def __init__(self, agent: HFAgent) -> None:
        self.agent = agent
        self.batch = PaddedBatch(agent.model, agent.stop_ids, agent.temperature, agent.top_p)
        self.fresh: list[TokenRow] = []  # submitted, prompt not run yet
        self.done: list[tuple[Any, Message]] = []

    supports = staticmethod(PaddedBatch.supports)

    def submit(self, key: Any, episode: HFAgentEpisode, messages: list[Message]) -> None:
        started = time.perf_counter()
        prompt, room = episode.prompt(messages)
        if room <= 0:
            self.done.append((key, episode.reply(prompt, [], time.perf_counter() - started)))
            return
        self.fresh.append(TokenRow(episode.prefix, episode.generator, prompt, room, tag=(key, episode, started)))

    def step(self) -> list[tuple[Any, Message]]:
        fresh, self.fresh = self.fresh, []
        ended = [row for row in fresh if not self.batch.start(row)]
        ended += self.batch.step()
        for row in ended:
            key, episode, started = row.tag
            self.done.append((key, episode.reply(row.prompt, row.out, time.perf_counter() - started)))
        done, self.done = self.done, []
        return done
