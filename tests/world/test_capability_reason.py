"""A capability a plug-in domain lacks and the generic path cannot grow is refused saying why (the tool kind the
domain lacks) and naming the domain by the spec it was given as, like every other error about a domain."""

from __future__ import annotations

import textwrap

import click
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset import EnvAssertion
from pipeline.dataset.assertions import assertion_problem
from pipeline.world import WorldLoadError, load_world
from pipeline.world.domain import DomainCapabilityError
from pipeline.world.registry import resolve_domain

WITHOUT = """
    from pipeline.world.tools import ToolRegistry
    from tests.domains.library.domain import TOOLS, Library

    KEPT = ToolRegistry()
    KEPT.tools = {{name: spec for name, spec in TOOLS.tools.items() if spec.kind not in {kinds}}}

    class Partial(Library):
        name = {name!r}
        tools = KEPT

    LIB = Partial()
"""


@pytest.fixture
def without(tmp_path, monkeypatch):
    def write(module: str, kinds: tuple[str, ...], name: str = "library") -> str:
        source = textwrap.dedent(WITHOUT).format(kinds=set(kinds), name=name)
        (tmp_path / f"{module}.py").write_text(source)
        return f"{module}:LIB"

    monkeypatch.syspath_prepend(str(tmp_path))
    return write


@pytest.mark.parametrize(
    ("kinds", "said"),
    [
        (("identity",), "no tool of kind 'identity'"),
        (("write",), "no tool of kind 'write'"),
        (("identity", "write"), "no tool of kind 'identity' and no tool of kind 'write'"),
    ],
)
def test_tasks_generate_says_which_tool_kind_is_missing(without, tmp_path, kinds, said):
    spec = without(f"library_without_{'_'.join(kinds)}", kinds)
    out = tmp_path / "t.jsonl"
    args = ["tasks", "generate", "--world", "library", "--domain", spec, "--n", "3", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    output = click.unstyle(result.output).strip()
    assert result.exit_code == 2 and "Traceback" not in output, output
    assert len(output.splitlines()) == 1, output
    assert f"domain {spec!r} does not provide 'tasks'" in output and said in output, output


@pytest.mark.parametrize("capability", ["tasks", "synthesis", "oracle", "flaws", "user_phrasing"])
def test_every_generic_capability_says_why(without, capability):
    spec = without("library_without_identity_all", ("identity",))
    with pytest.raises(DomainCapabilityError, match=rf"domain '{spec}' .*an identity tool.*no tool of kind 'identity'"):
        resolve_domain(spec).require(capability, needed_for="this test")


def test_a_capability_the_generic_path_never_grows_gives_no_reason(without):
    spec = without("library_without_identity_vocab", ("identity",))
    with pytest.raises(DomainCapabilityError) as caught:
        resolve_domain(spec).require("tau2_importer")
    assert str(caught.value).endswith(")"), str(caught.value)  # nothing about tool kinds: it is not grown


def test_a_plug_in_named_like_a_built_in_is_named_by_its_spec(without):
    spec = without("library_named_retail", ("identity",), name="retail")
    with pytest.raises(DomainCapabilityError, match=rf"domain '{spec}' does not provide"):
        resolve_domain(spec).require("tasks")
    with pytest.raises(WorldLoadError, match=rf"domain '{spec}' cannot read the world reference 'nowhere'"):
        load_world("nowhere", spec)
    assertion = EnvAssertion(env_type="assistant", func_name="never", arguments={})
    assert f"domain {spec!r} has no assistant-side assertion" in assertion_problem(resolve_domain(spec), assertion)


def test_world_explore_says_up_front_that_no_tasks_can_be_grown(without, tmp_path):
    spec = without("library_without_identity_explore", ("identity",))
    out = str(tmp_path / "m")
    args = ["world", "explore", "--world", "library", "--domain", spec, "--customers", "4", "--out", out]
    result = CliRunner().invoke(app, args)
    output = click.unstyle(result.output)
    assert result.exit_code == 0, output
    assert f"no tasks can be generated in domain {spec!r}" in output and "no tool of kind 'identity'" in output, output


def test_world_explore_says_nothing_of_the_kind_for_a_complete_domain(tmp_path):
    spec = "tests.domains.library.domain:LIBRARY"
    out = str(tmp_path / "m")
    args = ["world", "explore", "--world", "library", "--domain", spec, "--customers", "4", "--out", out]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "no tasks can be generated" not in click.unstyle(result.output), result.output
