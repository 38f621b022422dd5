"""The environment facade drives every domain from outside through the same six functions: τ²-bench's retail,
airline and telecom tasks replayed through `run` earn reward 1, a wrong write earns 0, a call from the wrong side
is refused and changes nothing."""

from __future__ import annotations

import pytest

from pipeline.dataset.task import Task
from pipeline.environment.memory import Environment, EnvironmentUsageError
from pipeline.rollout.runner import Limits
from pipeline.world.registry import resolve_domain
from tests.test_domain_boundary import ROOT, _domain_imports


def _bare(env: Environment) -> Environment:
    fresh = Environment(env.domain, env.world)
    fresh.init()
    return fresh


def _dotted(record: dict, path: str):
    for part in path.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


DOMAINS = ("retail", "airline", "telecom")
QUESTION, YES = "Shall I go ahead with that? (yes/no)", "Yes, please go ahead."


@pytest.fixture(scope="module", params=DOMAINS)
def loaded(request) -> tuple[Environment, list[Task]]:
    """A domain's facade over τ²-bench's world, named by the domain and the directory, and the data set's tasks."""
    from tests.needs import need_tau2

    path = need_tau2(request.param)
    _, tasks = resolve_domain(request.param).require("tau2_importer").load(path)
    return Environment(request.param, str(path)), tasks


def _writes(env: Environment, task: Task) -> bool:
    return any(
        env.world.side_of(a.requestor) == "assistant" and env.world.tools[a.name].kind == "write"
        for a in task.gold_actions
    )


def _replay(env: Environment, task: Task, actions=None) -> None:
    """The task's gold actions through `run`, each on its side, every agent write asked and confirmed first."""
    for action in task.gold_actions if actions is None else actions:
        side = env.world.side_of(action.requestor)
        if side == "assistant" and env.world.tools[action.name].kind == "write":
            env.say(QUESTION)
            env.say(YES, "user")
        env.run({"name": action.name, "arguments": action.arguments}, side)


def _graded_only(env: Environment) -> set[str]:
    """The static checks of the domain's rules its own reference data does not keep (graded, not enforced)."""
    return {f"static.{inv.name}" for inv in env.domain.invariants() if not inv.enforced}


def _gold_rewards(env: Environment, tasks: list[Task]) -> None:
    assert tasks
    excused = []
    for task in tasks:
        env.init(task, authenticated_user_id=task.customer_user_id)
        _replay(env, task)
        reward, verdict = env.reward(), env.verdict()
        assert verdict.component("replay_consistency").passed, task.id
        assert reward.info["verdict"] == verdict.model_dump(mode="json")
        if reward.reward != 1.0:
            failed = set(verdict.failed_components)
            assert failed <= _graded_only(env), (task.id, failed)
            excused.append(task.id)
    assert len(excused) <= 1, excused  # airline's task 32: its gold refund breaks the graded-only refund ceiling


def test_every_tasks_gold_actions_through_run_earn_reward_1(loaded):
    env, tasks = loaded
    _gold_rewards(env, tasks)


def test_a_wrong_write_earns_reward_0(loaded):
    env, tasks = loaded
    pairs = [
        (t, o)
        for t in tasks
        for o in tasks
        if o.id != t.id and o.customer_user_id == t.customer_user_id and _writes(env, t) and _writes(env, o)
    ]
    for task, other in pairs:  # the same customer's other task's writes: writes this task never asked for
        env.init(task, authenticated_user_id=task.customer_user_id)
        _replay(env, task)
        assert env.reward().reward == 1.0
        gold = env.state()
        _replay(env, other, [a for a in other.gold_actions if env.world.side_of(a.requestor) == "assistant"])
        if env.state().changed != gold.changed:
            break
    else:
        pytest.fail("no task's writes go through in another task's end state")
    reward = env.reward()
    assert reward.reward == 0.0
    assert "state" in env.verdict().failed_components and env.verdict().diffs


def test_a_tool_of_the_other_side_is_refused_and_changes_nothing(loaded):
    env, tasks = loaded
    task = tasks[0]
    start = env.init(task)
    meta = env.get_metadata()
    agent_tool = meta.tools[0]["function"]["name"]
    refused = env.run({"name": agent_tool, "arguments": {}}, "user")  # the customer holds none of the agent's tools
    assert refused.error and "unknown tool" in refused.content
    garbled = env.run({"name": agent_tool, "arguments": {"no_such_argument": 1}})
    assert garbled.error and "invalid arguments" in garbled.content
    for schema in meta.user_tools[:5]:  # dual control: the customer's phone is not the agent's to touch
        name = schema["function"]["name"]
        result = env.run({"name": name, "arguments": {}}, "assistant")
        assert result.error and f"unknown tool {name!r}" in result.content
    assert env.state() == start
    assert env.verdict().component("replay_consistency").passed


def test_metadata_tells_the_domain_its_world_and_both_sides(loaded):
    env, _ = loaded
    meta = env.get_metadata()
    domain = env.domain
    assert meta.domain == domain.name and meta.world == env.world.name
    assert meta.world_digest == env.world.fingerprint and len(meta.world_digest) == 64
    assert meta.policy == env.world.policy and meta.policy.strip()
    assert [t["function"]["name"] for t in meta.tools] == list(domain.tools.tools)
    user_tools = list(domain.user_tools.tools) if domain.user_tools is not None else []
    assert [t["function"]["name"] for t in meta.user_tools] == user_tools
    assert list(meta.tables) == list(domain.tables) and list(meta.user_tables) == list(domain.user_tables)
    assert all(t.record["type"] == "object" and t.record["properties"] for t in meta.tables.values())
    assert set(meta.tool_kinds) == set(domain.tools.tools) and "write" in meta.tool_kinds.values()
    for name, table in meta.tables.items():  # the key field holds each record's key, the owner field its owner
        for key, record in env.query_data(name).items():
            assert table.key is None or record[table.key] == key
            owner = domain.owner(name, env.world.table(name)[key])
            assert table.owner is None or owner is None or _dotted(record, table.owner) == owner


def test_init_runs_the_set_up_on_both_sides_and_every_init_starts_afresh(loaded):
    env, tasks = loaded
    set_up = [t for t in tasks if (t.initial_state or {}).get("initialization_actions")]
    task = (set_up or [t for t in tasks if _writes(env, t)])[0]
    first = env.init(task, authenticated_user_id=task.customer_user_id)
    assert first.world_digest == env.world.fingerprint
    assert set(first.user_changed) == set(env.domain.user_tables)
    bare = Environment(env.domain, env.world).init(task.model_copy(update={"initial_state": None}))
    assert (first.hash != bare.hash) == bool(set_up)  # telecom's set-up unseats a SIM, suspends a line: on either side
    _replay(env, task)
    assert env.state().hash != first.hash
    assert env.init(task, authenticated_user_id=task.customer_user_id) == first


def test_query_data_reads_the_session_as_it_is_now(loaded):
    env, tasks = loaded
    task = next(t for t in tasks if _writes(env, t))
    before = Environment(env.domain, env.world)  # no session yet: the base world
    env.init(task, authenticated_user_id=task.customer_user_id)
    _replay(env, task)
    changed = env.state().changed
    table, key = next((table, key) for table, records in changed.items() for key in records)
    record = changed[table][key]
    assert env.query_data(table)[key] == record and before.query_data(table).get(key) != record
    assert len(env.query_data(table)) >= len(before.query_data(table)) > 0
    field, value = next((f, v) for f, v in record.items() if isinstance(v, str))
    assert env.query_data(table, {field: value})[key] == record
    assert all(r[field] == value for r in env.query_data(table, {field: value}).values())
    assert env.query_data(table, lambda r: False) == {}
    with pytest.raises(EnvironmentUsageError, match="unknown table 'shoes'"):
        env.query_data("shoes")


def test_out_of_order_and_foreign_input_are_clear_errors(loaded):
    env, tasks = loaded
    fresh = Environment(env.domain, env.world)
    with pytest.raises(EnvironmentUsageError, match=r"run\(\) before init\(task\)"):
        fresh.run({"name": "x"})
    with pytest.raises(EnvironmentUsageError, match="field world is 'elsewhere'"):
        fresh.init(tasks[0].model_copy(update={"world": "elsewhere"}))
    fresh.init(tasks[0])
    with pytest.raises(EnvironmentUsageError, match="side 'customer'"):
        fresh.run({"name": "x"}, "customer")  # type: ignore[arg-type]
    with pytest.raises(EnvironmentUsageError, match="field arguments must be an object"):
        fresh.run({"name": "x", "arguments": [1]})
    with pytest.raises(EnvironmentUsageError, match="verdict 'best'"):
        Environment(env.domain, env.world, verdict="best")  # type: ignore[arg-type]
    other = next(d for d in DOMAINS if d != env.domain.name)
    with pytest.raises(EnvironmentUsageError, match=f"belongs to domain {env.domain.name!r}, not {other!r}"):
        Environment(other, env.world)


def test_the_tau2_verdict_reads_tau2s_reward(loaded):
    env, tasks = loaded
    task = next(t for t in tasks if _writes(env, t))
    tau2 = Environment(env.domain, env.world, verdict="tau2")
    tau2.init(task, authenticated_user_id=task.customer_user_id)
    _replay(tau2, task)
    for info in task.evaluation.communicate_info if task.evaluation else []:  # what τ²-bench wants told (COMMUNICATE)
        tau2.say(f"For the record: {info}.")
    reward = tau2.reward()
    assert reward.info["verdict_kind"] == "tau2" and reward.reward == 1.0 and tau2.verdict().tau2.passed
    tau2.init(task, authenticated_user_id=task.customer_user_id)  # nothing done: the database is not the gold one
    assert tau2.reward().reward == 0.0


def test_the_tool_budget_is_measures(loaded):
    env, tasks = loaded
    budgeted = Environment(env.domain, env.world, tasks[0], limits=Limits(max_tool_calls=1))
    name = budgeted.get_metadata().tools[0]["function"]["name"]
    budgeted.run({"name": name, "arguments": {}})
    assert budgeted.run({"name": name, "arguments": {}}).content.startswith("Error: not run")
    assert "static.tool_budget" in budgeted.verdict().failed_components


def test_the_facade_names_no_domain():
    assert _domain_imports([ROOT / "pipeline" / "environment" / "memory.py"]) == []


@pytest.fixture(scope="module")
def retail() -> tuple[Environment, list[Task]]:
    from tests.needs import need_tau2

    path = need_tau2("retail")
    _, tasks = resolve_domain("retail").require("tau2_importer").load(path)
    return Environment("retail", str(path)), tasks


def _started(env: Environment, tasks: list[Task]) -> Environment:
    fresh = Environment(env.domain, env.world)
    fresh.init(tasks[0])
    return fresh


# (what is given, the call on a facade (a fresh one, or one started with `_started`), what the one line names)
BAD_ARGUMENTS = [
    ("a domain that is a number", lambda env, tasks: Environment(123, env.world), "argument domain: .* got int 123"),
    ("no world", lambda env, tasks: Environment("retail", None), "argument world: .* got NoneType None"),
    ("an empty world name", lambda env, tasks: Environment("retail", ""), "argument world: .* got ''"),
    ("a task that is a name", lambda env, tasks: Environment("retail", env.world, "0"), "argument task: .* got '0'"),
    ("limits as a dict", lambda env, tasks: Environment(env.domain, env.world, limits={}), "argument limits"),
    ("a judge without judge()", lambda env, tasks: Environment(env.domain, env.world, judge="x"), "argument judge"),
    ("tau2 as a string", lambda env, tasks: Environment(env.domain, env.world, tau2="x"), "argument tau2"),
    ("no verdict", lambda env, tasks: Environment(env.domain, env.world, verdict=None), "verdict NoneType None"),
    ("init(a number)", lambda env, tasks: Environment(env.domain, env.world).init(7), "argument task: .* int 7"),
    ("init(a bad task)", lambda env, tasks: Environment(env.domain, env.world).init({"id": "0"}), "task: field "),
    ("reward() with no task", lambda env, tasks: _bare(env).reward(), r"without a task: there is nothing"),
    (
        "a user id that is a number",
        lambda env, tasks: Environment(env.domain, env.world).init(tasks[0], authenticated_user_id=7),
        "argument authenticated_user_id: .* got int 7",
    ),
    ("state() before init", lambda env, tasks: Environment(env.domain, env.world).state(), r"state\(\) before init"),
    ("reward() before init", lambda env, tasks: Environment(env.domain, env.world).reward(), r"reward\(\) before init"),
    ("say() before init", lambda env, tasks: Environment(env.domain, env.world).say("hi"), r"say\(\) before init"),
    ("a table that is None", lambda env, tasks: env.query_data(None), "argument table: .* got NoneType None"),
    ("a table in a list", lambda env, tasks: env.query_data(["orders"]), "argument table: .* got list"),
    ("an unknown table", lambda env, tasks: env.query_data("shoes"), "unknown table 'shoes'; tables are products"),
    ("filters as a list", lambda env, tasks: env.query_data("orders", [1]), "argument filters: .* got list"),
    (
        "a filter on a field orders lack",
        lambda env, tasks: env.query_data("orders", {"no_such_field": None}),
        "filter field 'no_such_field': table 'orders' has no field 'no_such_field'; its fields are order_id, user_id",
    ),
    (
        "a filter on a nested field addresses lack",
        lambda env, tasks: env.query_data("orders", {"address.planet": "Mars"}),
        "field 'address' of table 'orders' has no field 'planet'; its fields are address1",
    ),
    (
        "a filter inside a list",
        lambda env, tasks: env.query_data("orders", {"items.name": "Lamp"}),
        "'items' is a list; a filter reads nothing inside it",
    ),
    (
        "a predicate that raises",
        lambda env, tasks: env.query_data("orders", lambda r: r["status"] == "pending"),
        r"filters: the predicate raised TypeError .* on orders/#W\d+; it is given the record object \(Order",
    ),
    ("a filter field that is a number", lambda env, tasks: env.query_data("orders", {1: 2}), "filter field 1"),
    ("say(a dict)", lambda env, tasks: _started(env, tasks).say({"a": 1}), "argument text: .* got dict"),
    ("say() as a customer", lambda env, tasks: _started(env, tasks).say("hi", "customer"), "side 'customer'"),
    ("run(None)", lambda env, tasks: _started(env, tasks).run(None), "argument call: .* got NoneType None"),
    ("run() on no side", lambda env, tasks: _started(env, tasks).run({"name": "x"}, None), "side NoneType None"),
    ("a call without a name", lambda env, tasks: _started(env, tasks).run({"arguments": {}}), "argument call's name"),
    (
        "a call with a misspelt field",
        lambda env, tasks: _started(env, tasks).run({"name": "x", "argumnts": {}}),
        "call: unknown field 'argumnts'; a call's fields are name, arguments, id, raw_arguments",
    ),
    ("a call id in a list", lambda env, tasks: _started(env, tasks).run({"name": "x", "id": [1]}), "call's id"),
    (
        "an argument name that is a number",
        lambda env, tasks: _started(env, tasks).run({"name": "x", "arguments": {1: 2}}),
        "field arguments has a key that is not a string: 1",
    ),
    (
        "raw arguments that are a number",
        lambda env, tasks: _started(env, tasks).run({"name": "x", "raw_arguments": 5}),
        "argument call's raw_arguments",
    ),
]


@pytest.mark.parametrize(("given", "call", "named"), BAD_ARGUMENTS, ids=[case[0] for case in BAD_ARGUMENTS])
def test_every_argument_is_checked_at_the_boundary_in_one_line(retail, given, call, named):
    env, tasks = retail
    with pytest.raises(EnvironmentUsageError, match=named) as raised:
        call(env, tasks)
    assert "\n" not in str(raised.value)


def test_a_filter_on_fields_the_records_have_still_reads(retail):
    env, _ = retail
    orders = env.query_data("orders")
    city = next(iter(orders.values()))["address"]["city"]
    assert env.query_data("orders", {"address.city": city}) == {
        k: o for k, o in orders.items() if o["address"]["city"] == city
    }
    users = env.query_data("users")
    user_id, user = next(iter(users.items()))
    key, method = next(iter(user["payment_methods"].items()))  # a dict's part is any key, then its values' fields
    assert env.query_data("users", {f"payment_methods.{key}.source": method["source"]})[user_id] == user
    assert env.query_data("orders", {"cancel_reason": None}) == {
        k: o for k, o in orders.items() if "cancel_reason" not in o
    }
