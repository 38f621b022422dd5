"""Environments behind the six functions, for the adapter's tests: the built-in worlds through the protocol, and
environments that misbehave in the ways an environment can."""

from __future__ import annotations

from examples.library import Library  # noqa: F401 - the tests name it through this module
from pipeline.environment import Environment
from pipeline.errors import InfrastructureError


class MemoryRetail(Environment):
    def __init__(self, world: str) -> None:
        super().__init__("retail", world)


class MemoryAirline(Environment):
    def __init__(self, world: str) -> None:
        super().__init__("airline", world)


class MemoryTelecom(Environment):
    def __init__(self, world: str) -> None:
        super().__init__("telecom", world)


class FlakyLibrary(Library):
    """Once armed, every seventh episode's second call finds the environment gone (a service or a database dying
    mid-episode)."""

    armed = False
    episodes = 0
    failures = 0

    def init(self, task=None, *, authenticated_user_id=None):
        type(self).episodes += 1
        self.doomed = self.armed and self.episodes % 7 == 0
        return super().init(task, authenticated_user_id=authenticated_user_id)

    def run(self, call, side="assistant"):
        if self.doomed and len(self.log) == 1:
            type(self).failures += 1
            raise InfrastructureError("the library's database went away")
        return super().run(call, side)


class BadMetadataLibrary(Library):
    def get_metadata(self) -> dict:
        meta = super().get_metadata()
        meta["tool_kinds"] = {"borrow_book": "lend"}
        return meta
