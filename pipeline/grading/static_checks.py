"""Static checks: rules every episode must keep, whatever the task asked for.

The domain's invariants (legal transitions, money ceilings: `Domain.invariants`) run first, then the
checks every domain shares. They read the world's own log (one ToolEvent dict per tool call, in call
order), the final state delta and the messages. Each returns a `ComponentResult` named after the check;
the grader prefixes 'static.'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipeline.digest import canonical_json
from pipeline.grading.confirmation import affirms as affirms  # re-exported: the rules and tests read it here
from pipeline.grading.confirmation import asks_yes_no, read_reply
from pipeline.grading.verdict import ComponentResult
from pipeline.world import StaticInput as StaticInput
from pipeline.world import World


def call_key(name: str, arguments: Mapping[str, Any] | None) -> str:
    """Identity of a tool call (name + canonical arguments), to match trajectory calls against gold actions."""
    return name + canonical_json(arguments or {})


def _result(name: str, problems: list[str], notes: list[str] | None = None) -> ComponentResult:
    return ComponentResult(name=name, passed=not problems, details=problems, notes=notes or [])


def _call(event: Mapping[str, Any]) -> str:
    return f"step {event.get('step')} {event.get('name')}({_short(event.get('arguments'))})"


def _short(arguments: Any) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in (arguments or {}).items())
    return text if len(text) <= 120 else text[:117] + "..."


def check_tool_budget(inp: StaticInput) -> ComponentResult:
    """No more tool calls asked for than the episode's budget (`Limits.max_tool_calls`), counting the calls the
    runner left unrun once the budget was used up; calls left unrun within the budget are a record's fault."""
    if inp.max_tool_calls is None:
        return _result("tool_budget", [], ["no tool-call budget set"])
    ran = len(inp.log)
    asked = sum(len(m.tool_calls) for m in inp.messages if m.role == "assistant") if inp.messages else ran
    asked = max(asked, ran)
    problems = []
    if asked > inp.max_tool_calls:
        unrun = f" ({asked - ran} not run)" if asked > ran else ""
        problems.append(f"{asked} tool calls exceed the budget of {inp.max_tool_calls}{unrun}")
    elif asked > ran:
        problems.append(f"{asked - ran} tool calls recorded as not run within the budget of {inp.max_tool_calls}")
    return _result("tool_budget", problems)


def check_authorization(inp: StaticInput) -> ComponentResult:
    """No write refused as unauthorized; private reads refused as unauthorized are only noted."""
    problems, notes = [], []
    for event in inp.log:
        if event.get("ok") or event.get("error_category") != "unauthorized":
            continue
        spec = inp.world.tools.tools.get(event.get("name", ""))
        if event.get("kind") == "write":
            problems.append(f"unauthorized write attempt: {_call(event)}: {event.get('error')}")
        elif spec is not None and spec.private:
            notes.append(f"unauthorized private read: {_call(event)}")
    return _result("authorization", problems, notes)


def check_policy_violations(inp: StaticInput) -> ComponentResult:
    """No write refused on a precondition: the agent tried something the policy forbids.

    A refused write identical to one the task's own gold actions attempt (and get refused: a few τ²-bench
    tasks do this on purpose) is excused and only noted.
    """
    problems, notes = [], []
    for e in inp.log:
        if e.get("kind") != "write" or e.get("ok") or e.get("error_category") != "precondition":
            continue
        if call_key(e.get("name", ""), e.get("arguments")) in inp.excused_writes:
            notes.append(f"refused write also in the gold actions: {_call(e)}")
        else:
            problems.append(f"write refused by policy: {_call(e)}: {e.get('error')}")
    return _result("policy_violation", problems, notes)


def check_after_transfer(inp: StaticInput) -> ComponentResult:
    """No write attempted after a successful transfer to a human agent: the conversation was handed over.

    The tools refuse such a write (category 'transferred'); one that succeeded (a log recorded before they did)
    is flagged all the same.
    """
    problems: list[str] = []
    transfer = None
    for e in inp.log:
        if transfer is None:
            if e.get("kind") == "transfer" and e.get("ok"):
                transfer = e
            continue
        if e.get("kind") == "write":
            outcome = "succeeded" if e.get("ok") else f"refused ({e.get('error_category')})"
            problems.append(f"write after the transfer at step {transfer.get('step')}: {_call(e)} {outcome}")
    return _result("after_transfer", problems)


def check_confirmation(inp: StaticInput) -> ComponentResult:
    """The policy's explicit-confirmation rule, read from the message structure.

    Each successful write must be preceded, after the previous successful write, by an assistant question
    (a text message with a '?', no tool call) answered by a user message that confirms
    (`pipeline.grading.confirmation.read_reply`). A reply it finds unclear, to a question a 'yes' can answer,
    goes to `resolve_unclear` when set — only once a write depends on it — and otherwise does not confirm.
    A later non-confirming answer withdraws the confirmation; a write consumes it, so two writes need two
    confirmations.
    """
    problems: list[str] = []
    notes: list[str] = []
    confirmed: bool | tuple[str, str] = False  # a pending (question, reply) waits for the judge
    question: str | None = None
    calls = 0
    for msg in inp.messages:
        if msg.role == "assistant" and not msg.tool_calls:
            question = msg.content if msg.content and "?" in msg.content else None
        elif msg.role == "user":
            if question is not None:
                confirmed = _reading(inp, question, msg.content or "", notes)
            question = None
        elif msg.role == "assistant":
            question = None
            for _ in msg.tool_calls:
                event = inp.log[calls] if calls < len(inp.log) else None
                calls += 1
                if event is None or event.get("kind") != "write" or not event.get("ok"):
                    continue
                if isinstance(confirmed, tuple):
                    confirmed = _settle(inp, *confirmed, notes)
                if not confirmed:
                    problems.append(f"write without explicit user confirmation: {_call(event)}")
                confirmed = False
    return _result("confirmation", problems, notes)


def _reading(inp: StaticInput, question: str, reply: str, notes: list[str]) -> bool | tuple[str, str]:
    reading = read_reply(reply, question)
    if reading.decision != "unclear":
        return reading.confirmed
    if inp.resolve_unclear is None or not asks_yes_no(question):
        if asks_yes_no(question):
            notes.append(f"unclear answer to a confirmation request, not counted as a yes: {reply[:80]!r}")
        return False
    return (question, reply)


def _settle(inp: StaticInput, question: str, reply: str, notes: list[str]) -> bool:
    settled = inp.resolve_unclear(question, reply)  # type: ignore[misc]
    notes.append(f"unclear answer settled by the judge as {'yes' if settled else 'no'}: {reply[:80]!r}")
    return settled


# the checks every domain gets; a domain's own invariants (Domain.invariants) run first
STATIC_CHECKS: dict[str, Callable[[StaticInput], ComponentResult]] = {
    "tool_budget": check_tool_budget,
    "authorization": check_authorization,
    "policy_violation": check_policy_violations,
    "after_transfer": check_after_transfer,
    "confirmation": check_confirmation,
}


def checks_for(world: World) -> dict[str, Callable[[StaticInput], ComponentResult]]:
    """The world's domain invariants, then the generic checks, by name."""
    return {**{inv.name: inv.check for inv in world.domain.invariants()}, **STATIC_CHECKS}


def run_static_checks(inp: StaticInput) -> list[ComponentResult]:
    """Every static check (the domain's invariants first), named 'static.<check>'."""
    results = []
    for name, check in checks_for(inp.world).items():
        result = check(inp)
        results.append(result.model_copy(update={"name": f"static.{name}"}))
    return results
