"""Continuous batching for any checkpoint the hf backend loads: one forward pass of the model's own per step.

The lean decoder (`hf_batch`) runs the embedded Llama's arithmetic by hand on CPU. Everything else — a Qwen,
Llama or Mistral checkpoint with its chat template, on CPU or a GPU, in any dtype — goes through transformers.
Each reply's new prompt tokens run alone, as `sample` runs them, against its episode's cached prefix; an
episode's opening prompt starts from the keys and values of the last opening prompt for the tokens they share
(the system prompt and tools). The replies that are generating then share one forward pass per token: their
key/value caches are slots of preallocated buffers (`SlotLayer`), each row's tokens ending at the batch's last
column and masked on the left, with each row's own position ids, so a row's logits are those it gets alone up to
float rounding. A reply that joins copies its own keys and values into a free slot; one that ends goes back to
its prefix cache (so the episode's next turn reuses it) and the last row moves into its slot: neither copies the
other rows, which rebuilding the batch did on every join and leave. Each token is drawn by `pick` from the
reply's own stream, in order, so tokens do not depend on the batch.

`PaddedBatch` is the token-level engine (GRPO's in-memory rollouts use it through `local_generate_batch`);
`PaddedDecoder` is the hf agent's `TurnDecoder` over it. Models whose caches are not plain growing key/value
layers (sliding windows, linear attention) are decoded one at a time (`PaddedBatch.supports`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from pipeline.agents.backends.denormals import flushed_denormals
from pipeline.agents.backends.draws import pick
from pipeline.agents.backends.hf_slots import SlotLayer
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
        self.rows: list[TokenRow] = []  # the rows generating: row i is slot i of `cache`
        self.joining: list[TokenRow] = []  # first token drawn, cache in its prefix; joins at the next pass
        self.cache: DynamicCache | None = None  # of `SlotLayer`s, made by the first join
        self.mask: torch.Tensor | None = None  # (slots, room): 1 where a row holds a token
        self.slots = self.room = 0  # rows and positions the buffers hold
        self.begin = self.end = 0  # the columns a pass reads; each row's tokens end at `end`
        self.longest = 0  # the most positions a row has held: where `end` lies after a new layout
        self.opening: tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]] | None = None  # see `_seed`
        self.passes = self.joins = self.layouts = self.shared_tokens = 0

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
        return bool(self.rows) or bool(self.joining)

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
        if self.joining:
            need, longest = len(self.rows) + len(self.joining), max(r.length for r in self.joining)
            if self.cache is None or need > self.slots or longest > self.end:
                self._lay_out(need, longest, self.joining[0])
            for row in self.joining:
                self._join(row)
            self.joining = []
        if self.end >= self.room:  # no column left for this pass's token
            self._lay_out(len(self.rows), 0, None)
        rows, n = self.rows, len(self.rows)
        tokens = torch.tensor([[r.out[-1]] for r in rows], device=self.device)
        positions = torch.tensor([[r.length] for r in rows], device=self.device)
        mask = cast("torch.Tensor", self.mask)  # the batch has rows, so `_lay_out` made its buffers
        mask[:n, self.end] = 1
        self._show()
        logits = self.model(
            input_ids=tokens,
            attention_mask=mask[:n, self.begin : self.end + 1],
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_argument: self.cache},
        ).logits[:, -1]
        self.end += 1
        self.passes += 1
        ended, left = [], []
        for i, r in enumerate(rows):
            r.prefix.ids.append(r.out[-1])
            r.length += 1
            self._draw(r, logits[i])
            if self._ended(r):
                self._give_back(i, r)
                left.append(i)
                ended.append(r)
        for i in reversed(left):
            self._leave(i)
        self.begin = self.end - max((r.length for r in self.rows), default=0)
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

    def _slot_layers(self) -> list[SlotLayer]:
        return cast("list[SlotLayer]", cast(Any, self.cache).layers)

    def _show(self) -> None:
        for layer in self._slot_layers():
            layer.show(len(self.rows), self.begin, self.end)

    def _give_back(self, i: int, row: TokenRow) -> None:
        """Row `i`'s keys and values (without padding) as its prefix's own cache."""
        cache = DynamicCache(config=cast(Any, self.model).config)
        begin = self.end - row.length
        for layer, own in zip(self._slot_layers(), cast("_KVCache", cache).layers, strict=True):
            keys, values = layer.buffers
            own.update(keys[i : i + 1, :, begin : self.end], values[i : i + 1, :, begin : self.end])  # copies
        row.prefix.cache = cache

    def _join(self, row: TokenRow) -> None:
        """`row` into the next free slot (`_step` made room), its keys and values ending at the batch's last column;
        its prefix lets go of them until the row goes back."""
        i, length = len(self.rows), row.length
        begin = self.end - length
        for layer, own in zip(self._slot_layers(), cast("_KVCache", row.prefix.cache).layers, strict=True):
            keys, values = layer.buffers
            keys[i, :, begin : self.end] = own.keys[0, :, -length:]
            values[i, :, begin : self.end] = own.values[0, :, -length:]
        mask = cast("torch.Tensor", self.mask)
        mask[i].zero_()
        mask[i, begin : self.end] = 1
        self.begin = min(self.begin, begin)
        self.rows.append(row)
        row.prefix.cache = DynamicCache(config=cast(Any, self.model).config)
        self.joins += 1

    def _leave(self, i: int) -> None:
        """Free row `i`'s slot: the last row moves into it (its own columns only), so the rows stay slots 0..n."""
        last = len(self.rows) - 1
        if i != last:
            begin = self.end - self.rows[last].length
            for layer in self._slot_layers():
                for buffer in layer.buffers:
                    buffer[i, :, begin : self.end] = buffer[last, :, begin : self.end]
            mask = cast("torch.Tensor", self.mask)
            mask[i] = mask[last]
            self.rows[i] = self.rows[last]
        self.rows.pop()

    def _lay_out(self, slots: int, longest: int, joining: TokenRow | None) -> None:
        """New buffers for `slots` rows (half as many again when they grow) and the live columns moved there in
        one copy, ending an eighth past the longest row seen (`longest` joins now; a joiner as long still fits to
        their left), with an eighth more to the right for the passes to come. Rare: when the slots or the
        columns run out, or a joiner is longer than any before."""
        self.layouts += 1
        n, width = len(self.rows), self.end - self.begin
        self.longest = max(self.longest, width, longest)
        end = self.longest + max(64, self.longest // 8)
        room = end + max(64, end // 8)
        count = self.slots if slots <= self.slots else max(slots, self.slots + self.slots // 2)
        olds = [layer.buffers for layer in self._slot_layers()] if self.cache is not None else None
        shapes = olds or [
            (own.keys, own.values) for own in cast("_KVCache", cast(TokenRow, joining).prefix.cache).layers
        ]
        cache = DynamicCache(config=cast(Any, self.model).config)
        layers = []
        for li, (keys, values) in enumerate(shapes):
            fresh = tuple(t.new_zeros(count, t.shape[1], room, t.shape[3]) for t in (keys, values))
            if olds is not None and n:
                for new, old in zip(fresh, olds[li], strict=True):
                    new[:n, :, end - width : end] = old[:n, :, self.begin : self.end]
            layers.append(SlotLayer(*fresh))
        cast(Any, cache).layers = layers  # `supports`: the model's layers are all plain DynamicLayer
        mask = torch.zeros(count, room, dtype=torch.long, device=self.device)
        if self.mask is not None and n:
            mask[:n, end - width : end] = self.mask[:n, self.begin : self.end]
        self.cache, self.mask, self.slots, self.room = cache, mask, count, room
        self.begin, self.end = end - width, end


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
