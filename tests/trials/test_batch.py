"""Episodes in flight: the step scheduler gives the serial runner's trials, whatever shares a batch."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from pipeline.authoring.templates import generate_tasks
from pipeline.domains.retail.flawed import FlawConfig, FlawedAgent
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.rollout.decoders import Concurrent
from pipeline.trials.batch import SharedFlight, run_batched
from pipeline.trials.executor import SerialExecutor
from pipeline.users.scripted import ScriptedUser
from pipeline.world.registry import load_world
from tests.trials.ray_helpers import FlakyAgent

WORLD = "gen-4-12x60x120"


@pytest.fixture(scope="module")
def world():
    return load_world(WORLD)


@pytest.fixture(scope="module")
def tasks(world):
    return generate_tasks(world, 8, seed=3)


def same(result) -> tuple:
    t = result.trajectory.without_timings()
    return result.task.id, result.trial, result.verdict.passed, t.model_dump_json(exclude={"agent_usage"})


@pytest.mark.parametrize("width", [2, 5, 64])
def test_batched_trials_equal_serial_ones(world, tasks, width):
    agent = FlawedAgent(FlawConfig(rates={"invention": 0.4, "misread": 0.3, "plan_adherence": 0.3}, seed=4))
    serial = sorted(same(r) for r in SerialExecutor().run(world, tasks, agent, ScriptedUser(), trials=3, seed=2))
    batched = list(SerialExecutor(batch=width).run(world, tasks, agent, ScriptedUser(), trials=3, seed=2))
    assert sorted(same(r) for r in batched) == serial
    assert any(not s[2] for s in serial) and any(s[2] for s in serial)


def test_skip_and_infrastructure_retries_as_one_at_a_time(world, tasks):
    skip = {(tasks[0].id, 0), (tasks[1].id, 1)}
    results = list(SerialExecutor(retries=1, batch=4).run(world, tasks[:3], FlakyAgent(), ScriptedUser(), 2, skip=skip))
    assert sorted((r.task.id, r.trial) for r in results) == sorted(
        (t.id, k) for t in tasks[:3] for k in range(2) if (t.id, k) not in skip
    )
    assert all(r.attempts == 2 and r.verdict.passed for r in results)
    lost = list(run_batched(world, [(tasks[0], 0)], FlakyAgent(), ScriptedUser(), retries=0, width=4))
    assert lost[0].verdict.infra_error and lost[0].attempts == 1


class SlowEndpointAgent(OracleAgent):
    """The oracle behind a 50 ms round trip, counting how many requests are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def start(self, info):
        inner, outer = super().start(info), self

        class Episode:
            def act(self, messages):
                with outer.lock:
                    outer.now += 1
                    outer.peak = max(outer.peak, outer.now)
                time.sleep(0.05)
                with outer.lock:
                    outer.now -= 1
                return inner.act(messages)

        return Episode()

    def decoder(self):
        return Concurrent()


def test_an_endpoint_agent_keeps_requests_in_flight(world, tasks):
    agent = SlowEndpointAgent()
    serial = sorted(same(r) for r in SerialExecutor().run(world, tasks[:4], OracleAgent(), ScriptedUser(), 2))
    t0 = time.perf_counter()
    results = list(SerialExecutor(batch=8).run(world, tasks[:4], agent, ScriptedUser(), 2))
    elapsed = time.perf_counter() - t0
    assert sorted(same(r) for r in results) == serial
    assert agent.peak == 8
    turns = sum(1 for r in results for m in r.trajectory.messages if m.role == "assistant")
    assert elapsed < 0.05 * turns / 2  # one at a time would need every round trip in turn


def test_concurrent_calls_share_one_flight(world, tasks):
    """A Ray worker's outstanding calls feed one set of episodes in flight: the second call's episodes run
    beside the first's, and each call gets its own trials back, in its order, as one at a time gives them."""
    agent = SlowEndpointAgent()
    jobs = [(task, trial) for task in tasks[:4] for trial in range(2)]
    serial = {
        (r.task.id, r.trial): same(r) for r in SerialExecutor().run(world, tasks[:4], OracleAgent(), ScriptedUser(), 2)
    }
    flight = SharedFlight(world, agent, ScriptedUser(), 0, None, None, 0, width=8)
    got: dict[int, list] = {}
    calls = [
        threading.Thread(target=lambda i=i: got.update({i: flight.run_jobs(jobs[4 * i : 4 * i + 4])})) for i in (0, 1)
    ]
    for call in calls:
        call.start()
    for call in calls:
        call.join()
    for i in (0, 1):
        assert [(r.task.id, r.trial) for r in got[i]] == [(t.id, k) for t, k in jobs[4 * i : 4 * i + 4]]
        assert [same(r) for r in got[i]] == [serial[(t.id, k)] for t, k in jobs[4 * i : 4 * i + 4]]
    assert agent.peak == 8 and not flight.done  # both calls' episodes were in flight together


def test_batched_logits_match_one_sequence_at_a_time():
    from transformers import LlamaConfig, LlamaForCausalLM

    from pipeline.agents.backends.lean import LeanCache, LeanLlama

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    lean = LeanLlama.wrap(LlamaForCausalLM(config).eval())
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [11]]
    alone, together = [LeanCache(lean) for _ in prompts], [LeanCache(lean) for _ in prompts]
    for p, a, b in zip(prompts, alone, together, strict=True):
        lean.logits(p, a)
        lean.logits(p, b)
    for step in range(3):
        new = [20 + step, 30 + step, 40 + step]
        rows = lean.logits_batch(new, together)
        for i, cache in enumerate(alone):
            torch.testing.assert_close(rows[i], lean.logits([new[i]], cache), rtol=1e-5, atol=1e-5)
    assert [c.length for c in together] == [c.length for c in alone] == [6, 10, 4]


@pytest.mark.slow
def test_the_embedded_model_batched_gives_the_serial_trajectories(world, tasks):
    from pathlib import Path

    from pipeline.agents.registry import make_agent

    checkpoint = Path(__file__).resolve().parents[2] / "models" / "embedded"
    agent = make_agent(f"hf:{checkpoint},temperature=0.7")
    serial = sorted(same(r) for r in SerialExecutor().run(world, tasks[:4], agent, ScriptedUser(), 2, seed=1))
    batched = list(SerialExecutor(batch=8).run(world, tasks[:4], agent, ScriptedUser(), 2, seed=1))
    assert sorted(same(r) for r in batched) == serial


def test_ragged_runs_of_several_tokens_match_one_token_at_a_time():
    """A pass that runs several tokens per sequence (drafts, prompts) gives each position the logits that running
    its tokens one by one gives, and keeps only the rows asked for."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from pipeline.agents.backends.lean import LeanCache, LeanLlama

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    lean = LeanLlama.wrap(LlamaForCausalLM(config).eval())
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [11]]
    alone, together = [LeanCache(lean) for _ in prompts], [LeanCache(lean) for _ in prompts]
    for p, a, b in zip(prompts, alone, together, strict=True):
        lean.logits(p, a)
        lean.logits(p, b)
    runs = [[20, 21, 22, 23], [30], [40, 41]]
    rows = lean.logits_ragged(runs, together)
    assert rows.shape == (7, 64)
    at = 0
    for run, cache in zip(runs, alone, strict=True):
        for token in run:
            torch.testing.assert_close(rows[at], lean.logits([token], cache), rtol=1e-5, atol=1e-5)
            at += 1
    last = lean.logits_ragged([[50, 51], [52], [53, 54, 55]], together, keep=[1, 1, 2])
    want = [lean.logits([50, 51], alone[0]), lean.logits([52], alone[1])]
    lean.logits([53], alone[2])
    want += [lean.logits([54], alone[2]), lean.logits([55], alone[2])]
    torch.testing.assert_close(last, torch.stack(want), rtol=1e-5, atol=1e-5)
    assert [c.length for c in together] == [c.length for c in alone] == [9, 9, 6]


class CountingOracle(OracleAgent):
    """The oracle, counting the episodes it is asked to play."""

    def __init__(self) -> None:
        super().__init__()
        self.started = 0

    def start(self, info):
        self.started += 1
        return super().start(info)


class JudgeDownOnce:
    """A judge whose endpoint fails its first call, then approves: grading lost once."""

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, task, trajectory):
        from pipeline.grading.verdict import ComponentResult
        from pipeline.rollout.protocols import InfrastructureError

        self.calls += 1
        if self.calls == 1:
            raise InfrastructureError("judge endpoint down")
        return ComponentResult(name="judge", passed=True, required=False)


@pytest.mark.parametrize("batch", [1, 4])
def test_grading_lost_to_the_judge_grades_the_same_conversation_again(world, tasks, batch):
    agent, judge = CountingOracle(), JudgeDownOnce()
    results = list(SerialExecutor(retries=2, judge=judge, batch=batch).run(world, tasks[:1], agent, ScriptedUser(), 1))
    assert [r.attempts for r in results] == [2] and results[0].verdict.passed
    assert agent.started == 1 and judge.calls == 2  # played once, graded twice
