"""Env assertions: checks on the final state of either side, run through the domain's assertion functions.

Generic over domains: a task names each check by side and function (`EnvAssertion`); the domain provides the
functions (`Domain.env_assertions`). A check the domain does not know, or that fails while it runs, is not met and
says why. A check whose arguments its function does not take (an argument it has no parameter for, or one it
needs left out) is the task's error, not the agent's: `argument_problem` names the argument, import and validation
refuse such a task, and checking one raises `AssertionArgumentError` rather than scoring a trial 0.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset.task import EnvAssertion
from pipeline.errors import TaskError
from pipeline.world import Session, domain_label


class AssertionArgumentError(TaskError, ValueError):
    """An env assertion whose arguments its function does not take; the message names the assertion and argument."""


class AssertionResult(BaseModel):
    """One env assertion checked on a state."""

    model_config = ConfigDict(extra="forbid")

    env_type: str
    func_name: str
    arguments: dict = Field(default_factory=dict)
    assert_value: bool = True
    met: bool = Field(description="The function returned `assert_value`.")
    error: str | None = Field(default=None, description="Why the check could not run, if it could not.")


def known_assertions(domain) -> dict[tuple[str, str], Callable[..., bool]]:
    """(side, name) → function of every assertion function the domain provides."""
    return {(side, name): func for side, funcs in domain.env_assertions().items() for name, func in funcs.items()}


def argument_problem(func: Callable[..., bool], arguments: Mapping[str, object]) -> str | None:
    """Why `func(session, **arguments)` cannot be called, naming the argument; None when it can (or when the
    function's signature cannot be read)."""
    try:
        params = list(inspect.signature(func).parameters.values())[1:]  # the first is the session
    except (TypeError, ValueError):
        return None
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes = ", ".join(p.name for p in named) or "no arguments"
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        unknown = sorted(set(arguments) - {p.name for p in named})
        if unknown:
            return f"argument {unknown[0]!r} is not a parameter of {_name(func)} (it takes {takes})"
    missing = [p.name for p in named if p.default is p.empty and p.name not in arguments]
    if missing:
        return f"argument {missing[0]!r} is missing: {_name(func)} needs it (it takes {takes})"
    return None


def _name(func: Callable) -> str:
    return getattr(func, "__name__", type(func).__name__)


def assertion_problem(domain, assertion: EnvAssertion) -> str | None:
    """Why `domain` cannot check `assertion` at all: no such function on its side, or arguments it does not take."""
    func = domain.env_assertions().get(assertion.env_type, {}).get(assertion.func_name)
    if func is None:
        return f"domain {domain_label(domain)!r} has no {assertion.env_type}-side assertion {assertion.func_name!r}"
    problem = argument_problem(func, assertion.arguments)
    return f"{assertion.env_type}-side assertion {assertion.func_name!r}: {problem}" if problem else None


def check_assertion(session: Session, assertion: EnvAssertion) -> AssertionResult:
    func = session.world.domain.env_assertions().get(assertion.env_type, {}).get(assertion.func_name)
    base = assertion.model_dump(exclude={"message"})
    if func is None:
        label = domain_label(session.world.domain)
        error = f"domain {label!r} has no {assertion.env_type}-side assertion {assertion.func_name}"
        return AssertionResult(**base, met=False, error=error)
    problem = argument_problem(func, assertion.arguments)
    if problem is not None:  # the task's error: no end state could meet it, whoever played
        raise AssertionArgumentError(f"env assertion {assertion.env_type}-side {assertion.func_name!r}: {problem}")
    try:
        value = func(session, **assertion.arguments)
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is not met
        return AssertionResult(**base, met=False, error=f"{type(exc).__name__}: {exc}")
    return AssertionResult(**base, met=bool(value) == assertion.assert_value)


def check_assertions(session: Session, assertions: list[EnvAssertion]) -> list[AssertionResult]:
    return [check_assertion(session, a) for a in assertions]


def task_assertions(task, session: Session) -> list[AssertionResult]:
    """A task's env assertions checked on `session`; one its functions cannot take is the task's error, named."""
    assertions = task.evaluation.env_assertions if task.evaluation is not None else []
    try:
        return check_assertions(session, assertions)
    except AssertionArgumentError as exc:
        raise AssertionArgumentError(f"task {task.id!r}: {exc}") from None
