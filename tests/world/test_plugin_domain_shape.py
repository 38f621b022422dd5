"""A `module:attribute` domain is checked for shape when it is loaded: each part the `Domain` boundary declares,
against its declared type, refused in one line naming the domain and the part (never a traceback later)."""

from __future__ import annotations

import textwrap

import click
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.world import WorldLoadError, load_world
from pipeline.world.registry import UnknownDomainError, resolve_domain

GYM = """
    from pydantic import BaseModel

    from pipeline.world.domain import Domain
    from pipeline.world.tables import World
    from pipeline.world.tools import ToolRegistry

    class Member(BaseModel):
        member_id: str

    TOOLS = ToolRegistry()

    @TOOLS.register("read")
    def find_member(session, member_id: str) -> str:
        \"\"\"Look a member up.\"\"\"
        return member_id

    class Gym(Domain):
        name = "gym"
        tables = {"members": Member}
        tools = TOOLS

        def load(self, ref):
            return World({"members": {}}, "", ref, self) if ref == "gym" else None

        def policy(self):
            return ""

        def owner(self, table, record):
            return None

    {extra}
    GYM = Gym()
"""

CASES = {
    "tools_a_dict": ("Gym.tools = {'find_member': find_member}", r"part 'tools'.*ToolRegistry.*got dict"),
    "tables_not_models": ("Gym.tables = {'members': dict}", r"part 'tables\.members'.*BaseModel"),
    "tables_missing": ("del Gym.tables", r"part 'tables' is missing"),
    "name_not_a_string": ("Gym.name = 7", r"part 'name'.*string.*\(got 7\)"),
    "owner_not_a_method": ("Gym.owner = None", r"part 'owner' is not a method"),
    "tool_of_no_kind": (
        "TOOLS.tools['find_member'] = TOOLS.tools['find_member'].__class__("
        "**{**TOOLS.tools['find_member'].__dict__, 'kind': 'delete'})",
        r"part 'tools\.find_member\.kind': Input should be 'read', .* \(got 'delete'\)$",
    ),
    "user_tools_a_list": ("Gym.user_tools = []", r"part 'user_tools'.*\(got list \[\]\)"),
    "policy_not_a_string": ("Gym.policy = lambda self: 42", r"part 'policy\(\)': .*string.* \(got 42\)$"),
    "invariants_not_a_list": ("Gym.invariants = lambda self: 'none'", r"part 'invariants\(\)': .*list.*'none'"),
    "invariant_not_an_invariant": ("Gym.invariants = lambda self: [len]", r"part 'invariants\(\)\.0': .*Invariant"),
    "identity_fields_numbers": ("Gym.identity_fields = lambda self: (1, 2)", r"part 'identity_fields\(\)\.0'"),
    "setup_functions_not_registries": (
        "Gym.setup_functions = lambda self: {'assistant': {}}",
        r"part 'setup_functions\(\)\.assistant': .*ToolRegistry \(got dict \{\}\)",
    ),
    "vocabulary_a_dict": ("Gym.vocabulary = lambda self: {'statuses': []}", r"part 'vocabulary\(\)'.*Vocabulary"),
}


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    def write(name: str, extra: str = "") -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(GYM).replace("{extra}", extra))
        return f"{name}:GYM"

    monkeypatch.syspath_prepend(str(tmp_path))
    return write


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_part_of_another_shape_is_refused_naming_it(plugin, case):
    extra, expected = CASES[case]
    spec = plugin(f"gym_shape_{case}", extra)
    with pytest.raises(UnknownDomainError, match=rf"domain '{spec}': {expected}"):
        resolve_domain(spec)


def test_a_well_formed_domain_loads(plugin):
    spec = plugin("gym_shape_ok")
    assert load_world("gym", spec).name == "gym"


def test_a_long_value_is_cut_short(plugin):
    spec = plugin("gym_shape_long", "Gym.policy = lambda self: list(range(1000))")
    with pytest.raises(UnknownDomainError) as caught:
        resolve_domain(spec)
    assert "part 'policy()'" in str(caught.value) and len(str(caught.value)) < 200, str(caught.value)


def test_a_method_returning_a_type_that_reads_as_declared_loads(plugin):
    spec = plugin("gym_shape_list_fields", "Gym.identity_fields = lambda self: ['member_id']")
    assert load_world("gym", spec).name == "gym"


def test_load_returning_a_dict_is_refused_naming_load(plugin):
    spec = plugin("gym_shape_load_dict", "Gym.load = lambda self, ref: {'members': {}}")
    with pytest.raises(WorldLoadError, match=rf"domain '{spec}': load\(\) returned a dict, not World \| None"):
        load_world("gym", spec)


def test_on_the_command_line_one_line(plugin, tmp_path):
    spec = plugin("gym_shape_cli", "Gym.tools = {}")
    args = ["tasks", "generate", "--world", "gym", "--domain", spec, "--n", "2", "--out", str(tmp_path / "t")]
    result = CliRunner().invoke(app, args)
    output = click.unstyle(result.output)
    assert result.exit_code == 2 and "Traceback" not in output and "part 'tools'" in output, output


@pytest.mark.parametrize("name", ["retail", "airline", "telecom", "retail+generic"])
def test_the_built_in_domains_have_their_shape(name):
    resolve_domain(name)
