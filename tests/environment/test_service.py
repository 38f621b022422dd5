"""An environment served over HTTP (`pipeline.environment.service`, `agentloop env serve`) and driven through the
client (`pipeline.protocol.client.ServedEnvironment`), against a real uvicorn server in a thread of the test process:
τ²-bench's gold actions reach the same end states and rewards as in process; episodes are isolated, expire, stay
bounded in number; refusals are typed 4xx naming the field or the episode, failures of the service
`EnvironmentUnavailableError`; an environment of one's own (module:attribute) is served the same way."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from pipeline.cli import app as cli
from pipeline.environment import Environment
from pipeline.environment.factory import EnvironmentReferenceError, environment_factory
from pipeline.environment.service import (
    EpisodeRegistry,
    ServiceFullError,
    create_app,
)
from pipeline.errors import InfrastructureError, InputError
from pipeline.protocol import (
    EnvironmentMetadata,
    EnvironmentProtocol,
    EnvironmentState,
    Reward,
    TableSchema,
    ToolResult,
)
from pipeline.protocol.client import (
    EnvironmentRequestError,
    EnvironmentUnavailableError,
    ServedEnvironment,
    served_worlds,
)
from pipeline.world import resolve_domain
from tests.server_process import free_port, serve_in_thread, wait_until_up

SMALL = "gen-3-4x10x20"
QUESTION, YES = "Shall I go ahead with that? (yes/no)", "Yes, please go ahead."


# ---- an environment of one's own, served by module:attribute ----------------------------------------------------
class Counter:
    """A toy environment not written in agentloop's world format: one table of counters, tools to read and bump
    them; `boom` fails as a bug would, `outage` as its infrastructure would, `slow` takes a while."""

    opened: list[Counter] = []

    def __init__(self, world: str) -> None:
        self.world, self.counts, self.log, self.closed = world, {"a": 0, "b": 0}, [], False
        self.started = False
        Counter.opened.append(self)

    def get_metadata(self) -> EnvironmentMetadata:
        schema = {"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}
        tool = {"type": "function", "function": {"name": "bump", "parameters": {"type": "object"}}}
        return EnvironmentMetadata(
            domain="counter",
            world=self.world if self.world != "liar" else "someone-else",
            world_digest="0" * 64,
            policy="Bump counters when asked.",
            tools=[tool],
            tool_kinds={"bump": "write"},
            tables={"counters": TableSchema(record=schema, key="name")},
        )

    def init(self, task=None, *, authenticated_user_id=None) -> EnvironmentState:
        self.counts, self.log, self.started = {"a": 0, "b": 0}, [], True
        return self.state()

    def run(self, call, side="assistant") -> ToolResult:
        name, arguments = call["name"], call.get("arguments") or {}
        if name == "boom":
            raise RuntimeError("a bug in the environment")
        if name == "outage":
            raise InfrastructureError("the counter database is down")
        if name == "slow":
            time.sleep(float(arguments.get("seconds", 1)))
        if name == "bump" and arguments.get("name") in self.counts:
            self.counts[arguments["name"]] += 1
            result = ToolResult(content=str(self.counts[arguments["name"]]))
        else:
            result = ToolResult(content="Error: no such counter", error=True, category="not_found")
        self.log.append({"side": side, "name": name, "arguments": arguments, "result": result})
        return result

    def state(self) -> EnvironmentState:
        changed = {k: {"name": k, "count": v} for k, v in self.counts.items() if v}
        return EnvironmentState(world_digest="0" * 64, changed={"counters": changed}, hash=repr(sorted(changed)))

    def query_data(self, table, predicate=None):
        if table != "counters":
            raise InputError(f"unknown table {table!r}; tables are counters")
        rows = {k: {"name": k, "count": v} for k, v in self.counts.items()}
        return {k: r for k, r in rows.items() if all(r.get(f) == v for f, v in (predicate or {}).items())}

    def reward(self) -> Reward:
        return Reward(reward=float(sum(self.counts.values()) > 0))

    def say(self, text, side="assistant") -> None:
        pass

    def calls(self):
        return list(self.log)

    def close(self) -> None:
        self.closed = True


def counters(world: str) -> Counter:
    """A factory function of the world's name."""
    return Counter(world)


NOT_AN_ENVIRONMENT = 42


@pytest.fixture(scope="module")
def counter_url():
    factory, served = environment_factory(f"{__name__}:Counter", ["one", "two"])
    with serve_in_thread(create_app(factory, served)) as url:
        yield url


@pytest.fixture(scope="module")
def retail():
    """A small generated retail world served, its URL and its app (for the registry)."""
    factory, served = environment_factory("retail", [SMALL])
    service = create_app(factory, served, max_episodes=50)
    with serve_in_thread(service) as url:
        yield url, service


# ---- τ²-bench gold through the service ---------------------------------------------------------------------
@pytest.mark.parametrize("domain", ["retail", "airline", "telecom"])
def test_tau2_gold_through_the_service_reaches_the_in_process_end_states(domain):
    """Every task's gold actions (each write asked and confirmed first), through ServedEnvironment and through the
    in-process Environment: the same state (records and hash) after each task, the same reward and verdict."""
    from tests.needs import need_tau2

    path = need_tau2(domain)
    world, tasks = resolve_domain(domain).require("tau2_importer").load(path)
    factory, served = environment_factory(domain, [str(path)])
    assert served == {world.name: str(path)}
    local = Environment(domain, world)
    with serve_in_thread(create_app(factory, served)) as url:
        remote = ServedEnvironment(url, world.name)
        assert remote.get_metadata() == local.get_metadata()
        for task in tasks:
            for env in (local, remote):
                start = env.init(task, authenticated_user_id=task.customer_user_id)
                assert isinstance(start, EnvironmentState)
                for action in task.gold_actions:
                    side = world.side_of(action.requestor)
                    if side == "assistant" and world.tools[action.name].kind == "write":
                        env.say(QUESTION)
                        env.say(YES, "user")
                    env.run({"name": action.name, "arguments": action.arguments}, side)
            assert remote.state() == local.state(), task.id
            assert remote.calls() == local.calls(), task.id
            assert remote.reward() == local.reward(), task.id
        remote.close()
    assert len(tasks) == {"retail": 114, "airline": 50, "telecom": 114}[domain]


# ---- episodes ---------------------------------------------------------------------------------------------------
def _a_write(env: ServedEnvironment, user: str) -> ToolResult:
    """Some write that succeeds in the small retail world: a user's address changed."""
    address = {"address1": "1 Test St", "address2": "", "city": "X", "country": "USA", "state": "CA", "zip": "00001"}
    return env.run({"name": "modify_user_address", "arguments": {"user_id": user, **address}})


def test_two_episodes_never_see_each_others_writes(retail):
    url, _ = retail
    one, two = ServedEnvironment(url, SMALL), ServedEnvironment(url, SMALL)
    user = next(iter(one.query_data("users")))  # the base world's, before init
    base = one.init(authenticated_user_id=user)
    assert two.init(authenticated_user_id=user) == base and one.episode != two.episode
    result = _a_write(one, user)
    assert not result.error, result.content
    assert one.state().hash != base.hash and one.state().changed["users"]
    assert two.state() == base and two.query_data("users") == ServedEnvironment(url, SMALL).query_data("users")
    assert [c.name for c in one.calls()] == ["modify_user_address"] and two.calls() == []
    one.init(authenticated_user_id=user)  # a fresh episode: the write is gone
    assert one.state() == base
    one.close(), two.close()


def test_episode_ids_are_unguessable_and_urls_name_them(retail):
    url, _ = retail
    reply = httpx.post(f"{url}/episodes", json={"world": SMALL}).json()
    assert len(reply["episode"]) >= 32 and reply["url"] == f"{url}/episodes/{reply['episode']}"
    assert reply["mcp_url"] == reply["url"] + "/mcp"
    assert httpx.delete(reply["url"]).status_code == 204
    assert httpx.delete(reply["url"]).status_code == 204  # closing twice is harmless


def test_an_unknown_episode_is_a_404_naming_it(retail):
    url, _ = retail
    for method, path, body in [
        ("GET", "state", None),
        ("GET", "reward", None),
        ("GET", "calls", None),
        ("POST", "run", {"call": {"name": "list_all_product_types"}}),
        ("POST", "query", {"table": "users"}),
        ("POST", "say", {"text": "hi"}),
    ]:
        reply = httpx.request(method, f"{url}/episodes/no-such-episode/{path}", json=body)
        assert reply.status_code == 404, (path, reply.text)
        assert "'no-such-episode'" in reply.json()["detail"]


def test_an_episode_the_service_lost_is_unavailable_to_its_client(retail):
    """A client whose episode expired (or whose service restarted) gets an infrastructure error, not a verdict."""
    url, service = retail
    env = ServedEnvironment(url, SMALL)
    env.init()
    service.state.registry.close(env.episode)
    with pytest.raises(EnvironmentUnavailableError, match="lost this client's episode"):
        env.state()
    assert env.episode is None
    env.close()


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/episodes", {"task": None}, "world"),
        ("/episodes", {"world": 3}, "world"),
        ("/episodes", {"world": SMALL, "authenticated_user_id": []}, "authenticated_user_id"),
        ("/episodes", {"world": SMALL, "tusk": {}}, "tusk"),
        ("/worlds/{world}/query", {"predicate": {}}, "table"),
        ("/worlds/{world}/query", {"table": "users", "predicate": [1]}, "predicate"),
        ("/episodes/{episode}/run", {"call": {"arguments": {}}}, "call.name"),
        ("/episodes/{episode}/run", {"call": {"name": "x", "arguments": [1]}}, "call.arguments"),
        ("/episodes/{episode}/run", {"call": {"name": "x"}, "side": "customer"}, "side"),
        ("/episodes/{episode}/say", {"side": "user"}, "text"),
    ],
)
def test_a_malformed_body_is_a_422_naming_the_field(retail, path, body, field):
    url, _ = retail
    episode = httpx.post(f"{url}/episodes", json={"world": SMALL}).json()["episode"]
    reply = httpx.post(url + path.format(world=SMALL, episode=episode), json=body)
    assert reply.status_code == 422 and reply.json()["detail"].startswith(f"field {field}:"), reply.text
    assert httpx.post(f"{url}/episodes/{episode}/run", content=b"{not json").status_code == 422
    httpx.delete(f"{url}/episodes/{episode}")


def test_what_the_environment_refuses_is_a_4xx_with_its_message(retail):
    url, _ = retail
    env = ServedEnvironment(url, SMALL)
    with pytest.raises(EnvironmentRequestError, match="unknown table 'nope'") as refused:
        env.query_data("nope")
    assert refused.value.status == 400 and isinstance(refused.value, InputError)
    with pytest.raises(EnvironmentRequestError, match="not served here; served: gen-3-4x10x20") as unknown:
        ServedEnvironment(url, "gen-99").init()
    assert unknown.value.status == 404
    with pytest.raises(EnvironmentRequestError, match="task: field"):
        env.init({"id": "t", "world": SMALL, "user_script": 3})
    with pytest.raises(EnvironmentRequestError, match="field world is 'elsewhere'"):
        env.init({"id": "t", "world": "elsewhere", "user_script": {"goal": "g"}, "provenance": {"source": "eval"}})
    env.init()
    with pytest.raises(EnvironmentRequestError, match="started without a task"):
        env.reward()
    with pytest.raises(EnvironmentRequestError, match="field call.name"):
        env.run({"arguments": {}})
    with pytest.raises(EnvironmentRequestError, match="no Python predicate"):
        env.query_data("users", lambda record: True)  # type: ignore[arg-type]
    refusal = env.run({"name": "get_user_details", "arguments": {"user_id": "nobody"}})
    assert refusal.error and refusal.category == "not_found"  # a tool's refusal is a result, not an error
    env.close()
    with pytest.raises(EnvironmentRequestError, match=r"run\(\) before init"):
        env.run({"name": "x"})


def test_the_service_failing_is_infrastructure(counter_url):
    """A bug (500), the environment's infrastructure down (503), a reply too slow, a refused connection: each an
    EnvironmentUnavailableError naming the URL, never a verdict on the agent."""
    env = ServedEnvironment(counter_url, "one", timeout=0.5)
    env.init()
    with pytest.raises(EnvironmentUnavailableError, match="HTTP 500"):
        env.run({"name": "boom"})
    with pytest.raises(EnvironmentUnavailableError, match="HTTP 503: the counter database is down"):
        env.run({"name": "outage"})
    with pytest.raises(EnvironmentUnavailableError, match=r"no answer within 0\.5 s"):
        env.run({"name": "slow", "arguments": {"seconds": 2}})
    env.close()
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EnvironmentUnavailableError, match=f"{dead}/worlds: ConnectError"):
        served_worlds(dead)
    gone = ServedEnvironment(dead, "one")
    gone.episode = "abandoned"
    gone.close()  # closing never raises for a dead service: the episode expires there
    assert gone.episode is None


def test_an_environment_of_ones_own_is_served(counter_url):
    assert served_worlds(counter_url) == ["one", "two"]
    env = ServedEnvironment(counter_url, "two")
    assert env.get_metadata().world == "two" and env.query_data("counters", {"count": 0}).keys() == {"a", "b"}
    env.init()
    assert env.run({"name": "bump", "arguments": {"name": "a"}}).content == "1"
    assert env.query_data("counters", {"count": 1}) == {"a": {"name": "a", "count": 1}}
    assert env.reward().reward == 1.0 and [c.name for c in env.calls()] == ["bump"]
    made = Counter.opened[-1]
    env.close()
    assert made.closed
    assert isinstance(env, EnvironmentProtocol)


def test_which_environment_a_reference_names():
    factory, served = environment_factory(f"{__name__}:counters", ["x"])
    assert served == {"x": "x"} and isinstance(factory("x"), Counter)
    with pytest.raises(EnvironmentReferenceError, match="is neither a Domain nor an environment"):
        environment_factory(f"{__name__}:NOT_AN_ENVIRONMENT", ["x"])
    with pytest.raises(EnvironmentReferenceError, match="class TableSchema is neither a Domain nor an environment"):
        environment_factory(f"{__name__}:TableSchema", ["x"])
    with pytest.raises(InputError, match="unknown domain 'nope'"):
        environment_factory("nope", ["gen-3"])
    with pytest.raises(EnvironmentReferenceError, match=f"are both world '{SMALL}'"):
        _same_world_twice()
    factory, _ = environment_factory(f"{__name__}:Counter", ["liar"])
    with pytest.raises(InputError, match="the environment made for it says its world is 'someone-else'"):
        create_app(factory, ["liar"])


def _same_world_twice():
    """Two references to one world: the same generated world named by a file and by its name."""
    import json
    import tempfile
    from pathlib import Path

    world = resolve_domain("retail").load(SMALL)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / SMALL
        folder.mkdir()
        (folder / "db.json").write_text(json.dumps(world.to_dict()), encoding="utf-8")
        environment_factory("retail", [SMALL, str(folder)])


# ---- the registry: expiry, bounds ----------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_idle_episodes_expire_and_are_closed():
    clock = Clock()
    registry = EpisodeRegistry(ttl_s=10, max_episodes=100, clock=clock)
    old, new = registry.add("w", Counter("w")), registry.add("w", Counter("w"))
    clock.now += 6
    with registry.use(old.id):
        pass  # used: its idle time starts again
    clock.now += 6
    assert registry.sweep() == 1 and new.env.closed and not old.env.closed  # type: ignore[attr-defined]
    assert new.id not in registry and old.id in registry
    clock.now += 11
    assert registry.sweep() == 1 and old.env.closed and len(registry) == 0  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="not open here"), registry.use(old.id):
        pass
    assert registry.expired == 2


def test_an_episode_in_a_call_is_never_closed_under_it():
    clock = Clock()
    registry = EpisodeRegistry(ttl_s=10, max_episodes=1, clock=clock)
    busy = registry.add("w", Counter("w"))
    with registry.use(busy.id):
        clock.now += 100
        assert registry.sweep() == 0 and not busy.env.closed  # type: ignore[attr-defined]
        with pytest.raises(ServiceFullError, match="all in a call"):
            registry.add("w", Counter("w"))
    fresh = registry.add("w", Counter("w"))  # now idle: the least recently used is closed to make room
    assert busy.env.closed and list(registry._episodes) == [fresh.id]  # type: ignore[attr-defined]


def test_expired_episodes_are_closed_by_a_running_service():
    Counter.opened.clear()
    factory, served = environment_factory(f"{__name__}:Counter", ["one"])
    with serve_in_thread(create_app(factory, served, ttl_s=0.3, sweep_every_s=0.1)) as url:
        env = ServedEnvironment(url, "one")
        env.init()
        episode = Counter.opened[-1]
        deadline = time.time() + 10
        while not episode.closed and time.time() < deadline:
            time.sleep(0.05)
        assert episode.closed  # closed by the service's timer, with no request
        with pytest.raises(EnvironmentUnavailableError, match="lost this client's episode"):
            env.state()


def test_memory_stays_bounded_over_thousands_of_episodes():
    """1,000 episodes opened, used and closed, then 1,000 abandoned: the registry never holds more than its bound,
    and every environment the service made was closed (none leaked)."""
    from fastapi.testclient import TestClient

    made: list[Counter] = []

    def factory(world: str) -> Counter:
        env = Counter(world)
        made.append(env)
        return env

    service = create_app(factory, ["one"], max_episodes=100, ttl_s=3600)
    registry = service.state.registry
    Counter.opened.clear()
    with TestClient(service) as http:
        for i in range(1000):
            episode = http.post("/episodes", json={"world": "one"}).json()["episode"]
            if i % 10 == 0:
                assert http.post(f"/episodes/{episode}/run", json={"call": {"name": "bump"}}).status_code == 200
            assert http.delete(f"/episodes/{episode}").status_code == 204
            assert len(registry) == 0
        for i in range(1000):
            http.post("/episodes", json={"world": "one"})
            assert len(registry) == min(i + 1, 100)
    bases = 1  # the world's own environment, for its metadata
    assert len(made) == 2000 + bases and registry.opened == 2000 and registry.evicted == 900
    assert sum(not env.closed for env in made) == 0  # the rest closed when the service stopped
    assert len(registry) == 0
    Counter.opened.clear()


def test_calls_into_one_episode_run_one_at_a_time(counter_url):
    env = ServedEnvironment(counter_url, "one")
    env.init()
    results: list[Any] = []

    def bump() -> None:
        for _ in range(20):
            results.append(env.run({"name": "bump", "arguments": {"name": "a"}}).content)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(int, results)) == list(range(1, 81))
    env.close()


# ---- the command -----------------------------------------------------------------------------------------------
def test_env_serve_starts_and_answers(tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "pipeline.cli", "env", "serve", "--domain", "retail", "--worlds", SMALL]
    with log.open("wb") as out:
        proc = subprocess.Popen([*cmd, "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(proc, f"{url}/worlds", 60, "agentloop env serve", log)
        assert served_worlds(url) == [SMALL]
        env = ServedEnvironment(url, SMALL)
        assert env.init().world_digest == env.get_metadata().world_digest
        env.close()
        assert f"serving retail on {url}" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_env_serve_refuses_in_one_line():
    runner = CliRunner()
    for args, said in [
        (["--domain", "nope"], "unknown domain 'nope'"),
        (["--domain", f"{__name__}:Counter"], "--worlds: name the worlds"),
        (["--domain", "retail", "--worlds", " , "], "--worlds: no world named"),
        (["--domain", "retail", "--worlds", "gen-x"], "gen-x"),
        (["--domain", "retail", "--worlds", SMALL, "--ttl", "nan"], "ttl"),
    ]:
        result = runner.invoke(cli, ["env", "serve", *args])
        assert result.exit_code == 2, (args, result.output)
        assert said in result.output and "Traceback" not in result.output, (args, result.output)


def test_each_episode_serves_its_agent_tools_over_mcp(retail):
    """The episode's `mcp_url`, with the project's MCP client (the official SDK's): the agent's tools only, a call
    changes that episode's state (seen through the HTTP functions) and no other's, a refusal is a tool error, and a
    closed episode's URL is refused."""
    from pipeline.environment import McpEnvironmentClient
    from pipeline.environment.mcp import McpRequestError

    url, _ = retail
    one, two = ServedEnvironment(url, SMALL), ServedEnvironment(url, SMALL)
    user = next(iter(one.query_data("users")))
    one.init(authenticated_user_id=user)
    base = two.init(authenticated_user_id=user)
    mcp = McpEnvironmentClient(one.mcp_url)
    try:
        names = [t["function"]["name"] for t in mcp.list_tools()]
        assert names == [t["function"]["name"] for t in one.get_metadata().tools]
        address = {"address1": "2 Mcp Rd", "address2": "", "city": "Y", "country": "USA", "state": "NY", "zip": "2"}
        result = mcp.call("modify_user_address", {"user_id": user, **address})
        assert not result.error, result.content
        assert one.query_data("users")[user]["address"]["address1"] == "2 Mcp Rd"
        assert [c.name for c in one.calls()] == ["modify_user_address"]
        assert two.state() == base and two.calls() == []
        refused = mcp.call("get_order_details", {"order_id": "#W0000000"})
        assert refused.error and refused.content.startswith("Error:")
    finally:
        mcp.close()
    closed = one.mcp_url
    one.close(), two.close()
    with pytest.raises(McpRequestError, match="unknown or closed episode"):
        McpEnvironmentClient(closed)


def test_a_served_environment_can_be_served_again_by_its_url(counter_url):
    """`--domain http://HOST:PORT` (the registry's served domain): its episodes are the other service's."""
    factory, served = environment_factory(counter_url, ["two"])
    assert served == {"two": "two"}
    with serve_in_thread(create_app(factory, served)) as url:
        env = ServedEnvironment(url, "two")
        env.init()
        assert env.run({"name": "bump", "arguments": {"name": "b"}}).content == "1"
        assert env.query_data("counters", {"count": 1}) == {"b": {"name": "b", "count": 1}}
        env.close()


def test_a_flawed_measure_through_the_service_gives_the_in_process_verdicts(tmp_path):
    """`measure --domain http://HOST:PORT` against `env serve` of the example library, and the same measure with the
    library in process: byte-identical verdicts (a flawed agent, so some trials fail)."""
    runner = CliRunner()
    factory, served = environment_factory("examples.library:Library", ["library-0"])
    tasks = tmp_path / "tasks.jsonl"
    local = ["--domain", "examples.library:Library", "--world", "library-0"]
    generated = runner.invoke(cli, ["tasks", "generate", *local, "--n", "6", "--out", str(tasks)])
    assert generated.exit_code == 0, generated.output
    with serve_in_thread(create_app(factory, served)) as url:
        for name, where in (("served", ["--domain", url, "--world", "library-0"]), ("local", local)):
            args = ["measure", *where, "--tasks", str(tasks), "--agent", "flawed:invention=0.5", "--trials", "2"]
            result = runner.invoke(cli, [*args, "--executor", "serial", "--out", str(tmp_path / name)])
            assert result.exit_code == 0, result.output
    verdicts = (tmp_path / "served" / "verdicts.jsonl").read_bytes()
    assert verdicts == (tmp_path / "local" / "verdicts.jsonl").read_bytes()
    assert b'"passed": false' in verdicts and b'"passed": true' in verdicts


def test_many_threads_never_close_an_episode_under_a_call():
    """Threads opening, calling and closing episodes at once, with a tiny bound and TTL, so episodes are evicted and
    expire all the time: no environment is closed while a call runs in it, none is called after it closed, and
    every one made is closed in the end."""
    import random

    violations: list[str] = []

    class Watched(Counter):
        def __init__(self, world: str) -> None:
            super().__init__(world)
            self.in_call = False

        def run(self, call, side="assistant"):
            if self.closed:
                violations.append("called after close")
            self.in_call = True
            time.sleep(0.0005)
            self.in_call = False
            return ToolResult(content="ok")

        def close(self) -> None:
            if self.in_call:
                violations.append("closed under a call")
            self.closed = True

    registry = EpisodeRegistry(ttl_s=0.005, max_episodes=4)
    made: list[Watched] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        mine: list[str] = []
        for _ in range(300):
            action = rng.random()
            try:
                if action < 0.3 or not mine:
                    env = Watched("w")
                    with lock:
                        made.append(env)
                    try:
                        mine.append(registry.add("w", env).id)
                    except ServiceFullError:
                        env.close()  # as the service does with an episode it found no room for
                elif action < 0.85:
                    with registry.use(rng.choice(mine)) as episode:
                        episode.env.run({"name": "x"})
                else:
                    registry.close(mine.pop(rng.randrange(len(mine))))
            except InputError:
                pass  # expired or evicted meanwhile

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    registry.close_all()
    assert violations == []
    assert len(registry) == 0 and all(env.closed for env in made)
    assert registry.expired + registry.evicted > 0
