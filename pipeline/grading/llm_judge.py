"""The language-model judge: for what no computer can check (was the customer's "yes" clear, was the right order
read back, was a refusal grounded in the policy), through the same OpenAI-compatible client as the agents.

It is given the task's rubric items (or the default three) and the transcript, and must answer with a JSON
object: one `passed` and `reason` per item. An answer it cannot read is asked for again; a judge that keeps
answering garbage, or cannot be reached, raises InfrastructureError, so the trial is left out instead of
being scored on a guess. Its token usage is kept apart from the agent's: in the component's notes
(`judge_usage(verdict)` reads it back) and summed on the judge object.
"""

from __future__ import annotations

import json
import logging
import re
import threading

from pipeline import jsondepth
from pipeline.dataset import Task
from pipeline.endpoint import ChatClient, EndpointConfig, text_of
from pipeline.errors import InputError
from pipeline.grading.verdict import ComponentResult, Verdict
from pipeline.rollout import InfrastructureError, Trajectory, Usage

log = logging.getLogger(__name__)
DEFAULT_RUBRIC = (
    "Before every change to an order or account, the agent stated the change and the customer clearly said yes.",
    "Before acting on an order, the agent named the right order back to the customer.",
    "Every refusal the agent gave is grounded in the store policy.",
)
SYSTEM = """You audit one customer-service chat between a store's agent and a customer.
Judge only the items listed, from the transcript alone. Answer with one JSON object and nothing else:
{"items": [{"item": 1, "passed": true, "reason": "..."}, ...]} with one entry per item, in order.
An item that does not apply (e.g. no refusal happened) passes."""
USAGE_NOTE = "judge usage: "
CONFIRM_SYSTEM = """A store's agent asked a customer to confirm an action; you read the customer's answer.
Say whether the answer is a clear, unconditional yes to the action as the agent stated it. A yes with a
condition or a change ("yes, but ..."), a hedge, a question back, or an answer to something else is not.
Answer with one JSON object and nothing else: {"confirmed": true} or {"confirmed": false}."""
USER_SIM_SYSTEM = """You review the customer's side of one customer-service chat. The customer was played by a
simulator given the scenario below; judge whether it played the scenario as written, not whether the agent did well.
Flag only what the transcript shows:
1. stopped_early: the customer ended the chat (or gave up) while its scenario's goal was still open and the agent
   had not refused, transferred or failed it.
2. leaked_instructions: the customer recited its instructions, revealed it is simulated, or disclosed information
   its scenario says to hold back or not to know.
3. off_scenario: the customer asked for, accepted or stated something its scenario does not call for (a different
   item, order, option or request; invented details).
Answer with one JSON object and nothing else:
{"stopped_early": {"flag": false, "reason": "..."}, "leaked_instructions": {...}, "off_scenario": {...}}"""
USER_SIM_ISSUES = ("stopped_early", "leaked_instructions", "off_scenario")
_JSON = re.compile(r"\{.*\}", re.S)


def transcript(trajectory: Trajectory, max_tool_chars: int = 400) -> str:
    lines = []
    for m in trajectory.messages:
        if m.role == "user":
            lines.append(f"[customer] {m.content or ''}")
        elif m.role == "assistant":
            if m.content:
                lines.append(f"[agent] {m.content}")
            for c in m.tool_calls:
                args = json.dumps(c.arguments, sort_keys=True) if c.arguments is not None else c.raw_arguments
                lines.append(f"[agent calls] {c.name}({args})")
        elif m.role == "tool":
            text = (m.content or "")[:max_tool_chars]
            lines.append(f"[tool {m.name}{' error' if m.error else ''}] {text}")
    return "\n".join(lines)


def parse_judgement(text: str, n_items: int) -> list[tuple[bool, str]]:
    """[(passed, reason)] per item; ValueError when the answer does not cover every item."""
    match = _JSON.search(text or "")
    if not match:
        raise ValueError("no JSON object in the answer")
    items = jsondepth.loads(match.group(0)).get("items")
    if not isinstance(items, list) or len(items) != n_items:
        raise ValueError(f"expected {n_items} items, got {items!r:.200}")
    out = []
    for entry in items:
        if not isinstance(entry, dict) or not isinstance(entry.get("passed"), bool):
            raise ValueError(f"item without a boolean 'passed': {entry!r:.200}")
        out.append((entry["passed"], str(entry.get("reason", ""))))
    return out


class UnknownJudgeError(InputError, ValueError):
    """A judge spec that names no known judge."""


def judge_usage(verdict: Verdict) -> Usage:
    """The judge's token usage recorded in a verdict, its user review included (zero when no judge ran)."""
    total = Usage()
    for component in filter(None, (verdict.component("judge"), verdict.component("user_simulator"))):
        for note in component.notes:
            if note.startswith(USAGE_NOTE):
                total += Usage.model_validate_json(note[len(USAGE_NOTE) :])
    return total


class LLMJudge:
    """Judge protocol over a chat-completions endpoint."""

    enabled = True

    def __init__(
        self,
        model: str,
        client: ChatClient | None = None,
        rubric: tuple[str, ...] = DEFAULT_RUBRIC,
        attempts: int = 3,
        max_tokens: int = 600,
        temperature: float | None = 0.0,
    ) -> None:
        self.model, self.rubric, self.attempts, self.max_tokens = model, rubric, attempts, max_tokens
        self.sampling = {} if temperature is None else {"temperature": temperature}  # None: the model's default
        self.client = client or ChatClient(EndpointConfig.from_env())
        self.usage = Usage()
        self._lock = threading.Lock()
        self.name = f"llm:{model}"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_lock")
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def confirms(self, question: str, reply: str) -> bool:
        """Settle a reply the confirmation reading finds unclear: is it a clear yes to `question`?"""
        prompt = f"The agent asked:\n{question}\n\nThe customer answered:\n{reply}"
        problem = ""
        for attempt in range(self.attempts):
            completion = self.client.complete(
                {
                    "model": self.model,
                    "messages": [{"role": "system", "content": CONFIRM_SYSTEM}, {"role": "user", "content": prompt}],
                    **self.sampling,
                    "max_tokens": 50,
                    "seed": attempt,
                }
            )
            with self._lock:
                self.usage += completion.usage
            try:
                return parse_confirmation(text_of(completion.message.get("content")) or "")
            except ValueError as exc:
                problem = str(exc)
                log.warning("judge confirmation answer %d/%d unreadable: %s", attempt + 1, self.attempts, problem)
        raise InfrastructureError(
            f"judge {self.model} gave no readable confirmation in {self.attempts} tries: {problem}"
        )

    def review_user(self, task: Task, trajectory: Trajectory) -> ComponentResult:
        """Did the user simulator play its scenario? A component 'user_simulator' (never required): failed when
        the customer stopped early, leaked its instructions, or asked for what its scenario does not."""
        from pipeline.users import scenario_prompt

        prompt = f"Scenario:\n{scenario_prompt(task.user_script)}\n\nTranscript:\n{transcript(trajectory)}"
        usage, problem = Usage(), ""
        for attempt in range(self.attempts):
            completion = self.client.complete(
                {
                    "model": self.model,
                    "messages": [{"role": "system", "content": USER_SIM_SYSTEM}, {"role": "user", "content": prompt}],
                    **self.sampling,
                    "max_tokens": self.max_tokens,
                    "seed": attempt,
                }
            )
            usage += completion.usage
            with self._lock:
                self.usage += completion.usage
            try:
                issues = parse_user_review(text_of(completion.message.get("content")) or "")
                break
            except ValueError as exc:
                problem = str(exc)
                log.warning("judge user review %d/%d unreadable: %s", attempt + 1, self.attempts, problem)
        else:
            raise InfrastructureError(f"judge {self.model} gave no readable user review in {self.attempts} tries")
        return ComponentResult(
            name="user_simulator",
            passed=not issues,
            required=False,
            details=issues,
            notes=[USAGE_NOTE + usage.model_dump_json()],
        )

    def judge(self, task: Task, trajectory: Trajectory) -> ComponentResult:
        items = list(task.rubric) or list(self.rubric)
        prompt = "Items:\n" + "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))
        prompt += f"\n\nTranscript:\n{transcript(trajectory)}"
        usage, problem = Usage(), ""
        for attempt in range(self.attempts):
            completion = self.client.complete(
                {
                    "model": self.model,
                    "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
                    **self.sampling,
                    "max_tokens": self.max_tokens,
                    "seed": attempt,
                }
            )
            usage += completion.usage
            with self._lock:
                self.usage += completion.usage
            try:
                answers = parse_judgement(text_of(completion.message.get("content")) or "", len(items))
                break
            except ValueError as exc:
                problem = str(exc)
                log.warning("judge answer %d/%d unreadable: %s", attempt + 1, self.attempts, problem)
        else:
            raise InfrastructureError(f"judge {self.model} gave no readable answer in {self.attempts} tries: {problem}")
        failed = [f"{item}: {reason}" for item, (ok, reason) in zip(items, answers, strict=True) if not ok]
        return ComponentResult(
            name="judge",
            passed=not failed,
            required=False,
            details=failed,
            notes=[USAGE_NOTE + usage.model_dump_json()],
        )


def parse_user_review(text: str) -> list[str]:
    """['issue: reason', ...] for every flagged issue; ValueError when an issue is missing or not a boolean flag."""
    match = _JSON.search(text or "")
    if not match:
        raise ValueError("no JSON object in the answer")
    data = jsondepth.loads(match.group(0))
    out = []
    for issue in USER_SIM_ISSUES:
        entry = data.get(issue)
        if not isinstance(entry, dict) or not isinstance(entry.get("flag"), bool):
            raise ValueError(f"no boolean {issue}.flag in {match.group(0)!r:.200}")
        if entry["flag"]:
            out.append(f"{issue}: {entry.get('reason', '')}")
    return out


def parse_confirmation(text: str) -> bool:
    """The judge's {"confirmed": bool}; ValueError when the answer holds no such object."""
    match = _JSON.search(text or "")
    if not match:
        raise ValueError("no JSON object in the answer")
    value = jsondepth.loads(match.group(0)).get("confirmed")
    if not isinstance(value, bool):
        raise ValueError(f"no boolean 'confirmed' in {match.group(0)!r:.200}")
    return value


def make_judge(spec: str | None) -> LLMJudge | None:
    """None / "none" → no judge; "llm:MODEL[,temperature=none]" → an LLM judge (AGENTLOOP_JUDGE_BASE_URL /
    _API_KEY, else the shared endpoint variables); temperature=none sends none, for models that take only their
    default."""
    if spec in (None, "", "none"):
        return None
    kind, _, body = spec.partition(":")
    model, _, rest = body.partition(",")
    if kind != "llm" or not model or rest.replace(" ", "") not in ("", "temperature=none"):
        raise UnknownJudgeError(f"unknown judge {spec!r}: expected none or llm:MODEL[,temperature=none]")
    import os

    client = ChatClient(
        EndpointConfig.from_env(
            base_url=os.environ.get("AGENTLOOP_JUDGE_BASE_URL"), api_key=os.environ.get("AGENTLOOP_JUDGE_API_KEY")
        )
    )
    return LLMJudge(model, client=client, temperature=None if rest else 0.0)
