"""The judge cascade against a stub OpenAI-compatible server on loopback (no network)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from pipeline.errors import InputError
from pipeline.rollout.protocols import InfrastructureError
from pipeline.synth.config import SynthConfig
from pipeline.synth.judge import STAGES, JudgeCascade, JudgeConfig, parse_verdict
from pipeline.synth.synthesize import Synthesizer
from tests.agents.scripted_helpers import small_tasks, small_world
from tests.synth.synth_helpers import targets


class Stub:
    """A chat-completions endpoint whose verdict per stage is set by the test; it records every request."""

    def __init__(self, verdicts: dict[str, str], garble: bool = False) -> None:
        self.verdicts, self.garble, self.requests = verdicts, garble, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body, self.headers.get("Authorization")))
                system = body["messages"][0]["content"]
                stage = next(s for s, q in STAGES.items() if q in system)
                verdict = stub.verdicts.get(stage, "pass")
                if verdict == "rejectcancel":
                    verdict = "fail" if "cancel_pending_order" in body["messages"][1]["content"] else "pass"
                content = (
                    "???" if stub.garble else json.dumps({"verdict": verdict, "reason": f"{stage} says {verdict}"})
                )
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_cascade_asks_stages_in_order_and_stops_at_the_first_rejection(monkeypatch):
    monkeypatch.setenv("STUB_KEY", "sekrit")
    task = small_tasks()[0]
    with Stub({"validity": "fail"}) as stub:
        judge = JudgeCascade(JudgeConfig(base_url=stub.url, model="m", api_key_env="STUB_KEY"))
        assert judge.first_rejection(task, "POLICY TEXT") == ("validity", "validity says fail")
    paths = [p for p, _, _ in stub.requests]
    assert paths == ["/v1/chat/completions"] * 2  # policy never asked
    assert all(auth == "Bearer sekrit" for _, _, auth in stub.requests)
    assert (
        stub.requests[0][1]["model"] == "m"
        and task.gold_actions[0].name in stub.requests[0][1]["messages"][1]["content"]
    )
    with Stub({}) as stub:
        assert JudgeCascade(JudgeConfig(base_url=stub.url, model="m")).first_rejection(task, "POLICY") is None
    assert "POLICY" in stub.requests[2][1]["messages"][0]["content"]  # the policy stage sees the policy


def test_unreachable_or_garbled_endpoint_is_an_infrastructure_error():
    task = small_tasks()[0]
    with Stub({}) as stub:
        url = stub.url
    with pytest.raises(InfrastructureError):
        JudgeCascade(JudgeConfig(base_url=url, model="m", timeout_s=2)).first_rejection(task, "")
    with Stub({}, garble=True) as stub, pytest.raises(InfrastructureError, match="neither JSON"):
        JudgeCascade(JudgeConfig(base_url=stub.url, model="m")).first_rejection(task, "")


def test_parse_verdict():
    assert parse_verdict('Sure. {"verdict": "fail", "reason": "x"}') == (False, "x")
    assert parse_verdict("PASS - fine")[0] is True
    with pytest.raises(InputError, match="unknown judge stage"):
        JudgeCascade(JudgeConfig(base_url="http://127.0.0.1:1", model="m", stages=["vibes"]))


def test_synthesis_reworks_judge_rejections_and_counts_them():
    with Stub({"policy": "rejectcancel"}) as stub:
        cfg = SynthConfig(seed=0, max_generations=1, max_rework=1, judge={"base_url": stub.url, "model": "m"})
        res = Synthesizer(small_world(), targets(20), cfg).run()
    m = res.manifest
    assert m["judge"].get("passed", 0) == len(res.tasks) > 0
    assert not any(a.name == "cancel_pending_order" for t in res.tasks for a in t.gold_actions)
    diagnoses = {k: v for s in m["rework"]["by_template"].values() for k, v in s["diagnoses"].items()}
    assert diagnoses.get("judge_rejected", 0) > 0
    assert m["rework"]["by_template"]["cancel"]["dropped"] >= 1


def test_synthesis_keeps_tasks_unjudged_when_the_judge_is_down():
    with Stub({}) as stub:
        url = stub.url
    cfg = SynthConfig(seed=0, max_generations=0, judge={"base_url": url, "model": "m", "timeout_s": 2})
    res = Synthesizer(small_world(), targets(14), cfg).run()
    assert res.manifest["judge"] == {"unavailable": len(res.tasks)} and len(res.tasks) >= 12
