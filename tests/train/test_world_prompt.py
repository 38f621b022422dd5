"""SFT renders each trajectory with the policy and tools of its own world's domain, never a default domain's."""

from __future__ import annotations

from pipeline.rollout.trajectory import Message, Trajectory
from pipeline.train.sft_data import world_prompt
from pipeline.world.registry import load_world, resolve_domain


def _traj(world: str, domain: str) -> Trajectory:
    return Trajectory(task_id="t", agent="a", user="u", world=world, domain=domain, messages=[Message(role="user")])


def test_a_world_that_loads_by_name_gives_its_own_policy_and_tools():
    world = load_world("gen-7", "retail")
    policy, tools = world_prompt(_traj("gen-7", "retail"))
    assert policy == world.policy and tools == world.tools.schemas()


def test_a_world_known_only_by_name_gives_its_domains_policy_and_tools():
    airline = resolve_domain("airline")
    policy, tools = world_prompt(_traj("tau2_airline", "airline"))
    names = {t["function"]["name"] for t in tools}
    assert policy == airline.policy() and names == set(airline.tools.tools)
    assert "book_reservation" in names and "get_order_details" not in names
