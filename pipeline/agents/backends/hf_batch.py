"""Continuous batching for the hf backend: one forward pass per step for every episode in flight.

A submitted episode's new prompt tokens run alone at once (prompts differ in length and in how much of the
cache they reuse); then each `step` draws the next tokens of every pending reply and runs all those that go on
through one batched forward pass (`LeanLlama.logits_ragged`), each with its own key/value cache and its own
random stream. A reply that ends is returned at once, so its episode can take its user's and tools' turn and
come back while the others are still generating.

Draft and verify (`HFAgent.draft_tokens` > 0): with the token just drawn, each reply also runs a few draft tokens
copied from text already seen (`pipeline.agents.backends.draft_tokens`), so the pass gives the logits after each
of them. The step then draws from those positions in order, one draw per token exactly as plain sampling does,
while each drawn token equals the draft that was run after it; the first that differs (or the last position) ends the
reply's share of the step and the cache forgets the drafts after it. So each token, and the order of draws from
the episode's stream, is that of `sample` one token at a time; a pass just yields several tokens when the drafts
were right. The step's draws are made together (`draws.pick_rows`: one softmax and one argmax over all rows,
each row's noise from its own episode's stream). The prefill and the attention run the same operations as one
at a time, so only float rounding (batched projections, several queries in one product) can differ.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import torch

from pipeline.agents.backends.denormals import flushed_denormals
from pipeline.agents.backends.draft_tokens import Drafter, SeenText
from pipeline.agents.backends.draws import pick_rows
from pipeline.agents.backends.lean import LeanCache, LeanLlama

if TYPE_CHECKING:
    from pipeline.agents.backends.hf import HFAgent, HFAgentEpisode
    from pipeline.rollout import Message


@dataclass
class _Reply:
    key: Any
    episode: HFAgentEpisode
    prompt: list[int]
    room: int
    started: float
    seen: SeenText | None = None  # the prompt and the tokens drawn so far, for drafts
    out: list[int] = field(default_factory=list)
    logits: torch.Tensor | None = None  # (positions, vocab): after the last token run, then after each draft
    drafts: list[int] = field(default_factory=list)  # the drafts run after the last drawn token
    reach: int = 2  # drafts to run next: grows while they are right, falls back to what was right


class HFDecoder:
    """The `TurnDecoder` of an `HFAgent` whose model the lean path runs."""

    def __init__(self, agent: HFAgent) -> None:
        self.agent = agent
        self.lean = LeanLlama.wrap(agent.model)
        self.drafter = Drafter(getattr(agent, "draft_tokens", 0))
        self.active: list[_Reply] = []  # replies with logits to draw from
        self.fresh: list[_Reply] = []  # submitted replies whose new prompt tokens have not run yet
        self.done: list[tuple[Any, Message]] = []
        self.seen: weakref.WeakKeyDictionary[HFAgentEpisode, SeenText] = weakref.WeakKeyDictionary()
        self.runs = self.run_tokens = 0  # sequences run through a pass, and the positions they ran

    def submit(self, key: Any, episode: HFAgentEpisode, messages: list[Message]) -> None:
        started = time.perf_counter()
        reply = _Reply(key, episode, *episode.prompt(messages), started)
        if reply.room <= 0:
            self.done.append((key, episode.reply(reply.prompt, [], time.perf_counter() - started)))
            return
        prefix = episode.prefix
        first = prefix.reuse(reply.prompt)
        prefix.ids = list(reply.prompt)
        reply.drafts = reply.prompt[first:]  # run in the next step's pass, with the replies under way
        if self.drafter.tokens:
            reply.seen = self._seen(episode, reply.prompt)
        self.fresh.append(reply)

    def step(self) -> list[tuple[Any, Message]]:
        with flushed_denormals():  # the lean path is CPU only
            return self._step()

    @torch.inference_mode()
    def _step(self) -> list[tuple[Any, Message]]:
        going = self._draw()
        runs = []
        for r in going:
            room = r.room - len(r.out) - 1  # tokens this reply may still draw after the pass's first
            r.drafts = self.drafter.draft(r.seen, min(room, r.reach)) if r.seen is not None else []
            runs.append([r.out[-1], *r.drafts])
            r.episode.prefix.ids.extend(runs[-1])
        self.runs += len(runs)
        self.run_tokens += sum(len(run) for run in runs)
        fresh, self.fresh = self.fresh, []
        runs += [r.drafts for r in fresh]  # new prompt tokens: only the last position's logits are drawn from
        if runs:
            keep = [len(run) for run in runs[: len(going)]] + [1] * len(fresh)
            # `HFAgent.decoder` picks this decoder only where the lean path runs the model, so the wrap succeeded
            # and every episode's prefix cache is a `LeanCache`
            caches = cast("list[LeanCache]", [r.episode.prefix.cache for r in going + fresh])
            logits = cast("LeanLlama", self.lean).logits_ragged(runs, caches, keep)
            at = 0
            for r, n in zip(going + fresh, keep, strict=True):
                r.logits, at = logits[at : at + n], at + n
        for r in fresh:
            r.drafts = []
        self.active = going + fresh
        done, self.done = self.done, []
        return done

    def _draw(self) -> list[_Reply]:
        """Draw every active reply's tokens for this step; the replies that go on (their last token not yet run)."""
        a = self.agent
        drawing, going = list(self.active), []
        position = 0
        while drawing:
            rows = torch.stack([cast("torch.Tensor", r.logits)[position] for r in drawing])  # active: logits run
            tokens = pick_rows(rows, a.temperature, a.top_p, [r.episode.generator for r in drawing])
            still = []
            for r, token in zip(drawing, tokens, strict=True):
                r.out.append(token)
                if r.seen is not None:
                    r.seen.extend([token])
                if token in a.stop_ids or len(r.out) >= r.room:
                    self._forget(r, position)
                    if r.seen is not None:
                        self.drafter.learn(r.seen, len(r.prompt))
                    compute = time.perf_counter() - r.started
                    self.done.append((r.key, r.episode.reply(r.prompt, r.out, compute)))
                elif position < len(r.drafts) and token == r.drafts[position]:
                    still.append(r)  # the draft run after this position was right: its logits are next
                else:
                    self._forget(r, position)
                    if r.drafts:
                        full = position == len(r.drafts)
                        r.reach = min(self.drafter.tokens, 2 * r.reach) if full else max(1, position + 1)
                    going.append(r)
            drawing = still
            position += 1
        return going

    def _seen(self, episode: HFAgentEpisode, prompt: list[int]) -> SeenText:
        """The episode's `SeenText` for `prompt`: its last reply's, extended, when the prompt goes on from it (the
        index is then the one a fresh `SeenText(prompt)` would build, without reading the conversation again)."""
        seen = self.seen.get(episode)
        if seen is None or prompt[: len(seen.ids)] != seen.ids:
            seen = self.seen[episode] = SeenText(prompt)
        else:
            seen.extend(prompt[len(seen.ids) :])
        return seen

    @staticmethod
    def _forget(r: _Reply, position: int) -> None:
        """Drop the drafts run after `position` from the reply's cache (and the ids it holds)."""
        extra = len(r.drafts) - position
        if extra > 0:
            prefix = r.episode.prefix
            prefix.cache.crop(cast("LeanCache", prefix.cache).length - extra)
            del prefix.ids[-extra:]
