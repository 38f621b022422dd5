"""Scripted agent programs the tests name (`program:tests.programs.programs:NAME`): each fails in one way, or
retries its writes as an at-least-once client would."""

from __future__ import annotations

import threading

from pipeline.environment import McpEnvironmentClient
from pipeline.errors import InfrastructureError
from pipeline.programs import OracleProgram
from pipeline.protocol import ProgramEpisode

RELEASE = threading.Event()
"""Set to let a `Hanging` program go (tests set it at the end)."""
CLOSED: list[str] = []
"""Each program's class name, as its `close()` is called."""


class Base:
    def __init__(self) -> None:
        self.client: McpEnvironmentClient | None = None

    def start(self, episode: ProgramEpisode) -> None:
        self.episode = episode
        self.client = McpEnvironmentClient(episode.mcp_url)

    def respond(self, customer_text: str) -> str:
        return "How can I help?"

    def close(self) -> None:
        CLOSED.append(type(self).__name__)
        if self.client is not None:
            self.client.close()


class Crashing(Base):
    def respond(self, customer_text: str) -> str:
        assert self.client is not None
        self.client.call("find_user_id_by_email", {"email": "nobody@example.com"})
        raise ValueError("the program broke")


class CrashingAtStart(Base):
    def start(self, episode: ProgramEpisode) -> None:
        raise RuntimeError("cannot start")


class Empty(Base):
    def respond(self, customer_text: str) -> str:
        return "   "


class NotText(Base):
    def respond(self, customer_text: str) -> str:
        return None  # type: ignore[return-value]


class Hanging(Base):
    def respond(self, customer_text: str) -> str:
        RELEASE.wait(30)
        return "late"


class Looping(Base):
    """Calls a read far past the episode's tool-call budget, then replies."""

    def respond(self, customer_text: str) -> str:
        assert self.client is not None
        self.results = [self.client.call("list_all_product_types", {}) for _ in range(8)]
        return "Here you are."


class LostEnvironment(Base):
    """Its MCP client finds the server unreachable: infrastructure, not the agent's failure."""

    def respond(self, customer_text: str) -> str:
        try:
            McpEnvironmentClient("http://127.0.0.1:9/episodes/x/mcp", timeout=2)
        except InfrastructureError as exc:
            raise RuntimeError("the framework wrapped it") from exc
        return "unreachable"


class RetryingOracle(OracleProgram):
    """The oracle over a client that delivers every write twice (a retry after a lost answer)."""

    WRITES = ("cancel_", "modify_", "exchange_", "return_")

    def start(self, episode: ProgramEpisode) -> None:
        super().start(episode)
        client = self.client
        assert client is not None
        call = client.call

        def twice(name, arguments=None):
            result = call(name, arguments)
            if name.startswith(self.WRITES):
                call(name, arguments)
            return result

        client.call = twice  # type: ignore[method-assign]


def not_a_program() -> object:
    return object()


NOT_CALLABLE = 3


# ---- τ²-bench gold conversations, played by a scripted agent and a scripted customer --------------------------------
class GoldAgent:
    """Says the agent's side of a task's gold conversation (`pipeline.tau2.gold`), a message per turn."""

    name = "gold"

    def __init__(self, world) -> None:
        self.world = world

    def start(self, info):
        from pipeline.tau2.gold import gold_conversation

        said = [m for m in gold_conversation(self.world, info.task).messages if m.role == "assistant"]
        return _Lines(said)


class _Lines:
    def __init__(self, lines) -> None:
        self.lines = iter(lines)

    def act(self, messages):
        from pipeline.rollout import Message

        line = next(self.lines, None)
        return line.model_copy(deep=True) if line is not None else Message(role="assistant", content="Goodbye.")


class GoldUser:
    """Says the customer's side of a task's gold conversation; its last line ends the chat."""

    name = "gold-user"

    def __init__(self, world) -> None:
        self.world = world

    def start(self, info):
        from pipeline.tau2.gold import gold_conversation

        said = gold_conversation(self.world, info.task).messages
        return _Customer([m.content or "" for m in said if m.role == "user"])


class _Customer:
    def __init__(self, lines) -> None:
        self.lines = list(lines)

    def respond(self, messages):
        from pipeline.rollout import STOP_TOKEN, UserReply

        line = self.lines.pop(0) if self.lines else STOP_TOKEN
        return UserReply(content=line, stop=STOP_TOKEN in line)


GOLD_WORLD: list = []
"""The world `GoldProgram` plays in (the tests set it)."""


class GoldProgram(OracleProgram):
    """`GoldAgent` as an agent program over MCP."""

    def __init__(self) -> None:
        super().__init__(GoldAgent(GOLD_WORLD[0]))


class AsksModel(Base):
    """Asks its model (the episode's base URL) once per turn and says what it answered."""

    def respond(self, customer_text: str) -> str:
        import httpx

        assert self.episode.model_base_url is not None
        answer = httpx.post(
            f"{self.episode.model_base_url}/chat/completions",
            json={"model": self.episode.model, "messages": [{"role": "user", "content": customer_text}]},
            timeout=30,
        )
        if answer.status_code != 200:
            return "Sorry, I cannot think right now."
        return answer.json()["choices"][0]["message"]["content"]
