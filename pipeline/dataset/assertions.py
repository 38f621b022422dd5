"""Env assertions: checks on the final state of either side, run through the domain's assertion functions.

Generic over domains: a task names each check by side and function (`EnvAssertion`); the domain provides the
functions (`Domain.env_assertions`). A check the domain does not know, or whose arguments do not fit, is not met
and says why.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pipeline.dataset.task import EnvAssertion
from pipeline.world import Session


class AssertionResult(BaseModel):
    """One env assertion checked on a state."""

    model_config = ConfigDict(extra="forbid")

    env_type: str
    func_name: str
    arguments: dict = Field(default_factory=dict)
    assert_value: bool = True
    met: bool = Field(description="The function returned `assert_value`.")
    error: str | None = Field(default=None, description="Why the check could not run, if it could not.")


def known_assertions(domain) -> set[tuple[str, str]]:
    """(side, name) of every assertion function the domain provides."""
    return {(side, name) for side, funcs in domain.env_assertions().items() for name in funcs}


def check_assertion(session: Session, assertion: EnvAssertion) -> AssertionResult:
    func = session.world.domain.env_assertions().get(assertion.env_type, {}).get(assertion.func_name)
    base = assertion.model_dump(exclude={"message"})
    if func is None:
        error = f"domain {session.world.domain.name!r} has no {assertion.env_type}-side assertion {assertion.func_name}"
        return AssertionResult(**base, met=False, error=error)
    try:
        value = func(session, **assertion.arguments)
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is not met
        return AssertionResult(**base, met=False, error=f"{type(exc).__name__}: {exc}")
    return AssertionResult(**base, met=bool(value) == assertion.assert_value)


def check_assertions(session: Session, assertions: list[EnvAssertion]) -> list[AssertionResult]:
    return [check_assertion(session, a) for a in assertions]
