"""Turn decoders: how an agent's pending replies are produced. One at a time (`OneByOne`, or the agent's own
`act_batch`), or as concurrent requests to an endpoint (`Concurrent`); a backend may bring its own (the hf
backend's continuous batching). The step scheduler of `pipeline.trials.batch` drives them."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from pipeline.rollout.protocols import Agent, AgentEpisode, InfrastructureError, TurnDecoder
from pipeline.rollout.trajectory import Message


class OneByOne:
    """The fallback decoder: pending requests answered in turn, each by its episode's `act` (or all of them by
    one `act_batch` call where the agent has one)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.pending: list[tuple[Any, AgentEpisode, list[Message]]] = []

    def submit(self, key: Any, episode: AgentEpisode, messages: list[Message]) -> None:
        self.pending.append((key, episode, messages))

    def step(self) -> list[tuple[Any, Message | InfrastructureError]]:
        pending, self.pending = self.pending, []
        batch = getattr(self.agent, "act_batch", None)
        if batch is not None and len(pending) > 1:
            return list(zip([k for k, _, _ in pending], batch([(e, m) for _, e, m in pending]), strict=True))
        out: list[tuple[Any, Message | InfrastructureError]] = []
        for key, episode, messages in pending:
            try:
                out.append((key, episode.act(messages)))
            except InfrastructureError as exc:  # the episode's own loss; any other exception is a bug
                out.append((key, exc))
        return out


class Concurrent:
    """Requests in flight at once, each episode's `act` in a thread: for agents that wait on an endpoint (the
    openai backend), where the time is the server's, not ours. `step` returns as soon as one reply is in."""

    def __init__(self, max_in_flight: int = 64) -> None:
        self.pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="agent-request")
        self.futures: dict[Future, Any] = {}

    def submit(self, key: Any, episode: AgentEpisode, messages: list[Message]) -> None:
        self.futures[self.pool.submit(episode.act, messages)] = key

    def step(self) -> list[tuple[Any, Message | InfrastructureError]]:
        ready, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        out: list[tuple[Any, Message | InfrastructureError]] = []
        for future in ready:
            key = self.futures.pop(future)
            exc = future.exception()
            if exc is not None and not isinstance(exc, InfrastructureError):
                raise exc  # a bug, as in the serial path
            out.append((key, exc if exc is not None else future.result()))
        return out

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def decoder_for(agent: Agent) -> TurnDecoder:
    make = getattr(agent, "decoder", None)
    return make() if make is not None else OneByOne(agent)
