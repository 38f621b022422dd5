"""GRPO samples carry the sampling logprob of every completion token: one per token, finite and ≤ 0 where the policy
sampled, equal to a direct forward of the model over the episode's stream (which is what TRL scores), for the codec
and for a chat template (a random-weight tiny Qwen2); over-long prompts are set aside and counted."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.rollout.protocols import InfrastructureError
from pipeline.rollout.runner import Limits
from pipeline.train.grpo_rollouts import (
    EpisodeRollouts,
    PolicyAgent,
    PromptTooLongError,
    local_generate,
    local_generate_batch,
    vllm_generate,
)
from pipeline.train.sft_base import load_base
from pipeline.users.scripted import ScriptedUser
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus
from tests.train.helpers import COMPACT, tasks, tiny_checkpoint, world

LIMITS = Limits(max_turns=8, max_tool_calls=4, max_steps_per_turn=2)


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("grpo-logprobs")
    qwen = load_base(build_checkpoint(FAMILIES["qwen2"], root / "qwen2", corpus()))
    return {"codec": load_base(tiny_checkpoint(root / "codec")), "qwen2": qwen}


def _context(base) -> int:
    return int(base.model.config.max_position_embeddings)


def _agent(base, temperature: float, **kw) -> PolicyAgent:
    agent = PolicyAgent(base.tokenizer, base.format or COMPACT, None, context=_context(base), max_new_tokens=6, **kw)  # type: ignore[arg-type]
    agent.generate = local_generate(base.model.eval(), agent.stop_ids, temperature)
    return agent


def _rollouts(agent: PolicyAgent, n: int = 2) -> EpisodeRollouts:
    pool = {t.id: t for t in tasks()[:n]}
    return EpisodeRollouts(world=world(), tasks=pool, user=ScriptedUser(), make_agent=lambda: agent, limits=LIMITS)


@pytest.mark.parametrize(("name", "temperature"), [("codec", 1.0), ("qwen2", 0.7)])
def test_logprobs_align_with_the_completion_and_match_a_forward_pass(bases, name, temperature):
    base = bases[name]
    agent = _agent(base, temperature)
    s = _rollouts(agent).episode(agent, tasks()[0])
    n = len(s.completion_ids)
    assert len(s.logprobs) == n == len(s.env_mask) and sum(s.env_mask) > 0
    assert s.env_mask.count(0) > 0  # user and tool tokens are in the completion, masked
    turns = [m for m in s.trajectory.messages if m.role == "assistant"]
    assert len(turns) >= 2  # several turns: logprobs after env tokens are checked too
    sampled = [i for i, m in enumerate(s.env_mask) if m]
    assert all(math.isfinite(s.logprobs[i]) and s.logprobs[i] <= 0 for i in sampled)
    assert all(s.logprobs[i] == 0.0 for i, m in enumerate(s.env_mask) if not m)
    seq = torch.tensor([s.prompt_ids + s.completion_ids])
    with torch.no_grad():
        logits = base.model(input_ids=seq).logits[0].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    p = len(s.prompt_ids)
    direct = [float(logp[p + i - 1, s.completion_ids[i]]) for i in sampled]
    assert max(abs(a - s.logprobs[i]) for a, i in zip(direct, sampled, strict=True)) < 1e-4


def test_env_tokens_are_the_templates_own_rendering(bases):
    """Every masked run of the stream (customer and tool messages, headers) is text the template renders for the
    conversation; every sampled run is the policy's own ids."""
    base = bases["qwen2"]
    agent = _agent(base, 1.0)
    s = _rollouts(agent).episode(agent, tasks()[0])
    messages = s.trajectory.messages
    full = agent.format.render(messages, world().tools.schemas(), world().policy, base.tokenizer)
    runs: list[tuple[int, list[int]]] = []
    for tok, m in zip(s.completion_ids, s.env_mask, strict=True):
        if not runs or runs[-1][0] != m:
            runs.append((m, []))
        runs[-1][1].append(tok)
    env = [base.tokenizer.decode(ids, skip_special_tokens=False) for m, ids in runs if not m]
    assert env and all(text in full for text in env)
    assert any("<|im_start|>user" in text for text in env)


def test_a_task_over_max_prompt_length_is_set_aside_and_counted(bases):
    agent = _agent(bases["codec"], 1.0, max_prompt_length=50)
    r = _rollouts(agent, n=3)
    with pytest.raises(PromptTooLongError, match="max_prompt_length=50"):
        r.fill([tasks()[0].id], size=2)
    assert r.stats["prompt_too_long"] == 3 and r.too_long == {t.id for t in tasks()[:3]}


def test_a_full_context_ends_the_episode(bases):
    base = bases["codec"]
    agent = _agent(base, 1.0)
    first = len(_rollouts(agent).episode(agent, tasks()[0]).prompt_ids)
    agent.context, agent.max_prompt_length = first + 20, first
    r = _rollouts(agent)
    s = r.episode(agent, tasks()[0])
    assert r.stats["context_full"] == 1 and s.env_mask.count(1) > 0
    assert len(s.prompt_ids) + len(s.completion_ids) <= agent.context


class _TRLGeneration:
    """Test double for TRL's VLLMGeneration (vLLM is an optional GPU dependency): `generate` returns what TRL's
    returns with logprobs=0, one top-1 list per token, vLLM's None for a logprob it could not compute."""

    def __init__(self, ids, logprobs):
        self.ids, self.logprobs, self.prompts = ids, logprobs, []

    def generate(self, prompts, images, num_generations):
        self.prompts.append(prompts)
        return prompts, [self.ids], [[[x] for x in self.logprobs]], [[[t] for t in self.ids]]


def test_vllm_generation_gives_one_logprob_per_kept_token():
    engine = _TRLGeneration([5, 6, 7, 8], [-0.5, None, -1.5, -2.0])
    ids, logprobs = vllm_generate(engine)([1, 2, 3], 3, torch.Generator())
    assert engine.prompts == [[[1, 2, 3]]] and ids == [5, 6, 7]
    assert logprobs[0] == -0.5 and math.isnan(logprobs[1]) and logprobs[2] == -1.5


def test_a_group_in_flight_together_samples_as_one_at_a_time(bases):
    """With a batch generator (as vLLM's, here the in-memory sampler over each request's own stream), a group's
    episodes run together, their turns in one call per step, and give the same samples as one at a time."""
    base = bases["codec"]
    serial_agent = _agent(base, 1.0)
    one = local_generate(base.model, serial_agent.stop_ids, 1.0)
    sizes: list[int] = []

    def many(requests):
        sizes.append(len(requests))
        return [one(prompt, room, generator) for prompt, room, generator in requests]

    batched_agent = _agent(base, 1.0, generate_batch=many)
    serial = _rollouts(serial_agent).group(serial_agent, tasks()[0], 3)
    batched = _rollouts(batched_agent).group(batched_agent, tasks()[0], 3)
    assert max(sizes) == 3
    for a, b in zip(serial, batched, strict=True):
        assert (a.prompt_ids, a.completion_ids, a.env_mask, a.reward) == (
            b.prompt_ids,
            b.completion_ids,
            b.env_mask,
            b.reward,
        )
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5


def test_the_in_memory_batch_generator_samples_a_chat_template_group_as_one_at_a_time(bases):
    """Without vLLM, a batchable checkpoint's group decodes together (`PaddedBatch`): same tokens, logprobs within
    float rounding; the embedded-style codec model keeps its exact one-at-a-time lean path."""
    assert local_generate_batch(bases["codec"].model, {0}, 1.0) is None
    base = bases["qwen2"].model.eval().float()
    serial_agent = _agent(bases["qwen2"], 1.0)
    batch = local_generate_batch(base, serial_agent.stop_ids, 1.0)
    sizes: list[int] = []

    def counted(requests):
        sizes.append(len(requests))
        return batch(requests)

    batched_agent = _agent(bases["qwen2"], 1.0, generate_batch=counted)
    serial = _rollouts(serial_agent).group(serial_agent, tasks()[0], 3)
    batched = _rollouts(batched_agent).group(batched_agent, tasks()[0], 3)
    assert max(sizes) == 3
    for a, b in zip(serial, batched, strict=True):
        assert (a.prompt_ids, a.completion_ids, a.env_mask) == (b.prompt_ids, b.completion_ids, b.env_mask)
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5


def test_a_batch_generator_that_fails_is_an_infrastructure_error_of_the_group(bases):
    def dead(requests):
        raise ConnectionError("engine went away")

    agent = _agent(bases["codec"], 1.0, generate_batch=dead)
    r = _rollouts(agent)
    r.max_infra_retries, r.max_resamples = 1, 1
    with pytest.raises(InfrastructureError, match="no group could be completed"):
        r.fill([tasks()[0].id], size=2)
    assert r.stats["infra_refilled"] == 2 and r.stats["infra_retries"] >= 2
