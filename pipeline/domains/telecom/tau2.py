"""τ²-bench telecom directories: both sides' databases under the policy, and the tasks as our Task records — their
set-up actions (both sides), gold actions with the side that makes each, and env assertions.

τ²-bench's tools do not check who is asking; ours do, so each task's customer is inferred here (a customer_id
argument of a gold or set-up action, or the owner of the phone number in the known info) and the gold replay runs
with that customer identified.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.dataset import Action, Evaluation, KnownInfo, Provenance, Scenario, Task, UserScript, known_assertions
from pipeline.errors import TaskError
from pipeline.grading import env_assertions, unsupported_criteria
from pipeline.world import World, WorldLoadError

if TYPE_CHECKING:
    from pipeline.world import Domain

_PHONE = re.compile(r"\b\d{3}-\d{3}-\d{4}\b")
_NAME = re.compile(r"\bYou are\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
_SECTIONS = (
    ("Domain", "domain"),
    ("Reason for call", "reason_for_call"),
    ("Known info", "known_info"),
    ("Unknown info", "unknown_info"),
    ("Task instructions", "task_instructions"),
)


def infer_customer(raw: dict, known: str, world: World) -> str | None:
    customers = world.table("customers")
    setup = ((raw.get("initial_state") or {}).get("initialization_actions")) or []
    gold = ((raw.get("evaluation_criteria") or {}).get("actions")) or []
    for a in [*gold, *setup]:
        cid = (a.get("arguments") or {}).get("customer_id")
        if isinstance(cid, str) and cid in customers:
            return cid
    session = world.session()
    from pipeline.domains.telecom.tools import customer_by_phone

    for number in _PHONE.findall(known):
        found = customer_by_phone(session, number)
        if found is not None:
            return found.customer_id
    return None


def convert_task(raw: dict, world: World) -> Task:
    task_id = raw.get("id")
    if not isinstance(task_id, str):
        raise TaskError("field id: required text")
    scenario = raw.get("user_scenario") or {}
    ins = scenario.get("instructions")
    if not isinstance(ins, dict) or not isinstance(ins.get("reason_for_call"), str):
        raise TaskError("field user_scenario.instructions.reason_for_call: required text")
    head = [f"Persona:\n{scenario['persona']}"] if scenario.get("persona") else []
    text = "\n\n".join(head + [f"{title}:\n{ins[key]}" for title, key in _SECTIONS if ins.get(key)])
    known = ins.get("known_info") or ""
    criteria = raw.get("evaluation_criteria")
    criteria = {"reward_basis": []} if criteria is None else criteria
    assertable = known_assertions(world.domain)
    unsupported_criteria(task_id, criteria, assertable)
    customer = infer_customer(raw, known, world)
    names = _NAME.findall(known)
    phones = _PHONE.findall(known)
    basis = criteria.get("reward_basis")
    return Task(
        id=task_id,
        world=world.name,
        customer_user_id=customer,
        user_script=UserScript(
            goal=ins["reason_for_call"],
            known=KnownInfo(
                first_name=names[0][0] if names else None,
                last_name=names[0][1] if names else None,
                phone=phones[0] if phones else None,
            ),
            instructions=text,
            scenario=Scenario(persona=scenario.get("persona"), **{key: ins.get(key) for _, key in _SECTIONS}),
        ),
        gold_actions=[
            Action(
                name=a["name"],
                arguments=a.get("arguments") or {},
                requestor=a.get("requestor"),
                compare_args=a.get("compare_args"),
            )
            for a in criteria.get("actions") or []
        ],
        rubric=list(criteria.get("nl_assertions") or []),
        provenance=Provenance(source="tau2"),
        evaluation=Evaluation(
            communicate_info=[str(x) for x in criteria.get("communicate_info") or []],
            nl_assertions=list(criteria.get("nl_assertions") or []),
            reward_basis=None if basis is None else list(basis),
            env_assertions=env_assertions(task_id, criteria, assertable),
        ),
        initial_state=raw.get("initial_state"),
    )


class Tau2Telecom:
    """The `tau2_importer` capability of the telecom domain (`domain`: the domain its worlds load under)."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain

    replay_tables = ("plans", "customers", "lines", "bills", "devices")

    def load(self, path: str | Path, tasks_file: str = "tasks.json") -> tuple[World, list[Task]]:
        path = Path(path)
        if not path.is_dir():
            raise WorldLoadError(f"{path}: not a domain directory")
        if not (path / "policy.md").exists():
            raise WorldLoadError(f"{path / 'policy.md'}: file not found")
        world = self.domain.load(str(path))
        if world is None:  # a directory is always a form the domain reads
            raise WorldLoadError(f"{path}: not a telecom domain directory")
        file = path / tasks_file
        try:
            raw_tasks: Any = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WorldLoadError(f"{file}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{file}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        if not isinstance(raw_tasks, list):
            raise WorldLoadError(f"{file}: expected a JSON list of tasks")
        tasks, seen = [], set()
        for i, raw in enumerate(raw_tasks):
            try:
                task = convert_task(raw if isinstance(raw, dict) else {}, world)
            except (TaskError, ValueError, KeyError, TypeError) as exc:  # ValueError: a task pydantic refuses
                raise WorldLoadError(f"{file}: task [{i}]: {exc}") from None
            if task.id in seen:
                raise WorldLoadError(f"{file}: task [{i}]: field id: duplicate task id {task.id!r}")
            seen.add(task.id)
            tasks.append(task)
        return world, tasks
