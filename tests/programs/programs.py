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
