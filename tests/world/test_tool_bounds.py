"""A plug-in domain's tool calls are bounded: a call that never returns is abandoned within its time bound and
named, a result over its size bound is refused before anything records it, and a tool declared as not writing
that changes records is refused (after a transfer too). The built-in domains' tools run as before."""

from __future__ import annotations

import dataclasses
import re
import shutil
import textwrap
import threading
import time
from pathlib import Path

import click
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.rollout.protocols import EpisodeInfo, UserReply
from pipeline.rollout.trajectory import Message, ToolCall
from pipeline.trials.trial import run_trial
from pipeline.world import (
    ReadOnlyError,
    SessionUnusableError,
    ToolResultError,
    ToolTimeoutError,
    bounds,
    execute,
    load_world,
)

GYM = """
    import threading

    from pydantic import BaseModel

    from pipeline.world.domain import Domain
    from pipeline.world.tables import Record, World
    from pipeline.world.tools import ToolRegistry

    RELEASE = threading.Event()

    class Member(Record):
        member_id: str
        visits: int = 0

    TOOLS = ToolRegistry()

    @TOOLS.register("read")
    def find_member(session, member_id: str) -> str:
        \"\"\"Look a member up.\"\"\"
        return session.get("members", member_id).model_dump_json()

    @TOOLS.register("read")
    def hang(session) -> str:
        \"\"\"Never returns (until the test lets it go).\"\"\"
        RELEASE.wait(60)
        session.edit("members", "m1").visits += 100
        return "late"

    @TOOLS.register("read")
    def huge(session) -> str:
        \"\"\"A result far over any bound.\"\"\"
        return "x" * 5_000_000

    @TOOLS.register("read")
    def as_dict(session) -> str:
        \"\"\"Not a string.\"\"\"
        return {"a": 1}

    @TOOLS.register("read")
    def sneaky_read(session, member_id: str) -> str:
        \"\"\"Declared a read, yet counts a visit.\"\"\"
        session.edit("members", member_id).visits += 1
        return "ok"

    @TOOLS.register("write")
    def check_in(session, member_id: str) -> str:
        \"\"\"Count a visit.\"\"\"
        session.edit("members", member_id).visits += 1
        return "checked in"

    @TOOLS.register("read")
    def which_thread(session) -> str:
        \"\"\"The thread the call runs on.\"\"\"
        return str(threading.get_ident())

    @TOOLS.register("read")
    def exits(session) -> str:
        \"\"\"Ends the process, or would inline.\"\"\"
        raise SystemExit(0)

    @TOOLS.register("transfer")
    def transfer_to_human(session) -> str:
        \"\"\"Hand over.\"\"\"
        return "transferred"

    class Gym(Domain):
        name = "gym"
        tables = {"members": Member}
        tools = TOOLS

        def load(self, ref):
            return World({"members": {"m1": Member(member_id="m1")}}, "", ref, self) if ref == "gym" else None

        def policy(self):
            return ""

        def owner(self, table, record):
            return None

    GYM = Gym()
"""


@pytest.fixture
def gym(tmp_path, monkeypatch, request):
    """A fresh plug-in module per test (so an abandoned call of one test is not another's), and its world."""
    name = f"gym_bounds_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(GYM))
    monkeypatch.syspath_prepend(str(tmp_path))
    world = load_world("gym", f"{name}:GYM")
    module = __import__(name)
    yield world
    module.RELEASE.set()


@pytest.fixture
def short(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_TOOL_TIMEOUT_S", "1")


def test_a_tool_that_never_returns_is_abandoned_within_its_bound(gym, short):
    session = gym.session()
    started = time.monotonic()
    with pytest.raises(ToolTimeoutError, match=r"tool 'hang' of domain '.*:GYM' did not return within 1 s"):
        execute(session, "hang", {})
    assert time.monotonic() - started < 5
    with pytest.raises(SessionUnusableError, match="hang"):  # the abandoned call may still write to it
        execute(session, "find_member", {"member_id": "m1"})
    started = time.monotonic()
    with pytest.raises(ToolTimeoutError, match="an earlier call is still running"):  # no second stray thread
        execute(gym.session(), "hang", {})
    assert time.monotonic() - started < 0.5
    assert execute(gym.session(), "find_member", {"member_id": "m1"}).ok  # other tools go on


def test_the_abandoned_call_cannot_write_to_its_session(gym, short):
    session = gym.session()
    with pytest.raises(ToolTimeoutError):
        execute(session, "hang", {})
    module = __import__(type(gym.domain).__module__)
    module.RELEASE.set()
    stray = next(job for (domain, tool), job in bounds._abandoned.items() if domain.startswith(module.__name__))
    assert stray.done.wait(5) and isinstance(stray.error, SessionUnusableError)
    assert execute(gym.session(), "find_member", {"member_id": "m1"}).ok
    assert session.changed() == {"members": {}} and gym.table("members")["m1"].visits == 0


def test_a_callers_calls_share_one_worker_thread(gym):
    session = gym.session()
    first, second = (execute(session, "which_thread", {}).result for _ in range(2))
    assert first == second != str(threading.get_ident())


def test_a_tool_that_exits_is_a_tool_error_not_the_end_of_the_process(gym):
    event = execute(gym.session(), "exits", {})
    assert not event.ok and event.error_category == "internal" and "SystemExit" in (event.error or "")


@pytest.mark.parametrize(
    ("tool", "message"),
    [("huge", r"returned 5,000,000 characters, over the bound of 1,000,000"), ("as_dict", r"returned a dict")],
)
def test_a_result_over_its_bound_is_refused_and_not_kept(gym, tool, message):
    session = gym.session()
    with pytest.raises(ToolResultError, match=rf"tool '{tool}' of domain '.*:GYM' {message}"):
        execute(session, tool, {})
    assert session.log == []


def test_the_size_bound_is_configurable(gym, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_TOOL_RESULT_CHARS", "10")
    with pytest.raises(ToolResultError, match="over the bound of 10 "):
        execute(gym.session(), "find_member", {"member_id": "m1"})
    monkeypatch.setenv("AGENTLOOP_TOOL_RESULT_CHARS", "-3")
    with pytest.raises(Exception, match=r"AGENTLOOP_TOOL_RESULT_CHARS='-3': expected a positive"):
        execute(gym.session(), "find_member", {"member_id": "m1"})


def test_a_read_that_changes_records_is_refused_naming_it(gym):
    session = gym.session()
    named = r"tool 'sneaky_read' of domain 'gym_bounds_\w+:GYM' is declared 'read' but changed"  # by its spec
    with pytest.raises(ReadOnlyError, match=named):
        execute(session, "sneaky_read", {"member_id": "m1"})
    assert session.changed() == {"members": {}}
    assert execute(session, "check_in", {"member_id": "m1"}).ok  # a write may


def test_a_read_that_changes_records_does_not_pass_the_lock_after_a_transfer(gym):
    session = gym.session()
    assert execute(session, "transfer_to_human", {}).ok
    assert not execute(session, "check_in", {"member_id": "m1"}).ok
    with pytest.raises(ReadOnlyError):
        execute(session, "sneaky_read", {"member_id": "m1"})
    assert session.changed() == {"members": {}}


class _CallsOnce:
    """An agent that calls one tool, then says goodbye."""

    name = "calls-once"

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def start(self, info: EpisodeInfo):
        steps = iter(
            [
                Message(role="assistant", tool_calls=[ToolCall(id="c0", name=self.tool, arguments={})]),
                Message(role="assistant", content="Done."),
            ]
        )
        return type("Episode", (), {"act": lambda self, messages: next(steps)})()


class _Asks:
    name = "asks"

    def start(self, info: EpisodeInfo):
        replies = iter([UserReply("Hello."), UserReply("Bye.", stop=True)])
        return type("Episode", (), {"respond": lambda self, messages: next(replies)})()


@pytest.mark.parametrize("tool", ["hang", "huge"])
def test_a_trial_that_meets_a_bound_is_infrastructure_retried_then_left_out(gym, short, tool):
    task = Task(id="t1", world="gym", user_script=UserScript(goal="visit"), provenance=Provenance(source="eval"))
    started = time.monotonic()
    result = run_trial(gym, task, _CallsOnce(tool), _Asks(), trial=0, retries=2)
    assert time.monotonic() - started < 5  # one abandoned call; the retries fail at once
    assert result.verdict.infra_error and result.attempts == 3
    assert result.trajectory.termination == "infra_error" and tool in (result.trajectory.error or "")
    assert "xxxxxxxxxx" not in result.trajectory.model_dump_json()  # nothing of the result is kept


def test_built_in_tools_run_inline_whatever_the_bound(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_TOOL_TIMEOUT_S", "0.000001")
    monkeypatch.setenv("AGENTLOOP_TOOL_RESULT_CHARS", "1")
    world = load_world("gen-1", "retail")
    callers: list[str] = []
    from pipeline.domains.retail.tools import TOOLS

    original = TOOLS.tools["list_all_product_types"].func

    def spy(session, **kwargs):
        callers.append(threading.current_thread().name)
        return original(session, **kwargs)

    spec = TOOLS.tools["list_all_product_types"]
    monkeypatch.setitem(TOOLS.tools, spec.name, dataclasses.replace(spec, func=spy))
    assert execute(world.session(), "list_all_product_types", {}).ok
    assert callers == [threading.current_thread().name]


@pytest.mark.parametrize(
    "command", [["world", "explore", "--out", "model.json"], ["tasks", "generate", "--n", "2", "--out", "t.jsonl"]]
)
def test_the_commands_stop_in_one_line_naming_the_tool(command, tmp_path, monkeypatch):
    """On a copy of the library domain under a name of its own (what a process caches per domain is not reused)."""
    package = f"library_bounded_{command[0]}"
    shutil.copytree(Path(__file__).parents[1] / "domains" / "library", tmp_path / package)
    source = tmp_path / package / "domain.py"
    source.write_text(source.read_text(encoding="utf-8").replace('name = "library"', f'name = "{package}"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTLOOP_TOOL_TIMEOUT_S", "0.000001")  # every call of the plug-in is past it
    spec = f"{package}.domain:LIBRARY"
    result = CliRunner().invoke(app, [*command, "--world", "library", "--domain", spec])
    output = click.unstyle(result.output)
    assert result.exit_code == 2 and "Traceback" not in output, output
    assert re.search(rf"tool '\w+' of domain '{spec}' did not return within", output), output
