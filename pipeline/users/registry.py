"""User simulator specs on the command line and in params.

scripted                                  the rule-based customer (default; no model)
llm:MODEL[,temperature=T,max_tokens=N]    a chat model on an OpenAI-compatible endpoint plays the customer
                                          (AGENTLOOP_USER_BASE_URL / AGENTLOOP_USER_API_KEY, else the
                                          agent's endpoint variables)
"""

from __future__ import annotations

import os

from pipeline.rollout.protocols import User


class UnknownUserError(ValueError):
    """A user spec that names no known simulator, or has bad settings."""


def user_endpoint():
    """The simulator's endpoint: its own variables first, then the shared ones."""
    from pipeline.agents.openai_client import ChatClient, EndpointConfig

    return ChatClient(
        EndpointConfig.from_env(
            base_url=os.environ.get("AGENTLOOP_USER_BASE_URL"), api_key=os.environ.get("AGENTLOOP_USER_API_KEY")
        )
    )


def make_user(spec: str) -> User:
    kind, _, body = spec.partition(":")
    if kind == "scripted" and not body:
        from pipeline.users.scripted import ScriptedUser

        return ScriptedUser()
    if kind == "llm" and body:
        from pipeline.users.llm import LLMUser

        model, _, rest = body.partition(",")
        settings: dict[str, float] = {}
        for part in filter(None, rest.split(",")):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in ("temperature", "max_tokens", "max_turns", "seed"):
                raise UnknownUserError(f"user {spec!r}: unknown setting {part!r}")
            try:
                settings[key.strip()] = float(value)
            except ValueError:
                raise UnknownUserError(f"user {spec!r}: {key!r} must be a number") from None
        ints = {k: int(v) for k, v in settings.items() if k != "temperature"}
        return LLMUser(model, client=user_endpoint(), temperature=settings.get("temperature", 0.0), **ints)
    raise UnknownUserError(f"unknown user {spec!r}: expected scripted or llm:MODEL")
