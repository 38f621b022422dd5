"""`agentloop synthesize --llm openai:MODEL@URL`: a model's rewordings and proposed evolutions join synthesized data
only when the world verifies them, with the oracle's trajectory of each changed task beside it."""

from __future__ import annotations

import itertools
import json

from typer.testing import CliRunner

from pipeline.authoring.partition import partition
from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.explore.llm import oracle_solves
from pipeline.rollout.trajectory import Trajectory
from pipeline.target import Targets, split_budget
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, completion
from tests.domains.library.proposals import library_proposal

LIBRARY = "tests.domains.library.domain:LIBRARY"


def _proposal(prompt: str) -> dict:
    return library_proposal(prompt, "reader.synth@library.example")


def _server() -> FakeOpenAI:
    proposals = itertools.cycle(["good", "garbage"])

    def answer(body: dict):
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if "rewrite" in system:
            return completion(f"Hello there! {user}")
        if next(proposals) == "good":
            return completion(json.dumps(_proposal(user)))
        return completion("Books are nice.")

    return FakeOpenAI(default=answer)


def test_synthesis_keeps_only_verified_llm_output_with_its_gold_trajectory(tmp_path):
    targets = tmp_path / "targets.json"
    Targets(budget=6, modes=split_budget({"plan_adherence": 1.0, "misread": 1.0}, 6)).write(targets)
    out = tmp_path / "synth"
    with _server() as fake:
        result = CliRunner().invoke(app, [
            "synthesize", "--world", "library", "--domain", LIBRARY, "--targets", str(targets), "--out", str(out),
            "--generations", "1", "--llm", f"openai:fake@{fake.base_url}", "--llm-proposals", "4",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    report = manifest["llm"]
    assert report["proposed"] == 4 and report["dropped"].get("unparseable") == 2 and report["verified"] >= 1
    tasks = read_tasks(out / "tasks.jsonl")
    trajectories = [Trajectory.model_validate_json(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    assert manifest["tasks"] == len(tasks) == len(trajectories)
    world = load_world("library", LIBRARY)
    assert all(oracle_solves(world, t) for t in tasks)  # everything that joined is verified
    assert {t.customer_user_id for t in tasks} <= partition(world, 0).train  # the training split holds
    evolved = [t for t in tasks if t.provenance.dials.get("llm") == "evolved"]
    assert len(evolved) == report["verified"]
    reworded = [t for t in tasks if t not in evolved and t.user_script.requests[0].utterance.startswith("Hello")]
    assert report["phrased"] == len(reworded) > 0
    by_id = {t.id: t for t in tasks}
    for task, traj in zip(tasks, trajectories, strict=True):
        assert traj.task_id == task.id
        said = [m.content or "" for m in traj.messages if m.role == "user"]
        assert any(task.user_script.requests[0].utterance in s for s in said) or task in evolved
    for t in evolved:
        assert t.user_script.requests[:-1] == by_id[t.provenance.parent].user_script.requests
    assert "proposals verified" in result.output


def test_proposals_without_a_model_are_a_clear_error(tmp_path):
    targets = tmp_path / "targets.json"
    Targets(budget=2, modes=split_budget({"misread": 1.0}, 2)).write(targets)
    result = CliRunner().invoke(app, ["synthesize", "--world", "library", "--domain", LIBRARY, "--targets",
                                      str(targets), "--out", str(tmp_path / "s"), "--llm-proposals", "2"])  # fmt: skip
    assert result.exit_code != 0 and "--llm-proposals needs --llm" in result.output
