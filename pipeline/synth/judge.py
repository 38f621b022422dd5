"""An optional judge cascade over synthesized tasks, through any OpenAI-compatible chat endpoint.

Three questions in turn, each asked only if the previous one passed: is the task executable with the
tools, is it valid (the customer's script and the gold actions agree), and is its gold outcome within the
policy. The world has already verified the task; the judge can only reject it, never add to it. Off by
default; a plain HTTP client (urllib), so no SDK is needed. An unreachable or garbled endpoint raises
`InfrastructureError`, and the caller keeps the task unjudged rather than calling it bad.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset import Task
from pipeline.errors import InputError
from pipeline.rollout import InfrastructureError

INTRO = "You check synthetic customer-service tasks for {business}."
STAGES: dict[str, str] = {
    "executability": (
        "Could an agent carry out the gold actions using only what the customer says and what the tools return?"
    ),
    "validity": (
        "Do the customer's goal and requests agree with the gold actions (same records, items, values), with "
        "nothing contradictory?"
    ),
    "policy": (
        "Check the task against the policy (below). Does the gold outcome follow the policy, including refusing "
        "what the policy forbids?"
    ),
}
ANSWER = 'Answer with JSON only: {"verdict": "pass" or "fail", "reason": "<one sentence>"}.'


class JudgeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(description="Endpoint base, e.g. http://localhost:8000/v1 (POSTs to /chat/completions).")
    model: str = Field(description="Model name sent with each request.")
    api_key_env: str | None = Field(default="OPENAI_API_KEY", description="Environment variable holding the key.")
    stages: list[str] = Field(default_factory=lambda: list(STAGES), description="Stages, in sequence.")
    timeout_s: float = Field(default=30.0, gt=0)


def describe(task: Task) -> str:
    s = task.user_script
    lines = [f"Customer goal: {s.goal}", "Requests:"]
    lines += [f"- {r.utterance} (expected: {r.expect}; details: {json.dumps(r.details)})" for r in s.requests]
    lines.append("Gold actions:")
    lines += [f"- {a.name}({json.dumps(a.arguments, sort_keys=True)})" for a in task.gold_actions]
    return "\n".join(lines)


class JudgeCascade:
    """The stages in sequence; `business` names the domain's business in the prompts (the kit's `business`)."""

    def __init__(self, config: JudgeConfig, business: str = "a customer-service desk") -> None:
        unknown = sorted(set(config.stages) - set(STAGES))
        if unknown:
            raise InputError(f"unknown judge stage(s) {unknown}; known: {list(STAGES)}")
        self.config, self.business = config, business

    def ask(self, stage: str, task: Task, policy: str) -> tuple[bool, str]:
        intro = INTRO.format(business=self.business)
        system = f"{intro} {STAGES[stage]}" + (f"\n\nPolicy:\n{policy}" if stage == "policy" else "") + "\n" + ANSWER
        body = {
            "model": self.config.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": describe(task)}],
        }
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env or "", "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
                data = json.loads(resp.read().decode())
            content = data["choices"][0]["message"]["content"] or ""
        except (urllib.error.URLError, TimeoutError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise InfrastructureError(f"judge endpoint {url}: {exc}") from exc
        return parse_verdict(content)

    def first_rejection(self, task: Task, policy: str) -> tuple[str, str] | None:
        """(stage, reason) of the first stage that rejects the task, or None if every stage passes."""
        for stage in self.config.stages:
            ok, reason = self.ask(stage, task, policy)
            if not ok:
                return stage, reason
        return None


def parse_verdict(content: str) -> tuple[bool, str]:
    """A judge's answer as (passed, reason): JSON {"verdict", "reason"}, or a leading PASS / FAIL word."""
    m = re.search(r"\{.*\}", content, re.DOTALL)
    if m:
        try:
            obj = json.loads(m.group(0))
            verdict = str(obj.get("verdict", "")).strip().lower()
            if verdict in ("pass", "fail"):
                return verdict == "pass", str(obj.get("reason", ""))
        except json.JSONDecodeError:
            pass
    word = re.match(r"\W*(pass|fail)\b", content, re.IGNORECASE)
    if word:
        return word.group(1).lower() == "pass", content.strip()
    raise InfrastructureError(f"judge answer is neither JSON nor PASS/FAIL: {content[:120]!r}")
