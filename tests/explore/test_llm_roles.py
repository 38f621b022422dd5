"""The optional language-model roles (`--llm openai:MODEL@URL`) against a scripted OpenAI-compatible server: a
rewording that keeps the request's values joins the tasks, one that loses a value does not; a proposed evolution
(one more request appended to a task) whose gold replays and the oracle solves joins, and unreadable,
unknown-tool and refused proposals are dropped and counted."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.dataset.io import read_tasks
from pipeline.explore.llm import LLMSpec, LLMSpecError, first_json
from pipeline.explore.llm import oracle_solves as solves
from pipeline.world.registry import load_world
from tests.agents.fake_openai import FakeOpenAI, completion
from tests.domains.library.proposals import library_proposal

LIBRARY = "tests.domains.library.domain:LIBRARY"


_proposal = library_proposal


def _server() -> FakeOpenAI:
    proposals = itertools.cycle(["good", "garbage", "unknown", "refused"])
    phrasings = itertools.cycle(["keep", "lose"])

    def answer(body: dict):
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if "rewrite" in system:
            if next(phrasings) == "keep":
                return completion(f"Hello there! {user} Thanks so much.")
            return completion("Hi, can you help me with my stuff?")
        kind = next(proposals)
        if kind == "good":
            return completion(json.dumps(_proposal(user)))
        if kind == "garbage":
            return completion("Libraries are nice places with many books.")
        if kind == "unknown":
            return completion('{"tool": "burn_library", "arguments": {}}')
        return completion('Sure: {"tool": "return_loan", "arguments": {"loan_id": "L9999"}}')

    return FakeOpenAI(default=answer)


def test_the_llm_spec_names_model_and_endpoint():
    spec = LLMSpec.parse("openai:smol@http://127.0.0.1:8000/v1/")
    assert (spec.model, spec.base_url) == ("smol", "http://127.0.0.1:8000/v1")
    for bad in ("smol@http://x/v1", "openai:smol", "openai:@http://x/v1", "openai:smol@ftp://x"):
        with pytest.raises(LLMSpecError, match="openai:MODEL@URL"):
            LLMSpec.parse(bad)
    assert first_json('Here: ```{"a": {"b": 1}}``` done') == {"a": {"b": 1}}
    assert first_json("no json {here") is None


def test_only_verified_llm_output_joins_the_tasks(tmp_path):
    out = tmp_path / "tasks.jsonl"
    with _server() as fake:
        result = CliRunner().invoke(app, [
            "tasks", "generate", "--world", "library", "--domain", LIBRARY, "--n", "6", "--out", str(out),
            "--llm", f"openai:fake@{fake.base_url}", "--llm-proposals", "8",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert all(r["model"] == "fake" for r in fake.requests)
    report = json.loads((tmp_path / "tasks.llm.json").read_text())
    assert report["proposed"] == 8 and report["verified"] >= 1
    dropped = report["dropped"]
    assert dropped["unparseable"] == 2 and dropped["unknown_tool"] == 2 and dropped["gold_refused"] >= 2
    assert report["verified"] + sum(dropped.values()) == 8
    assert report["phrased"] == 3 and report["phrasing_rejected"] == {"value_lost": 3}
    tasks = read_tasks(out)
    assert len(tasks) == 6 + report["verified"]
    world = load_world("library", LIBRARY)
    assert all(solves(world, t) for t in tasks)  # everything that joined is verified
    evolved = [t for t in tasks if t.provenance.dials.get("llm") == "evolved"]
    by_id = {t.id: t for t in tasks}
    for t in evolved:  # one more request appended to a task of the same customer, its write after the parent's gold
        parent = by_id[t.provenance.parent]
        assert t.customer_user_id == parent.customer_user_id and t.provenance.depth == parent.provenance.depth + 1
        assert t.user_script.requests[:-1] == parent.user_script.requests
        assert t.gold_actions[: len(parent.gold_actions)] == parent.gold_actions
        assert t.gold_actions[-1].name in {"return_loan", "update_member_email"}
    reworded = [t for t in tasks if t.user_script.requests[0].utterance.startswith("Hello there!")]
    assert len(reworded) == 3 + sum(t.provenance.parent in {r.id for r in reworded} for t in evolved)
    text = re.sub(r"\s+", " ", result.output)
    assert f"3 requests rephrased (3 rejected); {report['verified']}/8 proposals verified" in text


def test_a_bad_llm_spec_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, [
        "tasks", "generate", "--world", "library", "--domain", LIBRARY, "--n", "2", "--out",
        str(tmp_path / "t.jsonl"), "--llm", "smollm2",
    ])  # fmt: skip
    assert result.exit_code != 0 and "openai:MODEL@URL" in result.output
    result = CliRunner().invoke(app, [
        "tasks", "generate", "--world", "library", "--domain", LIBRARY, "--n", "2", "--out",
        str(tmp_path / "t.jsonl"), "--llm-proposals", "2",
    ])  # fmt: skip
    assert result.exit_code != 0 and "--llm-proposals needs --llm" in result.output


def test_a_model_answering_every_request_with_a_greeting_rewords_none(tmp_path):
    """A rewording must keep the request's content: a greeting loses its words (rejected, counted, the plain
    wording kept), and a wording the model gives two different requests stands for neither."""
    out = tmp_path / "tasks.jsonl"
    plain = tmp_path / "plain.jsonl"
    greeting = "Hello! How can I help you today?"
    with FakeOpenAI(default=lambda body: completion(greeting)) as fake:
        args = ["tasks", "generate", "--world", "library", "--domain", LIBRARY, "--n", "6"]
        result = CliRunner().invoke(app, [*args, "--out", str(out), "--llm", f"openai:fake@{fake.base_url}"])
        assert result.exit_code == 0, result.output
    assert CliRunner().invoke(app, [*args, "--out", str(plain)]).exit_code == 0
    report = json.loads((tmp_path / "tasks.llm.json").read_text())
    assert report["phrased"] == 0 and sum(report["phrasing_rejected"].values()) == 6
    assert set(report["phrasing_rejected"]) <= {"content_lost", "value_lost", "repeated"}
    assert [t.user_script for t in read_tasks(out)] == [t.user_script for t in read_tasks(plain)]


def test_a_repeated_wording_and_a_bottomless_json_reply_are_refused():
    from pipeline.dataset import Request
    from pipeline.explore.llm import phrasing_problem

    req = Request(intent="return_loan", utterance="Please return my loan of the gardening book.")
    assert phrasing_problem(req, "Hello! How can I help you today?") == "content_lost"
    assert phrasing_problem(req, "Could you return the gardening book I have on loan?") is None
    deep = "[" * 100_000 + "]" * 100_000
    assert first_json('{"tool": ' + deep + "}") is None  # no RecursionError: unreadable, counted as such
    assert first_json("x" + deep + ' {"a": [1, [2]]}') == {"a": [1, [2]]}  # the object after it
    assert first_json('{"a": [1, [2]]}') == {"a": [1, [2]]}


def test_the_llm_roles_endpoint_honours_the_timeout_setting(monkeypatch):
    from pipeline.explore.llm import LLMRoles

    monkeypatch.setenv("AGENTLOOP_TIMEOUT_S", "7")
    monkeypatch.setenv("AGENTLOOP_DEADLINE_S", "20")
    config = LLMRoles(LLMSpec.parse("openai:m@http://127.0.0.1:9/v1")).client.config
    assert (config.timeout_s, config.deadline_s) == (7.0, 20.0)
    monkeypatch.delenv("AGENTLOOP_TIMEOUT_S")
    monkeypatch.delenv("AGENTLOOP_DEADLINE_S")
    config = LLMRoles(LLMSpec.parse("openai:m@http://127.0.0.1:9/v1")).client.config
    assert config.timeout_s < float("inf") and config.deadline_s is not None  # a hanging endpoint ends
