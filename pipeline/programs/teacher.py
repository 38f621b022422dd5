"""Verified conversations replayed through an agent program, so training data is the calls the program itself makes.

A program builds its own prompts (its system prompt, its tool schemas, its message layout); a model trained on
conversations rendered in agentloop's prompt would be trained on prompts it is never served. `replay_through_program`
plays each gold (verified) trajectory through the program instead: the program runs its own tool loop in the
episode, exactly as at measure time (the same harness, the same scripted customer on the same seed, the tools over
MCP, the model calls through the episode's model proxy), while its model is a `GoldTeacher` — an OpenAI-compatible
endpoint that answers each call with the gold conversation's next assistant step (its tool calls, or its reply).
The proxy records every call the program made; an episode that passes grading and used the gold's every step,
each after the message it followed in the gold, is kept with its `model_calls`, which `agentloop train sft`
renders as SFT examples (`render: model_calls`, `pipeline.train.sft_calls`).

Episodes play one at a time (the teacher holds one gold conversation). What is dropped is counted: a program that
asked for a step the gold does not have or asked out of order (`diverged`), an episode that did not pass its task
(`failed`), or that infrastructure ended (`infra_error`).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pipeline.dataset import Task
from pipeline.endpoint import call_to_openai
from pipeline.errors import InputError
from pipeline.grading import grade
from pipeline.programs.agent import ProgramAgent, with_settings
from pipeline.programs.proxy import ProxyUnavailableError
from pipeline.rollout import Limits, Message, Trajectory, User, run_episode
from pipeline.world import World, load_world

log = logging.getLogger(__name__)
TEACHER_MODEL = "gold-teacher"


class ReplayError(InputError):
    """Replay through a program asked for what it cannot do (a spec that is not a program, a gold without task)."""


def gold_steps(gold: Trajectory) -> list[tuple[Message | None, Message]]:
    """The gold's assistant steps in order, each with the message it answered (the customer's or a tool result)."""
    steps: list[tuple[Message | None, Message]] = []
    before: Message | None = None
    for message in gold.messages:
        if message.role == "assistant":
            steps.append((before, message))
        before = message
    return steps


def _answer(message: Message, model: str, index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    finish = "stop"
    if message.tool_calls:
        out["tool_calls"] = [
            {**call_to_openai(c), "id": c.id or f"call_{index}_{n}"} for n, c in enumerate(message.tool_calls)
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-gold-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": out, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _follows(request_last: dict[str, Any] | None, before: Message | None) -> bool:
    """Whether the program's last message is the one the gold step answered (a customer's text, or a tool result)."""
    if before is None or request_last is None:
        return before is None
    if before.role == "user":
        content = request_last.get("content")
        text = content if isinstance(content, str) else str(content)
        return request_last.get("role") == "user" and (before.content or "").strip() in text
    return request_last.get("role") == before.role


class GoldTeacher:
    """An OpenAI-compatible model (`/v1/chat/completions`, `/v1/models`) answering with one gold conversation's
    assistant steps in order (`play(gold)` loads it). A call asked past the end, or after another message than the
    one the step answered, is refused (409) and marks the replay `diverged`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[tuple[Message | None, Message]] = []
        self.used = 0
        self.diverged: str | None = None
        self.base_url: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def play(self, gold: Trajectory) -> None:
        with self._lock:
            self._steps, self.used, self.diverged = gold_steps(gold), 0, None

    @property
    def finished(self) -> bool:
        """Every step of the gold was asked for, in order, and nothing else."""
        return self.diverged is None and self.used == len(self._steps)

    async def _chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        messages = body.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else None
        with self._lock:
            if self.diverged is None and self.used >= len(self._steps):
                self.diverged = f"call {self.used + 1}: the gold conversation has {len(self._steps)} steps"
            elif self.diverged is None and not _follows(last, self._steps[self.used][0]):
                want = self._steps[self.used][0]
                self.diverged = f"call {self.used + 1}: asked after {last!r:.120}, the gold step answers {want!r:.120}"
            if self.diverged is not None:
                return JSONResponse({"error": {"message": self.diverged, "type": "invalid_request_error"}}, 409)
            step, index = self._steps[self.used][1], self.used
            self.used += 1
        return JSONResponse(_answer(step, str(body.get("model") or TEACHER_MODEL), index))

    async def _models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": TEACHER_MODEL, "object": "model"}]})

    def start(self) -> str:
        """Serve on 127.0.0.1 (a free port) in a daemon thread; its base URL (…/v1)."""
        import uvicorn

        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise ProxyUnavailableError(f"GoldTeacher: the server on 127.0.0.1:{port} did not start")
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._server = self._thread = None

    def __enter__(self) -> GoldTeacher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Replayed:
    """What replaying gave: the kept trajectories (each with the program's `model_calls`) and what was dropped."""

    trajectories: list[Trajectory] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"kept": 0, "diverged": 0, "failed": 0, "infra_error": 0, "no_task": 0}
    )
    dropped: list[str] = field(default_factory=list)
    """One line per dropped gold: task/trial and why."""


def replay_through_program(
    spec: str,
    world: World,
    golds: Sequence[Trajectory],
    tasks: Sequence[Task],
    user: User,
    limits: Limits | None = None,
) -> Replayed:
    """Play each gold trajectory through the program `spec` (`program:MODULE:FACTORY[,…]`: its model endpoint,
    `base_url` or `serve`, is replaced by the teacher), each on its own task, trial and seed with `user`; the
    episodes kept."""
    agent = ProgramAgent(with_settings(spec, base_url=None, serve=None, max_tokens=None))  # the teacher's
    by_id = {t.id: t for t in tasks}
    out = Replayed()
    with GoldTeacher() as teacher:
        agent.base_url = teacher.base_url
        agent.model = agent.model or TEACHER_MODEL
        for gold in golds:
            where = f"{gold.task_id}/{gold.trial}"
            task = by_id.get(gold.task_id)
            if task is None:
                out.counts["no_task"] += 1
                out.dropped.append(f"{where}: no such task")
                continue
            teacher.play(gold)
            traj = run_episode(world, task, agent, user, trial=gold.trial, seed=gold.seed, limits=limits)
            verdict = grade(world, task, traj, limits=limits)
            if traj.infra_error or verdict.infra_error:
                why, reason = "infra_error", traj.error or "infrastructure"
            elif not teacher.finished:
                why, reason = "diverged", teacher.diverged or f"used {teacher.used} of the gold's steps"
            elif not verdict.passed:
                why, reason = "failed", "the replayed episode did not pass its task"
            else:
                out.trajectories.append(traj)
                out.counts["kept"] += 1
                continue
            out.counts[why] += 1
            out.dropped.append(f"{where}: {why}: {reason}")
            log.info("replay %s dropped: %s: %s", where, why, reason)
    log.info("replayed %d gold conversations through %s: %s", len(golds), spec, out.counts)
    return out


def replay_in_their_worlds(
    spec: str, golds: Sequence[Trajectory], tasks: Sequence[Task], user: User, limits: Limits | None = None
) -> Replayed:
    """`replay_through_program` of gold trajectories from any worlds, each in its own (loaded by name)."""
    out = Replayed()
    for world_name, domain in sorted({(g.world, g.domain) for g in golds}):
        mine = [g for g in golds if (g.world, g.domain) == (world_name, domain)]
        part = replay_through_program(spec, load_world(world_name, domain), mine, tasks, user, limits)
        out.trajectories += part.trajectories
        out.dropped += part.dropped
        for key, value in part.counts.items():
            out.counts[key] += value
    return out
