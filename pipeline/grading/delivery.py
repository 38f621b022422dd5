"""At-least-once delivery: the same write (tool and arguments) executed twice within one agent turn.

An agent program calls its tools over MCP, and MCP clients and frameworks retry a call whose answer was lost: the
environment then executes it again (`pipeline.environment.mcp` does not deduplicate). Such a repeat is named in the
verdict of a trajectory whose agent ran its own tool loop (`Trajectory.tool_loop == "agent"`), as a component that
does not decide pass or fail (`repeated_writes`, not required): the state check still decides, and a repeat that
changed the state twice fails it there. Whether the agent meant the repeat or its client retried, the record cannot
tell; it says which calls and where.
"""

from __future__ import annotations

from pipeline.grading.static_checks import call_key
from pipeline.grading.verdict import ComponentResult
from pipeline.rollout import NOT_RUN, TURN_OVER, Trajectory
from pipeline.world import World

COMPONENT = "repeated_writes"


def repeated_writes(world: World, trajectory: Trajectory) -> list[str]:
    """Each write executed again within the same agent turn (the assistant messages between two customer
    messages): which call, at which message, and at which message it was first executed."""
    results = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool" and m.tool_call_id is not None}
    seen: dict[str, int] = {}
    found: list[str] = []
    for i, message in enumerate(trajectory.messages):
        if message.role == "user":
            seen = {}  # a new agent turn
            continue
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            spec = world.tools.tools.get(call.name)
            result = results.get(call.id)
            if spec is None or spec.kind != "write" or call.arguments is None:
                continue
            if result is not None and result.content in (NOT_RUN, TURN_OVER):
                continue  # never executed
            key = call_key(call.name, call.arguments)
            if key in seen:
                outcome = "refused" if result is not None and result.error else "executed"
                found.append(
                    f"message {i}: {call.name} repeated with the same arguments ({outcome} again; first at message"
                    f" {seen[key]})"
                )
            else:
                seen[key] = i
    return found


def repeated_writes_component(world: World, trajectory: Trajectory) -> ComponentResult | None:
    """The `repeated_writes` component (not required) when the trajectory's agent ran its own tool loop and
    repeated a write within a turn; None otherwise (a model's trajectory never gets one: its verdict is unchanged)."""
    if trajectory.tool_loop != "agent":
        return None
    found = repeated_writes(world, trajectory)
    if not found:
        return None
    return ComponentResult(name=COMPONENT, passed=False, required=False, details=found)
