"""The trajectory: everything that happened in one episode, as data.

Messages follow the OpenAI chat shape (system / user / assistant / tool) so that logs from other systems
can be imported; the world's own tool log and the final state delta travel with them for grading.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from pipeline.strict import Strict

Termination = Literal[
    "agent_stop",
    "user_stop",
    "user_transfer",
    "user_out_of_scope",
    "turn_limit",
    "infra_error",
    "program_crash",
    "program_empty_reply",
    "program_timeout",
]
PROGRAM_FAILURES: dict[str, str] = {
    "program_crash": "the agent program raised an error",
    "program_empty_reply": "the agent program replied with no text",
    "program_timeout": "the agent program did not reply within its turn's time limit",
}
"""The terminations that are an agent program's own failure (an agent that runs its own tool loop, see
`pipeline.programs`), each with what it means; the trajectory's `error` says what happened. Agent failures, graded as
such: never infrastructure."""
ToolLoop = Literal["runner", "agent"]
STOP_TOKEN = "###STOP###"
# τ²-bench's user stop signals and the termination each means here; all three are the user ending the chat
# (τ²-bench records every one as USER_STOP), kept apart so that a run shows why its users left.
USER_SIGNALS: dict[str, Termination] = {
    STOP_TOKEN: "user_stop",
    "###TRANSFER###": "user_transfer",
    "###OUT-OF-SCOPE###": "user_out_of_scope",
}
USER_ENDED: tuple[str, ...] = tuple(USER_SIGNALS.values())


MODEL_CALL_CLOCK = ("started_at", "latency_s")
"""The wall-clock fields of a recorded model call, left out where a rerun must write the same bytes."""


class Usage(Strict):
    """Tokens and compute of one message or a sum of them. The cached and reasoning counts are shares of the
    prompt and completion counts (as the OpenAI API reports them); at 0 they are left out of the JSON, so records
    of models that report neither keep their bytes."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    compute_s: float = Field(default=0.0, description="Seconds spent producing this message (local models).")
    cached_prompt_tokens: int = Field(default=0, ge=0, description="Prompt tokens served from the prompt cache.")
    reasoning_tokens: int = Field(default=0, ge=0, description="Completion tokens spent on hidden reasoning.")

    @model_serializer(mode="wrap")
    def _leave_out_zero_details(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        for key in _USAGE_DETAILS:
            if not out.get(key, 1):
                del out[key]
        return out

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            compute_s=self.compute_s + other.compute_s,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


_USAGE_DETAILS = ("cached_prompt_tokens", "reasoning_tokens")


class ToolCall(Strict):
    id: str = Field(description="Call id, echoed by the tool message that answers it.")
    name: str = Field(description="Tool name as the model wrote it (may be unknown).")
    arguments: dict[str, Any] | None = Field(
        default=None, description="Parsed arguments; None when the model's JSON could not be parsed."
    )
    raw_arguments: str | None = Field(default=None, description="The arguments text as the model produced it.")


class Message(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = Field(default=None, description="For tool messages: the call answered.")
    name: str | None = Field(default=None, description="For tool messages: the tool's name.")
    error: bool = Field(default=False, description="For tool messages: the tool refused or failed.")
    raw: str | None = Field(default=None, description="For assistant messages: the model's raw text.")
    usage: Usage | None = None
    latency_s: float | None = None


class CustomerCall(Strict):
    """A call of the customer's own tools (dual control), which the agent never sees."""

    at: int = Field(ge=0, description="How many conversation messages there were when the customer made it.")
    call: ToolCall
    result: Message = Field(description="The tool message the customer read.")


def customer_view(messages: list[Message], calls: list[CustomerCall]) -> list[Message]:
    """The conversation as the customer saw it (dual control): the agent's and the customer's words, with the
    customer's own calls and results where they happened (each call a 'user' message with tool_calls, then its
    result). The agent's tool calls and results are the agent's alone and are left out."""
    out: list[Message] = []
    j = 0
    for i in range(len(messages) + 1):
        while j < len(calls) and calls[j].at == i:
            c = calls[j]
            out += [Message(role="user", tool_calls=[c.call]), c.result]
            j += 1
        if i < len(messages):
            m = messages[i]
            if m.role == "tool":
                continue
            if m.role == "assistant" and m.tool_calls:
                if not (m.content or "").strip():
                    continue
                m = m.model_copy(update={"tool_calls": []})
            out.append(m)
    return out


class Timings(Strict):
    started_at: float | None = Field(default=None, description="Unix time the episode began (for trace timelines).")
    wall_s: float = 0.0
    agent_s: float = 0.0
    user_s: float = 0.0
    tool_s: float = 0.0


class Trajectory(Strict):
    task_id: str
    trial: int = 0
    seed: int = 0
    agent: str = Field(description="Agent name (backend and model).")
    user: str = Field(description="User simulator name.")
    persona: str | None = None
    world: str = Field(description="World name the episode ran in.")
    domain: str = Field(
        default="retail", description="Domain of that world (records from before domains were named are retail)."
    )
    messages: list[Message] = Field(default_factory=list)
    world_log: list[dict[str, Any]] = Field(default_factory=list, description="The world's ToolEvent log.")
    customer_calls: list[CustomerCall] = Field(
        default_factory=list,
        description="The customer's own tool calls (dual control), in order; left out of the JSON when none.",
    )
    final_changed: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Records that differ from the base world at the end."
    )
    final_hash: str = ""
    termination: Termination = "agent_stop"
    error: str | None = Field(
        default=None,
        description="What ended the episode abnormally: the infrastructure error, or an agent program's failure or"
        " the limit it ran into.",
    )
    tool_loop: ToolLoop = Field(
        default="runner",
        description="Who ran the agent's tool calls: the runner (a model or scripted agent: it parsed and executed"
        " them) or the agent itself (an agent program, its calls delivered over its episode's MCP server, at least"
        " once); left out of the JSON for the runner.",
    )
    model_calls: list[dict[str, Any]] = Field(
        default_factory=list,
        description="An agent program's model calls as its episode's model proxy recorded them (what it sent, what"
        " was sampled, token ids where the model gave them), in order; left out of the JSON when there are none.",
    )
    agent_usage: Usage = Field(default_factory=Usage)
    user_usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)

    @model_serializer(mode="wrap")
    def _drop_no_customer_calls(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and not data.get("customer_calls"):
            data.pop("customer_calls", None)
        if isinstance(data, dict) and not data.get("model_calls"):
            data.pop("model_calls", None)
        if isinstance(data, dict) and data.get("tool_loop") == "runner":
            data.pop("tool_loop", None)
        return data

    @property
    def infra_error(self) -> bool:
        return self.termination == "infra_error"

    def without_timings(self) -> Trajectory:
        """A copy without wall-clock figures (timings, latencies, compute seconds), so that a rerun that acts
        identically writes identical bytes (DVC then sees no change downstream)."""
        messages = [
            m.model_copy(update={"latency_s": None, "usage": m.usage and m.usage.model_copy(update={"compute_s": 0.0})})
            for m in self.messages
        ]
        return self.model_copy(
            update={
                "messages": messages,
                "timings": Timings(),
                "agent_usage": self.agent_usage.model_copy(update={"compute_s": 0.0}),
                "user_usage": self.user_usage.model_copy(update={"compute_s": 0.0}),
                "model_calls": [
                    {k: v for k, v in call.items() if k not in MODEL_CALL_CLOCK} for call in self.model_calls
                ],
            }
        )

    def tool_calls(self) -> list[ToolCall]:
        return [c for m in self.messages if m.role == "assistant" for c in m.tool_calls]
