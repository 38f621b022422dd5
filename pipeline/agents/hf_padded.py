"""Continuous batching for any checkpoint the hf backend loads: one forward pass of the model's own per step.

The lean decoder (`hf_batch`) runs the embedded Llama's arithmetic by hand on CPU. Everything else — a Qwen,
Llama or Mistral checkpoint with its chat template, on CPU or a GPU, in any dtype — goes through transformers:
each reply's new prompt tokens run alone, exactly as `sample` runs them (against its episode's cached prefix),
and the replies that are generating share one forward pass per token. Their key/value caches are rows of one
batched `DynamicCache`, left-padded to the longest; a 2-D attention mask hides the padding and each row gets its
own position ids, so a row's logits are those it gets alone up to float rounding. When the batch changes (a
reply ends, a new one has its first token) the rows are rebuilt in one copy, which costs about what the pass
reads anyway; an ending reply's row goes back to its episode, so the next turn reuses the prefix as `sample`
does. Each token is drawn by `pick` from the episode's own stream, in order, so tokens do not depend on the
batch.

Models whose caches are not plain growing key/value layers (sliding windows, linear attention) are decoded one
episode at a time (`PaddedDecoder.supports`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from pipeline.agents.denormals import flushed_denormals

if TYPE_CHECKING:
    from pipeline.agents.hf import HFAgent, HFAgentEpisode
    from pipeline.rollout.trajectory import Message


@dataclass(eq=False)
class _Row:
    key: Any
    episode: HFAgentEpisode
    prompt: list[int]
    room: int
    started: float
    out: list[int] = field(default_factory=list)
    length: int = 0  # tokens its cache holds


class PaddedDecoder:
    """The `TurnDecoder` of an `HFAgent` whose model runs through transformers."""

    def __init__(self, agent: HFAgent) -> None:
        from pipeline.agents.hf import _cache_argument

        self.agent = agent
        self.model = agent.model
        self.device = next(agent.model.parameters()).device
        self.cache_argument = _cache_argument(agent.model)
        self.layers = len(DynamicCache(config=agent.model.config).layers)
        self.fresh: list[_Row] = []  # submitted, prompt not run yet
        self.rows: list[_Row] = []  # the rows of `cache`, in order
        self.joining: list[_Row] = []  # first token drawn, cache in the episode's prefix; join at the next pass
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None  # (rows, cached positions): 1 where a row has a token
        self.done: list[tuple[Any, Message]] = []
        self.passes = self.rebuilds = 0

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """Whether every layer's cache is a plain growing key/value store (what left-padding rows needs)."""
        try:
            cache = DynamicCache(config=model.config)
        except Exception:  # a config transformers cannot lay a cache out for
            return False
        return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)

    def submit(self, key: Any, episode: HFAgentEpisode, messages: list[Message]) -> None:
        row = _Row(key, episode, *episode.prompt(messages), time.perf_counter())
        if row.room <= 0:
            self.done.append((key, episode.reply(row.prompt, [], time.perf_counter() - row.started)))
            return
        self.fresh.append(row)

    def step(self) -> list[tuple[Any, Message]]:
        with flushed_denormals(self.device.type == "cpu"), torch.inference_mode():
            fresh, self.fresh = self.fresh, []
            for row in fresh:
                self._prefill(row)
            if self.rows or self.joining:
                self._decode()
        done, self.done = self.done, []
        return done

    def _prefill(self, row: _Row) -> None:
        """Run the new prompt tokens against the episode's cached prefix and draw the first token, as `sample`."""
        prefix = row.episode.prefix
        start = prefix.reuse(row.prompt)
        prefix.ids = list(row.prompt)
        self._draw(row, prefix.logits(row.prompt[start:]))
        if not self._finished(row):
            row.length = len(prefix.ids)
            self.joining.append(row)

    def _draw(self, row: _Row, logits: torch.Tensor) -> None:
        from pipeline.agents.hf import pick

        a = self.agent
        row.out.append(pick(logits, a.temperature, a.top_p, row.episode.generator))

    def _finished(self, row: _Row) -> bool:
        """Whether the reply ended with its last token; if so it is done and its cache is its episode's again."""
        token = row.out[-1]
        if token not in self.agent.stop_ids and len(row.out) < row.room:
            return False
        compute = time.perf_counter() - row.started
        self.done.append((row.key, row.episode.reply(row.prompt, row.out, compute)))
        return True

    def _decode(self) -> None:
        """One pass over every generating row: run its last token, draw the next."""
        if self.joining:
            self._rebuild(self.rows, self.joining)
            self.joining = []
        rows = self.rows
        tokens = torch.tensor([[r.out[-1]] for r in rows], device=self.device)
        positions = torch.tensor([[r.length] for r in rows], device=self.device)
        self.mask = torch.cat([self.mask, self.mask.new_ones(len(rows), 1)], dim=1)
        logits = (
            self.model(
                input_ids=tokens,
                attention_mask=self.mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
                **{self.cache_argument: self.cache},
            )
            .logits[:, -1]
            .float()
        )
        self.passes += 1
        going = []
        for i, r in enumerate(rows):
            r.episode.prefix.ids.append(r.out[-1])
            r.length += 1
            self._draw(r, logits[i])
            if self._finished(r):
                self._give_back(i, r)
            else:
                going.append(i)
        if len(going) < len(rows):
            self._rebuild([rows[i] for i in going], [], keep=going)

    def _give_back(self, i: int, row: _Row) -> None:
        """Row `i`'s keys and values (without padding) as its episode's own cache."""
        cache = DynamicCache(config=self.model.config)
        for layer, own in zip(self.cache.layers, cache.layers, strict=True):
            own.update(layer.keys[i : i + 1, :, -row.length :], layer.values[i : i + 1, :, -row.length :])
        row.episode.prefix.cache = cache

    def _rebuild(self, rows: list[_Row], joining: list[_Row], keep: list[int] | None = None) -> None:
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
            have = self.mask.shape[1]
            for li, layer in enumerate(self.cache.layers):
                parts_k[li].append(_fit(layer.keys.index_select(0, index), have, width))
                parts_v[li].append(_fit(layer.values.index_select(0, index), have, width))
            masks.append(_fit(self.mask.index_select(0, index), have, width))
        for r in joining:
            for li, layer in enumerate(r.episode.prefix.cache.layers):
                parts_k[li].append(_fit(layer.keys, r.length, width))
                parts_v[li].append(_fit(layer.values, r.length, width))
            masks.append(_fit(torch.ones(1, r.length, dtype=torch.long, device=self.device), r.length, width))
        cache = DynamicCache(config=self.model.config)
        for li, own in enumerate(cache.layers):
            own.update(torch.cat(parts_k[li]), torch.cat(parts_v[li]))
        self.rows, self.cache, self.mask = [*rows, *joining], cache, torch.cat(masks)


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
