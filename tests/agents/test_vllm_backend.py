"""The `vllm` backend: a clear error where vLLM is absent; on a GPU machine, an episode through the offline engine
that reads exactly like the `hf` backend's (same prompt ids, same greedy text)."""

from __future__ import annotations

import importlib.util

import pytest

from pipeline.agents.backends.vllm import BackendUnavailableError
from pipeline.agents.registry import make_agent

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_missing_vllm_is_a_clear_error(tmp_path):
    with pytest.raises(BackendUnavailableError, match=r"pip install 'agentloop\[gpu\]'"):
        make_agent(f"vllm:{tmp_path}")


def _need_vllm_and_a_gpu() -> None:
    pytest.importorskip("vllm")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


@pytest.mark.gpu
def test_vllm_matches_the_hf_backend_greedy(tmp_path):
    _need_vllm_and_a_gpu()
    from pipeline.agents.backends.hf import HFAgent
    from pipeline.agents.backends.vllm import VLLMAgent, VLLMConfig
    from pipeline.agents.checkpoint import CheckpointMeta, save_checkpoint
    from pipeline.domains.retail.tools import TOOLS
    from pipeline.domains.retail.worlds import generate_world
    from pipeline.embedded.model import build_model
    from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
    from pipeline.rollout.protocols import EpisodeInfo
    from pipeline.rollout.trajectory import Message
    from tests.agents.test_hf_agent import COMPACT, TINY

    world = generate_world(seed=5, n_users=10, n_orders=20, n_products=8)
    tokenizer = train_tokenizer(build_corpus(world, 10), TokenizerConfig(vocab_size=512))
    save_checkpoint(tmp_path, build_model(TINY, tokenizer), tokenizer, CheckpointMeta.for_codec(COMPACT, model=TINY))
    info = EpisodeInfo(task=None, trial=0, seed=0, policy=world.policy, tools=TOOLS.schemas())  # type: ignore[arg-type]
    messages = [Message(role="user", content="Hi, I want to cancel an order.")]
    ours = VLLMAgent(tmp_path, VLLMConfig(max_tokens=16, gpu_memory_utilization=0.2)).start(info).act(messages)
    ref = HFAgent(tmp_path, max_new_tokens=16).start(info).act(messages)
    assert ours.usage.prompt_tokens == ref.usage.prompt_tokens
    assert ours.raw == ref.raw


@pytest.mark.gpu
def test_vllm_batches_episodes_in_flight_and_refuses_an_over_long_prompt_per_trial(tmp_path):
    _need_vllm_and_a_gpu()
    from pipeline.agents.backends.vllm import VLLMAgent, VLLMConfig
    from pipeline.rollout.runner import Limits
    from pipeline.trials.batch import run_batched
    from pipeline.users.scripted import ScriptedUser
    from tests.train.helpers import tasks, tiny_checkpoint, world

    ckpt = tiny_checkpoint(tmp_path / "ckpt")
    limits = Limits(max_turns=6, max_tool_calls=4, max_steps_per_turn=2)
    jobs = [(t, 0) for t in tasks()[:8]]
    agent = VLLMAgent(ckpt, VLLMConfig(max_tokens=16, gpu_memory_utilization=0.2))
    results = list(run_batched(world(), jobs, agent, ScriptedUser(), limits=limits, width=8))
    assert len(results) == 8 and not any(r.verdict.infra_error for r in results)
    agent.context = 64  # as max_model_len=64 would set it, without a second engine in this process
    refused = list(run_batched(world(), jobs[:2], agent, ScriptedUser(), limits=limits, width=2))
    assert all(r.verdict.infra_error and "max_model_len" in r.trajectory.error for r in refused)
