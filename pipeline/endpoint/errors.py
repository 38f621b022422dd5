"""What an endpoint's refusal means: retry it, end the episode (the prompt outgrew the context), or stop the run
(the endpoint rejects a setting of the request, which no retry or other trial can change).

Hosted APIs and local servers word these differently, so each test reads the error's `code` and `param` where the
server sends them and falls back to the message text.
"""

from __future__ import annotations

import datetime
import email.utils
import time
from collections.abc import Mapping
from typing import Any

from pipeline.errors import InputError, TaskError

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
CONTEXT_PHRASES = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
)
SETTING_HINTS = {
    "temperature": "temperature=none",
    "top_p": "top_p=none",
    "max_tokens": "max_tokens=none",
    "seed": "send_seed=0",
}
"""Request settings an agent spec can leave out, and the spec setting that does it."""
REFUSAL_WORDS = ("unsupported", "not supported", "does not support", "not allowed", "only the default")


class ContextLengthError(TaskError, RuntimeError):
    """The endpoint refused the prompt as longer than the model's context: the conversation, not the endpoint."""


class UnsupportedSettingError(InputError, ValueError):
    """The endpoint rejects a request setting for this model (e.g. `temperature` on a reasoning model): every
    request would fail the same way, so the run stops with the fix instead of excluding each trial."""


def error_fields(body: object) -> tuple[str, str, str]:
    """(code, param, message) of an OpenAI-style error body, lower-cased; '' for what the body lacks."""
    err: Any = body.get("error", body) if isinstance(body, Mapping) else body
    if not isinstance(err, Mapping):
        return "", "", str(err or "").lower()
    return tuple(str(err.get(k) or "").lower() for k in ("code", "param", "message"))  # type: ignore[return-value]


def is_context_overflow(status: int, body: object, text: str) -> bool:
    """A 400 (or 413) that says the prompt does not fit the model's context."""
    if status not in (400, 413):
        return False
    code, _, message = error_fields(body)
    haystack = f"{code} {message} {text.lower()}"
    return any(p in haystack for p in CONTEXT_PHRASES)


def unsupported_setting(status: int, body: object, sent: Mapping[str, Any]) -> str | None:
    """The request setting a 400 refuses (one the request carried and a spec can omit), else None."""
    if status not in (400, 422):
        return None
    code, param, message = error_fields(body)
    for name in SETTING_HINTS:
        if name not in sent:
            continue
        if param == name and code in ("unsupported_parameter", "unsupported_value", "invalid_value", ""):
            return name
        named = any(f"{q}{name}{r}" in f" {message} " for q, r in (("'", "'"), ("`", "`"), ('"', '"'), (" ", " ")))
        if named and any(w in message for w in REFUSAL_WORDS):
            return name
    return None


def setting_message(model: str, setting: str, base_url: str, detail: str) -> str:
    return (
        f"{base_url}: model {model!r} does not accept `{setting}` ({detail.strip()[:300]}); leave it out with"
        f" `{SETTING_HINTS[setting]}` in the spec that names the model, e.g. openai:{model},{SETTING_HINTS[setting]}"
        f" (an agent) or llm:{model},{SETTING_HINTS[setting]} (a user simulator or judge)"
    )


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `Retry-After` as delta-seconds or an HTTP-date."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        return max(0.0, float(lower["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000": UTC by RFC 5322
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
