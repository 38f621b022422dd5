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


RENAMED = """
    import copy

    from tests.domains.utility.domain import UTILITY

    RETAIL = copy.copy(UTILITY)
    RETAIL.name = "retail"
"""


def test_a_plug_in_named_like_a_built_in_is_played_as_itself(tmp_path, monkeypatch):
    """The scripted customer and the oracle take the plug-in's own phrasing and rules, not the built-in retail's:
    a plug-in renamed `retail` (customers known by account number and PIN) scores what it scores under its own
    name."""
    from pipeline.authoring.templates import generate_tasks
    from pipeline.dataset.io import write_tasks
    from pipeline.measure import MeasureConfig, measure

    (tmp_path / "renamed_utility.py").write_text(textwrap.dedent(RENAMED))
    monkeypatch.syspath_prepend(str(tmp_path))
    scores = {}
    for spec in ("tests.domains.utility.domain:UTILITY", "renamed_utility:RETAIL"):
        world = load_world("utility", spec)
        tasks = tmp_path / f"{spec.partition(':')[0]}.jsonl"
        write_tasks(tasks, generate_tasks(world, 8, seed=0))
        config = MeasureConfig(world="utility", domain=spec, tasks=tasks, agent="oracle", trials=1)
        scores[world.domain.name] = measure(config, tmp_path / spec.partition(":")[0]).pass_at_1
    assert scores == {"utility": 1.0, "retail": 1.0}, scores
