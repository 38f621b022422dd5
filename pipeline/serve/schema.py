"""The request body of /v1/chat/completions, checked before any work: a malformed history or tool schema is a
400 naming the field, never a 500 from deep inside prompt rendering.

Messages and tools keep OpenAI's shape (extra fields such as `name` or `refusal` are accepted and ignored);
only the fields the server reads are typed. Each tool's `parameters` must be a valid JSON Schema (checked with
`jsonschema` against the draft it declares, 2020-12 by default).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class FunctionCall(BaseModel):
    """A call in the history: the name is kept as the model wrote it (even empty or unknown, which the world
    answered with a tool error), so a replayed conversation is the one that happened."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str | dict[str, Any] = Field(default="", description="JSON text (OpenAI) or an object.")


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class FunctionSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None

    @field_validator("parameters")
    @classmethod
    def _json_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        from jsonschema import exceptions, validators

        checker = validators.validator_for(value, default=validators.Draft202012Validator)
        try:
            checker.check_schema(value)
        except exceptions.SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "(root)"
            raise ValueError(f"not a valid JSON Schema at {where}: {exc.message}") from None
        return value


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: FunctionSpec


class ChatRequest(BaseModel):
    """The fields we use; other OpenAI fields (user, logprobs, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessageIn] = Field(min_length=1)
    tools: list[ToolSpec] | None = None
    tool_choice: Any = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    n: int = Field(default=1, description="Choices to generate; only 1 is supported (others: 400).")
    stream: bool = Field(default=False, description="Streaming is not supported (true: 400).")

    @field_validator("tools")
    @classmethod
    def _unique_names(cls, tools: list[ToolSpec] | None) -> list[ToolSpec] | None:
        names = [t.function.name for t in tools or []]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate tool names {dup}")
        return tools

    def message_dicts(self) -> list[dict[str, Any]]:
        return [m.model_dump(exclude_none=True) for m in self.messages]

    def tool_dicts(self) -> list[dict[str, Any]]:
        return [t.model_dump(exclude_none=True) for t in self.tools or []]
