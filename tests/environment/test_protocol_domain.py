"""Any environment behind the six functions runs the loop: the adapter (`pipeline.world.ProtocolDomain`) makes a
domain of it from its metadata, mirrors each episode's state from `state()`, and grades as for any world.

The built-in worlds taken through the protocol reach the same end states as in process (τ²-bench gold); an
environment of one's own (examples/library.py, plain Python, no table format) gets tasks, an oracle, flaws and a
measure; its faults are infrastructure, never the agent's."""

from __future__ import annotations

import json

import pytest

from pipeline.dataset import start_session
from pipeline.grading.grader import expected_state
from pipeline.world import (
    CounterfactualError,
    ProtocolDomain,
    ProtocolError,
    execute,
    load_world,
    resolve_domain,
)
from tests.environment import protocol_fixtures

FIXTURES = "tests.environment.protocol_fixtures"
LIBRARY = "examples.library:Library"


def test_a_session_mirrors_the_environment_and_a_refusal_changes_nothing():
    world = load_world("library-3", LIBRARY)
    session = world.session()
    who = next(iter(world.table("members").values()))
    assert execute(session, "find_member_by_email", {"email": who.email}).ok
    assert session.authenticated_user_id == who.member_id
    free = next(k for k, b in world.table("books").items() if b.status == "available")
    event = execute(session, "borrow_book", {"member_id": who.member_id, "book_id": free})
    assert event.ok and event.touched == [("books", free)]
    assert session.changed()["books"][free]["holder"] == who.member_id
    assert session.episode.state()["changed"]["books"][free] == session.changed()["books"][free]
    before = session.state_hash()
    again = execute(session, "borrow_book", {"member_id": who.member_id, "book_id": free})
    assert not again.ok and again.error == f"book {free} is not available" and session.state_hash() == before
    other = world.session()  # another episode: its own environment, the base world
    assert other.changed()["books"] == {} and world.table("books")[free].status == "available"


def test_metadata_shapes_the_domain():
    domain = resolve_domain(LIBRARY)
    world = load_world("library-0", LIBRARY)
    assert domain.name == LIBRARY and world.domain is domain
    assert domain.tools.of_kind("write") == {"borrow_book", "return_book"}
    assert domain.tools.of_kind("identity") == {"find_member_by_email"}
    assert domain.owner("books", next(b for b in world.table("books").values() if b.holder)) is not None
    schema = domain.tools["borrow_book"].json_schema()["function"]
    assert schema["parameters"]["required"] == ["member_id", "book_id"]  # the environment's own schema
    with pytest.raises(CounterfactualError):
        world.altered({("books", "b0", "status"): "available"})
    with pytest.raises(ProtocolError, match=r"tool_kinds\.borrow_book"):
        load_world("library-0", f"{FIXTURES}:BadMetadataLibrary")


def _measure(tmp_path, spec: str, agent: str, tasks, retries: int = 0) -> tuple[dict, list[dict]]:
    from pipeline.measure import MeasureConfig, measure

    out = tmp_path / agent.replace(":", "_")
    config = MeasureConfig(world="library-0", domain=spec, tasks=str(tasks), agent=agent, trials=2, retries=retries)
    measure(config, out)
    verdicts = [json.loads(line)["verdict"] for line in (out / "verdicts.jsonl").read_text().splitlines()]
    return json.loads((out / "metrics.json").read_text()), verdicts


@pytest.fixture(scope="module")
def library_tasks(tmp_path_factory):
    from pipeline.dataset import write_tasks

    world = load_world("library-0", LIBRARY)
    tasks = world.domain.require("tasks")(world, 12, seed=0)
    assert len(tasks) >= 8
    path = tmp_path_factory.mktemp("library") / "tasks.jsonl"
    write_tasks(path, tasks)
    return path


def test_the_loop_measures_an_environment_of_ones_own(tmp_path, library_tasks):
    oracle, verdicts = _measure(tmp_path, LIBRARY, "oracle", library_tasks)
    assert oracle["pass_hat_k"]["1"] == 1.0 and all(v["environment_reward"] == 1.0 for v in verdicts)
    flawed, _ = _measure(tmp_path, LIBRARY, "flawed:invention=0.6,plan_adherence=0.6", library_tasks)
    assert flawed["pass_hat_k"]["1"] < 1.0


def _flaky_measure(tmp_path, tasks, retries: int) -> tuple[dict, list[dict]]:
    import pipeline.measure.run as run

    flaky = protocol_fixtures.FlakyLibrary
    validated = run.check_tasks

    def then_arm(*args, **kwargs):  # the tasks are checked with the environment up; the episodes then meet faults
        found = validated(*args, **kwargs)
        flaky.armed, flaky.failures, flaky.episodes = True, 0, 0
        return found

    run.check_tasks = then_arm
    try:
        return _measure(tmp_path / str(retries), f"{FIXTURES}:FlakyLibrary", "oracle", tasks, retries)
    finally:
        run.check_tasks, flaky.armed = validated, False


def test_an_environment_dying_mid_episode_is_infrastructure_never_the_agents(tmp_path, library_tasks):
    lost = {}
    for retries in (0, 3):
        metrics, verdicts = _flaky_measure(tmp_path, library_tasks, retries)
        lost[retries] = [v for v in verdicts if v["infra_error"]]
        assert protocol_fixtures.FlakyLibrary.failures > 0 and metrics["infra_errors"] == len(lost[retries])
        assert all(v["passed"] for v in verdicts if not v["infra_error"])  # never an agent failure
        assert all("database went away" in v["diagnostics"][0] for v in lost[retries])
    assert lost[0] and len(lost[3]) < len(lost[0])  # retried with a fresh episode, the trials finish


def test_a_task_starts_in_its_environment():
    world = load_world("library-0", LIBRARY)
    task = world.domain.require("tasks")(world, 1, seed=1)[0]
    session = start_session(world, task)
    assert session.episode is not None and session.changed()["books"] == {}


@pytest.mark.parametrize("name", ["retail", "airline", "telecom"])
def test_every_tau2_gold_through_the_protocol_reaches_the_in_process_end_state(name):
    from tests.needs import need_tau2

    path = str(need_tau2(name))
    _, tasks = resolve_domain(name).require("tau2_importer").load(path)
    spec = f"{FIXTURES}:Memory{name.title()}"
    native, served = load_world(path, name), load_world(path, spec)
    assert isinstance(served.domain, ProtocolDomain) and served.fingerprint == native.fingerprint
    assert len(tasks) in (114, 50)
    assert [expected_state(served, t).hash for t in tasks] == [expected_state(native, t).hash for t in tasks]


class _NoQuery:
    def __init__(self, world):
        pass

    def get_metadata(self):
        return {}

    def init(self, task=None, *, authenticated_user_id=None):
        return {}


class _InitRaises(protocol_fixtures.Library):
    def init(self, task=None, *, authenticated_user_id=None):
        raise RuntimeError("database connection lost")


class _OtherWorld(protocol_fixtures.Library):
    def get_metadata(self):
        return {**super().get_metadata(), "world": "library-1"}


def make_library(world):
    return protocol_fixtures.Library(world)


def test_a_careless_environment_is_one_line_never_the_agents_failure(monkeypatch):
    import sys

    from pipeline.world.protocol_domain import EnvironmentFaultError
    from pipeline.world.registry import UnknownDomainError

    here = sys.modules[__name__]
    assert isinstance(resolve_domain(f"{__name__}:make_library"), ProtocolDomain)  # a function of the world's name
    with pytest.raises(UnknownDomainError, match=r"_NoQuery is neither a Domain nor an environment .*lacks run"):
        resolve_domain(f"{__name__}:_NoQuery")
    with pytest.raises(UnknownDomainError, match=r"by its URL, http://127\.0\.0\.1:8765"):
        resolve_domain("127.0.0.1:8765")
    with pytest.raises(ProtocolError, match=r"asked for, but its get_metadata\(\) says world 'library-1'"):
        load_world("library-0", f"{__name__}:_OtherWorld")
    world = load_world("library-0", f"{__name__}:_InitRaises")
    with pytest.raises(EnvironmentFaultError, match="init raised RuntimeError: database connection lost"):
        execute(world.session(), "get_book", {"book_id": "b0"})
    assert here  # the module's own classes are what the specs name
