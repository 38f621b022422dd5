"""The built-in in-memory worlds as one implementation of the environment protocol (`pipeline.protocol`).

`Environment` serves one world of any `Domain` (see `pipeline.world.domain`), one episode at a time; nothing
here names a domain. The six functions, on the paths measure uses:

- `get_metadata()`: the domain, the world and its digest, the policy, each side's tools and their kinds, the
  tables with their key and owner fields;
- `init(task)`: a fresh session in the task's starting state (its set-up actions run on both sides);
- `run(call, side)`: one tool call on the side that makes it, through the same `execute` an episode uses (the
  call validated, the domain's invariants kept, a refused call changes nothing); returns the `ToolResult`;
- `state()`: the records that differ from the base world on each side, who is authenticated, the state hash;
- `query_data(table, filters)`: key → record as the session sees them now (the base world before `init`);
- `reward()`: the verdict measure's grader gives the calls made so far (replayed from the task's starting state).

`say(text, side)` adds a conversation message: the static checks read the conversation (a write needs the
customer's explicit confirmation), so a driver that wants the strict verdict says what an agent would.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from pipeline.dataset import Task, start_session
from pipeline.errors import InputError
from pipeline.grading import Judge, Tau2Config, Verdict, grade
from pipeline.protocol import (
    SIDES,
    CallRecord,
    EnvironmentMetadata,
    EnvironmentState,
    Reward,
    Side,
    TableSchema,
    ToolResult,
)
from pipeline.rollout import CustomerCall, Limits, Message, ToolCall, Trajectory, not_run_message, run_tool_call
from pipeline.world import (
    Domain,
    Session,
    World,
    domain_label,
    domain_spec,
    dump_record,
    filter_field_problem,
    load_world,
    resolve_domain,
)

CALL_FIELDS: tuple[str, ...] = ("name", "arguments", "id", "raw_arguments")
"""The fields a call given as a mapping may have."""
DRIVER = "environment"
"""The agent and user names a facade-driven trajectory records."""


class EnvironmentUsageError(InputError, ValueError):
    """A facade used out of order or with a world, task or side it does not serve; the message names which."""


class Environment:
    """One world of one domain behind the six functions (see the module docstring).

    `domain` is a domain name or `module:attribute` (resolved by the registry); `world` a `World` of that domain
    or a reference the domain reads (a τ²-bench directory, a db.json, a generated-world name); `task`, when given,
    starts a session at once. `limits`, `judge` and `tau2` are what the grader is given, as in measure.
    """

    def __init__(
        self,
        domain: str | Domain,
        world: str | World,
        task: Task | None = None,
        *,
        limits: Limits | None = None,
        judge: Judge | None = None,
        tau2: Tau2Config | None = None,
        verdict: Literal["strict", "tau2"] = "strict",
    ) -> None:
        _expect("domain", domain, (str, Domain), "a domain name, module:attribute or a Domain")
        _expect("world", world, (str, World), "a World or a world reference (a directory, a db.json, a name)")
        _expect("task", task, (Task, Mapping, type(None)), "a Task, its JSON object, or None")
        _expect("limits", limits, (Limits, type(None)), "a Limits or None")
        _expect("judge", judge, (Judge, type(None)), "a Judge (with a judge(task, trajectory) method) or None")
        _expect("tau2", tau2, (Tau2Config, type(None)), "a Tau2Config or None")
        _one_of("verdict", verdict, ("strict", "tau2"))
        self.domain = resolve_domain(domain) if isinstance(domain, str) else domain
        self.world = load_world(world, domain_spec(self.domain)) if isinstance(world, str) else world
        if self.world.domain.name != self.domain.name:
            raise EnvironmentUsageError(
                f"world {self.world.name!r} belongs to domain {domain_label(self.world.domain)!r},"
                f" not {domain_label(self.domain)!r}"
            )
        self.limits, self.judge, self.tau2, self.verdict_kind = limits or Limits(), judge, tau2, verdict
        self.task: Task | None = None
        self.session: Session | None = None
        self.trajectory: Trajectory | None = None
        self._authenticated: str | None = None
        self._calls = 0
        self._first_event = 0
        if task is not None:
            self.init(task)

    # ---- the six functions --------------------------------------------------------------------------------------
    def get_metadata(self) -> EnvironmentMetadata:
        user_tools = self.world.user_tools
        return EnvironmentMetadata(
            domain=domain_spec(self.domain),
            world=self.world.name,
            world_digest=self.world.fingerprint,
            policy=self.world.policy,
            tools=self.world.tools.schemas(),
            tool_kinds={name: spec.kind for name, spec in self.world.tools.tools.items()},
            user_tools=user_tools.schemas() if user_tools is not None else [],
            user_tool_kinds={name: spec.kind for name, spec in user_tools.tools.items()} if user_tools else {},
            tables={name: self._table_schema(name, record) for name, record in self.domain.tables.items()},
            user_tables={name: self._table_schema(name, record) for name, record in self.domain.user_tables.items()},
            identity_fields=list(self.domain.identity_fields()),
            scores=False,  # reward() is the loop's own grader: nothing to add beside its verdict
        )

    def init(
        self, task: Task | Mapping[str, Any] | None = None, *, authenticated_user_id: str | None = None
    ) -> EnvironmentState:
        """A fresh session in `task`'s starting state (its set-up actions run, on both sides); its state. `task` is
        a Task or its JSON object; None starts from the base world.

        `authenticated_user_id` is whom the session starts authenticated as: None, as in measure, leaves it to the
        agent's identity tool; the task's `customer_user_id` replays as its gold actions are replayed."""
        _expect("task", task, (Task, Mapping, type(None)), "a Task, its JSON object, or None")
        _expect("authenticated_user_id", authenticated_user_id, (str, type(None)), "a user id (a string) or None")
        if task is not None and not isinstance(task, Task):
            try:
                task = Task.model_validate(dict(task))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(map(str, first["loc"])) or "task"
                raise EnvironmentUsageError(f"task: field {where}: {first['msg']}") from None
        if task is not None and task.world != self.world.name:
            raise EnvironmentUsageError(
                f"task {task.id!r}: field world is {task.world!r}, but this environment serves {self.world.name!r}"
            )
        self.close()
        self.session = start_session(self.world, task, authenticated_user_id=authenticated_user_id)
        self.task, self._authenticated, self._calls = task, authenticated_user_id, 0
        self._first_event = len(self.session.log)
        self.trajectory = Trajectory(
            task_id=task.id if task is not None else "",
            agent=DRIVER,
            user=DRIVER,
            world=self.world.name,
            domain=domain_spec(self.domain),
        )
        return self.state()

    def run(self, call: ToolCall | Mapping[str, Any], side: Side = "assistant") -> ToolResult:
        """One tool call on `side` ('assistant': the agent; 'user': the customer's own tools, dual control); what
        the caller reads (`content`, `error`, `category`). A tool the side does not hold, bad arguments, a broken
        rule or the agent's tool-call budget used up (`limits.max_tool_calls`) come back as errors, changing nothing.

        `call` is a ToolCall or a mapping with `name` and `arguments` (and optionally `id`)."""
        session, trajectory = self._started("run")
        _one_of("side", side, SIDES)
        call = self._tool_call(call, len(trajectory.messages) + len(trajectory.customer_calls))
        logged = len(session.log)
        if side == "user":
            result = run_tool_call(session, call, requestor="user")
            trajectory.customer_calls.append(CustomerCall(at=len(trajectory.messages), call=call, result=result))
        else:
            trajectory.messages.append(Message(role="assistant", tool_calls=[call]))
            if self._calls >= self.limits.max_tool_calls:
                result = not_run_message(call)
            else:
                result = run_tool_call(session, call)
                self._calls += 1
            trajectory.messages.append(result)
        category = session.log[-1].error_category if len(session.log) > logged and result.error else None
        return ToolResult(content=result.content or "", error=result.error, category=category)

    def state(self) -> EnvironmentState:
        session, _ = self._started("state")
        changed = session.changed()
        user_tables = set(self.domain.user_tables)
        return EnvironmentState(
            world_digest=self.world.fingerprint,
            changed={table: records for table, records in changed.items() if table not in user_tables},
            user_changed={table: records for table, records in changed.items() if table in user_tables},
            authenticated_user_id=session.authenticated_user_id,
            transferred=session.transferred,
            hash=session.state_hash(),
        )

    def query_data(
        self, table: str, filters: Mapping[str, Any] | Callable[[Any], bool] | None = None
    ) -> dict[str, dict]:
        """key → record (τ²-bench JSON) of `table`'s records matching `filters` ({dotted.field: value}, all must
        hold, or a predicate on the record), in key order: as the session sees them now, or the base world before
        `init`."""
        _expect("table", table, str, "a table name (a string)")
        if table not in self.world.table_names:
            raise EnvironmentUsageError(f"unknown table {table!r}; tables are {', '.join(self.world.table_names)}")
        if filters is None:
            match: Callable[[Any], bool] = lambda record: True  # noqa: E731
        elif callable(filters):
            match = filters
        elif isinstance(filters, Mapping):
            wanted = dict(filters)
            record_type = {**self.domain.tables, **self.domain.user_tables}.get(table)
            for path in wanted:
                if record_type is not None and (problem := filter_field_problem(table, record_type, path)):
                    raise EnvironmentUsageError(problem)
            match = lambda record: all(_field(record, k) == v for k, v in wanted.items())  # noqa: E731
        else:
            _expect("filters", filters, Mapping, "a mapping {dotted.field: value}, a predicate or None")
        if self.session is None:
            records = self.world.table(table)
            found = [(key, records[key]) for key in sorted(records)]
        else:
            found = [(key, self.session.get(table, key)) for key in self.session.keys(table)]
        kept: dict[str, dict] = {}
        for key, record in found:
            try:
                keep = match(record)
            except Exception as exc:  # noqa: BLE001 - the caller's predicate: any error it raises is named, typed
                raise EnvironmentUsageError(
                    f"filters: the predicate raised {type(exc).__name__} ({reprlib.repr(str(exc))}) on {table}/{key};"
                    f" it is given the record object ({type(record).__name__}: fields as attributes)"
                ) from exc
            if keep:
                kept[key] = dump_record(record)
        return kept

    def reward(self) -> Reward:
        """The grader's verdict on the calls (and words) so far, as a reward: 1.0 when the verdict this facade was
        built with ('strict' or 'tau2') passes; `info` holds the verdict (see `verdict()`)."""
        verdict = self.verdict()
        passed = verdict.outcome(self.verdict_kind)
        return Reward(
            reward=1.0 if passed else 0.0,
            info={"verdict_kind": self.verdict_kind, "verdict": verdict.model_dump(mode="json")},
        )

    def verdict(self) -> Verdict:
        """The grader's full verdict on the episode so far, as measure grades an episode: the calls replayed from
        the task's starting state, the end state against the gold actions' one, the static and task checks, the
        env assertions."""
        session, trajectory = self._started("reward")
        if self.task is None:
            raise EnvironmentUsageError("reward() of an episode started without a task: there is nothing to grade")
        trajectory.world_log = [event.to_dict() for event in session.log]
        trajectory.final_changed = session.changed()
        trajectory.final_hash = session.state_hash()
        return grade(
            self.world,
            self.task,
            trajectory,
            self.limits,
            self.judge,
            authenticated_user_id=self._authenticated,
            tau2=self.tau2,
        )

    def calls(self) -> list[CallRecord]:
        """Every call the world executed since `init`, in order (the world's own log; set-up actions excluded)."""
        session, _ = self._started("calls")
        return [
            CallRecord(
                side="user" if event.requestor == "user" else "assistant",
                name=event.name,
                arguments=event.arguments,
                result=ToolResult(
                    content=event.content, error=not event.ok, category=event.error_category if not event.ok else None
                ),
            )
            for event in session.log[self._first_event :]
        ]

    def close(self) -> None:
        """End the episode; the session is dropped (the base world never changes)."""
        self.session, self.trajectory, self.task = None, None, None

    # ---- the conversation the checks read ---------------------------------------------------------------------
    def say(self, text: str, side: Side = "assistant") -> None:
        """A message of the conversation: the agent's words ('assistant') or the customer's ('user')."""
        _, trajectory = self._started("say")
        _expect("text", text, str, "a string")
        _one_of("side", side, SIDES)
        trajectory.messages.append(Message(role=side, content=text))

    def _table_schema(self, name: str, record_type: type[BaseModel]) -> TableSchema:
        """A table's schema, with the field that holds each record's key and the one naming its owner where one
        field does so for every record of the base world."""
        records = self.world.table(name)
        dumped = {key: dump_record(record) for key, record in records.items()}
        key_field = _common_field(dumped, lambda key, record: key)
        owners = {key: self.domain.owner(name, record) for key, record in records.items()}
        owner_field = None
        if any(owner is not None for owner in owners.values()):
            owner_field = _common_field(dumped, lambda key, record: owners[key])
        return TableSchema(record=record_type.model_json_schema(), key=key_field, owner=owner_field)

    # ---- internals ----------------------------------------------------------------------------------------------
    def _started(self, what: str) -> tuple[Session, Trajectory]:
        if self.session is None or self.trajectory is None:
            raise EnvironmentUsageError(f"{what}() before init(task): no session is running")
        return self.session, self.trajectory

    @staticmethod
    def _tool_call(call: ToolCall | Mapping[str, Any], n: int) -> ToolCall:
        if isinstance(call, ToolCall):
            return call
        _expect("call", call, Mapping, "a ToolCall or a mapping with a string 'name'")
        if unknown := sorted(map(str, set(call) - set(CALL_FIELDS))):
            raise EnvironmentUsageError(
                f"call: unknown field {', '.join(map(repr, unknown))}; a call's fields are {', '.join(CALL_FIELDS)}"
            )
        _expect("call's name", call.get("name"), str, "a tool name (a string)")
        arguments = call.get("arguments", {})
        if arguments is not None and not isinstance(arguments, Mapping):
            raise EnvironmentUsageError(f"call {call['name']!r}: field arguments must be an object, got {arguments!r}")
        if arguments is not None and (bad := [k for k in arguments if not isinstance(k, str)]):
            raise EnvironmentUsageError(
                f"call {call['name']!r}: field arguments has a key that is not a string: {bad[0]!r}"
            )
        _expect("call's id", call.get("id"), (str, type(None)), "a string or None")
        _expect("call's raw_arguments", call.get("raw_arguments"), (str, type(None)), "a string or None")
        return ToolCall(
            id=str(call.get("id") or f"call-{n}"),
            name=call["name"],
            arguments=dict(arguments) if arguments is not None else None,
            raw_arguments=call.get("raw_arguments"),
        )


def _expect(name: str, value: Any, kinds: type | tuple[type, ...], what: str) -> None:
    """The one check at the facade's boundary: `value`, the argument `name`, is one of `kinds`, else a one-line
    EnvironmentUsageError naming the argument, what it expects and what it got."""
    if not isinstance(value, kinds) or (isinstance(value, str) and not value and kinds is not str):
        raise EnvironmentUsageError(f"argument {name}: expected {what}, got {_shown(value)}")


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise EnvironmentUsageError(f"{name} {_shown(value)}: expected one of {', '.join(map(repr, allowed))}")


def _shown(value: Any) -> str:
    """A value in a one-line message: its type and a short repr."""
    return f"{type(value).__name__} {reprlib.repr(value)}" if not isinstance(value, str) else reprlib.repr(value)


def _field(record: Any, path: str) -> Any:
    value = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    return value


def _common_field(records: Mapping[str, dict], wanted: Callable[[str, dict], Any]) -> str | None:
    """The first top-level field (or one level down, dotted) whose value is `wanted(key, record)` in every record
    where that is not None; None when no field is, or the table is empty."""
    paths: list[str] | None = None
    for key, record in records.items():
        value = wanted(key, record)
        if value is None:
            continue
        here = [
            f"{field}.{inner}" if inner else field
            for field, sub in record.items()
            for inner in ([""] if not isinstance(sub, dict) else ["", *sub])
            if (sub.get(inner) if inner else sub) == value
        ]
        paths = here if paths is None else [p for p in paths if p in here]
        if not paths:
            return None
    return paths[0] if paths else None
