"""The vllm backend's batching and over-long handling, on CPU: `vllm` (an optional GPU dependency) is replaced in
`sys.modules`, for these tests only, by a test double whose `LLM.generate` answers like the real one (a batch of
token-id prompts, one SamplingParams each) and, like the real one, fails the whole call for a prompt longer than
its context. Many episodes in flight share one generate call per step; a prompt that does not fit becomes its own
trial's error and never reaches the engine; the agent pickles without its engine. Real-vLLM tests are `gpu`."""

from __future__ import annotations

import pickle
import types
from dataclasses import dataclass

import pytest

from pipeline.agents.scripted import phrases
from pipeline.formats.codec import IM_END, format_assistant
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Message
from pipeline.trials.batch import run_batched
from pipeline.trials.trial import run_trial
from pipeline.users.scripted import ScriptedUser
from tests.train.helpers import tasks, tiny_checkpoint, tokenizer, world

LIMITS = Limits(max_turns=6, max_tool_calls=4, max_steps_per_turn=2)


@dataclass
class _Params:  # what the agent sets on vllm.SamplingParams
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    stop_token_ids: list[int]
    skip_special_tokens: bool


class FakeLLM:
    """Test double for `vllm.LLM`: replies with a fixed message (the seed picks which of two) and records every
    call's batch; a prompt over `max_model_len` fails the whole call, as vLLM's input validation does."""

    calls: list[list[int]] = []  # prompt lengths of each generate call
    instances = 0

    def __init__(self, model: str, max_model_len: int | None = None, **_: object) -> None:
        FakeLLM.instances += 1
        self.max_model_len = max_model_len or 4096
        tok = tokenizer()
        end = tok.convert_tokens_to_ids(IM_END)
        texts = [phrases.GOODBYE, "Could you give me your email address?"]
        self.replies = [
            tok.encode(format_assistant(Message(role="assistant", content=t)), add_special_tokens=False) + [end]
            for t in texts
        ]

    def generate(self, prompts, params, use_tqdm=True):
        assert len(prompts) == len(params)
        FakeLLM.calls.append([len(p["prompt_token_ids"]) for p in prompts])
        for p in prompts:
            if len(p["prompt_token_ids"]) >= self.max_model_len:
                raise ValueError("prompt is longer than the maximum model length")
        out = []
        for p in params:
            ids = self.replies[p.seed % 2][: p.max_tokens]
            out.append(types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=ids)]))
        return out


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, _Params
    monkeypatch.setitem(__import__("sys").modules, "vllm", module)
    FakeLLM.calls, FakeLLM.instances = [], 0
    return module


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("vllm") / "ckpt")


def _agent(checkpoint, **config):
    from pipeline.agents.backends.vllm import VLLMAgent, VLLMConfig

    return VLLMAgent(checkpoint, VLLMConfig(max_tokens=32, **config))


def _jobs(n: int):
    return [(t, 0) for t in tasks()[:n]]


def test_episodes_in_flight_share_one_generate_call_and_match_one_at_a_time(checkpoint, fake_vllm):
    agent = _agent(checkpoint)
    batched = {r.task.id: r for r in run_batched(world(), _jobs(6), agent, ScriptedUser(), limits=LIMITS, width=6)}
    assert FakeLLM.instances == 1 and max(len(c) for c in FakeLLM.calls) == 6
    calls = len(FakeLLM.calls)
    serial = {t.id: run_trial(world(), t, agent, ScriptedUser(), 0, limits=LIMITS) for t, _ in _jobs(6)}
    assert len(FakeLLM.calls) - calls > calls  # one request per call, one at a time
    for task_id, r in batched.items():
        assert _said(r.trajectory) == _said(serial[task_id].trajectory)
        assert not r.verdict.infra_error


def test_an_over_long_prompt_is_its_own_trials_error_not_the_batchs(checkpoint, fake_vllm):
    from pipeline.agents.backends.vllm import PromptTooLongError

    probe = _agent(checkpoint)
    firsts = {}
    for r in run_batched(world(), _jobs(8), probe, ScriptedUser(), limits=LIMITS, width=8):
        firsts[r.task.id] = next(m.usage.prompt_tokens for m in r.trajectory.messages if m.role == "assistant")
    FakeLLM.calls = []
    cut = sorted(firsts.values())[3] + 1  # room for a reply after the 4 shortest first prompts only
    assert sorted(firsts.values())[4] >= cut
    agent = _agent(checkpoint, max_model_len=cut)
    results = list(run_batched(world(), _jobs(8), agent, ScriptedUser(), limits=LIMITS, width=8))
    assert len(results) == 8
    fits = {t for t, n in firsts.items() if n < cut}
    assert len(FakeLLM.calls[0]) == len(fits) == 4  # the first step served the prompts that fit, together
    for r in results:
        replies = [m for m in r.trajectory.messages if m.role == "assistant"]
        assert bool(replies) == (r.task.id in fits)  # a refused prompt never reached the engine
        if r.verdict.infra_error:  # later turns outgrow the context too: each its own trial's error
            assert "max_model_len" in (r.trajectory.error or "")
    assert all(n < cut for call in FakeLLM.calls for n in call)  # the engine never saw an over-long prompt
    with pytest.raises(PromptTooLongError, match="max_model_len"):
        agent.room([0] * cut)


def test_the_agent_pickles_without_its_engine(checkpoint, fake_vllm):
    agent = _agent(checkpoint)
    agent.generate([1, 2, 3], seed=0)
    assert agent._llm is not None
    copy = pickle.loads(pickle.dumps(agent))
    assert copy._llm is None and FakeLLM.instances == 1  # a Ray worker builds its own, lazily
    copy.generate([1, 2, 3], seed=0)
    assert FakeLLM.instances == 2


def _said(traj):
    return [(m.role, m.content, [c.name for c in m.tool_calls]) for m in traj.messages]
