"""A real endpoint's long replies: every turn's generation is bounded by default and the bound is in the run's
settings; a request the server is still generating when the attempt's time is up is not sent again; and the
trials that finished are written when others are lost."""

from __future__ import annotations

import json
import time

from pipeline.agents.backends.openai import SamplingConfig
from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.runner import Limits
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, Reply, completion

WORLD = "gen-5-8x10x20"


def test_an_openai_agent_bounds_each_reply_by_default(monkeypatch):
    monkeypatch.setenv("AGENTLOOP_BASE_URL", "http://127.0.0.1:1/v1")
    assert SamplingConfig().max_tokens == 1024
    agent = make_agent("openai:m")
    assert agent.body([], [], 0)["max_tokens"] == 1024 and agent.settings["max_tokens"] == 1024
    assert "max_tokens" not in make_agent("openai:m,max_tokens=none").body([], [], 0)  # the endpoint's default


def test_a_slow_task_is_lost_alone_and_what_finished_is_written(tmp_path, monkeypatch):
    world = load_world(WORLD)
    tasks = generate_tasks(world, 2, seed=3)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    slow_opening = None

    def answer(body):
        nonlocal slow_opening
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        slow_opening = slow_opening or first  # the first task's requests: a server generating at length
        return Reply(delay_s=3.0) if first == slow_opening else completion("Goodbye.")

    with FakeOpenAI(default=answer) as fake:
        monkeypatch.setenv("AGENTLOOP_BASE_URL", fake.base_url)
        monkeypatch.setenv("AGENTLOOP_TIMEOUT_S", "0.5")
        cfg = MeasureConfig(
            world=WORLD, tasks=tmp_path / "tasks.jsonl", agent="openai:m", trials=1, resamples=20, retries=1,
            limits=Limits(max_turns=4), concurrency=1,
        )  # fmt: skip
        t0 = time.monotonic()
        summary = measure(cfg, tmp_path / "run")
        took = time.monotonic() - t0
        slow_requests = sum(1 for b in fake.requests if slow_opening in json.dumps(b))
    assert summary.infra_errors == 1 and summary.valid_trials == 1
    assert summary.short_tasks == {tasks[0].id: 0}
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["short_tasks"] == {tasks[0].id: 0} and metrics["pass_hat_k"]["1"] in (0.0, 1.0)
    assert slow_requests == 2  # one per attempt of the trial (retries=1), never resent within an attempt
    assert took < 15, took
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").open()]
    assert len(trajectories) == 2 and sum(1 for t in trajectories if t["messages"][-1]["role"] == "assistant")
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())
    assert usage["agent"]["settings"]["max_tokens"] == 1024 and usage["agent"]["settings"]["timeout_s"] == 0.5
