"""The embedded model through chat formats reads exactly as before them: episodes of `hf:models/embedded` equal,
message for message, those of the codec-only agent it replaced (kept here as the reference)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from pipeline.agents.backends.hf import PrefixCache, episode_seed, sample
from pipeline.agents.checkpoint import load_checkpoint
from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.formats import CodecFormat
from pipeline.formats.codec import ENDOFTEXT, IM_END, decode_assistant, encode_conversation, parse_assistant
from pipeline.grading.grader import grade
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.runner import run_episode
from pipeline.rollout.trajectory import Message, Usage
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world

EMBEDDED = Path(__file__).resolve().parents[2] / "models" / "embedded"
pytestmark = pytest.mark.slow


class CodecOnlyAgent:
    """The hf backend as it was before chat formats: load_checkpoint, the codec's encode / decode / parse."""

    def __init__(self, path: Path, temperature: float) -> None:
        ckpt = load_checkpoint(path)
        self.model, self.tokenizer, self.codec = ckpt.model, ckpt.tokenizer, ckpt.meta.codec_config
        self.temperature, self.context = temperature, int(self.model.config.max_position_embeddings)
        self.stop_ids = {self.tokenizer.convert_tokens_to_ids(t) for t in (IM_END, ENDOFTEXT)}
        self.name = f"hf:{path.name}"

    def start(self, info: EpisodeInfo) -> CodecOnlyEpisode:
        return CodecOnlyEpisode(self, info)


class CodecOnlyEpisode:
    def __init__(self, agent: CodecOnlyAgent, info: EpisodeInfo) -> None:
        self.agent, self.info, self.turn = agent, info, 0
        self.generator = torch.Generator().manual_seed(episode_seed(0, info.seed))
        self.prefix = PrefixCache(agent.model)

    def act(self, messages: list[Message]) -> Message:
        a = self.agent
        prompt = encode_conversation(
            messages, self.info.tools, self.info.policy, a.tokenizer, a.codec, add_generation_prompt=True
        ).ids
        room = min(256, a.context - len(prompt))
        out = sample(
            a.model,
            prompt,
            max_new_tokens=room,
            stop_ids=a.stop_ids,
            temperature=a.temperature,
            generator=self.generator,
            prefix=self.prefix,
        )
        message = parse_assistant(
            decode_assistant(a.tokenizer, [t for t in out if t not in a.stop_ids]), id_prefix=f"call_{self.turn}_"
        )
        self.turn += 1
        message.usage = Usage(prompt_tokens=len(prompt), completion_tokens=len(out), compute_s=time.perf_counter())
        return message


def test_embedded_episodes_and_verdicts_are_unchanged():
    if not (EMBEDDED / "model.safetensors").exists():
        pytest.skip("models/embedded is not checked out")
    world = load_world("gen-101")
    tasks = generate_tasks(world, 3, seed=0)
    ours = make_agent(f"hf:{EMBEDDED},temperature=0.7")
    assert isinstance(ours.format, CodecFormat) and ours.lean  # the embedded path: codec and LeanLlama
    reference = CodecOnlyAgent(EMBEDDED, temperature=0.7)
    for task in tasks:
        for trial in range(2):
            a, b = (run_episode(world, task, agent, ScriptedUser(), trial=trial, seed=0) for agent in (ours, reference))
            strip = {"usage": {"compute_s"}, "latency_s": True}
            assert [m.model_dump(exclude=strip) for m in a.messages] == [
                m.model_dump(exclude=strip) for m in b.messages
            ]
            assert grade(world, task, a).model_dump() == grade(world, task, b).model_dump()
