"""τ²-bench airline directories: the database under its policy, and the tasks as our Task records.

τ²-bench's tools do not check who is asking; ours do, so each task's customer is inferred here (the user id in
the known info, a user_id argument of a gold action, or the owner of a reservation the gold actions touch) and the
gold replay runs with that customer identified.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pipeline.dataset import Action, Evaluation, KnownInfo, Provenance, Scenario, Task, UserScript
from pipeline.errors import TaskError
from pipeline.grading import unsupported_criteria
from pipeline.world import World, WorldLoadError

if TYPE_CHECKING:
    from pipeline.domains.airline.schema import Reservation
    from pipeline.world import Domain

log = logging.getLogger(__name__)
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{3,5}\b")
_NAME = re.compile(r"\b(?:You are|Your name is)\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
_SECTIONS = (
    ("Domain", "domain"),
    ("Reason for call", "reason_for_call"),
    ("Known info", "known_info"),
    ("Unknown info", "unknown_info"),
    ("Task instructions", "task_instructions"),
)


def _instructions(scenario: dict) -> tuple[str, str, str]:
    """(goal, known info text, the whole scenario as one text for a language-model user)."""
    ins = scenario.get("instructions")
    head = [f"Persona:\n{scenario['persona']}"] if scenario.get("persona") else []
    if isinstance(ins, str):
        return ins, ins, "\n\n".join([*head, ins])
    if not isinstance(ins, dict) or not isinstance(ins.get("reason_for_call"), str):
        raise TaskError("field user_scenario.instructions.reason_for_call: required text")
    text = "\n\n".join(head + [f"{title}:\n{ins[key]}" for title, key in _SECTIONS if ins.get(key)])
    return ins["reason_for_call"], ins.get("known_info") or "", text


def _scenario(scenario: dict) -> Scenario:
    """The scenario as written, section by section (nothing dropped, nothing reworded)."""
    ins = scenario.get("instructions")  # text or a dict: `_instructions` ran first and refused anything else
    if isinstance(ins, str):
        return Scenario(persona=scenario.get("persona"), text=ins)
    return Scenario(
        persona=scenario.get("persona"), **{key: cast("dict[str, Any]", ins).get(key) for _, key in _SECTIONS}
    )


def infer_customer(actions: list[dict], known: str, world: World) -> str | None:
    users, reservations = world.table("users"), cast("dict[str, Reservation]", world.table("reservations"))
    found = [u for u in _USER_ID.findall(known) if u in users]
    for a in actions:
        args = a.get("arguments") or {}
        if isinstance(args.get("user_id"), str) and args["user_id"] in users:
            found.append(args["user_id"])
        res = reservations.get(args.get("reservation_id", ""))
        if res is not None:
            found.append(res.user_id)
    if len(set(found)) > 1:
        log.warning("several candidate customers %s; using %s", sorted(set(found)), found[0])
    return found[0] if found else None


def convert_task(raw: dict, world: World, source: str = "tasks.json") -> Task:
    task_id = raw.get("id")
    if not isinstance(task_id, str):
        raise TaskError("field id: required text")
    scenario = raw.get("user_scenario") or {}
    goal, known, text = _instructions(scenario)
    criteria = raw.get("evaluation_criteria")
    criteria = {"reward_basis": []} if criteria is None else criteria  # no criteria: τ²-bench scores it 1
    unsupported_criteria(task_id, criteria)
    actions = criteria.get("actions") or []
    customer = infer_customer(actions, known, world)
    names = _NAME.findall(known)
    return Task(
        id=task_id,
        world=world.name,
        customer_user_id=customer,
        user_script=UserScript(
            goal=goal,
            known=KnownInfo(
                user_id=customer if customer and customer in known else None,
                first_name=names[0][0] if names else None,
                last_name=names[0][1] if names else None,
            ),
            instructions=text,
            scenario=_scenario(scenario),
        ),
        gold_actions=[
            Action(
                name=a["name"],
                arguments=a.get("arguments") or {},
                requestor=a.get("requestor"),
                compare_args=a.get("compare_args"),
            )
            for a in actions
        ],
        rubric=list(criteria.get("nl_assertions") or []),
        provenance=Provenance(source="tau2"),
        evaluation=Evaluation(
            communicate_info=[str(x) for x in criteria.get("communicate_info") or []],
            nl_assertions=list(criteria.get("nl_assertions") or []),
            reward_basis=None if criteria.get("reward_basis") is None else list(criteria["reward_basis"]),
        ),
        initial_state=raw.get("initial_state"),
    )


class Tau2Airline:
    """The `tau2_importer` capability of the airline domain (`domain`: the domain its worlds load under)."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain

    replay_tables = ("flights", "users", "reservations")

    def load(self, path: str | Path) -> tuple[World, list[Task]]:
        path = Path(path)
        if not path.is_dir():
            raise WorldLoadError(f"{path}: not a domain directory")
        if not (path / "policy.md").exists():
            raise WorldLoadError(f"{path / 'policy.md'}: file not found")
        world = cast("World", self.domain.load(str(path)))  # a directory loads as a world or raises
        tasks_file = path / "tasks.json"
        try:
            raw_tasks: Any = json.loads(tasks_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WorldLoadError(f"{tasks_file}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{tasks_file}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        if not isinstance(raw_tasks, list):
            raise WorldLoadError(f"{tasks_file}: expected a JSON list of tasks")
        tasks, seen = [], set()
        for i, raw in enumerate(raw_tasks):
            try:
                task = convert_task(raw if isinstance(raw, dict) else {}, world)
            except (TaskError, ValueError, KeyError, TypeError) as exc:  # ValueError: a task pydantic refuses
                raise WorldLoadError(f"{tasks_file}: task [{i}]: {exc}") from None
            if task.id in seen:
                raise WorldLoadError(f"{tasks_file}: task [{i}]: field id: duplicate task id {task.id!r}")
            seen.add(task.id)
            tasks.append(task)
        return world, tasks
