"""A language-model customer with τ²-bench's conventions: it plays the task's scenario as written.

τ²-bench gives its user simulator a set of general guidelines plus the task's scenario (persona, reason for call,
known and unknown info, task instructions) and nothing of ours: no store persona, no hash-chosen tone, no request
list. The simulator sees the agent's words as the other side of the chat (roles flipped; tool traffic hidden),
opens after the agent's greeting, and ends the chat with one of three signals: ###STOP### (goal reached or given
up), ###TRANSFER### (handed to a human), ###OUT-OF-SCOPE### (the scenario does not say what to do next). Each
signal becomes its own termination reason (`USER_SIGNALS`).

With dual control (a domain whose customer holds tools, such as telecom's phone) the simulator is given those tools
through the same endpoint and τ²-bench's conventions for a customer with tools (our wording): it acts on its
phone when the agent asks, one action at a time, and answers from what its tools return. Its own calls and their
results are in its view of the chat; the agent's calls are not.

It talks to any OpenAI-compatible endpoint through the official `openai` SDK. The guideline text here is our
own wording of those conventions. Settings (model, endpoint, sampling, a digest of the guidelines) are in
`settings`, which the measure run records in usage.json.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any, overload

from pipeline.dataset import Scenario, UserScript
from pipeline.endpoint import call_from_openai, call_to_openai, text_of
from pipeline.rollout import (
    USER_SIGNALS,
    EpisodeInfo,
    InfrastructureError,
    Message,
    Termination,
    ToolCall,
    Usage,
    UserReply,
)

if TYPE_CHECKING:
    from pipeline.endpoint import ChatClient

log = logging.getLogger(__name__)

GREETING = "Hi! How can I help you today?"
GUIDELINES = """You are the customer in a chat with a customer-service agent. Play the scenario below; you are
never the agent.

How to play:
- Write one message at a time, as the customer would type it. No role labels, no narration.
- Follow the scenario's instructions closely. What the scenario does not tell you, you do not know: never
  invent names, ids, numbers or preferences; say you don't know or don't have it.
- Put things in your own words; do not recite the scenario.
- Give information a piece at a time, when the agent asks for it or when it is needed to move on.
- Keep the persona the scenario gives you, if it gives one, all the way through.

Ending the chat (write the signal at the end of your last message):
- When what you wanted is done, or you accept that it cannot be done, write {stop}.
- When the agent transfers you to a human or another agent, write {transfer}.
- When the conversation reaches a point your scenario gives you no way to handle, write {out_of_scope}.
"""
TOOLS_GUIDELINES = """
You also hold a device (your phone) with tools of your own:
- When the agent asks you to check or do something on your phone, do it with your tools: one action at a time,
  exactly what was asked, then tell the agent what you saw, in your own words.
- Never claim you did something you did not do with a tool, and never make up what a tool would show: answer
  only from what your tools returned.
- Do not act on your phone unasked, except to check whether your issue is solved.
- The agent cannot see your phone, only what you write.
"""
SECTIONS = (
    ("Persona", "persona"),
    ("Domain", "domain"),
    ("Reason for call", "reason_for_call"),
    ("Known info", "known_info"),
    ("Unknown info", "unknown_info"),
    ("Task instructions", "task_instructions"),
)


def scenario_prompt(script: UserScript) -> str:
    """The scenario as the task gives it: τ²-bench's sections, else its free text, else our user script as prose."""
    sc: Scenario | None = script.scenario
    if sc is not None:
        parts = [f"{title}:\n{value}" for title, key in SECTIONS if (value := getattr(sc, key))]
        if sc.text:
            parts.append(f"Instructions:\n{sc.text}")
        if parts:
            return "\n\n".join(parts)
    if script.instructions:
        return script.instructions
    from pipeline.users.llm import scenario_text

    return scenario_text(script)


def system_prompt(script: UserScript, with_tools: bool = False) -> str:
    stop, transfer, out = USER_SIGNALS
    guidelines = GUIDELINES.format(stop=stop, transfer=transfer, out_of_scope=out)
    if with_tools:
        guidelines += TOOLS_GUIDELINES
    return f"{guidelines}\n<scenario>\n{scenario_prompt(script)}\n</scenario>"


def flipped(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The chat from the customer's side: the agent's text as `user`, the customer's as `assistant`; the customer's
    own tool calls (dual control: 'user' messages with tool_calls) as the assistant's, their results as `tool`."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": GREETING}]
    own: set[str] = set()
    for m in messages:
        if m.role == "user" and m.tool_calls:
            own.update(c.id for c in m.tool_calls)
            out.append(
                {"role": "assistant", "content": m.content, "tool_calls": [call_to_openai(c) for c in m.tool_calls]}
            )
        elif m.role == "user":
            out.append({"role": "assistant", "content": m.content or ""})
        elif m.role == "tool" and m.tool_call_id in own:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""})
        elif m.role == "assistant" and not m.tool_calls and m.content and m.content.strip():
            out.append({"role": "user", "content": m.content})
    return out


def signal_of(text: str) -> Termination | None:
    """The termination the earliest stop signal in `text` means, or None."""
    found = [(text.find(token), reason) for token, reason in USER_SIGNALS.items() if token in text]
    return min(found)[1] if found else None


class Tau2LLMUser:
    """User protocol: a chat model plays τ²-bench scenarios through an OpenAI-compatible endpoint."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 512,
        seed: int = 0,
        timeout_s: float = 120.0,
        max_retries: int = 5,
    ) -> None:
        self.model, self.base_url, self.api_key = model, base_url, api_key
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.name = f"tau2-llm:{model}"
        self._client: ChatClient | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """What decides this user's behaviour, for the run's record (never the API key)."""
        return {
            "kind": "tau2-llm",
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "guidelines_sha256": hashlib.sha256(GUIDELINES.encode()).hexdigest()[:16],
        }

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}  # the HTTP client is rebuilt where the user is unpickled

    @property
    def client(self):
        """The shared endpoint client (`pipeline.endpoint.client`): its deadlines and retry policy."""
        if self._client is None:
            from pipeline.endpoint import ChatClient, EndpointConfig

            self._client = ChatClient(  # the deadline and bounds from the environment, as for every endpoint
                EndpointConfig.from_env(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout_s=self.timeout_s,
                    max_retries=self.max_retries,
                )
            )
        return self._client

    def start(self, info: EpisodeInfo) -> Tau2LLMUserEpisode:
        return Tau2LLMUserEpisode(self, info)

    @overload
    def complete(self, messages: list[dict[str, Any]], seed: int, tools: None = None) -> tuple[str, Usage]: ...

    @overload
    def complete(
        self, messages: list[dict[str, Any]], seed: int, tools: list[dict]
    ) -> tuple[str, Usage, list[ToolCall]]: ...

    def complete(
        self, messages: list[dict[str, Any]], seed: int, tools: list[dict] | None = None
    ) -> tuple[str, Usage] | tuple[str, Usage, list[ToolCall]]:
        """(text, usage), and the tool calls asked for when `tools` were offered."""
        from pipeline.endpoint.errors import ContextLengthError

        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens, "seed": seed}
        if tools:
            body["tools"] = tools
        if self.temperature is not None:
            body["temperature"] = self.temperature
        try:
            completion = self.client.complete(body)
        except (InfrastructureError, ContextLengthError) as exc:  # the simulator's trouble is never the agent's
            raise InfrastructureError(f"user simulator {self.model} at {self.base_url}: {exc}") from None
        text = (text_of(completion.message.get("content")) or "").strip()
        if not tools:
            return text, completion.usage
        calls = [
            call_from_openai(c, f"user_call_{seed}_{i}")
            for i, c in enumerate(completion.message.get("tool_calls") or [])
            if isinstance(c, dict)
        ]
        return text, completion.usage, calls


class Tau2LLMUserEpisode:
    def __init__(self, user: Tau2LLMUser, info: EpisodeInfo) -> None:
        self.user = user
        self.tools = list(info.user_tools)
        self.system = system_prompt(info.task.user_script, with_tools=bool(self.tools))
        digest = hashlib.sha256(f"tau2-user:{user.seed}:{info.task.id}:{info.trial}".encode()).digest()
        self.seed = int.from_bytes(digest[:4], "big") >> 1
        self.turns = 0

    def respond(self, messages: list[Message]) -> UserReply:
        self.turns += 1
        seed = (self.seed + self.turns) % 2**31
        if self.tools:
            text, usage, calls = self.user.complete(flipped(self.system, messages), seed, self.tools)
            if calls:  # acting on the phone: the results come back to the simulator, not to the agent
                return UserReply(content=text, usage=usage, tool_calls=calls)
        else:
            text, usage = self.user.complete(flipped(self.system, messages), seed)
        if not text:
            raise InfrastructureError(f"user simulator {self.user.model} returned an empty message")
        reason = signal_of(text)
        if reason:
            log.debug("user simulator ended the chat: %s", reason)
        return UserReply(content=text, stop=reason is not None, usage=usage, termination=reason)
