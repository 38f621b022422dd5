"""A domain is known by where it came from: one of your own named `retail` records its `module:attribute`, travels
to other processes (Ray workers) as itself, and is not exported as τ²-bench's retail."""

from __future__ import annotations

import json
import pickle
import textwrap

import pytest

from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.rollout.protocols import EpisodeInfo, UserReply
from pipeline.rollout.trajectory import Message
from pipeline.tau2.submission import SubmissionError, summarize_run
from pipeline.trials.trial import run_trial
from pipeline.world import domain_spec, load_world, resolve_domain

FAKE_RETAIL = """
    from pydantic import BaseModel

    from pipeline.world.domain import Domain
    from pipeline.world.tables import World
    from pipeline.world.tools import ToolRegistry

    class Shop(BaseModel):
        shop_id: str

    class FakeRetail(Domain):
        name = "retail"
        tables = {"shops": Shop}
        tools = ToolRegistry()

        def load(self, ref):
            return World({"shops": {}}, "", ref, self) if ref == "corner" else None

        def policy(self):
            return ""

        def owner(self, table, record):
            return None

    RETAIL = FakeRetail()
"""


@pytest.fixture
def fake_retail(tmp_path, monkeypatch):
    (tmp_path / "fake_retail_shop.py").write_text(textwrap.dedent(FAKE_RETAIL))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "fake_retail_shop:RETAIL"


def test_a_domain_named_like_a_built_in_is_known_by_its_spec(fake_retail):
    domain = resolve_domain(fake_retail)
    assert domain.name == "retail" and domain_spec(domain) == fake_retail
    assert domain_spec(resolve_domain("retail")) == "retail"
    assert pickle.loads(pickle.dumps(domain)) is domain  # a worker resolves the same domain, not the built-in
    assert pickle.loads(pickle.dumps(resolve_domain("retail"))) is resolve_domain("retail")


def test_one_built_in_code_is_not_taken_for_the_built_in():
    from pipeline.world.domain import Domain

    class Mine(Domain):
        name = "retail"
        tables: dict = {}
        tools = resolve_domain("retail").tools

        def load(self, ref):
            return None

        def policy(self):
            return ""

        def owner(self, table, record):
            return None

    assert domain_spec(Mine()) != "retail"


class _Quiet:
    name = "quiet"

    def start(self, info: EpisodeInfo):
        return type("E", (), {"act": lambda self, messages: Message(role="assistant", content="Bye.")})()


class _Once:
    name = "once"

    def start(self, info: EpisodeInfo):
        replies = iter([UserReply("Hi."), UserReply("Bye.", stop=True)])
        return type("E", (), {"respond": lambda self, messages: next(replies)})()


def test_its_run_is_not_exported_as_tau2_retail(fake_retail, tmp_path):
    world = load_world("corner", fake_retail)
    task = Task(id="t1", world="corner", user_script=UserScript(goal="hi"), provenance=Provenance(source="eval"))
    result = run_trial(world, task, _Quiet(), _Once(), trial=0)
    assert result.trajectory.domain == fake_retail
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_text(result.trajectory.model_dump_json() + "\n")
    (run / "verdicts.jsonl").write_text(json.dumps({"verdict": result.verdict.model_dump(mode="json")}) + "\n")
    with pytest.raises(SubmissionError, match=r"field domain: 'fake_retail_shop:RETAIL' is not one of"):
        summarize_run(run)
