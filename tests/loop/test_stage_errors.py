"""A stage ends in one line on an error raised on purpose, as the command line does; a bug keeps its traceback."""

from __future__ import annotations

import pytest
import yaml

from pipeline.authoring.kit import SynthesisKitError
from pipeline.loop.entry import run_stage
from tests.needs import need_tau2


@pytest.fixture
def params(tmp_path, monkeypatch):
    world = {"eval_world": str(need_tau2("retail")), "eval_tasks": 12}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"world": world}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTLOOP_PARAMS", raising=False)


def test_a_kit_that_does_not_fit_ends_the_stage_in_one_line(params, capsys):
    def stage(_):
        raise SynthesisKitError("domain 'clinic': write tool 'pay_invoices' has no template that carries it out")

    with pytest.raises(SystemExit) as exc:
        run_stage("synthesize", stage)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == "stage synthesize: domain 'clinic': write tool 'pay_invoices' has no template that carries it out\n"


def test_a_bug_keeps_its_traceback(params):
    def stage(_):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_stage("synthesize", stage)
