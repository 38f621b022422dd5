"""Helpers for grading tests: trajectories recorded the way the episode runner records them."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.dataset.task import Action
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.rollout.runner import run_tool_call
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory


@dataclass
class Call:
    name: str
    arguments: dict | None


def record(
    world: RetailWorld, task_id: str, steps: list, authenticated_user_id: str | None = None, trial: int = 0
) -> Trajectory:
    """A trajectory as the runner records it. Steps: ('user', text), ('agent', text) or Call(name, args)."""
    session = world.session(authenticated_user_id=authenticated_user_id)
    messages: list[Message] = []
    for i, step in enumerate(steps):
        if isinstance(step, Call):
            call = ToolCall(id=f"call_{i}", name=step.name, arguments=step.arguments)
            messages.append(Message(role="assistant", tool_calls=[call]))
            messages.append(run_tool_call(session, call))
        else:
            role, text = step
            messages.append(Message(role="user" if role == "user" else "assistant", content=text))
    return Trajectory(
        task_id=task_id,
        trial=trial,
        agent="hand",
        user="hand",
        world=world.name,
        messages=messages,
        world_log=[e.to_dict() for e in session.log],
        final_changed=session.changed(),
        final_hash=session.state_hash(),
    )


def confirmed(actions: list[Action]) -> list:
    """Steps for `actions`, with an ask-and-'yes' exchange before each write."""
    steps: list = [("user", "Hi, I need help with my orders.")]
    for a in actions:
        if a.name in WRITE_TOOLS:
            steps += [("agent", f"I will call {a.name} with {a.arguments}. Shall I proceed?"), ("user", "Yes, please.")]
        steps.append(Call(a.name, a.arguments))
    steps.append(("agent", "All done."))
    return steps
