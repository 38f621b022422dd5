"""The `hf` backend on a random tiny checkpoint: it runs an episode through the runner, parses what it
generates with the codec, records usage, is deterministic per seed, and refuses a checkpoint of another codec."""

from __future__ import annotations

import json

import pytest

from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.checkpoint import META_FILE, CheckpointMeta, ModelConfig, save_checkpoint
from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.tools import TOOLS
from pipeline.domains.retail.worlds import generate_world
from pipeline.embedded.model import build_model
from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
from pipeline.formats.codec import (
    CodecConfig,
    CodecMismatchError,
    encode_conversation,
    format_assistant,
    parse_assistant,
)
from pipeline.rollout.protocols import Agent, EpisodeInfo, UserReply
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message, Trajectory

COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)
TINY = ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_position_embeddings=1024)


class ThreeLineUser:
    name = "three-line-user"

    def start(self, info: EpisodeInfo) -> ThreeLineUser:
        self.lines = iter(["Hi, I want to cancel an order.", "My email is noone@example.com.", "Thanks, bye."])
        return self

    def respond(self, messages: list[Message]) -> UserReply:
        line = next(self.lines, None)
        return UserReply(content=line or "###STOP###", stop=line is None)


@pytest.fixture(scope="module")
def world():
    return generate_world(seed=5, n_users=10, n_orders=20, n_products=8)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, world):
    tokenizer = train_tokenizer(build_corpus(world, 10), TokenizerConfig(vocab_size=512))
    path = tmp_path_factory.mktemp("tiny")
    save_checkpoint(path, build_model(TINY, tokenizer), tokenizer, CheckpointMeta.for_codec(COMPACT, model=TINY))
    return path


def episode(world, agent, seed: int) -> Trajectory:
    task = Task(
        id="hf-smoke", world=world.name, user_script=UserScript(goal="cancel"), provenance=Provenance(source="eval")
    )
    return run_episode(world, task, agent, ThreeLineUser(), seed=seed, limits=Limits(max_steps_per_turn=3))


def test_hf_agent_runs_an_episode_and_records_usage(world, checkpoint):
    agent = HFAgent(checkpoint, temperature=1.0, max_new_tokens=24, seed=0)
    assert isinstance(agent, Agent) and agent.name == f"hf:{checkpoint.name}"
    traj = episode(world, agent, seed=7)
    assert traj.termination != "infra_error", traj.error
    said = [m for m in traj.messages if m.role == "assistant"]
    assert said
    prompt_lens = []
    for i, m in enumerate(traj.messages):
        if m.role != "assistant":
            continue
        assert m.raw is not None and m.usage is not None and m.usage.compute_s > 0
        assert 1 <= m.usage.completion_tokens <= 24
        again = parse_assistant(m.raw, id_prefix=m.tool_calls[0].id[:-1] if m.tool_calls else "call_")
        assert (again.content, again.tool_calls) == (m.content, m.tool_calls)  # what the codec reads, nothing more
        prompt = encode_conversation(
            traj.messages[:i], TOOLS.schemas(), world.policy, agent.tokenizer, COMPACT, add_generation_prompt=True
        )
        assert m.usage.prompt_tokens == len(prompt.ids)
        prompt_lens.append(m.usage.prompt_tokens)
    assert prompt_lens == sorted(prompt_lens)
    assert traj.agent_usage.completion_tokens == sum(m.usage.completion_tokens for m in said)
    ids = [c.id for m in said for c in m.tool_calls]
    assert len(ids) == len(set(ids))  # call ids are unique within the episode


def test_same_seed_same_episode(world, checkpoint):
    def raws(agent_seed: int, episode_seed: int, temperature: float = 1.0) -> list[str | None]:
        agent = HFAgent(checkpoint, temperature=temperature, max_new_tokens=24, seed=agent_seed)
        return [m.raw for m in episode(world, agent, episode_seed).messages if m.role == "assistant"]

    first = raws(0, 3)
    assert raws(0, 3) == first
    assert raws(0, 4) != first and raws(1, 3) != first


def test_greedy_is_independent_of_seeds(world, checkpoint):
    agent = HFAgent(checkpoint, temperature=0.0, max_new_tokens=16, seed=0)
    info = EpisodeInfo(task=None, trial=0, seed=0, policy=world.policy, tools=TOOLS.schemas())  # type: ignore[arg-type]
    messages = [Message(role="user", content="Hi, I want to cancel an order.")]
    first = agent.start(info).act(messages).raw
    info.seed = 99
    assert HFAgent(checkpoint, temperature=0.0, max_new_tokens=16, seed=3).start(info).act(messages).raw == first


def test_prompt_longer_than_the_context_ends_the_turn(world, checkpoint):
    agent = HFAgent(checkpoint, max_new_tokens=8)
    info = EpisodeInfo(task=None, trial=0, seed=0, policy=world.policy, tools=TOOLS.schemas())  # type: ignore[arg-type]
    msg = agent.start(info).act([Message(role="user", content="word " * 2000)])
    assert msg.content is None and msg.tool_calls == [] and msg.usage.completion_tokens == 0


def test_refuses_a_checkpoint_of_another_codec(checkpoint, tmp_path):
    with pytest.raises(CodecMismatchError, match=META_FILE):
        HFAgent(checkpoint, codec_config=CodecConfig())
    for f in checkpoint.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    meta = json.loads((tmp_path / META_FILE).read_text())
    meta["codec_hash"] = "f" * 16
    (tmp_path / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(CodecMismatchError, match=str(tmp_path / META_FILE)):
        HFAgent(tmp_path)


def test_a_checkpoint_that_learned_a_call_makes_it_through_the_runner(world, checkpoint, tmp_path):
    """Train on one rendered conversation (loss on assistant tokens only); greedy decoding then emits that call,
    stops at the end-of-turn token, and the runner executes it: rendering for training and for acting agree."""
    import torch

    from pipeline.agents.checkpoint import load_checkpoint

    ckpt = load_checkpoint(checkpoint)
    model, tokenizer = ckpt.model, ckpt.tokenizer
    user = next(iter(world.db.users.values()))
    convo = [
        Message(role="user", content="Hi, I want to cancel an order."),
        parse_assistant(
            '<tool_call>\n{"name": "find_user_id_by_email", "arguments": {"email": "' + user.email + '"}}\n</tool_call>'
        ),
    ]
    enc = encode_conversation(convo, TOOLS.schemas(), world.policy, tokenizer, COMPACT)
    ids = torch.tensor([enc.ids])
    labels = torch.where(torch.tensor([enc.assistant_mask]) == 1, ids, -100)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)
    model.train()
    for _ in range(100):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    trained = tmp_path / "trained"
    save_checkpoint(trained, model, tokenizer, ckpt.meta)
    traj = episode(world, HFAgent(trained, temperature=0.0, max_new_tokens=64), seed=0)
    first = traj.messages[1]
    assert first.raw == format_assistant(convo[1])
    assert first.usage.completion_tokens == sum(enc.assistant_mask)  # the body and the end-of-turn token
    assert traj.world_log[0]["name"] == "find_user_id_by_email" and traj.world_log[0]["ok"]
    assert traj.messages[2].content == user.user_id


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "transformers"])
def test_prefix_cache_reuse_gives_the_same_tokens_as_a_fresh_prompt(checkpoint, lean):
    """Turn t reuses turn t-1's key/value cache up to the common prefix, and samples exactly what a fresh
    prompt would; a prompt that diverges early crops the cache (or restarts it)."""
    from pipeline.agents.backends.hf import PrefixCache, sample

    model = HFAgent(checkpoint).model
    prompt = [(7 * i) % 300 + 5 for i in range(120)]
    fresh = sample(model, prompt, max_new_tokens=12, stop_ids=set())
    cache = PrefixCache(model, lean=lean)
    assert (cache.lean is not None) == lean
    sample(model, prompt[:70], max_new_tokens=12, stop_ids=set(), prefix=cache)
    assert sample(model, prompt, max_new_tokens=12, stop_ids=set(), prefix=cache) == fresh
    assert cache.cached == len(cache.ids) == len(prompt) + 11  # the last token is never run
    other = [9, *prompt[1:60]]
    assert sample(model, other, max_new_tokens=5, stop_ids=set(), prefix=cache) == sample(
        model, other, max_new_tokens=5, stop_ids=set()
    )
    assert cache.ids[:60] == other


def test_hf_spec_takes_sampling_settings_and_rejects_unknown_ones(checkpoint):
    from pipeline.agents.registry import UnknownAgentError, make_agent
    from pipeline.measure.config import sampled

    agent = make_agent(f"hf:{checkpoint},temperature=0.7,max_new_tokens=32,seed=3")
    assert (agent.temperature, agent.max_new_tokens, agent.seed) == (0.7, 32, 3)
    with pytest.raises(UnknownAgentError, match="unknown setting"):
        make_agent(f"hf:{checkpoint},temp=1")
    assert sampled(f"hf:{checkpoint}", 0.7) == f"hf:{checkpoint},temperature=0.7"
    assert sampled("flawed:invention=0.5", 0.7) == "flawed:invention=0.5"
