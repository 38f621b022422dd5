"""GRPO rollouts: episodes become (prompt, completion, env_mask) samples whose mask covers exactly the sampled
tokens; zero-variance groups are replaced from the pool (or kept out of the loss); infrastructure errors are
retried or refilled, never scored 0."""

from __future__ import annotations

import pytest

from pipeline.agents.scripted import phrases
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.formats.codec import IM_END, format_assistant
from pipeline.rollout.protocols import InfrastructureError
from pipeline.rollout.trajectory import Message
from pipeline.train.grpo_rollouts import EpisodeRollouts, PolicyAgent, PolicyEpisode, grouped, to_trl
from pipeline.users.scripted import ScriptedUser
from tests.train.helpers import COMPACT, tasks, tokenizer, world


class ScriptedPolicy(PolicyAgent):
    """A 'policy' that samples the oracle's messages as tokens, or gives up at once when told to fail.

    `outcomes[task_id]` is a list of 'pass' / 'fail' / 'crash' consumed one per episode of that task ('crash':
    the generator raises, as a dead inference server would).
    """

    def __init__(self, outcomes: dict[str, list[str]]) -> None:
        super().__init__(tokenizer(), COMPACT, generate=None, context=4096)  # type: ignore[arg-type]
        self.outcomes = outcomes

    def start(self, info):
        plan = self.outcomes[info.task.id].pop(0)
        return _ScriptedEpisode(self, info, plan)


class _ScriptedEpisode(PolicyEpisode):
    def __init__(self, agent: ScriptedPolicy, info, plan: str) -> None:
        super().__init__(agent, info)
        self.plan = plan
        self.oracle = OracleAgent().start(info)

    def act(self, messages: list[Message]) -> Message:
        if self.plan == "crash":
            self.agent.generate = _crash
            return super().act(messages)
        msg = self.oracle.act(messages) if self.plan == "pass" else Message(role="assistant", content=phrases.GOODBYE)
        ids = self.agent.tokenizer.encode(format_assistant(msg), add_special_tokens=False) + [self.agent.end_id]
        self.agent.generate = lambda prompt, room, gen: (ids, [-1.0] * len(ids))  # stand-in logprobs
        return super().act(messages)


def _crash(prompt, room, gen):
    raise ConnectionError("inference server went away")


def rollouts(outcomes, **kw) -> EpisodeRollouts:
    policy = ScriptedPolicy(outcomes)
    pool = {t.id: t for t in tasks()[:4]}
    return EpisodeRollouts(world=world(), tasks=pool, user=ScriptedUser(), make_agent=lambda: policy, **kw)


def test_env_mask_covers_exactly_the_sampled_tokens_and_the_prompt_is_a_prefix():
    t = tasks()[0]
    r = rollouts({t.id: ["pass"]})
    s = r.episode(r.make_agent(), t)
    assert s.reward == 1.0 and len(s.completion_ids) == len(s.env_mask)
    said = [m for m in s.trajectory.messages if m.role == "assistant"]
    sampled = [tok for tok, m in zip(s.completion_ids, s.env_mask, strict=True) if m]
    want = []
    for m in said:
        want += tokenizer().encode(format_assistant(m), add_special_tokens=False) + [
            tokenizer().convert_tokens_to_ids(IM_END)
        ]
    assert sampled == want
    assert tokenizer().decode(s.prompt_ids).endswith("<|im_start|>assistant\n")
    assert "<|im_start|>tool" in tokenizer().decode(s.completion_ids)  # tool output is in the completion, masked


def test_zero_variance_group_is_replaced_from_the_pool():
    a, b = tasks()[0].id, tasks()[1].id
    others = {t.id: ["fail"] * 8 for t in tasks()[2:4]}
    r = rollouts({a: ["fail"] * 4, b: ["pass", "fail", "pass", "fail"], **others}, seed=3)
    r.tasks = {a: r.tasks[a], b: r.tasks[b]}  # the only replacement is b
    groups = r.fill([a], size=4)
    assert len(groups) == 1
    samples, trainable = groups[0]
    assert trainable and {s.task_id for s in samples} == {b}
    assert [s.reward for s in samples] == [1.0, 0.0, 1.0, 0.0]
    assert r.stats["zero_variance_replaced"] == 1


def test_unreplaceable_group_is_kept_out_of_the_loss():
    outcomes = {t.id: ["fail"] * 12 for t in tasks()[:4]}
    r = rollouts(outcomes, max_resamples=2)
    groups = r.fill([tasks()[0].id], size=2)
    samples, trainable = groups[0]
    assert not trainable and r.stats["unreplaceable"] == 1 and r.stats["zero_variance"] == 3
    out = to_trl(groups)
    assert all(set(mask) == {0} for mask in out["env_mask"])
    assert out["verdict_reward"] == [0.0, 0.0] and out["trainable"] == [False, False]


def test_infrastructure_error_is_retried_not_scored():
    a = tasks()[0].id
    r = rollouts({a: ["crash", "pass", "fail"]})
    groups = r.fill([a], size=2)
    samples, trainable = groups[0]
    assert trainable and [s.reward for s in samples] == [1.0, 0.0]
    assert r.stats["infra_retries"] == 1 and all(not s.trajectory.infra_error for s in samples)


def test_group_lost_to_infrastructure_is_refilled_with_another_task():
    a, b = tasks()[0].id, tasks()[1].id
    r = rollouts({a: ["crash"] * 3, b: ["fail", "pass"]}, max_infra_retries=2)
    r.tasks = {a: r.tasks[a], b: r.tasks[b]}
    samples, trainable = r.fill([a], size=2)[0]
    assert trainable and {s.task_id for s in samples} == {b} and r.stats["infra_refilled"] == 1
    assert 0.0 in [s.reward for s in samples] and 1.0 in [s.reward for s in samples]


def test_prompts_must_come_in_groups():
    assert grouped(["a", "a", "b", "b"], 2) == ["a", "b"]
    with pytest.raises(ValueError):
        grouped(["a", "b", "b", "b"], 2)
    with pytest.raises(ValueError):
        grouped(["a", "a", "a"], 2)


def test_a_pool_that_stays_broken_raises():
    outcomes = {t.id: ["crash"] * 12 for t in tasks()[:4]}
    r = rollouts(outcomes, max_resamples=1, max_infra_retries=0)
    with pytest.raises(InfrastructureError):
        r.fill([tasks()[0].id], size=2)
