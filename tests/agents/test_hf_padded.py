"""Continuous batching through transformers (`PaddedDecoder`) gives each episode of an outside checkpoint the
tokens it gets alone: ragged prompts, several turns (cached prefixes reused), episodes joining and leaving the
batch at different steps, opening prompts that start from another episode's system prompt; checkpoints whose
caches cannot be padded are decoded one at a time."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch

import pipeline.agents.backends.hf as hf
import pipeline.agents.backends.hf_padded as hf_padded
from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.backends.hf_padded import PaddedDecoder
from pipeline.authoring.templates import generate_tasks
from pipeline.rollout.decoders import OneByOne
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.world.registry import load_world
from tests.agents.test_hf_decoder import alone, assert_as_alone, conversation, in_flight, user_turns
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

WORLD = "gen-5-8x10x20"
PICK = hf.pick


@pytest.fixture(scope="module")
def texts():
    return corpus()


@pytest.fixture(scope="module")
def infos():
    world = load_world(WORLD)
    task = generate_tasks(world, 1, seed=0)[0]
    return [EpisodeInfo(task, 0, 70 + i, world.policy, world.tools.schemas()) for i in range(6)]


def recorded(monkeypatch) -> dict[int, list[torch.Tensor]]:
    """The logits of every draw, per episode (its stream's seed), in order; both paths draw through `pick` (the
    one-at-a-time path as `hf` imports it, the batched one as `hf_padded` does)."""
    seen: dict[int, list[torch.Tensor]] = defaultdict(list)

    def recording(logits, temperature, top_p, generator):
        seen[generator.initial_seed()].append(logits.clone())
        return PICK(logits, temperature, top_p, generator)

    monkeypatch.setattr(hf, "pick", recording)
    monkeypatch.setattr(hf_padded, "pick", recording)
    return seen


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama3"])
def test_batched_replies_equal_one_at_a_time(family, infos, texts, tmp_path, monkeypatch):
    path = build_checkpoint(FAMILIES[family], tmp_path / family, texts)
    agent = HFAgent(path, temperature=1.0, max_new_tokens=24, dtype="float32")
    agent.stop_ids = agent.stop_ids | set(range(100, 250))  # a random model's replies end at ragged lengths
    logits_alone = recorded(monkeypatch)
    want = [alone(agent, info, user_turns(i)) for i, info in enumerate(infos)]
    logits_batched = recorded(monkeypatch)
    decoder = agent.decoder()
    assert isinstance(decoder, PaddedDecoder)
    episodes = [agent.start(info) for info in infos]
    widths: list[int] = []
    replies = in_flight(decoder, episodes, lambda: widths.append(len(decoder.batch.rows)))
    widest = max(widths)
    assert_as_alone(want, replies, episodes)
    usage = [m.usage for replies, _ in want for m in replies]
    assert len({u.prompt_tokens for u in usage}) > 6 and len({u.completion_tokens for u in usage}) > 2  # ragged
    assert widest >= 3 and decoder.batch.passes < sum(u.completion_tokens for u in usage) - len(usage)
    assert not decoder.batch.rows and decoder.batch.begin == decoder.batch.end  # every row went back to its episode
    assert decoder.batch.layouts <= decoder.batch.joins // 3  # joins and leaves copy one row: buffers rarely remade
    assert decoder.batch.shared_tokens > 5 * 100  # later episodes began from the first one's system prompt
    assert logits_batched.keys() == logits_alone.keys()
    for seed, rows in logits_alone.items():  # the same logits up to float rounding (a position off by one: 5e-5)
        assert len(logits_batched[seed]) == len(rows)
        for got, expected in zip(logits_batched[seed], rows, strict=True):
            assert torch.allclose(got, expected, rtol=0, atol=2e-6), float((got - expected).abs().max())


def test_a_reply_that_ends_at_its_first_token_never_joins(infos, texts, tmp_path):
    agent = HFAgent(build_checkpoint(FAMILIES["qwen2"], tmp_path / "m", texts), max_new_tokens=1, dtype="float32")
    decoder = agent.decoder()
    for i, info in enumerate(infos[:3]):
        decoder.submit(i, agent.start(info), conversation([], user_turns(i)))
    done = decoder.step()
    assert sorted(k for k, _ in done) == [0, 1, 2] and all(m.usage.completion_tokens == 1 for _, m in done)
    assert decoder.batch.passes == 0 and not decoder.batch.busy


def test_sliding_window_caches_are_decoded_one_at_a_time(texts, tmp_path):
    agent = HFAgent(build_checkpoint(FAMILIES["gemma3"], tmp_path / "g", texts), max_new_tokens=4)
    assert not PaddedDecoder.supports(agent.model)
    assert isinstance(agent.decoder(), OneByOne)


def test_rows_keep_their_tokens_when_the_buffers_are_remade(texts, tmp_path, monkeypatch):
    """Rows joining late, longer than any before, past the slots there are, and decoding past the columns laid
    out: each kind of new layout happens, and every row's tokens and logprobs are those `sample` draws alone."""
    from transformers import AutoModelForCausalLM

    from pipeline.agents.backends.hf import PrefixCache, sample
    from pipeline.agents.backends.hf_padded import PaddedBatch, TokenRow

    model = (
        AutoModelForCausalLM.from_pretrained(build_checkpoint(FAMILIES["qwen2"], tmp_path / "m", texts)).eval().float()
    )
    rng = torch.Generator().manual_seed(3)
    plan = [(12, 40, 0), (30, 150, 0), (120, 150, 5), (7, 100, 5), (300, 60, 70)]  # prompt, room, joins at pass
    prompts = [torch.randint(0, 200, (n,), generator=rng).tolist() for n, _, _ in plan]
    want = []
    for i, (prompt, (_, room, _)) in enumerate(zip(prompts, plan, strict=True)):
        lp: list[float] = []
        ids = sample(
            model,
            prompt,
            max_new_tokens=room,
            stop_ids=set(),
            temperature=1.0,
            generator=torch.Generator().manual_seed(i),
            logprobs=lp,
        )
        want.append((ids, lp))
    batch = PaddedBatch(model, set(), temperature=1.0)
    why: list[str] = []
    lay_out = batch._lay_out

    def recorded(slots, longest, joining):
        why.append("columns" if joining is None else "slots" if slots > batch.slots else "length")
        lay_out(slots, longest, joining)

    monkeypatch.setattr(batch, "_lay_out", recorded)
    rows = [
        TokenRow(PrefixCache(model, lean=False), torch.Generator().manual_seed(i), p, room, logprobs=[])
        for i, (p, (_, room, _)) in enumerate(zip(prompts, plan, strict=True))
    ]
    passes = 0
    while passes == 0 or batch.busy:
        for row, (_, _, at) in zip(rows, plan, strict=True):
            if at == passes:
                batch.start(row)
        batch.step()
        passes += 1
    assert {"columns", "slots", "length"} <= set(why[1:])  # the first layout is the batch's first join
    for row, (ids, lp) in zip(rows, want, strict=True):
        assert row.out == ids
        assert max(abs(a - b) for a, b in zip(row.logprobs or [], lp, strict=True)) < 1e-5
