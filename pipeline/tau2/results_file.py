"""Our trajectories written as a τ²-bench results file (the JSON `tau2 run` saves), in its documented data model.

Used to make test fixtures and bench inputs from gold conversations: a `SimulationRun` per trajectory (messages
with `turn_idx`, assistant tool calls with their requestor, tool messages answering by `id`), the run's `info`,
and the τ²-bench task records the run was graded on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline.rollout import Trajectory

# τ²-bench records the user's transfer and out-of-scope signals as user_stop
_TERMINATION = {
    "user_stop": "user_stop",
    "user_transfer": "user_stop",
    "user_out_of_scope": "user_stop",
    "agent_stop": "agent_stop",
    "turn_limit": "max_steps",
    "infra_error": "infrastructure_error",
}
_STAMP = "2026-12-02T00:00:00"


def simulation_of(trajectory: Trajectory, sim_id: str, reward: float | None = None) -> dict:
    """One SimulationRun; `reward` (when given) is recorded as its reward_info."""
    messages = []
    for i, m in enumerate(trajectory.messages):
        base: dict[str, Any] = {"role": m.role, "content": m.content, "turn_idx": i, "timestamp": _STAMP}
        if m.role == "assistant":
            calls = [
                {"id": c.id, "name": c.name, "arguments": c.arguments or {}, "requestor": "assistant"}
                for c in m.tool_calls
            ]
            base["tool_calls"] = calls or None
        elif m.role == "tool":
            base.update(id=m.tool_call_id, requestor="assistant", error=m.error)
        messages.append(base)
    sim = {
        "id": sim_id,
        "task_id": trajectory.task_id,
        "trial": trajectory.trial,
        "seed": trajectory.seed,
        "timestamp": _STAMP,
        "start_time": _STAMP,
        "end_time": _STAMP,
        "duration": 0.0,
        "termination_reason": _TERMINATION.get(trajectory.termination, "agent_error"),
        "agent_cost": 0.0,
        "user_cost": 0.0,
        "messages": messages,
    }
    if reward is not None:
        sim["reward_info"] = {"reward": reward, "reward_basis": None, "info": {"note": "recorded by the generator"}}
    return sim


def results_of(simulations: Iterable[dict], raw_tasks: list[dict], domain: str, trials: int) -> dict:
    """A whole results file around `simulations`."""
    return {
        "timestamp": _STAMP,
        "info": {
            "git_commit": "",
            "num_trials": trials,
            "max_steps": 200,
            "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "gold-user", "llm_args": {}},
            "agent_info": {"implementation": "llm_agent", "llm": "gold-agent", "llm_args": {}},
            "environment_info": {"domain_name": domain, "policy": "", "tool_defs": None},
            "seed": 0,
        },
        "tasks": raw_tasks,
        "simulations": list(simulations),
    }
