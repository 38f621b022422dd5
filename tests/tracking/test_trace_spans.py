"""A trial's spans and feedback, computed without a store."""

from __future__ import annotations

from pipeline.grading.failure_modes import FailureAnalysis
from pipeline.grading.state_diff import DIFF_KINDS
from pipeline.grading.verdict import ComponentResult, FieldDiff, Verdict
from pipeline.rollout.trajectory import Message, ToolCall, Trajectory, Usage
from pipeline.tracking.trace_spans import trial_spans
from pipeline.tracking.verdict_feedback import verdict_feedback

NS = 1_000_000_000


def _trajectory() -> Trajectory:
    call = ToolCall(
        id="c1", name="get_order_details", arguments={"order_id": "#W1"}, raw_arguments='{"order_id": "#W1"}'
    )
    bad = ToolCall(id="c2", name="cancel", arguments=None, raw_arguments="{oops")
    return Trajectory(
        task_id="t-1",
        trial=2,
        agent="a",
        user="u",
        world="w",
        messages=[
            Message(role="user", content="Cancel #W1 please."),
            Message(role="assistant", tool_calls=[call, bad], usage=Usage(prompt_tokens=10, completion_tokens=4)),
            Message(role="tool", tool_call_id="c1", name="get_order_details", content='{"status": "pending"}'),
            Message(role="tool", tool_call_id="c2", name="cancel", content="bad arguments", error=True),
            Message(role="assistant", content="Done."),
            Message(role="user", content="Thanks ###STOP###"),
        ],
    )


def test_spans_follow_the_conversation_with_times_from_the_timings_record():
    timing = {"started_at": 100.0, "wall_s": 10.0, "latency_s": [2.0, 1.0], "user_s": 1.0, "tool_s": 4.0}
    spans = trial_spans(_trajectory(), timing)
    assert [(s.name, s.span_type, s.parent) for s in spans] == [
        ("t-1 #2", "AGENT", None),
        ("user", "USER", 0),
        ("agent turn 1", "CHAT_MODEL", 0),
        ("get_order_details", "TOOL", 2),
        ("cancel", "TOOL", 2),
        ("agent turn 2", "CHAT_MODEL", 0),
        ("user", "USER", 0),
    ]
    root, user, turn, tool, bad, turn2, _ = spans
    assert root.inputs == {"messages": [{"role": "user", "content": "Cancel #W1 please."}]}
    assert root.outputs["messages"][-1]["content"] == "Thanks ###STOP###" and len(root.outputs["messages"]) == 5
    assert turn.attributes["mlflow.chat.tokenUsage"] == {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
    assert turn.outputs["tool_calls"][1]["function"]["arguments"] == "{oops"
    assert tool.inputs == {"order_id": "#W1"} and tool.outputs == {"status": "pending"} and not tool.error
    assert bad.inputs == {"raw_arguments": "{oops"} and bad.outputs == "bad arguments" and bad.error
    assert turn2.attributes == {} and turn2.inputs["messages"][0]["tool_call_id"] == "c1"
    assert (user.start_ns, user.end_ns) == (100 * NS, 100 * NS + NS // 2)
    assert turn.start_ns == 100 * NS + NS // 2  # it took 2 s, then its tools ran
    assert (tool.start_ns, bad.end_ns) == (102 * NS + NS // 2, 106 * NS + NS // 2)
    assert turn.end_ns == bad.end_ns  # a turn lasts until the tools it called have answered
    assert root.end_ns == 110 * NS  # the trial's wall time, longer than its steps
    untimed = trial_spans(_trajectory(), None, base_s=5.0)
    assert {s.start_ns for s in untimed} == {5 * NS} and {s.end_ns for s in untimed} == {5 * NS}


def test_feedback_of_a_failed_passed_and_lost_trial():
    diff = FieldDiff(
        kind="wrong_value", table="orders", key="#W1", path="status", expected="cancelled", actual="pending"
    )
    failed = Verdict(
        task_id="t",
        passed=False,
        components=[
            ComponentResult(name="state", passed=False, details=["1 field differs"]),
            ComponentResult(
                name="judge", passed=False, required=False, details=["tone: curt"], notes=["judge usage: {}"]
            ),
        ],
        diffs=[diff],
    )
    analysis = FailureAnalysis(modes=["invention", "misread"], dominant="invention", evidence={"invention": ["m 3"]})
    fb = {f.name: f for f in verdict_feedback(failed, analysis)}
    assert list(fb) == ["passed", "failure_modes", "dominant_failure_mode", "state_diff", "judge"]
    assert fb["passed"].value is False and fb["passed"].rationale == "state: 1 field differs"
    assert fb["failure_modes"].value == ["invention", "misread"] and fb["failure_modes"].rationale == "invention: m 3"
    assert fb["state_diff"].value == "1 wrong_value"
    assert {k: fb["state_diff"].metadata[k] for k in DIFF_KINDS} == {
        "wrong_value": "1",
        "unrequested_change": "0",
        "missing_change": "0",
    }
    assert fb["state_diff"].rationale == "wrong_value orders[#W1].status: expected 'cancelled', got 'pending'"
    assert (fb["judge"].value, fb["judge"].source_type, fb["judge"].rationale) == (False, "LLM_JUDGE", "tone: curt")

    ok = Verdict(
        task_id="t", passed=True, components=[ComponentResult(name="judge", passed=True, notes=["no judge configured"])]
    )
    assert [f.name for f in verdict_feedback(ok, None)] == ["passed", "state_diff"]
    lost = verdict_feedback(Verdict(task_id="t", passed=False, infra_error=True, diagnostics=["timeout"]), None)
    assert [(f.name, f.value, f.error_code, f.rationale) for f in lost] == [("passed", None, "INFRA_ERROR", "timeout")]
