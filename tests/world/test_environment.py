"""The six-function environment protocol, exercised on the retail reference implementation."""

import pytest

from pipeline.dataset.task import Action, Provenance, Task, UserScript
from pipeline.domains.retail.environment import RetailEnvironment, WorldMismatchError
from pipeline.domains.retail.generator import GeneratorConfig
from pipeline.domains.retail.tools import execute
from pipeline.domains.retail.worlds import generate_world
from pipeline.world.protocol import Environment


@pytest.fixture(scope="module")
def env():
    return RetailEnvironment(generate_world(GeneratorConfig(seed=3, n_products=10, n_users=30, n_orders=60)))


def _cancel_task(env) -> Task:
    order = env.query_data("orders", {"status": "pending"})[0]
    user = env.query_data("users", {"user_id": order["user_id"]})[0]
    return Task(
        id="cancel-1",
        world=env.world.name,
        user_script=UserScript(goal="cancel"),
        gold_actions=[
            Action(name="find_user_id_by_email", arguments={"email": user["email"]}),
            Action(
                name="cancel_pending_order", arguments={"order_id": order["order_id"], "reason": "no longer needed"}
            ),
        ],
        provenance=Provenance(source="eval"),
    )


def test_is_an_environment(env):
    assert isinstance(env, Environment)


def test_metadata(env):
    meta = env.get_metadata()
    assert meta.name == env.world.name
    assert "establish who the customer is" in meta.policy
    names = {t["function"]["name"] for t in meta.tools}
    assert {"cancel_pending_order", "exchange_delivered_order_items", "calculate"} <= names
    assert set(meta.state_schema["properties"]) == {"products", "users", "orders"}


def test_init_and_state_are_isolated(env):
    task = _cancel_task(env)
    s1, s2 = env.init(task), env.init(task)
    before = env.state(s1)
    for action in task.gold_actions:
        assert execute(s1, action.name, action.arguments).ok
    after = env.state(s1)
    assert after.hash != before.hash
    assert set(after.changed["orders"]) == {task.gold_actions[1].arguments["order_id"]}
    assert env.state(s2).hash == before.hash
    assert env.state(env.init(task)).hash == before.hash


def test_query_data_predicates(env):
    by_dict = env.query_data("orders", {"status": "delivered"})
    by_callable = env.query_data("orders", lambda o: o.status == "delivered")
    assert by_dict == by_callable and by_dict
    assert all(o["status"] == "delivered" for o in by_dict)
    with pytest.raises(KeyError, match="unknown table"):
        env.query_data("shoes", None)


def test_wrong_world_is_a_clear_error(env):
    task = _cancel_task(env).model_copy(update={"world": "somewhere-else"})
    with pytest.raises(WorldMismatchError, match="field world is 'somewhere-else'"):
        env.init(task)
