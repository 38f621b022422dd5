"""τ²-bench retail domains: load a domain directory into our world and tasks, and replay its gold actions.

A domain directory holds db.json (the database), tasks.json (the tasks), policy.md (the policy the tasks are
graded under) and optionally split_tasks.json (named lists of task ids). The end state of every task is computed
by replaying its gold actions with our tools, never stored. Our tools enforce authorization and τ²-bench's do not,
so each task's customer is inferred once here and the replay runs with that customer already authenticated.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.dataset import Action, Evaluation, KnownInfo, Messes, Provenance, Scenario, Task, UserScript, replay_gold
from pipeline.domains.retail.state import RetailWorld, WorldLoadError
from pipeline.errors import TaskError
from pipeline.grading import unsupported_criteria

if TYPE_CHECKING:
    from pipeline.world import Domain

log = logging.getLogger(__name__)


class Tau2FormatError(WorldLoadError):
    """A domain file that is missing or does not fit τ²-bench's format; the message names the file and field."""


# ---- τ²-bench task format (only what we read; unknown fields are tolerated) ------------------------------------
class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class Tau2Instructions(_Loose):
    domain: str | None = None
    reason_for_call: str = Field(description="Why the simulated customer calls.")
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str | None = None


class Tau2Scenario(_Loose):
    persona: str | None = None
    instructions: Tau2Instructions | str


class Tau2Action(_Loose):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["assistant", "user"] | None = None
    compare_args: list[str] | None = None


class Tau2Criteria(_Loose):
    actions: list[Tau2Action] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] | None = None


class Tau2Task(_Loose):
    id: str
    user_scenario: Tau2Scenario
    evaluation_criteria: Tau2Criteria | None = None
    initial_state: dict[str, Any] | None = None


@dataclass
class Tau2Domain:
    """A loaded τ²-bench domain: the world, its tasks in file order, its policy text and its splits."""

    world: RetailWorld
    tasks: list[Task]
    policy: str
    splits: dict[str, list[str]] = field(default_factory=dict)

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise TaskError(f"no task {task_id!r} in domain {self.world.name!r}")


# ---- conversion ------------------------------------------------------------------------------------------------
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{4}\b")
_ZIP = re.compile(r"\b\d{5}\b")
_NAME = re.compile(r"\b(?:You are|You're|Your? name is|called)\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
_FORGOT_EMAIL = re.compile(r"(?:not|n't)\s+(?:remember|recall|know|have)\b[^.]*\bemail", re.IGNORECASE)


def instructions_text(scenario: Tau2Scenario) -> str:
    """The scenario as one text for a language-model user, in τ²-bench's section order."""
    ins = scenario.instructions
    parts = [f"Persona:\n{scenario.persona}"] if scenario.persona else []
    if isinstance(ins, str):
        return "\n\n".join([*parts, ins])
    sections = [
        ("Domain", ins.domain),
        ("Reason for call", ins.reason_for_call),
        ("Known info", ins.known_info),
        ("Unknown info", ins.unknown_info),
        ("Task instructions", ins.task_instructions),
    ]
    return "\n\n".join(parts + [f"{title}:\n{text}" for title, text in sections if text])


def infer_customer(raw: Tau2Task, world: RetailWorld | None) -> str | None:
    """The task's customer: owner of an order the gold actions touch, a user_id argument, a find_user result,
    or else a user id / email / name + zip stated in the known info. Disagreeing sources are logged."""
    actions = (raw.evaluation_criteria.actions or []) if raw.evaluation_criteria else []
    found: list[str] = []
    for a in actions:
        order = world.db.orders.get(a.arguments.get("order_id", "")) if world else None
        if order is not None:
            found.append(order.user_id)
        uid = a.arguments.get("user_id")
        if isinstance(uid, str) and (world is None or uid in world.db.users):
            found.append(uid)
    if world is not None:
        found += [u for a in actions if (u := _lookup(world, a.name, a.arguments))]
        known = raw.user_scenario.instructions
        text = (known.known_info or "") if isinstance(known, Tau2Instructions) else known
        found += [u for u in _USER_ID.findall(text) if u in world.db.users]
        found += [u for e in _EMAIL.findall(text) if (u := world.user_by_email.get(e.lower()))]
        for first, last in _NAME.findall(text):
            found += [
                u for z in _ZIP.findall(text) if (u := world.user_by_name_zip.get((first.lower(), last.lower(), z)))
            ]
    if len(set(found)) > 1:
        log.warning("task %s: several candidate customers %s; using %s", raw.id, sorted(set(found)), found[0])
    return found[0] if found else None


def _lookup(world: RetailWorld, name: str, args: dict[str, Any]) -> str | None:
    if name == "find_user_id_by_email" and isinstance(args.get("email"), str):
        return world.user_by_email.get(args["email"].strip().lower())
    if name == "find_user_id_by_name_zip" and all(
        isinstance(args.get(k), str) for k in ("first_name", "last_name", "zip")
    ):
        return world.user_by_name_zip.get((args["first_name"].lower(), args["last_name"].lower(), args["zip"]))
    return None


def known_info(scenario: Tau2Scenario, customer: str | None, world: RetailWorld | None) -> tuple[KnownInfo, Messes]:
    """What the customer can say about themselves, parsed from the known info where the text makes it easy."""
    ins = scenario.instructions
    if not isinstance(ins, Tau2Instructions):
        return KnownInfo(), Messes()
    text = ins.known_info or ""
    emails = _EMAIL.findall(text)
    user_ids = _USER_ID.findall(text)
    names = _NAME.findall(text)
    zips = _ZIP.findall(text)
    zip_code = zips[0] if zips else None
    user = world.db.users.get(customer) if world and customer else None
    if user is not None and user.address.zip in zips:
        zip_code = user.address.zip  # several zips mentioned (e.g. a move): the one on file
    if not names and user is not None and customer in user_ids:
        names = [(user.name.first_name, user.name.last_name)]  # "You are <their user id>": they know their name
    known = KnownInfo(
        email=emails[0] if emails else None,
        first_name=names[0][0] if names else None,
        last_name=names[0][1] if names else None,
        zip=zip_code,
        user_id=user_ids[0] if user_ids else None,
    )
    forgot = bool(ins.unknown_info and _FORGOT_EMAIL.search(ins.unknown_info)) and not emails
    return known, Messes(forgot_email=forgot)


def scenario_of(scenario: Tau2Scenario) -> Scenario:
    """The scenario as written, section by section (nothing dropped, nothing reworded)."""
    ins = scenario.instructions
    if isinstance(ins, str):
        return Scenario(persona=scenario.persona, text=ins)
    return Scenario(
        persona=scenario.persona,
        domain=ins.domain,
        reason_for_call=ins.reason_for_call,
        known_info=ins.known_info,
        unknown_info=ins.unknown_info,
        task_instructions=ins.task_instructions,
    )


def convert_task(raw: dict | Tau2Task, world: RetailWorld | None = None, world_name: str | None = None) -> Task:
    """Our Task from one τ²-bench task. With `world`, the customer is inferred from the database too."""
    t = raw if isinstance(raw, Tau2Task) else Tau2Task.model_validate(raw)
    customer = infer_customer(t, world)
    known, messes = known_info(t.user_scenario, customer, world)
    ins = t.user_scenario.instructions
    criteria = t.evaluation_criteria or Tau2Criteria(reward_basis=[])  # no criteria: τ²-bench scores it 1
    unsupported_criteria(t.id, criteria.model_dump())
    return Task(
        id=t.id,
        world=world_name or (world.name if world else "tau2_retail"),
        customer_user_id=customer,
        user_script=UserScript(
            goal=ins.reason_for_call if isinstance(ins, Tau2Instructions) else ins,
            known=known,
            messes=messes,
            instructions=instructions_text(t.user_scenario),
            scenario=scenario_of(t.user_scenario),
        ),
        gold_actions=[
            Action(name=a.name, arguments=a.arguments, requestor=a.requestor, compare_args=a.compare_args)
            for a in criteria.actions or []
        ],
        rubric=list(criteria.nl_assertions or []),
        provenance=Provenance(source="tau2"),
        evaluation=Evaluation(
            communicate_info=[str(x) for x in criteria.communicate_info or []],
            nl_assertions=list(criteria.nl_assertions or []),
            reward_basis=None if criteria.reward_basis is None else list(criteria.reward_basis),
        ),
        initial_state=t.initial_state,
    )


# ---- loading ---------------------------------------------------------------------------------------------------
def _read_json(path: Path, required: bool = True) -> Any:
    if not path.exists():
        if required:
            raise Tau2FormatError(f"{path}: file not found")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise Tau2FormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def _where(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"field {'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"


def read_tau2_domain(path: str | Path, domain: Domain, name: str | None = None) -> Tau2Domain:
    """Load a τ²-bench domain directory under `domain`; the world is named `name` or after the directory. Callers
    outside the domain use `pipeline.domains.retail.worlds.load_tau2_domain`."""
    path = Path(path)
    if not path.is_dir():
        raise Tau2FormatError(f"{path}: not a domain directory")
    policy_file = path / "policy.md"
    if not policy_file.exists():
        raise Tau2FormatError(f"{policy_file}: file not found")
    policy = policy_file.read_text(encoding="utf-8")
    world = RetailWorld.from_json(path / "db.json", policy=policy, name=name or path.resolve().name, domain=domain)

    tasks_file = path / "tasks.json"
    raw_tasks = _read_json(tasks_file)
    if not isinstance(raw_tasks, list):
        raise Tau2FormatError(f"{tasks_file}: expected a JSON list of tasks, got {type(raw_tasks).__name__}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_tasks):
        try:
            parsed = Tau2Task.model_validate(raw)
        except ValidationError as exc:
            task_id = raw.get("id") if isinstance(raw, dict) else None
            raise Tau2FormatError(f"{tasks_file}: task [{i}] (id {task_id!r}): {_where(exc)}") from None
        if parsed.id in seen:
            raise Tau2FormatError(f"{tasks_file}: task [{i}]: field id: duplicate task id {parsed.id!r}")
        seen.add(parsed.id)
        task = convert_task(parsed, world)
        if task.customer_user_id is None:
            log.warning("%s: task %s: no customer could be inferred; replay runs unauthenticated", tasks_file, task.id)
        tasks.append(task)

    splits_file = path / "split_tasks.json"
    splits = _read_json(splits_file, required=False) or {}
    if not isinstance(splits, dict) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in splits.values()
    ):
        raise Tau2FormatError(f"{splits_file}: expected an object of split name → list of task ids")
    for split, ids in splits.items():
        unknown = sorted(set(ids) - seen)
        if unknown:
            raise Tau2FormatError(f"{splits_file}: field {split}: unknown task ids {unknown[:5]}")
    return Tau2Domain(world=world, tasks=tasks, policy=policy, splits=splits)


# ---- replay ----------------------------------------------------------------------------------------------------
def replay_task(world: RetailWorld, task: Task) -> dict:
    """One task's gold end state: the records that differ from the base world and the gold calls refused."""
    session = replay_gold(world, task)
    changed = session.changed()
    return {
        "task_id": task.id,
        "changed": {table: changed[table] for table in ("orders", "users", "products")},
        "failed_actions": [event.name for event in session.log if not event.ok],
    }
