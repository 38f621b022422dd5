"""GRPO smoke (slow tier): TRL's GRPOTrainer takes real optimizer steps on CPU through our rollout_func.

A random tiny model never passes a task, so to give the smoke run a reward that varies, half of each group's
episodes replay the oracle's messages as sampled tokens and the other half are sampled from the live model
being trained; every step still goes through TRL's loss on the env-masked completions."""

from __future__ import annotations

import itertools

import pytest
import torch

from pipeline.agents.checkpoint import read_meta
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.formats.codec import format_assistant
from pipeline.train.grpo import build_trainer, run_grpo
from pipeline.train.grpo_config import GRPOConfig
from pipeline.train.grpo_rollouts import PolicyAgent, PolicyEpisode, score
from tests.train.helpers import tasks, tiny_checkpoint

pytestmark = pytest.mark.slow
LIMITS = {"max_turns": 40, "max_tool_calls": 12, "max_steps_per_turn": 3}


class HalfOracle(PolicyAgent):
    """Even episodes: the oracle's messages as tokens (they pass); odd ones: sampled from the live model."""

    def __init__(self, base: PolicyAgent, model) -> None:
        super().__init__(
            base.tokenizer,
            base.format,
            base.generate,
            context=base.context,
            max_new_tokens=base.max_new_tokens,
            stop_ids=base.stop_ids,
            seed=base.seed,
        )
        self.model_generate, self.model = base.generate, model
        self.count = itertools.count()

    def start(self, info):
        return _Half(self, info, oracle=next(self.count) % 2 == 0)


class _Half(PolicyEpisode):
    def __init__(self, agent, info, oracle: bool) -> None:
        super().__init__(agent, info)
        self.oracle = OracleAgent().start(info) if oracle else None

    def act(self, messages):
        if self.oracle is None:
            self.agent.generate = self.agent.model_generate
        else:
            ids = self.agent.tokenizer.encode(format_assistant(self.oracle.act(messages)), add_special_tokens=False)
            ids.append(self.agent.end_id)
            self.agent.generate = lambda prompt, room, gen: (ids, score(self.agent.model, prompt, ids))
        return super().act(messages)


def test_grpo_takes_steps_on_cpu_with_a_varying_reward(tmp_path):
    base = tiny_checkpoint(tmp_path / "base")
    params = GRPOConfig(
        base=base,
        tasks=[],
        steps=2,
        num_generations=2,
        tasks_per_step=2,
        max_new_tokens=12,
        learning_rate=5e-3,
        limits=LIMITS,
        threads=1,
    )
    trainer, rollouts, ckpt = build_trainer(params, str(tmp_path / "scratch"), list(tasks()[:6]))
    make = rollouts.make_agent
    rollouts.make_agent = lambda: HalfOracle(make(), trainer.accelerator.unwrap_model(trainer.model))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    history = trainer.state.log_history
    assert trainer.state.global_step == 2
    rewards = [e["reward"] for e in history if "reward" in e]
    stds = [e["reward_std"] for e in history if "reward_std" in e]
    assert len(rewards) == 2 and all(0.0 < r < 1.0 for r in rewards) and all(s > 0 for s in stds)
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))
    assert rollouts.stats["groups"] == 4 and rollouts.stats["unreplaceable"] == 0


def test_run_grpo_writes_a_checkpoint_that_records_the_rollouts(tmp_path):
    base = tiny_checkpoint(tmp_path / "base")
    params = GRPOConfig(
        base=base,
        tasks=[],
        steps=3,
        max_minutes=1e-4,  # the first step overruns it: the budget stops training after one of three steps
        num_generations=2,
        tasks_per_step=1,
        max_new_tokens=8,
        max_resamples=1,
        limits=LIMITS,
        threads=1,
    )
    result = run_grpo(params, tmp_path / "grpo", tasks=list(tasks()[:3]))
    meta = read_meta(tmp_path / "grpo")
    assert result.steps == 1 and meta.training["kind"] == "grpo" and meta.parent == str(base)
    assert meta.training["steps_done"] == 1 and meta.training["stopped_by_time_budget"] is True
    assert meta.data_manifest["rollouts"]["groups"] == 1
    # a random model fails everything: the group could not be replaced and was kept out of the loss
    assert result.stats["unreplaceable"] == 1 and result.rewards == [0.0]


class _InProcessEngine:
    """Where TRL would push the new weights into vLLM before a rollout: the policy here samples with the live
    model itself, so there is nothing to push."""

    def sync_weights(self) -> None:
        pass


class _Shifted(HalfOracle):
    """The same policy reporting every sampling logprob `shift` lower than it was."""

    shift = 0.0

    def start(self, info):
        episode = super().start(info)
        record = episode.transcript.sampled
        episode.transcript.sampled = lambda ids, lps, i: record(ids, [x - self.shift for x in lps], i)
        return episode


@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_importance_sampling_correction_reads_the_rollout_logprobs(tmp_path, shift):
    """TRL applies its vLLM importance-sampling correction only with use_vllm; with the flag set on a CPU trainer
    (and nothing to sync) it compares our logprobs with its own forward: equal (ratio 1) when they are the
    sampler's, off by exactly the shift when they are not."""
    base = tiny_checkpoint(tmp_path / "base")
    params = GRPOConfig(
        base=base, tasks=[], steps=2 if shift == 0 else 1, num_generations=2, tasks_per_step=2,
        max_new_tokens=12, learning_rate=5e-3, limits=LIMITS, threads=1,
    )  # fmt: skip
    trainer, rollouts, _ = build_trainer(params, str(tmp_path / "scratch"), list(tasks()[:6]))
    assert trainer.args.vllm_importance_sampling_correction  # TRL's default
    trainer.use_vllm, trainer.vllm_generation, trainer._last_loaded_step = True, _InProcessEngine(), -1
    make = rollouts.make_agent
    _Shifted.shift = shift

    def agent():
        return _Shifted(make(), trainer.accelerator.unwrap_model(trainer.model))

    rollouts.make_agent = agent
    trainer.train()
    logs = [e for e in trainer.state.log_history if "sampling/sampling_logp_difference/mean" in e]
    assert len(logs) == params.steps and trainer.state.global_step == params.steps
    for e in logs:
        assert abs(e["sampling/sampling_logp_difference/mean"] - shift) < 1e-3
        if shift == 0:
            assert e["sampling/sampling_logp_difference/max"] < 1e-3
            for key in ("min", "mean", "max"):
                assert abs(e[f"sampling/importance_sampling_ratio/{key}"] - 1.0) < 1e-3


def test_grpo_of_an_outside_checkpoint_saves_it_in_its_own_format(tmp_path):
    """A random-weight tiny Qwen2 with its real chat template: episodes render with the template, and the result
    is saved in its own class and dtype with its format recorded, so `hf:OUT` loads it as it loaded the base."""
    from pipeline.agents.registry import make_agent
    from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

    base = build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", corpus())
    params = GRPOConfig(
        base=base, tasks=[], steps=1, num_generations=2, tasks_per_step=1, max_new_tokens=6, max_resamples=0,
        limits={"max_turns": 6, "max_tool_calls": 2, "max_steps_per_turn": 1}, threads=1,
    )  # fmt: skip
    result = run_grpo(params, tmp_path / "grpo", tasks=list(tasks()[:2]))
    meta = read_meta(tmp_path / "grpo")
    assert result.steps == 1 and meta.chat_format == "hermes" and meta.dtype == "bfloat16"
    assert meta.architecture == "Qwen2ForCausalLM" and meta.training["kind"] == "grpo"
    agent = make_agent(f"hf:{tmp_path / 'grpo'}")
    assert type(agent.model).__name__ == "Qwen2ForCausalLM" and agent.format.name == "hermes"
