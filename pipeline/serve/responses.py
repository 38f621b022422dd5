"""What `agentloop serve` answers, as the OpenAPI schema documents it: the success bodies (OpenAI's shapes, with
the fields this server fills) and the error body every 4xx/5xx carries, per status code.

The schema is a contract a client may check every reply against (the server is fuzzed from it, and each reply
is validated against it), so a status the server can send is listed here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ErrorDetail(BaseModel):
    message: str = Field(description="What was wrong, naming the field where one is at fault.")
    type: str = Field(description="OpenAI's error type: invalid_request_error, authentication_error, server_error.")
    code: str | None = Field(default=None, description="A machine-readable reason, e.g. context_length_exceeded.")


class ErrorResponse(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: Literal["ok"]
    model: str = Field(description="The served model's name.")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    owned_by: str
    max_model_len: int = Field(description="The model's context in tokens.")
    version: str | None = Field(
        default=None, description="Served from a registry alias: the registered version live now."
    )
    root: str | None = Field(
        default=None, description="Served from a registry alias: the live version's name, as replies name it."
    )


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class FunctionCallOut(BaseModel):
    name: str
    arguments: str = Field(description="The call's arguments as JSON text.")


class ToolCallOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None
    type: Literal["function"] = "function"
    function: FunctionCallOut


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length", "tool_calls"]
    logprobs: None = None
    token_ids: list[int] | None = Field(
        default=None,
        description="The token ids sampled, the stop token included; only when the request asked"
        " `return_token_ids: true` (vLLM's field).",
    )


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletionOut(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    prompt_token_ids: list[int] | None = Field(
        default=None, description="The prompt's token ids; only when the request asked `return_token_ids: true`."
    )


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: each status with the error body and what it means."""
    meaning = {
        400: "A malformed request (the message names the field), or a prompt longer than the context.",
        401: "Missing or wrong API key (only when the server has one).",
        404: "Unknown model name.",
        405: "Method not allowed on this path.",
        408: "The request was not received in full within the server's read timeout.",
        413: "Request body over the server's size bound.",
        503: "The server is at its connection limit; retry later.",
    }
    return {s: {"model": ErrorResponse, "description": meaning[s]} for s in statuses}
