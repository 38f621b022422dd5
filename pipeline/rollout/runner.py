"""The episode runner: agent ↔ simulated user ↔ tools, with limits and termination reasons."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from pipeline.dataset import Task, start_session
from pipeline.errors import InputError
from pipeline.rollout.persona import persona_for
from pipeline.rollout.protocols import (
    Agent,
    AgentEpisode,
    EpisodeInfo,
    InfrastructureError,
    OwnToolLoop,
    User,
    UserEpisode,
    UserReply,
)
from pipeline.rollout.trajectory import (
    PROGRAM_FAILURES,
    CustomerCall,
    Message,
    Termination,
    Timings,
    ToolCall,
    Trajectory,
    Usage,
    customer_view,
)
from pipeline.strict import Strict
from pipeline.world import Session, ToolEvent, World, domain_spec, execute

log = logging.getLogger(__name__)
MALFORMED = "malformed_arguments"  # the error category of a call whose arguments are not a JSON object
# what the agent reads for a call past the episode's tool-call budget: it never reached the world
NOT_RUN = "Error: not run: this episode's tool-call budget is used up"
# what an agent running its own tool loop reads for a call made once its episode reached its turn limit (or after
# its turn was over): it never reached the world, and the trajectory does not record it
TURN_OVER = "Error: not run: this episode has reached its turn limit"


class Limits(Strict):
    """Bounds on one episode."""

    max_turns: int = Field(default=40, ge=1, description="Assistant + user messages before the turn limit.")
    max_tool_calls: int = Field(default=30, ge=1, description="Tool calls allowed (a static check, too).")
    max_steps_per_turn: int = Field(default=12, ge=1, description="Tool calls in a row before the agent must speak.")


@dataclass
class AgentTurn:
    """What an episode waits on: its agent's next message after `messages`."""

    episode: AgentEpisode
    messages: list[Message]


def run_episode(
    world: World,
    task: Task,
    agent: Agent,
    user: User,
    *,
    trial: int = 0,
    seed: int = 0,
    limits: Limits | None = None,
    session: Session | None = None,
) -> Trajectory:
    """Run one episode to its end and return the trajectory; never raises for agent mistakes."""
    steps = episode_steps(world, task, agent, user, trial=trial, seed=seed, limits=limits, session=session)
    try:
        turn = next(steps)
        while True:
            try:
                msg = turn.episode.act(turn.messages)
            except InfrastructureError as exc:
                turn = steps.throw(exc)
            else:
                turn = steps.send(msg)
    except StopIteration as done:
        return done.value


def episode_steps(
    world: World,
    task: Task,
    agent: Agent,
    user: User,
    *,
    trial: int = 0,
    seed: int = 0,
    limits: Limits | None = None,
    session: Session | None = None,
) -> Generator[AgentTurn, Message, Trajectory]:
    """One episode as a generator: it yields each time it needs the agent's next message and is sent that message
    (or thrown the InfrastructureError that prevented it); it returns the trajectory.

    Driving many of these at once is how a worker keeps episodes in flight and batches their agent steps
    (`pipeline.trials.batch`); `run_episode` drives one.
    """
    limits = limits or Limits()
    info, traj = _episode_start(world, task, agent, user, trial, seed)
    try:
        session = session or start_session(world, task)
    except InfrastructureError as exc:  # the environment could not open the episode
        log.warning("episode %s trial %d: infrastructure error at the start: %s", task.id, trial, exc)
        traj.termination, traj.error = "infra_error", str(exc)
        return traj
    ep = _Episode(session, traj, limits, dual=world.user_tools is not None, timings=Timings(started_at=time.time()))
    t_start = time.perf_counter()
    own: OwnToolLoop | None = None
    try:
        agent_ep = agent.start(info)
        if isinstance(agent_ep, OwnToolLoop):  # an agent program: its calls reach the session through `EpisodeTools`
            own, ep.tools, traj.tool_loop = agent_ep, EpisodeTools(ep), "agent"
            own.bind_tools(ep.tools)
        user_ep = user.start(info)
        termination: Termination | None = None
        while termination is None:
            reply, termination = _user_speaks(ep, user_ep)
            if termination is not None:
                break
            traj.messages.append(Message(role="user", content=reply.content, usage=reply.usage))
            ep.turns += 1
            if reply.stop:
                termination = reply.termination or "user_stop"
                break
            termination = yield from _agent_works(ep, agent_ep)
            if termination is None and ep.turns >= limits.max_turns:
                termination = "turn_limit"
        traj.termination = termination
    except InfrastructureError as exc:
        log.warning("episode %s trial %d: infrastructure error: %s", task.id, trial, exc)
        traj.termination = "infra_error"
        traj.error = str(exc)
    finally:
        if ep.tools is not None:
            ep.tools.close()
        if own is not None:
            own.end_episode()
    ep.timings.wall_s = time.perf_counter() - t_start
    traj.timings = ep.timings
    traj.agent_usage, traj.user_usage = ep.agent_usage, ep.user_usage
    traj.world_log = [e.to_dict() for e in session.log]
    traj.final_changed = session.changed()
    traj.final_hash = session.state_hash()
    return traj


@dataclass
class _Episode:
    """The running counts of one episode, shared by its user's and its agent's turns."""

    session: Session
    traj: Trajectory
    limits: Limits
    dual: bool  # the user has tools of their own (dual control)
    timings: Timings
    agent_usage: Usage = field(default_factory=Usage)
    user_usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0
    tools: EpisodeTools | None = None  # an agent that runs its own tool loop calls through this


class EpisodeTools:
    """One episode's agent-side tools for an agent that runs its own tool loop (an agent program: see
    `pipeline.programs`). While the agent's `act` is under way, its calls arrive here from any thread (its episode's
    MCP server) and `run` executes each in the episode's session, through `run_tool_call` as the runner does (the
    world log is the ledger). When `act` returns, the runner puts each call in the trajectory before the reply, in
    execution order, as an assistant message with the call followed by the tool message: exactly as a model agent's
    calls read, so the grader's replay, static checks and failure modes read them as any agent's.

    The episode's limits hold as for a model agent, each call counting as one assistant message: a call past the
    tool-call budget is refused with `NOT_RUN` and recorded (as the runner records a model's call past it, so the
    tool_budget check names it); once a call uses the budget up or reaches the turn's steps or the episode's turns,
    the episode ends there (`turn_limit`), as the runner would stop a model agent, and the agent's reply is not said;
    calls past such a limit, or after the turn is over (a program still running past its time), are answered
    `TURN_OVER` and not recorded. `fail` ends the episode as the agent's own failure (`PROGRAM_FAILURES`).
    """

    def __init__(self, ep: _Episode) -> None:
        self._ep = ep
        self._lock = threading.Lock()
        self._open = False
        self._steps = 0
        self._calls: list[tuple[ToolCall, Message]] = []
        self._ended: Termination | None = None
        self._why: str | None = None
        self._tool_s = 0.0
        self._recorded = 0  # calls recorded in the episode: the next call's id is call_<n + 1>

    @property
    def session(self) -> Session:
        return self._ep.session

    def record_model_calls(self, calls: list[dict[str, Any]], prompt_tokens: int, completion_tokens: int) -> None:
        """The agent's model calls, as its model proxy recorded them, into the trajectory; their tokens into the
        agent's usage."""
        self._ep.traj.model_calls = list(calls)
        self._ep.agent_usage = self._ep.agent_usage.model_copy(
            update={
                "prompt_tokens": self._ep.agent_usage.prompt_tokens + prompt_tokens,
                "completion_tokens": self._ep.agent_usage.completion_tokens + completion_tokens,
            }
        )

    def run(self, name: str, arguments: dict | None) -> tuple[Message, str | None]:
        """Execute one call of the agent's, `arguments` None when they are not a JSON object; the tool message the
        agent reads and, for a refusal, its category. Thread-safe; calls run one at a time."""
        with self._lock:
            ep, limits = self._ep, self._ep.limits
            call = ToolCall(
                id=f"call_{self._recorded + 1}",
                name=name,
                arguments=arguments,
                raw_arguments=json.dumps(arguments) if arguments is not None else None,
            )
            if not self._open:
                return Message(role="tool", content=TURN_OVER, tool_call_id=call.id, name=name, error=True), None
            if ep.tool_calls >= limits.max_tool_calls:  # past the budget: refused, recorded, the episode ends
                result = not_run_message(call)
                self._record(call, result, f"the agent made more tool calls than the budget of {limits.max_tool_calls}")
                return result, None
            if self._ended is not None:  # a turn or step limit was reached by an earlier call
                return Message(role="tool", content=TURN_OVER, tool_call_id=call.id, name=name, error=True), None
            t0 = time.perf_counter()
            before = len(ep.session.log)
            result = run_tool_call(ep.session, call)
            dt = time.perf_counter() - t0
            ep.timings.tool_s += dt
            self._tool_s += dt
            ep.tool_calls += 1
            category = ep.session.log[-1].error_category if result.error and len(ep.session.log) > before else None
            self._record(call, result, None)
            if ep.tool_calls >= limits.max_tool_calls:
                self._limit(f"the agent used up the tool-call budget of {limits.max_tool_calls}")
            elif self._steps >= limits.max_steps_per_turn:
                self._limit(f"the agent made {self._steps} tool calls in one turn (the limit)")
            elif ep.turns >= limits.max_turns:
                self._limit(f"the episode reached its turn limit of {limits.max_turns} messages")
            return result, category

    def _record(self, call: ToolCall, result: Message, over: str | None) -> None:
        self._calls.append((call, result))
        self._recorded += 1
        self._steps += 1
        self._ep.turns += 1
        if over is not None:
            self._limit(over)

    def _limit(self, why: str) -> None:
        if self._ended is None:
            self._ended, self._why = "turn_limit", f"{why}; its reply was not said"

    def fail(self, termination: Termination, why: str) -> None:
        """The agent's turn failed (`termination` one of `PROGRAM_FAILURES`); the episode ends after it."""
        if termination not in PROGRAM_FAILURES:
            raise InputError(f"EpisodeTools.fail: {termination!r} is not an agent program's failure")
        with self._lock:
            if self._ended is None or self._ended == "turn_limit":
                self._ended, self._why = termination, why

    def _begin(self) -> None:
        with self._lock:
            self._open, self._steps, self._calls, self._tool_s = True, 0, [], 0.0

    def _end(self) -> tuple[list[tuple[ToolCall, Message]], Termination | None, str | None, float]:
        """The turn is over: the calls it made, how it ended the episode (None: it did not), why, its tool time."""
        with self._lock:
            self._open = False
            return self._calls, self._ended, self._why, self._tool_s

    def close(self) -> None:
        """The episode is over: later calls are refused."""
        with self._lock:
            self._open = False


def _episode_start(
    world: World, task: Task, agent: Agent, user: User, trial: int, seed: int
) -> tuple[EpisodeInfo, Trajectory]:
    """What the agent and user are told at the start, and the empty trajectory."""
    dual = world.user_tools is not None
    persona = persona_for(task, trial)
    info = EpisodeInfo(
        task=task,
        trial=trial,
        seed=seed,
        policy=world.policy,
        tools=world.tools.schemas(),
        persona=persona,
        domain=domain_spec(world.domain),  # by origin: a plug-in named like a built-in is not the built-in
        user_tools=world.user_tools.schemas() if dual else [],
    )
    traj = Trajectory(
        task_id=task.id,
        trial=trial,
        seed=seed,
        agent=agent.name,
        user=user.name,
        persona=persona,
        world=world.name,
        domain=domain_spec(world.domain),
    )
    return info, traj


def _user_speaks(ep: _Episode, user_ep: UserEpisode) -> tuple[UserReply, Termination | None]:
    """The user's turn (with dual control, after any calls of their own tools): the reply, and the turn limit
    when the user called tools too many times in a row."""
    traj, timings, messages = ep.traj, ep.timings, ep.traj.messages
    user_steps = 0
    while True:
        t0 = time.perf_counter()
        reply = user_ep.respond(customer_view(messages, traj.customer_calls) if ep.dual else messages)
        timings.user_s += time.perf_counter() - t0
        ep.user_usage += reply.usage
        if not (ep.dual and reply.tool_calls) or reply.stop:
            return reply, None
        for call in reply.tool_calls:
            t0 = time.perf_counter()
            result = run_tool_call(ep.session, call, requestor="user")
            timings.tool_s += time.perf_counter() - t0
            traj.customer_calls.append(CustomerCall(at=len(messages), call=call, result=result))
        user_steps += 1
        if user_steps >= ep.limits.max_steps_per_turn:
            return reply, "turn_limit"


def _agent_works(ep: _Episode, agent_ep: AgentEpisode) -> Generator[AgentTurn, Message, Termination | None]:
    """The agent's turn: its messages and tool calls until it speaks to the user; a termination if the episode
    ends here (the agent stops, or a limit is reached)."""
    limits, timings, messages = ep.limits, ep.timings, ep.traj.messages
    steps = 0
    while True:
        if ep.turns >= limits.max_turns:
            return "turn_limit"
        if ep.tools is not None:
            ep.tools._begin()
        t0 = time.perf_counter()
        msg = yield AgentTurn(agent_ep, messages)
        dt = time.perf_counter() - t0
        if ep.tools is not None:  # the calls the agent made itself during its turn, before its reply
            calls, ended, why, tool_s = ep.tools._end()
            dt -= tool_s
            for call, result in calls:
                messages += [Message(role="assistant", tool_calls=[call]), result]
            if ended is not None:
                timings.agent_s += dt
                ep.traj.error = why
                return ended
        timings.agent_s += dt
        msg.latency_s = msg.latency_s if msg.latency_s is not None else dt
        if msg.usage:
            ep.agent_usage += msg.usage
        messages.append(msg)
        ep.turns += 1
        if not msg.tool_calls:
            if msg.content is None or not msg.content.strip():
                return "agent_stop"
            return None
        for call in msg.tool_calls:
            if ep.tool_calls >= limits.max_tool_calls:  # one message may ask for more than the budget holds
                messages.append(not_run_message(call))
                continue
            t0 = time.perf_counter()
            messages.append(run_tool_call(ep.session, call))
            timings.tool_s += time.perf_counter() - t0
            ep.tool_calls += 1
        steps += 1
        if ep.tool_calls >= limits.max_tool_calls:
            return "turn_limit"
        if steps >= limits.max_steps_per_turn:
            return "turn_limit"


def run_tool_call(session: Session, call: ToolCall, requestor: str = "assistant") -> Message:
    """Execute one call on the `requestor`'s side; malformed calls become tool errors the caller sees.

    A call whose arguments do not parse keeps its tool's kind in the log: a garbled write is an attempted,
    malformed write (category 'malformed_arguments'), not a step of no kind.
    """
    if call.arguments is None:
        content = f"Error: could not parse the arguments of {call.name} as a JSON object: {call.raw_arguments!r}"
        tools = session.world.tools_of(requestor)
        spec = tools.tools.get(call.name) if tools is not None else None
        session.log.append(
            ToolEvent(
                step=len(session.log),
                name=call.name,
                arguments={},
                kind=spec.kind if spec is not None else "generic",
                ok=False,
                error=content[7:],
                error_category=MALFORMED,
                authenticated_user_id=session.authenticated_user_id,
                requestor=requestor,
            )
        )
        return Message(role="tool", content=content, tool_call_id=call.id, name=call.name, error=True)
    event = execute(session, call.name, call.arguments, requestor)
    return Message(role="tool", content=event.content, tool_call_id=call.id, name=call.name, error=not event.ok)


def not_run_message(call: ToolCall) -> Message:
    """The tool message of a call past the budget: an error the agent sees; nothing ran, nothing is logged."""
    return Message(role="tool", content=NOT_RUN, tool_call_id=call.id, name=call.name, error=True)
