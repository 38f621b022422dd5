"""Tasks as data: what the customer wants, how they behave, and the gold actions that define success.

The expected end state is never stored: it is computed by replaying `gold_actions` in the world.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SerializerFunctionWrapHandler, model_serializer

from pipeline.strict import Strict

Persona = Literal["terse", "chatty", "formal", "anxious"]
PERSONAS: tuple[str, ...] = Persona.__args__  # type: ignore[attr-defined]
Source = Literal["eval", "synthesized", "curated", "tau2"]
Fact = str | int | float | bool
"""A scalar a customer can state about themselves."""


class Action(Strict):
    """One tool call: a gold action, or a call replayed from a trajectory."""

    name: str = Field(description="Tool name, as the domain's tools name it.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments by name.")
    request: int | None = Field(
        default=None, description="Index of the user-script request this action serves (None: authentication)."
    )
    requestor: Literal["assistant", "user"] | None = Field(
        default=None, description="Who makes the call (τ²-bench tasks: 'assistant' or 'user'); None: the agent."
    )
    compare_args: list[str] | None = Field(
        default=None, description="τ²-bench: the arguments an action match compares (None: all of them)."
    )


class KnownInfo(Strict):
    """What the customer can tell the agent about themselves."""

    email: str | None = Field(default=None, description="Their email, if they know it.")
    first_name: str | None = None
    last_name: str | None = None
    zip: str | None = Field(default=None, description="Zip code of their default address.")
    user_id: str | None = Field(default=None, description="Their user id, if they happen to know it.")
    phone: str | None = Field(
        default=None, description="Their phone number (telecom identifies by it); left out of the JSON when unset."
    )
    name: str | None = Field(
        default=None,
        description="Their name as one field, where their record keeps it so; left out of the JSON when unset.",
    )
    facts: dict[str, Fact] = Field(
        default_factory=dict,
        description="Whatever else an identity tool takes that they know, by its argument name (a date of birth, a"
        " member number, a PIN); left out of the JSON when empty.",
    )

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict):
            for key in ("phone", "name"):
                if data.get(key) is None:
                    data.pop(key, None)
            if not data.get("facts"):
                data.pop("facts", None)
        return data

    def stated(self) -> dict[str, Fact]:
        """Everything they can say about themselves, by the name an identity tool's argument gives it."""
        fields = {k: getattr(self, k) for k in type(self).model_fields if k != "facts"}
        return {**{k: v for k, v in fields.items() if v is not None}, **self.facts}

    @property
    def called(self) -> str | None:
        """Their name as spoken: the one-field name, else first and last name; None when their record has none."""
        if self.name:
            return self.name
        return " ".join(n for n in (self.first_name, self.last_name) if n) or None


class Request(Strict):
    """One thing the customer wants done, in the order they bring it up."""

    intent: str = Field(
        description="What kind of request this is, in the domain's words (retail: its vocabulary's `Intent`)."
    )
    utterance: str = Field(description="How the customer first states the request (persona-neutral).")
    vague_utterance: str | None = Field(
        default=None, description="A vaguer way to state it, used when the 'vague_item' mess is on."
    )
    order_id: str | None = Field(default=None, description="The order the request is about, if any.")
    record_id: str | None = Field(
        default=None,
        description="The record the request is about in a domain without orders (airline: a reservation id);"
        " left out of the JSON when unset.",
    )
    details: dict[str, str] = Field(
        default_factory=dict,
        description="Answers to the agent's questions, by topic: reason, payment_method, items, address, ...",
    )
    expect: Literal["done", "refused"] = Field(
        default="done", description="'refused' when policy requires the agent to say no."
    )

    @property
    def about(self) -> str | None:
        """The record the request names, whatever the domain calls it."""
        return self.order_id or self.record_id

    @model_serializer(mode="wrap")
    def _drop_unset_record(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and data.get("record_id") is None:
            data.pop("record_id", None)
        return data


class Messes(Strict):
    """Realistic complications the scripted customer introduces."""

    vague_item: bool = Field(default=False, description="Describes items by name/options, not ids.")
    forgot_email: bool = Field(default=False, description="Cannot give an email; offers name + zip.")
    also_request: bool = Field(
        default=False, description="Brings up the last request only after the earlier ones are done."
    )
    pushback: bool = Field(default=False, description="Pushes back once when refused.")


class Scenario(Strict):
    """A τ²-bench user scenario as written: the persona and the instructions, section by section."""

    persona: str | None = None
    domain: str | None = None
    reason_for_call: str | None = None
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str | None = None
    text: str | None = Field(default=None, description="Instructions given as one free text instead of sections.")


class EnvAssertion(Strict):
    """A check on the final state of one side (τ²-bench's env assertion): the domain's function `func_name` on the
    `env_type` side's state must return `assert_value`."""

    env_type: Literal["assistant", "user"] = Field(description="The side whose state is checked.")
    func_name: str = Field(description="The domain's assertion function, e.g. 'assert_can_send_mms'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments by name.")
    assert_value: bool = Field(default=True, description="What the function must return.")
    message: str | None = Field(default=None, description="What the assertion means, if given.")


class Evaluation(Strict):
    """τ²-bench's evaluation criteria beside the gold actions (what its reward reads)."""

    communicate_info: list[str] = Field(default_factory=list, description="Values the agent must tell the user.")
    nl_assertions: list[str] = Field(default_factory=list, description="Statements a judge checks.")
    reward_basis: list[str] | None = Field(
        default=None,
        description="Reward components multiplied: DB, ... (None: not given, τ²-bench's default DB and COMMUNICATE;"
        " []: none, the reward is 1).",
    )
    env_assertions: list[EnvAssertion] = Field(
        default_factory=list, description="Checks on the final state of either side; left out of the JSON when none."
    )

    @model_serializer(mode="wrap")
    def _drop_no_assertions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and not data.get("env_assertions"):
            data.pop("env_assertions", None)
        return data


class UserScript(Strict):
    """Everything a simulated customer needs to play their part."""

    persona: Persona | None = Field(
        default=None, description="Fixed persona; None = chosen from a hash of task id and trial."
    )
    goal: str = Field(description="The customer's goal in one or two sentences.")
    known: KnownInfo = Field(default_factory=KnownInfo)
    requests: list[Request] = Field(default_factory=list)
    messes: Messes = Field(default_factory=Messes)
    instructions: str | None = Field(
        default=None, description="Free-text scenario for language-model users (τ²-bench instructions)."
    )
    scenario: Scenario | None = Field(default=None, description="The τ²-bench scenario as written, if any.")


class OrderStatusCheck(Strict):
    kind: Literal["order_status"] = "order_status"
    order_id: str
    status: str


class NoWritesCheck(Strict):
    """No successful write at all (a request that must be refused)."""

    kind: Literal["no_writes"] = "no_writes"


class ToolBudgetCheck(Strict):
    kind: Literal["max_tool_calls"] = "max_tool_calls"
    limit: int = Field(ge=1)


class TransferCheck(Strict):
    kind: Literal["transferred"] = "transferred"
    expected: bool = True


class ToolNotCalledCheck(Strict):
    kind: Literal["tool_not_called"] = "tool_not_called"
    tool: str


class CommunicatedCheck(Strict):
    """Every value is told to the customer: it occurs, as a whole word, in an assistant message (a question's
    answer, read from the records)."""

    kind: Literal["communicated"] = "communicated"
    values: list[str] = Field(min_length=1, description="The values the agent must say.")


TaskCheck = Annotated[
    OrderStatusCheck | NoWritesCheck | ToolBudgetCheck | TransferCheck | ToolNotCalledCheck | CommunicatedCheck,
    Field(discriminator="kind"),
]


class Provenance(Strict):
    source: Source = Field(description="Where the task came from.")
    failure_mode: str | None = Field(default=None, description="Failure mode it was made to target.")
    template: str | None = Field(default=None, description="Template it was instantiated from.")
    dials: dict[str, int | bool | str] = Field(default_factory=dict, description="Difficulty dial settings.")
    depth: int = Field(default=0, ge=0, description="Evolution depth (0 = atomic).")
    parent: str | None = Field(default=None, description="Task id it evolved from.")


_UNPRINTABLE = {*map(chr, range(0x20)), "\x7f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))}


def _printable_id(value: str) -> str:
    if not value.strip():
        raise ValueError("a task id cannot be empty")
    bad = sorted({f"U+{ord(c):04X}" for c in value if c in _UNPRINTABLE})
    if bad:
        raise ValueError(f"a task id cannot hold control or bidirectional-override characters ({', '.join(bad)})")
    return value


TaskId = Annotated[str, AfterValidator(_printable_id)]


class Task(Strict):
    id: TaskId = Field(description="Unique task id: not empty, no control or bidirectional-override characters.")
    world: str = Field(description="Name of the world the task runs in, e.g. 'tau2_retail' or 'gen-7'.")
    customer_user_id: str | None = Field(
        default=None, description="The customer's user id (used to authorize gold-action replay)."
    )
    user_script: UserScript
    gold_actions: list[Action] = Field(default_factory=list)
    checks: list[TaskCheck] = Field(default_factory=list)
    rubric: list[str] = Field(default_factory=list, description="Soft items for an optional judge.")
    provenance: Provenance
    evaluation: Evaluation | None = Field(default=None, description="τ²-bench's evaluation criteria, if any.")
    initial_state: dict[str, Any] | None = Field(
        default=None, description="τ²-bench initial state (data changes and history before the chat), as given."
    )
