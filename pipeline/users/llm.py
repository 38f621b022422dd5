"""The language-model customer: a chat model plays the task's user script through the OpenAI-compatible client.

The scenario given to the model is the task's own user script (goal, what the customer knows, the requests
in order with their answers, the "messes", τ²-bench's free-text instructions), and the persona sets the
tone, so a model user and the scripted user play the same customer. The model ends the conversation by
writing STOP_TOKEN. Roles are flipped for the simulator: the agent's words arrive as `user` messages and its
own earlier lines are `assistant` messages; the agent's tool traffic is not shown. Its token usage goes to
`Trajectory.user_usage`, apart from the agent's.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from pipeline.dataset import UserScript
from pipeline.endpoint import ChatClient, EndpointConfig, text_of
from pipeline.endpoint.client import ContextLengthError
from pipeline.rollout import STOP_TOKEN, EpisodeInfo, InfrastructureError, Message, UserReply, persona_for

log = logging.getLogger(__name__)

PERSONA_STYLE = {
    "terse": "You are terse: short, plain sentences, no pleasantries.",
    "chatty": "You are chatty and friendly: you greet, thank, and add a little small talk.",
    "formal": "You are formal and polite: complete sentences, no slang.",
    "anxious": "You are anxious: you hesitate, apologise, and worry about getting it right.",
}
MESSES = {
    "vague_item": "Describe items by their name and options (color, size...), never by item id.",
    "forgot_email": "You do not remember your email address; say so if asked, and offer your name and zip code.",
    "also_request": "Do not mention your last request until the earlier ones are done; then add it as an"
    " afterthought ('oh, can you also...').",
    "pushback": "When the agent refuses something, push back once and ask for an exception; then accept.",
}
SYSTEM = """You are role-playing a customer who contacts an online store's customer-service agent by chat.
Stay in character; you are the customer, never the agent.

{style}

Your scenario:
{scenario}

Rules:
- Write only the customer's next message: one to three sentences, no stage directions, no role labels.
- Give information only when the agent asks for it or it is needed, and only information from your scenario.
  Never invent ids, emails, addresses or other details; if you don't know something, say so.
- When the agent asks you to confirm an action, answer "yes" only if it matches what you want; otherwise say
  what is wrong.
- Bring up your requests in the order given, one at a time unless the scenario says otherwise.
- When every request is done or refused (and you have accepted the refusal), or you are transferred to a human
  agent, say goodbye and end your message with {stop}.
"""
OPENING = "(The chat has opened. Write your first message to the agent.)"


def scenario_text(script: UserScript) -> str:
    """The user script as prose for the simulator."""
    lines = [f"Goal: {script.goal}"]
    known = script.known
    facts = {
        "first name": known.first_name,
        "last name": known.last_name,
        "zip code": known.zip,
        "user id": known.user_id,
    }
    if known.email and not script.messes.forgot_email:
        facts["email"] = known.email
    facts.update({"name": known.name, "phone": known.phone})
    facts.update({k.replace("_", " "): str(v) for k, v in known.facts.items()})  # what else an identity tool takes
    said = [f"{k}: {v}" for k, v in facts.items() if v]
    if said:
        lines.append("What you know about yourself: " + "; ".join(said) + ".")
    for i, req in enumerate(script.requests, 1):
        head = req.vague_utterance if script.messes.vague_item and req.vague_utterance else req.utterance
        lines.append(f"Request {i}: {head}")
        if req.order_id:
            lines.append(f"  It is about order {req.order_id}.")
        for topic, answer in req.details.items():
            lines.append(f"  If asked about {topic.replace('_', ' ')}: {answer}")
        if req.expect == "refused":
            lines.append("  (The store may not allow this; accept a clear, reasoned refusal.)")
    lines += [MESSES[name] for name, on in script.messes.model_dump().items() if on]
    if script.instructions:
        lines.append(f"Further instructions: {script.instructions}")
    return "\n".join(lines)


def simulator_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation from the customer's side: the agent's text is `user`, the customer's is `assistant`."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in messages:
        if m.role == "user":
            out.append({"role": "assistant", "content": m.content or ""})
        elif m.role == "assistant" and m.content and m.content.strip():
            out.append({"role": "user", "content": m.content})
    if len(out) == 1 or out[-1]["role"] != "user":
        out.append({"role": "user", "content": OPENING if len(out) == 1 else "(The agent is waiting.)"})
    return out


class LLMUser:
    """User protocol over a chat-completions endpoint."""

    def __init__(
        self,
        model: str,
        client: ChatClient | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 200,
        max_turns: int = 30,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.max_turns, self.seed = max_turns, seed
        self.client = client or ChatClient(EndpointConfig.from_env())
        self.name = name or f"llm:{model}"

    @property
    def settings(self) -> dict:
        """What decides this user's behaviour, for the run's record (never the API key)."""
        return {
            "kind": "llm",
            "model": self.model,
            "base_url": self.client.config.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_turns": self.max_turns,
            "seed": self.seed,
        }

    def start(self, info: EpisodeInfo) -> LLMUserEpisode:
        return LLMUserEpisode(self, info)


class LLMUserEpisode:
    def __init__(self, user: LLMUser, info: EpisodeInfo) -> None:
        self.user = user
        persona = info.persona or persona_for(info.task, info.trial)
        self.system = SYSTEM.format(
            style=PERSONA_STYLE.get(persona, ""), scenario=scenario_text(info.task.user_script), stop=STOP_TOKEN
        )
        digest = hashlib.sha256(f"llm-user:{user.seed}:{info.task.id}:{info.trial}".encode()).digest()
        self.seed = int.from_bytes(digest[:4], "big") >> 1
        self.turns = 0

    def respond(self, messages: list[Message]) -> UserReply:
        u = self.user
        self.turns += 1
        body = {
            "model": u.model,
            "messages": simulator_messages(self.system, messages),
            "max_tokens": u.max_tokens,
            "seed": (self.seed + self.turns) % 2**31,
        }
        if u.temperature is not None:
            body["temperature"] = u.temperature
        try:
            completion = u.client.complete(body)
        except ContextLengthError as exc:  # the simulator's trouble is never the agent's
            raise InfrastructureError(f"user simulator {u.model}: prompt over its context: {exc}") from None
        text = (text_of(completion.message.get("content")) or "").strip()
        if not text:
            raise InfrastructureError(f"user simulator {u.model} returned an empty message")
        stop = STOP_TOKEN in text
        if not stop and self.turns >= u.max_turns:
            log.info("user simulator reached %d turns; ending the conversation", u.max_turns)
            text, stop = f"{text} {STOP_TOKEN}", True
        return UserReply(content=text, stop=stop, usage=completion.usage)
