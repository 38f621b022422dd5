"""Continuous batching for the hf backend: one forward pass per generated token for every episode in flight.

A submitted episode's new prompt tokens run alone at once (prompts differ in length and in how much of the
cache they reuse); then each `step` draws the next token of every pending reply and runs all those that go on
through one batched forward pass (`LeanLlama.logits_batch`), each with its own key/value cache and its own
random stream. A reply that ends is returned at once, so its episode can take its user's and tools' turn and
come back while the others are still generating. The step's tokens are drawn together (`draws.pick_rows`: one
softmax and one argmax for all rows, each row's noise from its own episode's stream). Per episode, the tokens
and the order of draws from its stream are exactly those of `sample`, one episode at a time; the prefill and
the attention run the same operations as one at a time, so only the batched projections' float rounding can
differ.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from pipeline.agents.draws import pick_rows
from pipeline.agents.lean import LeanLlama

if TYPE_CHECKING:
    from pipeline.agents.hf import HFAgent, HFAgentEpisode
    from pipeline.rollout.trajectory import Message


@dataclass
class _Reply:
    key: Any
    episode: HFAgentEpisode
    prompt: list[int]
    room: int
    started: float
    out: list[int] = field(default_factory=list)
    logits: torch.Tensor | None = None


class HFDecoder:
    """The `TurnDecoder` of an `HFAgent` whose model the lean path runs."""

    def __init__(self, agent: HFAgent) -> None:
        self.agent = agent
        self.lean = LeanLlama.wrap(agent.model)
        self.active: list[_Reply] = []
        self.done: list[tuple[Any, Message]] = []

    @torch.inference_mode()
    def submit(self, key: Any, episode: HFAgentEpisode, messages: list[Message]) -> None:
        started = time.perf_counter()
        reply = _Reply(key, episode, *episode.prompt(messages), started)
        if reply.room <= 0:
            self.done.append((key, episode.reply(reply.prompt, [], time.perf_counter() - started)))
            return
        prefix = episode.prefix
        first = prefix.reuse(reply.prompt)
        prefix.ids = list(reply.prompt)
        reply.logits = prefix.logits(reply.prompt[first:])  # alone: the same operations as one at a time
        self.active.append(reply)

    @torch.inference_mode()
    def step(self) -> list[tuple[Any, Message]]:
        a = self.agent
        going: list[_Reply] = []
        if self.active:
            logits = torch.stack([r.logits for r in self.active])
            tokens = pick_rows(logits, a.temperature, a.top_p, [r.episode.generator for r in self.active])
            for r, token in zip(self.active, tokens, strict=True):
                r.out.append(token)
                if token in a.stop_ids or len(r.out) >= r.room:
                    compute = time.perf_counter() - r.started
                    self.done.append((r.key, r.episode.reply(r.prompt, r.out, compute)))
                else:
                    r.episode.prefix.ids.append(token)
                    going.append(r)
        if going:
            rows = self.lean.logits_batch([r.out[-1] for r in going], [r.episode.prefix.cache for r in going])
            for r, row in zip(going, rows, strict=True):
                r.logits = row
        self.active = going
        done, self.done = self.done, []
        return done
