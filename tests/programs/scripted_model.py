"""A scripted OpenAI-compatible model server for the tests: a real uvicorn on 127.0.0.1 whose chat completions follow
a fixed script (tool calls, then a final text), recording each request it was sent.

Each script step is a function of the request body that returns an answer: `tool_call(name, args)` and `text(s)`
build chat completions; `status(code)` an error; `sleep(s)` a slow answer. `token_ids=True` makes it answer as vLLM
does when asked (`return_token_ids`: ids per choice and of the prompt; `logprobs: true`: log-probabilities)."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Step = Callable[[dict[str, Any]], tuple[int, Any]]

MODEL = "scripted"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _completion(message: dict[str, Any], finish: str, body: dict[str, Any], vllm_ids: bool) -> dict[str, Any]:
    words = len(json.dumps(message).split())
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    answer: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", MODEL),
        "choices": [choice],
        "usage": {"prompt_tokens": 7, "completion_tokens": words, "total_tokens": 7 + words},
    }
    if vllm_ids and body.get("return_token_ids"):
        choice["token_ids"] = list(range(100, 100 + words))
        answer["prompt_token_ids"] = [1, 2, 3, 4, 5, 6, 7]
    if vllm_ids and body.get("logprobs"):
        choice["logprobs"] = {"content": [{"token": f"t{i}", "logprob": -0.5, "bytes": None} for i in range(words)]}
    return answer


def tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> Callable[..., tuple[int, Any]]:
    counter = itertools.count()

    def step(body: dict[str, Any], vllm_ids: bool = False) -> tuple[int, Any]:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id or f"call_{name}_{next(counter)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        }
        return 200, _completion(message, "tool_calls", body, vllm_ids)

    return step


def text(content: str) -> Callable[..., tuple[int, Any]]:
    def step(body: dict[str, Any], vllm_ids: bool = False) -> tuple[int, Any]:
        return 200, _completion({"role": "assistant", "content": content}, "stop", body, vllm_ids)

    return step


def status(code: int, message: str = "scripted failure") -> Callable[..., tuple[int, Any]]:
    def step(body: dict[str, Any], vllm_ids: bool = False) -> tuple[int, Any]:
        return code, {"error": {"message": message, "type": "server_error" if code >= 500 else "invalid_request_error"}}

    return step


class ScriptedModel:
    """The server. `script` is consumed one step per chat completion; past its end the last step repeats."""

    def __init__(self, script: list[Callable[..., tuple[int, Any]]], *, vllm_ids: bool = False, delay: float = 0.0):
        self.script, self.vllm_ids, self.delay = list(script), vllm_ids, delay
        self.requests: list[dict[str, Any]] = []
        self.refuse_fields: set[str] = set()
        self.refuse_status = 400
        self.port = free_port()
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)
        assert self.server.started, "the scripted model server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    async def _models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]})

    async def _chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append({"body": body, "authorization": request.headers.get("authorization")})
        refused = sorted(self.refuse_fields & set(body))
        if refused:
            return JSONResponse({"error": {"message": f"unknown fields {refused}"}}, status_code=self.refuse_status)
        if self.delay:
            await asyncio.sleep(self.delay)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        code, answer = step(body, self.vllm_ids)
        return JSONResponse(answer, status_code=code)
