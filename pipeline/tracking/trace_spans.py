"""One graded trial as the spans of an MLflow trace: the conversation, agent turns, tool calls and user turns.

Pure data (no store), so what a user reads in the trace view is fixed and tested here. Messages keep the OpenAI
chat shape the trajectory already has, which MLflow's trace view renders as a chat. Saved trajectories carry no
clock figures (they are byte-reproducible); the trial's start and the durations of its agent, user and tool
steps come from `timings.jsonl`, and the spans are laid end to end from them. Without timings every span starts
at the given base time and takes no time.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.rollout import Message, ToolCall, Trajectory

USER_SPAN = "USER"  # MLflow has no span type for the simulated customer; a plain, self-explaining one
_NS = 1_000_000_000


class SpanSpec(BaseModel):
    """What one span will hold; ``parent`` indexes an earlier span of the same list (None: the root)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    span_type: str
    parent: int | None = None
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    start_ns: int
    end_ns: int
    error: bool = False


def openai_message(m: Message) -> dict[str, Any]:
    """A trajectory message as an OpenAI chat message (tool-call arguments as the JSON text the model wrote)."""
    out: dict[str, Any] = {"role": m.role, "content": m.content or ""}
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.raw_arguments if c.raw_arguments is not None else json.dumps(c.arguments),
                },
            }
            for c in m.tool_calls
        ]
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        if m.name:
            out["name"] = m.name
    return out


def _tool_result(content: str | None) -> Any:
    """Tool results are JSON text in this world; shown parsed when they parse, as text otherwise."""
    if content is None:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content


def _token_usage(m: Message) -> dict[str, int] | None:
    if m.usage is None or not (m.usage.prompt_tokens or m.usage.completion_tokens):
        return None
    return {
        "input_tokens": m.usage.prompt_tokens,
        "output_tokens": m.usage.completion_tokens,
        "total_tokens": m.usage.prompt_tokens + m.usage.completion_tokens,
    }


class _Clock:
    """Durations of the trial's steps, in order, from its timings record; each step starts where the last ended."""

    def __init__(self, traj: Trajectory, timing: dict[str, Any] | None, base_s: float):
        timing = timing or {}
        n_user = sum(1 for m in traj.messages if m.role == "user")
        n_tool = sum(1 for m in traj.messages if m.role == "tool")
        self.now = int(float(timing.get("started_at") or base_s) * _NS)
        self.latencies = [float(x or 0.0) for x in timing.get("latency_s") or []]
        self.user_s = float(timing.get("user_s") or 0.0) / max(n_user, 1)
        self.tool_s = float(timing.get("tool_s") or 0.0) / max(n_tool, 1)
        self.wall_ns = int(float(timing.get("wall_s") or 0.0) * _NS)
        self.start = self.now
        self._agent_turn = 0

    def step(self, role: str) -> tuple[int, int]:
        if role == "assistant":
            i, self._agent_turn = self._agent_turn, self._agent_turn + 1
            dt = self.latencies[i] if i < len(self.latencies) else 0.0
        else:
            dt = self.user_s if role == "user" else self.tool_s
        start, self.now = self.now, self.now + int(dt * _NS)
        return start, self.now

    def end(self) -> int:
        return max(self.now, self.start + self.wall_ns)


def trial_spans(traj: Trajectory, timing: dict[str, Any] | None = None, base_s: float = 0.0) -> list[SpanSpec]:
    """Root span (the customer's opening request in; the rest of the conversation and how it ended out, so the
    trace list shows request and final answer and the chat view the whole conversation), then per message: a
    user turn, an agent turn (token usage on it), or a tool call — a child of the agent turn that made it,
    arguments in, result out."""
    clock = _Clock(traj, timing, base_s)
    conversation = [openai_message(m) for m in traj.messages]
    opening = next((i + 1 for i, m in enumerate(traj.messages) if m.role == "user"), 0)
    spans = [
        SpanSpec(
            name=f"{traj.task_id} #{traj.trial}",
            span_type="AGENT",
            inputs={"messages": conversation[:opening]},
            attributes={
                "agentloop.agent": traj.agent,
                "agentloop.user": traj.user,
                "agentloop.persona": traj.persona,
                "agentloop.world": traj.world,
                "agentloop.domain": traj.domain,
                "agentloop.seed": traj.seed,
                "agentloop.final_hash": traj.final_hash,
                "agentloop.tool_calls": len(traj.tool_calls()),
            },
            start_ns=clock.start,
            end_ns=clock.start,
            error=traj.infra_error,
        )
    ]
    calls: dict[str, tuple[int, ToolCall]] = {}  # tool-call id → (index of the agent turn that made it, call)
    agent_turns = 0
    last_agent: int | None = None
    pending: list[dict[str, Any]] = []  # what the agent has seen since its last turn
    for m in traj.messages:
        start, end = clock.step(m.role)
        if m.role == "assistant":
            agent_turns += 1
            usage = _token_usage(m)
            spans.append(
                SpanSpec(
                    name=f"agent turn {agent_turns}",
                    span_type="CHAT_MODEL",
                    parent=0,
                    inputs={"messages": pending},
                    outputs=openai_message(m),
                    attributes={"mlflow.chat.tokenUsage": usage} if usage else {},
                    start_ns=start,
                    end_ns=end,
                )
            )
            last_agent = len(spans) - 1
            calls.update({c.id: (last_agent, c) for c in m.tool_calls})
            pending = []
            continue
        pending.append(openai_message(m))
        if m.role == "user":
            spans.append(
                SpanSpec(name="user", span_type=USER_SPAN, parent=0, outputs=m.content, start_ns=start, end_ns=end)
            )
        elif m.role == "tool":
            parent, call = calls.get(m.tool_call_id or "", (last_agent or 0, None))
            args = None
            if call is not None:
                args = call.arguments if call.arguments is not None else {"raw_arguments": call.raw_arguments}
            spans.append(
                SpanSpec(
                    name=m.name or (call.name if call else "tool"),
                    span_type="TOOL",
                    parent=parent,
                    inputs=args,
                    outputs=_tool_result(m.content),
                    attributes={"agentloop.tool_call_id": m.tool_call_id},
                    start_ns=start,
                    end_ns=end,
                    error=m.error,
                )
            )
    spans[0].outputs = {"messages": conversation[opening:], "termination": traj.termination, "error": traj.error}
    spans[0].end_ns = clock.end()
    for s in spans[1:]:  # a parent must not end before its children (agent turns end before their tools ran)
        if s.parent:
            spans[s.parent].end_ns = max(spans[s.parent].end_ns, s.end_ns)
    return spans
