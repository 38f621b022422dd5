"""Continuous batching of the embedded model gives each episode the tokens it gets alone: ragged prompts, several
turns (so cached prefixes are reused and cropped), episodes joining and leaving the batch at different steps."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pipeline.agents.backends.draft_tokens import SeenText
from pipeline.agents.backends.hf_batch import HFDecoder
from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.trajectory import Message
from pipeline.world.registry import load_world

EMBEDDED = Path(__file__).resolve().parents[2] / "models" / "embedded"
WORDS = [
    "hello",
    "I",
    "would",
    "like",
    "to",
    "cancel",
    "my",
    "order",
    "the",
    "email",
    "is",
    "jane",
    "at",
    "example",
    "dot",
    "com",
    "please",
    "and",
    "thank",
    "you",
]


def user_turns(i: int) -> list[str]:
    """Three user messages of lengths that differ between episodes."""
    return [" ".join(WORDS[: 3 + (i * 5 + t * 7) % len(WORDS)]) for t in range(3)]


@pytest.fixture(scope="module")
def setup():
    if not (EMBEDDED / "model.safetensors").exists():
        pytest.skip("models/embedded is not checked out")
    world = load_world("gen-101")
    task = generate_tasks(world, 1, seed=0)[0]
    agent = make_agent(f"hf:{EMBEDDED},temperature=0.7")
    infos = [EpisodeInfo(task, 0, 40 + i, world.policy, world.tools.schemas()) for i in range(7)]
    return agent, infos


def conversation(replies: list[Message], turns: list[str]) -> list[Message]:
    messages = [Message(role="user", content=turns[0])]
    for reply, text in zip(replies, turns[1:], strict=False):
        messages += [reply.model_copy(update={"usage": None}), Message(role="user", content=text)]
    return messages


def alone(agent, info: EpisodeInfo, turns: list[str]) -> tuple[list[Message], torch.Tensor]:
    episode, replies = agent.start(info), []
    for _ in turns:
        replies.append(episode.act(conversation(replies, turns)))
    return replies, episode.generator.get_state()


def assert_as_alone(want, replies: list[list[Message]], episodes) -> None:
    """Each episode's replies (timings aside) and random-stream state are those it got alone."""
    strip = {"usage": {"compute_s"}}
    for (expected, state), got, episode in zip(want, replies, episodes, strict=True):
        assert [m.model_dump(exclude=strip) for m in got] == [m.model_dump(exclude=strip) for m in expected]
        assert torch.equal(episode.generator.get_state(), state)


def in_flight(decoder, episodes, after_step=None) -> list[list[Message]]:
    """Three turns of each episode through `decoder`, a later episode joining the batch every third step;
    `after_step()` runs after each step."""
    replies: list[list[Message]] = [[] for _ in episodes]
    decoder.submit(0, episodes[0], conversation([], user_turns(0)))
    started, steps = 1, 0
    while any(len(r) < 3 for r in replies):
        if started < len(episodes) and steps % 3 == 0:  # later episodes join a batch already under way
            decoder.submit(started, episodes[started], conversation([], user_turns(started)))
            started += 1
        for i, message in decoder.step():
            replies[i].append(message)
            if len(replies[i]) < 3:
                decoder.submit(i, episodes[i], conversation(replies[i], user_turns(i)))
        if after_step is not None:
            after_step()
        steps += 1
    return replies


@pytest.mark.parametrize("draft", [0, 2, 8])
def test_batched_replies_equal_one_at_a_time(setup, draft, monkeypatch):
    agent, infos = setup
    want = [alone(agent, info, user_turns(i)) for i, info in enumerate(infos)]
    monkeypatch.setattr(agent, "draft_tokens", draft)
    decoder = HFDecoder(agent)
    indexed = decoder._seen  # each prompt's draft index is the one a fresh SeenText builds, turn after turn

    def checked(episode, prompt):
        seen = indexed(episode, prompt)
        fresh = SeenText(prompt)
        assert (seen.ids, seen.after) == (fresh.ids, fresh.after)
        return seen

    monkeypatch.setattr(decoder, "_seen", checked)
    episodes = [agent.start(info) for info in infos]
    replies = in_flight(decoder, episodes)
    assert_as_alone(want, replies, episodes)
    usage = [m.usage for replies, _ in want for m in replies]
    assert len({u.prompt_tokens for u in usage}) > 10 and len({u.completion_tokens for u in usage}) > 3  # ragged
    drawn = sum(u.completion_tokens for u in usage)
    if draft:  # drafts ran, some were right (fewer passes than tokens) and some wrong (cropped from the cache)
        assert decoder.runs < drawn - len(usage) < decoder.run_tokens
    else:
        assert decoder.runs == decoder.run_tokens == drawn - len(usage)
