"""A domain named as `module:attribute` whose own code fails while it is loaded (a Domain subclass missing a part,
a module that exits) is refused in one line naming the domain and what failed, on the command line too."""

from __future__ import annotations

import textwrap

import click
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.world.registry import UnknownDomainError, resolve_domain

MISSING_OWNER = """
    from pipeline.world.domain import Domain

    class Gym(Domain):
        name = "gym_no_owner"

        def load(self, ref):
            return None

        def policy(self):
            return ""

    GYM = Gym()
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    return write


def test_a_domain_missing_a_part_is_refused_naming_it(plugin, tmp_path):
    module = plugin("gym_missing_owner", MISSING_OWNER)
    with pytest.raises(UnknownDomainError, match=r"importing module 'gym_missing_owner' failed: TypeError: .*owner"):
        resolve_domain(f"{module}:GYM")
    out = str(tmp_path / "t")
    args = ["tasks", "generate", "--world", "gym", "--domain", f"{module}:GYM", "--n", "2", "--out", out]
    result = CliRunner().invoke(app, args)
    output = click.unstyle(result.output)
    assert result.exit_code == 2 and "Traceback" not in output and "owner" in output, output


def test_a_module_that_exits_while_imported_is_refused(plugin):
    module = plugin("gym_exits", "import sys\nsys.exit(0)\n")
    with pytest.raises(UnknownDomainError, match="SystemExit"):
        resolve_domain(f"{module}:GYM")


def test_a_factory_that_fails_is_refused(plugin):
    module = plugin("gym_factory", "def make():\n    raise RuntimeError('no database here')\n")
    with pytest.raises(UnknownDomainError, match=r"calling gym_factory:make failed: RuntimeError: no database here"):
        resolve_domain(f"{module}:make")
