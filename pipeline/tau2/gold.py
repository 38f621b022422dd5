"""Gold-equivalent conversations: what a correct agent and a cooperative customer would say for a τ²-bench task.

The agent authenticates the customer (as the domain's `tau2_gold` says: retail asks for the email, or name and
zip; else the user id), makes the gold calls in order, states each write and asks before making it, tells the
customer every `communicate_info` value, and the customer ends the chat with the stop signal. The customer's
answer to each confirmation request is taken from `replies` (chosen by a hash of task and write, so the same
conversation comes out every time). They are the reference a verdict must pass, and the base that `perturb`
breaks in one way at a time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Literal, Protocol

from pipeline.dataset import Action, Task
from pipeline.errors import TaskError
from pipeline.rollout import STOP_TOKEN, Message, ToolCall, Trajectory, run_tool_call
from pipeline.world import World

Perturbation = Literal["missing_write", "wrong_argument", "extra_write", "info_not_communicated", "max_steps"]
PERTURBATIONS: tuple[str, ...] = Perturbation.__args__  # type: ignore[attr-defined]


def _pick(replies: Sequence[str], *key: object) -> str:
    digest = hashlib.sha256(":".join(map(str, key)).encode()).digest()
    return replies[int.from_bytes(digest[:4], "big") % len(replies)]


class GoldSpeech(Protocol):
    """A domain's side of the gold conversation (`Domain.tau2_gold`)."""

    def authentication(self, world: World, task: Task) -> Action | None:
        """The look-up that authenticates the task's customer, where the gold has none (None: no look-up)."""
        ...

    def identity_exchange(self, action: Action) -> list[tuple[str, str]] | None:
        """What agent and customer say before that look-up, as (role, text); None: the generic user-id question."""
        ...

    def extra_write(self, world: World, user_id: str) -> Action | None:
        """A write no task asks for, on the customer's own records (the 'extra_write' perturbation)."""
        ...


def by_user_id(world: World, task: Task) -> Action | None:
    """Authentication through an identity tool that takes the user id, when the world has one."""
    by_id = [
        n
        for n, t in world.tools.tools.items()
        if t.kind == "identity" and set(t.args_model.model_fields) == {"user_id"}
    ]
    return (
        Action(name=by_id[0], arguments={"user_id": task.customer_user_id}) if by_id and task.customer_user_id else None
    )


def _speech(world: World) -> GoldSpeech | None:
    return world.domain.tau2_gold()


def _auth_action(world: World, task: Task) -> Action | None:
    speech = _speech(world)
    return speech.authentication(world, task) if speech is not None else by_user_id(world, task)


def gold_actions(world: World, task: Task) -> list[Action]:
    """The gold calls the agent makes, with an authentication look-up first where the gold has none."""
    actions = [a for a in task.gold_actions if a.requestor != "user"]
    identity = world.tools.of_kind("identity")
    if not any(a.name in identity for a in actions):
        auth = _auth_action(world, task)
        if auth is not None:
            actions.insert(0, auth)
    return actions


def gold_conversation(
    world: World,
    task: Task,
    replies: Sequence[str] = ("Yes, please go ahead.",),
    *,
    actions: list[Action] | None = None,
    communicate: list[str] | None = None,
    trial: int = 0,
    termination: str = "user_stop",
) -> Trajectory:
    """The conversation, recorded as the episode runner records one (tools run in a fresh session)."""
    session = world.session()
    messages: list[Message] = []

    def say(role: str, text: str) -> None:
        messages.append(Message(role=role, content=text))

    speech = _speech(world)
    scenario = task.user_script.scenario
    say("user", (scenario.reason_for_call if scenario and scenario.reason_for_call else task.user_script.goal))
    writes = 0
    for k, action in enumerate(gold_actions(world, task) if actions is None else actions):
        spec = world.tools.tools.get(action.name)
        exchange = speech.identity_exchange(action) if speech is not None else None
        if exchange:
            for role, text in exchange:
                say(role, text)
        elif spec is not None and spec.kind == "identity":
            say("assistant", "Could you give me your user id?")
            say("user", f"It's {action.arguments.get('user_id')}.")
        elif spec is not None and spec.kind == "write":
            args = json.dumps(action.arguments, sort_keys=True)
            say("assistant", f"Here is what I will do: {action.name} with {args}. Would you like me to proceed?")
            say("user", _pick(replies, task.id, trial, writes))
            writes += 1
        call = ToolCall(id=f"call_{k}", name=action.name, arguments=action.arguments)
        messages.append(Message(role="assistant", tool_calls=[call]))
        messages.append(run_tool_call(session, call))
    info = task.evaluation.communicate_info if communicate is None and task.evaluation else communicate or []
    closing = "Everything you asked for is done."
    if info:
        closing += " For your information: " + "; ".join(info) + "."
    say("assistant", closing + " Is there anything else I can help you with?")
    if termination == "user_stop":
        say("user", f"No, that's all. Thank you! {STOP_TOKEN}")
    return Trajectory(
        task_id=task.id,
        trial=trial,
        agent="gold",
        user="gold",
        world=world.name,
        messages=messages,
        world_log=[e.to_dict() for e in session.log],
        final_changed=session.changed(),
        final_hash=session.state_hash(),
        termination=termination,
    )


def _extra_write(world: World, user_id: str) -> Action:
    """A write no task asks for, on the customer's own records, as the domain names one."""
    speech = _speech(world)
    action = speech.extra_write(world, user_id) if speech is not None else None
    if action is None:
        raise TaskError(f"world {world.name!r}: no write known to add as an extra write")
    return action


def perturb(world: World, task: Task, how: str, replies: Sequence[str] = ("Yes, please go ahead.",)) -> Trajectory:
    """The gold conversation broken one way (`PERTURBATIONS`); ValueError when the task has nothing to break."""
    actions = gold_actions(world, task)
    writes = [
        i for i, a in enumerate(actions) if (s := world.tools.tools.get(a.name)) is not None and s.kind == "write"
    ]
    info = task.evaluation.communicate_info if task.evaluation else []
    if how == "missing_write" and writes:
        return gold_conversation(world, task, replies, actions=[a for i, a in enumerate(actions) if i != writes[-1]])
    if how == "wrong_argument" and writes:
        i = writes[0]
        args = dict(actions[i].arguments)
        key = next((k for k in ("reason", "payment_method_id", "order_id") if k in args), sorted(args)[0])
        args[key] = (
            "no longer needed"
            if args[key] == "ordered by mistake"
            else ("ordered by mistake" if key == "reason" else f"{args[key]}x")
        )
        changed = [*actions[:i], actions[i].model_copy(update={"arguments": args}), *actions[i + 1 :]]
        return gold_conversation(world, task, replies, actions=changed)
    if how == "extra_write" and task.customer_user_id:
        return gold_conversation(world, task, replies, actions=[*actions, _extra_write(world, task.customer_user_id)])
    if how == "info_not_communicated" and info:
        return gold_conversation(world, task, replies, communicate=[])
    if how == "max_steps":
        return gold_conversation(world, task, replies, termination="turn_limit")
    if how not in PERTURBATIONS:
        raise TaskError(f"unknown perturbation {how!r}; expected one of {', '.join(PERTURBATIONS)}")
    raise TaskError(f"task {task.id}: nothing to perturb for {how!r}")
