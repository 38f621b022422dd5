"""The example environment whose tools are SQL against a real PostgreSQL (examples/postgres_env), behind the six
functions: its metadata, a write changing state() and a refusal changing nothing, query_data, set-up actions, its
own reward, episodes in flight never seeing each other's writes, and nothing left behind by a closed episode, a
killed client or a hung one. The server is the session's own (`postgres_url`: scripts/postgres.sh)."""

from __future__ import annotations

import importlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examples.postgres_env import (
    APPLICATION,
    DatabaseUnavailable,
    PostgresEnvironment,
    PostgresEnvUsageError,
    PostgresTaskSetupError,
    close_idle_connections,
    janitor,
)
from examples.postgres_env.world import TABLES, rows
from pipeline.protocol import EnvironmentMetadata, EnvironmentProtocol, EnvironmentState, ToolResult
from tests.needs import need_postgres

ROOT = Path(__file__).resolve().parents[2]
BASE = rows(0)


def _customer(customer_id: str) -> dict:
    return next(c for c in BASE["customers"] if c["customer_id"] == customer_id)


def _subs(status: str | None = None) -> list[dict]:
    return [s for s in BASE["subscriptions"] if status is None or s["status"] == status]


def _admin(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True, application_name="agentloop-tests")


def _settled(url: str, wanted: dict[str, int], within_s: float = 10.0) -> None:
    """Wait until the database holds `wanted` leftovers (a backend the server is ending takes a moment to go)."""
    deadline = time.monotonic() + within_s
    while _leftovers(url) != wanted and time.monotonic() < deadline:
        time.sleep(0.1)


def _leftovers(url: str) -> dict[str, int]:
    """What episodes may leave in the database: temporary tables, schemas beyond the worlds', our backends. This
    process's idle pooled connections (each with its empty copies of the tables) are closed first."""
    close_idle_connections()
    with _admin(url) as conn:
        temp = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname LIKE 'pg_temp%%' AND c.relkind = 'r'"
        ).fetchone()[0]
        schemas = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname NOT LIKE 'pg_%%' AND nspname NOT LIKE 'world_pg_%%'"
            " AND nspname NOT IN ('public', 'information_schema')"
        ).fetchone()[0]
        in_transaction = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state LIKE 'idle in transaction%%'",
            (APPLICATION,),
        ).fetchone()[0]
        connections = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (APPLICATION,)
        ).fetchone()[0]
    return {"temp_tables": temp, "schemas": schemas, "in_transaction": in_transaction, "connections": connections}


def _wait_gone(url: str, backend_pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _admin(url) as conn:
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend_pid,)).fetchone() is None:
                return True
        time.sleep(0.1)
    return False


@pytest.fixture()
def env(postgres_url):
    environment = PostgresEnvironment("pg-0", url=postgres_url)
    yield environment
    environment.close()


# ---- metadata: no database needed ---------------------------------------------------------------------------------
def test_metadata_shape():
    env = PostgresEnvironment("pg-0", url="postgresql://nobody@127.0.0.1:1/none")  # metadata needs no database
    assert isinstance(env, EnvironmentProtocol)
    meta = env.get_metadata()
    assert isinstance(meta, EnvironmentMetadata)
    assert meta.domain == "examples.postgres_env:PostgresEnvironment" and meta.world == "pg-0"
    assert EnvironmentMetadata.model_validate_json(meta.model_dump_json()) == meta  # JSON round trip
    assert [t["function"]["name"] for t in meta.tools] == list(meta.tool_kinds)
    assert sorted(set(meta.tool_kinds.values())) == ["identity", "read", "transfer", "write"]
    assert [n for n, k in meta.tool_kinds.items() if k == "write"] == [
        "change_plan",
        "pause_subscription",
        "cancel_subscription",
    ]
    assert list(meta.tables) == ["customers", "plans", "subscriptions"]
    assert (meta.tables["customers"].key, meta.tables["customers"].owner) == ("customer_id", "customer_id")
    assert (meta.tables["subscriptions"].key, meta.tables["subscriptions"].owner) == ("subscription_id", "customer_id")
    assert (meta.tables["plans"].key, meta.tables["plans"].owner) == ("plan_id", None)
    for name, table in meta.tables.items():
        assert set(table.record["properties"]) == set(next(t for t in TABLES if t.name == name).column_names)
    assert meta.identity_fields == ["email"] and meta.user_tools == [] and meta.user_tables == {}
    assert "find_customer_by_email" in meta.policy
    assert PostgresEnvironment("pg-0").get_metadata().world_digest == meta.world_digest
    assert PostgresEnvironment("pg-1").get_metadata().world_digest != meta.world_digest


def test_the_world_is_a_function_of_its_seed():
    assert rows(0) == rows(0) and rows(0) != rows(1)
    for seed in range(20):
        counts = {table: len(records) for table, records in rows(seed).items()}
        assert 15 <= sum(counts.values()) <= 40, counts
        emails = [c["email"] for c in rows(seed)["customers"]]
        assert len(set(emails)) == len(emails)


def test_the_domain_reference_names_a_factory():
    """`--domain examples.postgres_env:PostgresEnvironment`: the factory protocol, world name → environment."""
    module, _, attribute = "examples.postgres_env:PostgresEnvironment".partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    assert factory("pg-3").get_metadata().world == "pg-3"


@pytest.mark.parametrize("world", ["pg", "pg-", "pg-x", "gen-1", "pg-1234567", ""])
def test_a_bad_world_name_is_one_line(world):
    with pytest.raises(PostgresEnvUsageError, match="expected 'pg-' and a seed") as info:
        PostgresEnvironment(world)
    assert "\n" not in str(info.value)


def test_the_database_url_and_the_ttl_come_from_the_environment(monkeypatch):
    from examples.postgres_env import database_url
    from examples.postgres_env.environment import episode_ttl_s

    monkeypatch.delenv("AGENTLOOP_PG_URL", raising=False)
    monkeypatch.delenv("AGENTLOOP_PG_PORT", raising=False)
    assert database_url() == "postgresql://agentloop@127.0.0.1:55432/agentloop"  # scripts/postgres.sh's default
    monkeypatch.setenv("AGENTLOOP_PG_PORT", "6000")
    assert database_url() == "postgresql://agentloop@127.0.0.1:6000/agentloop"
    monkeypatch.setenv("AGENTLOOP_PG_URL", "postgresql://u@db:5432/x")
    assert database_url() == PostgresEnvironment("pg-0").url == "postgresql://u@db:5432/x"
    monkeypatch.setenv("AGENTLOOP_PG_EPISODE_TTL", "0")
    with pytest.raises(PostgresEnvUsageError, match="AGENTLOOP_PG_EPISODE_TTL='0'"):
        episode_ttl_s()


def test_an_unreachable_database_is_infrastructure():
    env = PostgresEnvironment("pg-0", url="postgresql://agentloop@127.0.0.1:1/agentloop")
    with pytest.raises(DatabaseUnavailable, match="cannot connect") as info:
        env.init()
    assert "\n" not in str(info.value)


# ---- the six functions against the database -----------------------------------------------------------------------
def test_a_write_changes_state_and_a_refusal_changes_nothing(env):
    active = next(s for s in _subs("active") if s["pauses_used"] < 2)
    owner = _customer(active["customer_id"])
    start = env.init()
    assert isinstance(start, EnvironmentState) and start.changed == {} and start.authenticated_user_id is None

    refused = env.run({"name": "pause_subscription", "arguments": {"subscription_id": active["subscription_id"]}})
    assert (refused.error, refused.category) == (True, "unauthorized")
    assert env.state() == start

    found = env.run({"name": "find_customer_by_email", "arguments": {"email": owner["email"].upper()}})
    assert not found.error and env.state().authenticated_user_id == owner["customer_id"]
    assert env.state().changed == {} and env.state().hash == start.hash  # who is authenticated is not a record

    paused = env.run({"name": "pause_subscription", "arguments": {"subscription_id": active["subscription_id"]}})
    assert isinstance(paused, ToolResult) and not paused.error
    after = env.state()
    record = after.changed["subscriptions"][active["subscription_id"]]
    assert record == {**active, "status": "paused", "pauses_used": active["pauses_used"] + 1}
    assert after.hash != start.hash and list(after.changed) == ["subscriptions"]

    again = env.run({"name": "pause_subscription", "arguments": {"subscription_id": active["subscription_id"]}})
    assert (again.error, again.category) == (True, "precondition") and again.content.startswith("Error: ")
    bad = env.run({"name": "change_plan", "arguments": {"subscription_id": active["subscription_id"]}})
    assert (bad.error, bad.category) == (True, "invalid_arguments") and "plan_id" in bad.content
    assert env.state() == after

    ledger = env.calls()
    assert [(c.name, c.result.error) for c in ledger] == [
        ("pause_subscription", True),
        ("find_customer_by_email", False),
        ("pause_subscription", False),
        ("pause_subscription", True),
        ("change_plan", True),
    ]
    env.init()  # a fresh episode: the base again, an empty ledger
    assert env.state() == start and env.calls() == []


def test_every_write_refuses_what_the_policy_forbids(env):
    """Each write's preconditions, and the transfer that ends all writes; none of the refusals changes anything."""
    data = BASE
    cancelled = _subs("cancelled")[0]
    env.init(authenticated_user_id=cancelled["customer_id"])
    for call in (
        {"name": "pause_subscription", "arguments": {"subscription_id": cancelled["subscription_id"]}},
        {"name": "cancel_subscription", "arguments": {"subscription_id": cancelled["subscription_id"], "reason": "x"}},
        {"name": "change_plan", "arguments": {"subscription_id": cancelled["subscription_id"], "plan_id": "basic"}},
    ):
        result = env.run(call)
        assert (result.error, result.category) == (True, "precondition"), call
    other = next(s for s in data["subscriptions"] if s["customer_id"] != cancelled["customer_id"])
    assert env.run(
        {"name": "get_subscription", "arguments": {"subscription_id": other["subscription_id"]}}
    ).category == ("unauthorized")
    assert env.run({"name": "get_subscription", "arguments": {"subscription_id": "S9999"}}).category == "not_found"
    active = next(s for s in _subs("active") if s["customer_id"] == cancelled["customer_id"])
    env.run({"name": "transfer_to_human_agents", "arguments": {"summary": "wants a refund"}})
    after = env.run(
        {"name": "cancel_subscription", "arguments": {"subscription_id": active["subscription_id"], "reason": "x"}}
    )
    assert (after.error, after.category) == (True, "transferred")
    state = env.state()
    assert state.changed == {} and state.transferred
    assert (
        env.run({"name": "get_subscription", "arguments": {"subscription_id": active["subscription_id"]}}).error
        is False
    )


def test_change_plan_checks_the_catalogue_devices_and_balance(env):
    subs = BASE["subscriptions"]
    legacy_target = next(s for s in subs if s["status"] == "active")
    env.init(authenticated_user_id=legacy_target["customer_id"])
    assert (
        "not on sale"
        in env.run(
            {
                "name": "change_plan",
                "arguments": {"subscription_id": legacy_target["subscription_id"], "plan_id": "legacy"},
            }
        ).content
    )
    crowded = next((s for s in subs if s["status"] == "active" and s["devices"] > 1), None)
    if crowded is not None:
        env.init(authenticated_user_id=crowded["customer_id"])
        result = env.run(
            {"name": "change_plan", "arguments": {"subscription_id": crowded["subscription_id"], "plan_id": "basic"}}
        )
        assert result.error and ("devices" in result.content or "already" in result.content)
    # a balance set up by the task blocks a plan change; the same change without it goes through
    active = next(s for s in subs if s["status"] == "active" and s["devices"] <= 2 and s["plan_id"] != "standard")
    task = {
        "id": "t-balance",
        "world": "pg-0",
        "initial_state": {
            "initialization_actions": [
                {
                    "env_type": "assistant",
                    "func_name": "set_balance",
                    "arguments": {"customer_id": active["customer_id"], "balance_cents": 500},
                }
            ]
        },
    }
    change = {"name": "change_plan", "arguments": {"subscription_id": active["subscription_id"], "plan_id": "standard"}}
    env.init(task, authenticated_user_id=active["customer_id"])
    assert "overdue balance" in env.run(change).content
    env.init({**task, "initial_state": None}, authenticated_user_id=active["customer_id"])
    env.run({"name": "set_balance", "arguments": {}})  # set-up functions are not the agent's tools
    assert env.calls()[-1].result.category == "invalid_arguments"
    if _customer(active["customer_id"])["balance_cents"] == 0:
        assert not env.run(change).error


def test_query_data(env, postgres_url):
    paused = {s["subscription_id"] for s in _subs("paused")}
    assert set(env.query_data("subscriptions", {"status": "paused"})) == paused  # before init: the base world
    assert list(env.query_data("customers")) == sorted(c["customer_id"] for c in BASE["customers"])
    assert set(env.query_data("subscriptions", {"cancel_reason": None})) == {
        s["subscription_id"] for s in BASE["subscriptions"] if s["cancel_reason"] is None
    }
    assert env.query_data("plans", {"on_sale": False, "max_devices": 3}) == {
        "legacy": next(p for p in BASE["plans"] if p["plan_id"] == "legacy")
    }
    assert env.query_data("subscriptions", {"devices": "two"}) == {}  # a value of another type matches nothing

    active = next(s for s in _subs("active") if s["pauses_used"] < 2)
    env.init(authenticated_user_id=active["customer_id"])
    env.run({"name": "pause_subscription", "arguments": {"subscription_id": active["subscription_id"]}})
    assert active["subscription_id"] in env.query_data("subscriptions", {"status": "paused"})
    assert active["subscription_id"] not in PostgresEnvironment("pg-0", url=postgres_url).query_data(
        "subscriptions", {"status": "paused"}
    )

    for table, predicate, message in (
        ("invoices", None, "unknown table 'invoices'; tables are customers, plans, subscriptions"),
        ("customers", {"mail": "x"}, "predicate field 'mail': table customers has fields customer_id, name, email"),
        ("customers", {"name.first": "x"}, "predicate field 'name.first'"),
        ("customers", {"name": ["x"]}, "expected a string, number, boolean or null, got list"),
        ("customers", ["name"], "predicate: expected an object"),
        ("customers", {"balance_cents": float("nan")}, "nan is no value a record can hold"),
        ("customers", {"name": "a\x00b"}, "is no value a record can hold"),
    ):
        with pytest.raises(PostgresEnvUsageError, match=message.replace("(", r"\(")) as info:
            env.query_data(table, predicate)
        assert "\n" not in str(info.value)
    assert not env.run({"name": "list_plans", "arguments": {}}).error  # a bad query leaves the episode usable
    nul = env.run({"name": "find_customer_by_email", "arguments": {"email": "a\x00b"}})
    assert (nul.error, nul.category) == (True, "invalid_arguments")  # refused by the database: refused all the same
    assert not env.run({"name": "list_plans", "arguments": {}}).error


def test_setup_actions_and_bad_tasks(env):
    active = _subs("active")[0]
    task = {
        "id": "t-setup",
        "world": "pg-0",
        "initial_state": {
            "initialization_actions": [
                {
                    "env_type": "assistant",
                    "func_name": "set_subscription_status",
                    "arguments": {"subscription_id": active["subscription_id"], "status": "paused"},
                }
            ]
        },
    }
    state = env.init(task)
    assert state.changed["subscriptions"][active["subscription_id"]]["status"] == "paused"
    assert env.calls() == []  # set-up is not an episode's call

    def broken(action: dict) -> dict:
        return {**task, "initial_state": {"initialization_actions": [action]}}

    for bad, message in (
        (broken({"env_type": "assistant", "func_name": "nope"}), r"initialization_actions\[0\] \(nope\) failed"),
        (broken({"env_type": "user", "func_name": "list_plans"}), r"env_type: 'user': only 'assistant' here"),
        (broken({"func_name": "pause_subscription", "arguments": {"subscription_id": "S9999"}}), "no subscription"),
        ({**task, "initial_state": {"message_history": [{"role": "user"}]}}, "message_history: not supported"),
    ):
        with pytest.raises(PostgresTaskSetupError, match=message) as info:
            env.init(bad)
        assert "\n" not in str(info.value)
        with pytest.raises(PostgresEnvUsageError, match="before init"):
            env.state()  # a failed set-up leaves no episode open
    with pytest.raises(PostgresEnvUsageError, match="field world is 'pg-1'"):
        env.init({**task, "world": "pg-1"})
    for call, message in (
        ({"name": "x", "args": {}}, "unknown field 'args'"),
        ({"arguments": {}}, "field name"),
        ({"name": "list_plans", "arguments": [1]}, "field arguments"),
    ):
        env.init()
        with pytest.raises(PostgresEnvUsageError, match=message):
            env.run(call)


def test_reward_compares_the_end_state_with_the_gold_actions(env):
    active = next(s for s in _subs("active") if s["pauses_used"] < 2)
    owner = _customer(active["customer_id"])
    pause = {"name": "pause_subscription", "arguments": {"subscription_id": active["subscription_id"]}}
    task = {"id": "t-pause", "world": "pg-0", "customer_user_id": owner["customer_id"], "gold_actions": [pause]}
    env.init(task)
    assert env.reward().reward == 0.0  # nothing done yet
    env.run({"name": "find_customer_by_email", "arguments": {"email": owner["email"]}})
    env.run(pause)
    env.run(pause)  # refused: already paused
    reward = env.reward()
    assert reward.reward == 1.0 and reward.info["matches_gold"] and reward.info["refused"] == {"precondition": 1}
    env.run({"name": "cancel_subscription", "arguments": {"subscription_id": active["subscription_id"], "reason": "x"}})
    assert env.reward().reward == 0.0
    env.init({**task, "gold_actions": []})
    assert env.reward().reward == 1.0  # no gold actions: nothing should change


def test_say_and_side(env):
    env.init()
    env.say("Shall I pause it?")
    env.say("Yes.", "user")
    result = env.run({"name": "list_plans", "arguments": {}}, "user")
    assert (result.error, result.category) == (True, "invalid_arguments")
    assert env.calls()[-1].side == "user"
    with pytest.raises(PostgresEnvUsageError, match="side 'system'"):
        env.say("x", "system")  # type: ignore[arg-type]


def test_a_lost_connection_is_infrastructure_and_the_next_episode_works(env, postgres_url):
    env.init()
    with _admin(postgres_url) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (env._conn.info.backend_pid,))
    with pytest.raises(DatabaseUnavailable, match="lost mid-episode") as info:
        for _ in range(50):  # the client notices on its next round trip
            env.run({"name": "list_plans", "arguments": {}})
    assert "\n" not in str(info.value)
    with pytest.raises(PostgresEnvUsageError, match="before init"):
        env.state()
    assert env.init().changed == {}


# ---- isolation and leaks ------------------------------------------------------------------------------------------
def test_close_leaks_nothing(postgres_url):
    empty = {"temp_tables": 0, "schemas": 0, "in_transaction": 0, "connections": 0}
    _settled(postgres_url, empty)  # what earlier tests' killed clients left is gone (the server ends them)
    envs = [PostgresEnvironment(f"pg-{i % 2}", url=postgres_url) for i in range(6)]
    for env in envs:
        env.init(authenticated_user_id="C001")
        env.run({"name": "pause_subscription", "arguments": {"subscription_id": "S0001"}})
    during = _leftovers(postgres_url)
    # six episodes open, each in its transaction on a connection of its own with its own copies of the tables
    assert during["in_transaction"] == during["connections"] == 6
    assert during["temp_tables"] == 6 * (len(TABLES) + 1)
    for env in envs:
        env.close()
        env.close()  # twice is harmless
    _settled(postgres_url, empty)  # an ended backend drops its temporary tables as it exits
    assert _leftovers(postgres_url) == empty
    assert PostgresEnvironment("pg-0", url=postgres_url).query_data("subscriptions", {"subscription_id": "S0001"}) == {
        "S0001": BASE["subscriptions"][0]
    }


SUBS = [s for s in BASE["subscriptions"] if s["customer_id"] == BASE["subscriptions"][0]["customer_id"]]
OPS = st.one_of(
    st.tuples(st.just("pause_subscription"), st.sampled_from([s["subscription_id"] for s in SUBS]), st.none()),
    st.tuples(st.just("cancel_subscription"), st.sampled_from([s["subscription_id"] for s in SUBS]), st.just("moving")),
    st.tuples(
        st.just("change_plan"),
        st.sampled_from([s["subscription_id"] for s in SUBS]),
        st.sampled_from(["basic", "standard", "premium", "family"]),
    ),
)


def _call(op: tuple) -> dict:
    name, sub, extra = op
    arguments = {"subscription_id": sub}
    if name == "cancel_subscription":
        arguments["reason"] = extra
    elif name == "change_plan":
        arguments["plan_id"] = extra
    return {"name": name, "arguments": arguments}


def _observe(env: PostgresEnvironment) -> tuple:
    return env.state().hash, env.query_data("subscriptions", {"customer_id": SUBS[0]["customer_id"]})


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plans=st.lists(st.lists(OPS, min_size=1, max_size=5), min_size=2, max_size=6),
    order=st.randoms(use_true_random=False),
)
def test_episodes_in_flight_never_see_each_others_writes(postgres_url, plans, order):
    """Episodes in flight on threads, all writing the same customer's rows, their steps interleaved in a drawn
    order: what each one sees after each step is what it sees running alone."""
    owner = SUBS[0]["customer_id"]
    schedule = [i for i, plan in enumerate(plans) for _ in plan]
    order.shuffle(schedule)
    seen: list[list[tuple]] = [[] for _ in plans]
    turn = {"at": 0}
    cv = threading.Condition()
    errors: list[BaseException] = []

    def episode(i: int) -> None:
        env = PostgresEnvironment("pg-0", url=postgres_url)
        try:
            env.init(authenticated_user_id=owner)
            for op in plans[i]:
                with cv:
                    if not cv.wait_for(lambda: turn["at"] >= len(schedule) or schedule[turn["at"]] == i, timeout=30):
                        raise TimeoutError(f"episode {i} waited 30 s for its turn")
                    if turn["at"] >= len(schedule):
                        return  # another episode failed
                env.run(_call(op))
                seen[i].append(_observe(env))
                with cv:
                    turn["at"] += 1
                    cv.notify_all()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
            with cv:
                turn["at"] = len(schedule)  # release the others
                cv.notify_all()
        finally:
            env.close()

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(plans))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    alone = PostgresEnvironment("pg-0", url=postgres_url)
    for i, plan in enumerate(plans):
        alone.init(authenticated_user_id=owner)
        expected = []
        for op in plan:
            alone.run(_call(op))
            expected.append(_observe(alone))
        assert seen[i] == expected, i
    alone.close()
    assert _leftovers(postgres_url)["in_transaction"] == 0


CHILD = textwrap.dedent(
    """
    import sys, time
    from examples.postgres_env import PostgresEnvironment
    env = PostgresEnvironment("pg-0", url=sys.argv[1])
    env.init(authenticated_user_id="C001")
    env.run({"name": "pause_subscription", "arguments": {"subscription_id": "S0001"}})
    print(env._conn.info.backend_pid, flush=True)
    time.sleep(600)
    """
)


def _child(url: str, **env: str) -> tuple[subprocess.Popen, int]:
    """A client in another process holding an open episode with a write in it; its server process id."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, url],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert line.strip().isdigit(), f"the child did not open an episode (exit {proc.poll()})"
    return proc, int(line)


def _base_unchanged(url: str) -> bool:
    return PostgresEnvironment("pg-0", url=url).query_data("subscriptions", {"subscription_id": "S0001"}) == {
        "S0001": BASE["subscriptions"][0]
    }


def test_a_client_killed_mid_episode_leaks_nothing(postgres_url):
    proc, backend = _child(postgres_url)
    assert _leftovers(postgres_url)["in_transaction"] >= 1
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert _wait_gone(postgres_url, backend), "the killed client's episode is still open"
    left = _leftovers(postgres_url)
    assert (left["temp_tables"], left["schemas"], left["in_transaction"]) == (0, 0, 0)
    assert _base_unchanged(postgres_url)


def test_a_hung_client_is_ended_by_the_janitor_or_the_ttl(postgres_url):
    """A client that stops answering but keeps its socket (SIGSTOP): `janitor()` ends its episode at once; with
    AGENTLOOP_PG_EPISODE_TTL=1 the server ends it by itself."""
    proc, backend = _child(postgres_url)
    try:
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        assert janitor(postgres_url, ttl_s=3600) == 0  # not idle that long
        assert janitor(postgres_url, ttl_s=0.1) >= 1
        assert _wait_gone(postgres_url, backend)
    finally:
        proc.kill()
        proc.wait(10)
    proc, backend = _child(postgres_url, AGENTLOOP_PG_EPISODE_TTL="1")
    try:
        proc.send_signal(signal.SIGSTOP)
        assert _wait_gone(postgres_url, backend, timeout=10), "the server did not end an episode idle past its TTL"
    finally:
        proc.kill()
        proc.wait(10)
    left = _leftovers(postgres_url)
    assert (left["temp_tables"], left["in_transaction"]) == (0, 0)
    assert _base_unchanged(postgres_url)


# ---- the script ---------------------------------------------------------------------------------------------------
def test_the_script_is_idempotent():
    """start twice, a second database, status, stop twice, start again: each says what it did."""
    need_postgres()
    script = ROOT / "scripts" / "postgres.sh"
    folder = tempfile.mkdtemp(prefix="agentloop-pg-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "AGENTLOOP_PG_DIR": folder, "AGENTLOOP_PG_PORT": str(port)}

    def sh(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=120)

    url = f"postgresql://agentloop@127.0.0.1:{port}/agentloop"
    mlflow = f"postgresql://agentloop@127.0.0.1:{port}/mlflow"
    try:
        assert sh("url").stdout.strip() == url
        assert sh("status").returncode == 3
        assert sh("start").stdout.strip() == url
        assert sh("start").stdout.strip() == url
        assert sh("start", "mlflow").stdout.strip() == mlflow
        with psycopg.connect(mlflow) as conn:
            assert conn.execute("SELECT current_database()").fetchone()[0] == "mlflow"
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
        status = sh("status")
        assert status.returncode == 0 and f"127.0.0.1:{port}" in status.stdout
        other = subprocess.run(
            ["bash", str(script), "start"],
            env={**env, "AGENTLOOP_PG_PORT": str(port + 1 if port < 65535 else port - 1)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert other.returncode == 1 and f"already runs on port {port}" in other.stderr
        assert sh("stop").stdout.strip() == "stopped"
        assert sh("stop").stdout.strip() == "not running"
        assert sh("status").returncode == 3
        assert sh("start").returncode == 0 and sh("status").returncode == 0
        # a server re-created from nothing at the same address: the environment builds the base world again
        episode = PostgresEnvironment("pg-2", url=url)
        assert episode.init().changed == {}
        episode.close()
        assert sh("stop").returncode == 0
        subprocess.run(["rm", "-rf", f"{folder}/data"], check=True)
        assert sh("start").stdout.strip() == url
        assert episode.init().changed == {} and len(episode.query_data("plans")) == len(rows(2)["plans"])
        episode.close()
        bad = sh("start", "no-such;db")
        assert bad.returncode == 1 and "letters, digits and _ only" in bad.stderr
        assert sh("restart").returncode == 2
    finally:
        sh("stop")
        subprocess.run(["rm", "-rf", folder], check=False)


def test_a_reused_connection_starts_from_its_worlds_base(postgres_url):
    """Episodes of two worlds, one after the other on one pooled connection: each starts from its own base."""
    close_idle_connections()
    first = PostgresEnvironment("pg-0", url=postgres_url)
    first.init(authenticated_user_id="C001")
    first.run({"name": "cancel_subscription", "arguments": {"subscription_id": "S0001", "reason": "x"}})
    backend = first._conn.info.backend_pid
    first.close()
    second = PostgresEnvironment("pg-1", url=postgres_url)
    second.init()
    assert second._conn.info.backend_pid == backend
    for table, records in rows(1).items():
        key = next(t.key for t in TABLES if t.name == table)
        assert second.query_data(table) == {r[key]: r for r in sorted(records, key=lambda r: r[key])}
    assert second.state().changed == {}
    second.close()


def test_a_pooled_connection_the_server_ended_is_replaced(postgres_url):
    """The server ended this process's idle pooled connections (a restart, an administrator): the next episode
    and the next query of the base world open new ones instead of failing."""
    for _ in range(2):
        env = PostgresEnvironment("pg-0", url=postgres_url)
        env.init()
        env.close()
        with _admin(postgres_url) as conn:
            ended = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
                (APPLICATION,),
            ).fetchone()[0]
        assert ended >= 1
        time.sleep(0.2)
    assert env.init().changed == {}
    env.close()
    with _admin(postgres_url) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (APPLICATION,)
        )
    time.sleep(0.2)
    assert set(env.query_data("plans")) == {p["plan_id"] for p in BASE["plans"]}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
NAMES = st.sampled_from(
    [
        "find_customer_by_email",
        "get_customer",
        "get_subscription",
        "list_plans",
        "change_plan",
        "pause_subscription",
        "cancel_subscription",
        "transfer_to_human_agents",
        "set_balance",
    ]
)
ARGUMENT_NAMES = st.sampled_from(["email", "customer_id", "subscription_id", "plan_id", "reason", "summary", "x"])


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    calls=st.lists(
        st.tuples(
            NAMES, st.dictionaries(ARGUMENT_NAMES, JSON | st.sampled_from(["S0001", "C001", "basic"]), max_size=3)
        ),
        min_size=1,
        max_size=4,
    ),
    predicate=st.dictionaries(st.sampled_from(["status", "devices", "customer_id", "cancel_reason", "nope"]), JSON),
)
def test_any_call_and_any_predicate_is_a_result_or_a_one_line_error(postgres_url, calls, predicate):
    """Whatever a client sends (the service passes it on as it came): a tool result, never an exception; an error
    result changes nothing; a predicate gives rows or a one-line usage error; the episode stays usable."""
    env = PostgresEnvironment("pg-0", url=postgres_url)
    try:
        env.init(authenticated_user_id="C001")
        for name, arguments in calls:
            before = env.state()
            result = env.run({"name": name, "arguments": arguments})
            assert isinstance(result, ToolResult)
            if result.error:
                assert env.state() == before and result.category and "\n" not in result.content
        try:
            env.query_data("subscriptions", predicate)
        except PostgresEnvUsageError as exc:
            assert "\n" not in str(exc)
        assert not env.run({"name": "list_plans", "arguments": {}}).error
    finally:
        env.close()
