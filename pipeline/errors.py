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

An error is typed where it is raised: a branch itself (`raise InputError(f"{path}: ...")`, the message naming the
file, field or option), or a module's subclass where a caller must tell it from its siblings (`ParamsError`,
`WorldLoadError`, `ToolError`...). A third-party library's own error (transformers failing to read a checkpoint,
Ray's client missing) is converted where agentloop calls it. The branches are not builtins: catch them by name.
The older subclasses also keep the builtin they replaced (`ValueError`, `LookupError`, `RuntimeError`...), and
`pipeline.world.tables.RecordError` stays a `KeyError`, whose quoted message a tool records in its trajectory.

Builtins are left to bugs: `NotImplementedError` for a hook a subclass must write, `TypeError` / `ValueError` for a
precondition a developer broke (an impossible branch, a function called with arguments it refuses), and one
raised and caught within a module as a parser's signal. The CLI turns any `AgentloopError` into one line and exit
code 2 (`pipeline.cli.errors`), a stage script too (`pipeline.loop.entry`); anything else keeps its traceback.
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
