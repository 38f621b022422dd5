"""User simulator specs on the command line and in params.

scripted                                  the rule-based customer (default; no model)
llm:MODEL[,temperature=T,max_tokens=N]    a chat model on an OpenAI-compatible endpoint plays the customer
                                          (AGENTLOOP_USER_BASE_URL / AGENTLOOP_USER_API_KEY, else the
                                          agent's endpoint variables); temperature=none (here and for
                                          tau2-llm) leaves it out, for models that take only their default
tau2-llm:MODEL[@BASE_URL][,temperature=T,max_tokens=N,seed=S]
                                          τ²-bench's user simulator conventions: a chat model plays the task's
                                          scenario as written and ends with ###STOP### / ###TRANSFER### /
                                          ###OUT-OF-SCOPE###; BASE_URL defaults to AGENTLOOP_USER_BASE_URL,
                                          then the agent's endpoint variables; the key is AGENTLOOP_USER_API_KEY,
                                          then the agent's
"""

from __future__ import annotations

import os
from typing import Any

from pipeline.errors import InputError
from pipeline.rollout import User


class UnknownUserError(InputError, ValueError):
    """A user spec that names no known simulator, or has bad settings."""


def user_endpoint():
    """The simulator's endpoint: its own variables first, then the shared ones."""
    from pipeline.endpoint import ChatClient, EndpointConfig

    return ChatClient(
        EndpointConfig.from_env(
            base_url=os.environ.get("AGENTLOOP_USER_BASE_URL"), api_key=os.environ.get("AGENTLOOP_USER_API_KEY")
        )
    )


def _settings(spec: str, rest: str, allowed: tuple[str, ...]) -> dict[str, float]:
    """key=number settings; `temperature=none` is kept as None (the request then leaves it out)."""
    settings: dict[str, float] = {}
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in allowed:
            raise UnknownUserError(f"user {spec!r}: unknown setting {part!r} (settings: {', '.join(allowed)})")
        if key.strip() == "temperature" and value.strip().lower() == "none":
            settings["temperature"] = None  # type: ignore[assignment]
            continue
        try:
            settings[key.strip()] = float(value)
        except ValueError:
            raise UnknownUserError(f"user {spec!r}: {key!r} must be a number") from None
    return settings


def make_tau2_user(spec: str, body: str) -> User:
    from pipeline.endpoint import EndpointConfig
    from pipeline.users.tau2_llm import Tau2LLMUser

    head, _, rest = body.partition(",")
    model, _, base_url = head.partition("@")
    if not model:
        raise UnknownUserError(f"user {spec!r}: no model name (tau2-llm:MODEL[@BASE_URL])")
    settings = _settings(spec, rest, ("temperature", "max_tokens", "seed"))
    endpoint = EndpointConfig.from_env(
        base_url=base_url or os.environ.get("AGENTLOOP_USER_BASE_URL"), api_key=os.environ.get("AGENTLOOP_USER_API_KEY")
    )
    return Tau2LLMUser(
        model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        temperature=settings.get("temperature", 0.0),
        timeout_s=endpoint.timeout_s,
        max_retries=endpoint.max_retries,
        **{k: int(v) for k, v in settings.items() if k != "temperature"},
    )


def make_user(spec: str) -> User:
    kind, _, body = spec.partition(":")
    if kind == "tau2-llm":
        return make_tau2_user(spec, body)
    if kind == "scripted" and not body:
        from pipeline.users.scripted import ScriptedUser

        return ScriptedUser()
    if kind == "llm" and body:
        from pipeline.users.llm import LLMUser

        model, _, rest = body.partition(",")
        settings = _settings(spec, rest, ("temperature", "max_tokens", "max_turns", "seed"))
        ints: dict[str, Any] = {k: int(v) for k, v in settings.items() if k != "temperature"}
        return LLMUser(model, client=user_endpoint(), temperature=settings.get("temperature", 0.0), **ints)
    raise UnknownUserError(f"unknown user {spec!r}: expected scripted, llm:MODEL or tau2-llm:MODEL[@BASE_URL]")
