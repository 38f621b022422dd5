"""The OpenAI-compatible HTTP API of `agentloop serve`: /v1/chat/completions with tools, /v1/models, /health.

Errors use OpenAI's shape (`{"error": {"message", "type", "code"}}`) and status codes: 400 for a bad request
(a malformed message or tool schema names its field) or a prompt longer than the context (vLLM's wording, which
clients detect), 401 without the API key when one is set, 404 for an unknown model name, 413 for a body over
the size bound, 408 for a request not received in full within the read timeout, 503 while the server is at
its connection limit; every reply conforms to the served OpenAPI schema (`/openapi.json`). A conversation whose
user text alone cannot fit the context is refused before it waits for the generation slot.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from pipeline.endpoint import call_to_openai, request_conversation
from pipeline.errors import InputError
from pipeline.serve.connections import DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S, bounded_protocol
from pipeline.serve.engine import Engine, Generation, GenerationParams, Limiter, PromptTooLongError
from pipeline.serve.guard import DEFAULT_MAX_REQUEST_BYTES, Guard, check_exposure, fewest_prompt_tokens
from pipeline.serve.responses import ChatCompletionOut, Health, ModelList, errors
from pipeline.serve.schema import ChatRequest

log = logging.getLogger(__name__)


class APIError(InputError):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.code = status, message, kind, code


def _error(
    status: int, message: str, kind: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "code": code}}, headers=headers
    )


def _documented_errors(app: FastAPI) -> None:
    """The OpenAPI schema as served: FastAPI's default 422 replaced by the 400 this server answers instead."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            for item in schema.get("paths", {}).values():
                for operation in item.values():
                    operation.get("responses", {}).pop("422", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(
    engine: Engine,
    max_concurrency: int = 1,
    default_max_tokens: int = 256,
    api_key: str | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> FastAPI:
    """The API around `engine`; `api_key` (None: no key) is demanded as `Authorization: Bearer <key>`."""
    app = FastAPI(title="agentloop serve", version="1")
    app.add_middleware(Guard, api_key=api_key, max_bytes=max_request_bytes)
    limiter = Limiter(max_concurrency)
    _error_handlers(app)
    common = (401, 405, 408, 413, 503)

    @app.get("/health", response_model=Health, responses=errors(405, 408, 413, 503))
    def health() -> dict[str, str]:
        return {"status": "ok", "model": engine.name}

    @app.get("/v1/models", response_model=ModelList, response_model_exclude_none=True, responses=errors(*common))
    def models() -> dict[str, Any]:
        card: dict[str, Any] = {
            "id": engine.name,
            "object": "model",
            "owned_by": "agentloop",
            "max_model_len": engine.context,
        }
        if (version := getattr(engine, "version", None)) is not None:  # a registry alias: which version is live
            card.update(version=version, root=engine.live_model)  # type: ignore[attr-defined]
        return {"object": "list", "data": [card]}

    @app.post(
        "/v1/chat/completions",
        response_model=ChatCompletionOut,
        response_model_exclude_unset=True,  # token ids only when asked for
        responses=errors(400, 404, *common),
    )
    def chat(req: ChatRequest) -> dict[str, Any]:
        raw = _check_request(req, engine, getattr(engine, "max_token_bytes", None))
        try:
            policy, conversation, tools = request_conversation(raw, req.tool_dicts(), req.tool_choice)
        except ValidationError as exc:
            raise APIError(400, f"messages: {exc.errors()[0]['msg']}") from None
        params = GenerationParams(
            temperature=0.0 if req.temperature is None else req.temperature,
            top_p=req.top_p or 1.0,
            max_tokens=req.max_completion_tokens or req.max_tokens or default_max_tokens,
            seed=req.seed or 0,
        )
        t0 = time.perf_counter()
        with limiter:
            try:
                gen = engine.generate(conversation, tools, policy, params)
            except PromptTooLongError as exc:
                raise APIError(400, str(exc), code="context_length_exceeded") from None
        log.info("%d+%d tokens in %.3fs", gen.prompt_tokens, gen.completion_tokens, time.perf_counter() - t0)
        return _completion(
            gen.model or engine.name, gen, token_ids=(req.model_extra or {}).get("return_token_ids") is True
        )

    _documented_errors(app)
    return app


def _error_handlers(app: FastAPI) -> None:
    """Every error answered in OpenAI's shape; a request that fails validation is a 400 naming its field."""

    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.kind, exc.code)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:  # e.g. a body nested too deeply
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        return _error(exc.status_code, str(exc.detail), kind, headers=getattr(exc, "headers", None))  # e.g. Allow

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first: dict[str, Any] = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        return _error(400, f"{where}: {first['msg']}" if where else first["msg"], "invalid_request_error")


def _check_request(req: ChatRequest, engine: Engine, token_bytes: int | None) -> list[dict[str, Any]]:
    """Refuse, before the generation slot, what this server cannot answer: another model, streaming, n > 1,
    text that is not Unicode, a conversation whose text alone cannot fit the context; returns the messages."""
    if req.model != engine.name and req.model != getattr(engine, "live_model", None):
        raise APIError(
            404, f"The model `{req.model}` does not exist; this server has `{engine.name}`.", code="model_not_found"
        )
    if req.stream:
        raise APIError(400, "stream=true is not supported by agentloop serve", code="unsupported")
    if req.n != 1:
        raise APIError(400, "only n=1 is supported", code="unsupported")
    raw = req.message_dicts()
    for name, value in (("messages", raw), ("tools", req.tool_dicts())):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # "\ud800": valid JSON, not text a tokenizer can encode
            raise APIError(400, f"{name}: not valid Unicode text (a lone surrogate)") from None
    if token_bytes and (least := fewest_prompt_tokens(raw, token_bytes)) >= engine.context:
        raise APIError(
            400,
            f"This model's maximum context length is {engine.context} tokens; the prompt has at least {least}.",
            code="context_length_exceeded",
        )
    return raw


def _completion(model: str, gen: Generation, token_ids: bool = False) -> dict[str, Any]:
    """The chat.completion object of one generation; with `token_ids`, the prompt's and the completion's ids (as
    vLLM answers `return_token_ids: true`), where the engine gives them."""
    message: dict[str, Any] = {"role": "assistant", "content": gen.message.content, "tool_calls": None}
    if gen.message.tool_calls:
        message["tool_calls"] = [call_to_openai(c) for c in gen.message.tool_calls]
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": gen.finish_reason, "logprobs": None}
    out: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
            "total_tokens": gen.prompt_tokens + gen.completion_tokens,
        },
    }
    if token_ids and gen.completion_ids is not None:
        choice["token_ids"] = gen.completion_ids
    if token_ids and gen.prompt_ids is not None:
        out["prompt_token_ids"] = gen.prompt_ids
    return out


def serve(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_concurrency: int = 1,
    default_max_tokens: int = 256,
    threads: int | None = 1,
    api_key: str | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Run the API with uvicorn until interrupted.

    `read_timeout_s` and `max_connections` bound slow and numerous clients (`pipeline.serve.connections`).

    `threads`: torch threads per generation (None: torch's default). Small models decode token by token with
    tiny matrices, where extra threads only wait on each other (on a busy 2-core machine one thread was ~8x
    faster than two); parallelism comes from `max_concurrency` instead.
    """
    import torch
    import uvicorn

    if threads:
        torch.set_num_threads(threads)
    check_exposure(host, api_key)
    app = create_app(engine, max_concurrency, default_max_tokens, api_key=api_key, max_request_bytes=max_request_bytes)
    protocol = bounded_protocol(read_timeout_s, max_connections)
    uvicorn.run(app, host=host, port=port, log_level="warning", http=protocol)
