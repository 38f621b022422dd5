"""A small generated world and a task set over every template and dial, shared by the scripted-participant tests."""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.dataset.task import Task
from pipeline.domains.retail.generator import GeneratorConfig
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.domains.retail.worlds import generate_world
from pipeline.rollout.trajectory import Message, Trajectory

N_TASKS = 75


@lru_cache(maxsize=1)
def small_world() -> RetailWorld:
    return generate_world(GeneratorConfig(seed=3, n_products=12, n_users=40, n_orders=100))


@lru_cache(maxsize=1)
def small_tasks() -> tuple[Task, ...]:
    from pipeline.authoring import generate_tasks

    return tuple(generate_tasks(small_world(), N_TASKS, seed=0))


def unsupported_write_values(messages: list[Message]) -> list[tuple[str, str, object]]:
    """(tool, argument, value) of write arguments found in no earlier user message or tool result.

    Written independently of the oracle's own check, so the test does not grade the oracle by itself.
    """
    out = []
    for k, m in enumerate(messages):
        for call in m.tool_calls:
            if call.name not in WRITE_TOOLS:
                continue
            earlier = " ".join(x.content or "" for x in messages[:k] if x.role in ("user", "tool"))
            for arg, value in (call.arguments or {}).items():
                values = value if isinstance(value, list) else [value]
                if any(str(v) and str(v) not in earlier for v in values):
                    out.append((call.name, arg, value))
    return out


def strip_timings(traj: Trajectory) -> dict:
    data = traj.model_dump(exclude={"timings"})
    for m in data["messages"]:
        m.pop("latency_s", None)
    return data


def find(tasks, template: str | None = None, **dials) -> Task:
    for t in tasks:
        if (template is None or t.provenance.template == template) and all(
            t.provenance.dials.get(k) == v for k, v in dials.items()
        ):
            return t
    raise LookupError(f"no task with template={template} dials={dials}")


YES_NO = re.compile(r"\(yes/no\)")
