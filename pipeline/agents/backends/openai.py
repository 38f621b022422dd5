"""The `openai` agent backend: any OpenAI-compatible chat-completions endpoint with tools.

A vLLM server, a hosted API or `agentloop serve` all look the same from here. The system prompt is the
world's policy and the tools go in the request's `tools`, so a server that renders them with our codec
(`agentloop serve`) sees exactly the prompt the embedded `hf` backend builds. Each request carries a seed
derived from the agent's seed, the episode's seed and the turn, so endpoints that honour seeds replay.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.endpoint import ChatClient, EndpointConfig, message_from_openai, to_openai_messages
from pipeline.endpoint.client import ContextLengthError
from pipeline.rollout import EpisodeInfo, Message, Usage

log = logging.getLogger(__name__)


def request_seed(agent_seed: int, episode_seed: int, turn: int) -> int:
    """A 31-bit seed per request (servers differ in how wide a seed they accept)."""
    digest = hashlib.sha256(f"openai-agent:{agent_seed}:{episode_seed}:{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


class SamplingConfig(BaseModel):
    """Per-request generation settings; None leaves the endpoint's default."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(default=0.0, ge=0, description="Sampling temperature (0 = greedy).")
    top_p: float | None = Field(default=None, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int | None = Field(
        default=1024,
        ge=1,
        description="Most tokens per reply: a turn never runs on to the end of the context (None: the endpoint's"
        " default, which for llama.cpp and vLLM servers is the whole context).",
    )
    seed: int = Field(default=0, description="Agent seed, mixed with the episode seed and turn per request.")
    send_seed: bool = Field(default=True, description="Send a per-request seed (some hosted APIs reject it).")


class OpenAIAgent:
    """Agent protocol over a chat-completions endpoint; one instance serves many concurrent episodes."""

    def __init__(
        self,
        model: str,
        client: ChatClient | None = None,
        sampling: SamplingConfig | None = None,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.client = client or ChatClient(EndpointConfig.from_env())
        self.sampling = sampling or SamplingConfig()
        self.name = name or f"openai:{model}"

    @property
    def settings(self) -> dict[str, Any]:
        """What decides this agent's requests, for the run's record (never the API key)."""
        cfg = self.client.config
        return {
            "kind": "openai",
            "model": self.model,
            "base_url": cfg.base_url,
            **self.sampling.model_dump(),
            "timeout_s": cfg.timeout_s,
            "deadline_s": cfg.deadline_s,
            "resend_timed_out": cfg.resend_timed_out,
        }

    def start(self, info: EpisodeInfo) -> OpenAIEpisode:
        return OpenAIEpisode(self, info)

    def decoder(self):
        """Many episodes' requests in flight at once (as many as the runner keeps episodes in flight)."""
        from pipeline.rollout import Concurrent

        return Concurrent()

    def body(self, messages: list[dict[str, Any]], tools: list[dict], seed: int) -> dict[str, Any]:
        s = self.sampling
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
        for key in ("temperature", "top_p", "max_tokens"):
            if getattr(s, key) is not None:
                body[key] = getattr(s, key)
        if s.send_seed:
            body["seed"] = seed
        return body


class OpenAIEpisode:
    def __init__(self, agent: OpenAIAgent, info: EpisodeInfo) -> None:
        self.agent, self.info = agent, info
        self.turn = 0

    def act(self, messages: list[Message]) -> Message:
        a = self.agent
        body = a.body(
            to_openai_messages(messages, system=self.info.policy),
            self.info.tools,
            request_seed(a.sampling.seed, self.info.seed, self.turn),
        )
        prefix = f"call_{self.turn}_"
        self.turn += 1
        try:
            completion = a.client.complete(body)
        except ContextLengthError as exc:
            log.warning("prompt longer than the model's context; the agent stops: %s", exc)
            return Message(role="assistant", content=None, usage=Usage())
        message = message_from_openai(completion.message, id_prefix=prefix)
        message.usage = completion.usage
        message.latency_s = completion.latency_s
        return message
