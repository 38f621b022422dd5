"""One root for every error agentloop raises on purpose, and one branch per boundary it guards.

    AgentloopError
    ├── InputError           a file, field, option or name the user gave is wrong (a task file, params.yaml,
    │                        an agent spec, a metrics file): the message names it
    ├── WorldError           a domain's world refuses: a tool call it rejects, data that does not load, a
    │                        capability the domain lacks
    ├── TaskError            a task cannot be set up or graded as written, or its conversation outgrows the model
    ├── InfrastructureError  an endpoint down, a timeout, a crashed worker: not the agent's fault; the trial is
    │                        retried or excluded
    ├── TrainingError        a training run that cannot go on (a non-finite loss)
    └── TrackingError        MLflow, the model registry or DVC refuses (a promotion the gate did not pass)

Each concrete error also keeps the builtin it has always been (`ValueError`, `LookupError`, `RuntimeError`,
`FileNotFoundError`...), so an `except ValueError` written against it still holds. The CLI turns any
`AgentloopError` into one line and exit code 2 (`pipeline.cli.errors`).
"""

from __future__ import annotations


class AgentloopError(Exception):
    """Raised on purpose by agentloop; its message is meant for the user, one line."""


class InputError(AgentloopError):
    """Bad input: a file, field, option or name the user gave; the message names it."""


class WorldError(AgentloopError):
    """A domain's world refuses: a tool call, its data, a capability it does not have."""


class TaskError(AgentloopError):
    """A task that cannot be set up or run as written."""


class InfrastructureError(AgentloopError, RuntimeError):
    """An endpoint down, a timeout, a crashed worker: not the agent's fault; the trial is retried or excluded."""


class TrainingError(AgentloopError):
    """A training run that cannot go on."""


class TrackingError(AgentloopError):
    """The experiment tracker, the model registry or the DVC lock refuses."""


class PromptTooLongError(InfrastructureError, ValueError):
    """A prompt that does not fit the model's context: an engine's `max_model_len` (the trial ends with this error,
    the batch goes on), a served model's context (HTTP 400), GRPO's `max_prompt_length` (the task is set aside)."""


__all__ = [
    "AgentloopError",
    "InfrastructureError",
    "InputError",
    "PromptTooLongError",
    "TaskError",
    "TrackingError",
    "TrainingError",
    "WorldError",
]
