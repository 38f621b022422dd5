"""A trial lost to an infrastructure error is left out of the metrics and reported, never the end of the run."""

from __future__ import annotations

import json

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.measure import run as measure_run
from pipeline.metrics.summary import TrialRecord, summarize
from pipeline.rollout.protocols import InfrastructureError
from pipeline.world.registry import load_world

WORLD = "gen-1-10x40x80"


def test_summarize_leaves_a_short_task_out_of_the_larger_k_only():
    records = [
        TrialRecord(task_id=t, trial=i, passed=None if (t, i) == ("b", 2) else i % 2 == 0, template="x")
        for t in "abc"
        for i in range(4)
    ]
    summary = summarize(records, agent="a", max_k=4, resamples=50)
    assert summary.infra_errors == 1 and summary.short_tasks == {"b": 3}
    assert summary.pass_at_1 == round((0.5 + 1 / 3 + 0.5) / 3, 6)  # b counts with its 3 valid trials
    assert summary.pass_at_k["4"] == 1.0  # over a and c, the tasks with 4 valid trials
    clean = summarize([r.model_copy(update={"passed": True}) for r in records], agent="a", max_k=4, resamples=50)
    assert "short_tasks" not in clean.model_dump(mode="json")  # a run without losses keeps its bytes


class _LosesOneTrial:
    """The oracle, but the endpoint is down for one (task, trial), every retry."""

    def __init__(self, inner, lost):
        self.inner, self.lost, self.name = inner, lost, inner.name

    def start(self, info):
        if (info.task.id, info.trial) == self.lost:
            raise InfrastructureError("endpoint down")
        return self.inner.start(info)


def test_measure_with_a_lost_trial_writes_its_metrics(tmp_path, monkeypatch):
    tasks = generate_tasks(load_world(WORLD), 3, seed=1)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    real = measure_run.make_agent
    monkeypatch.setattr(measure_run, "make_agent", lambda spec, d: _LosesOneTrial(real(spec, d), (tasks[1].id, 0)))
    config = MeasureConfig(world=WORLD, tasks=tmp_path / "tasks.jsonl", agent="oracle", trials=2, resamples=20)
    summary = measure(config, tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert summary.infra_errors == 1 and metrics["short_tasks"] == {tasks[1].id: 1}
    assert metrics["pass_hat_k"]["1"] == 1.0 and metrics["pass_hat_k"]["2"] == 1.0  # k=2 over the other two
