"""The confirmation reading: natural affirmations pass, declines / hedges / counter-questions / 'yes, but' do not,
held to a labelled corpus; unclear replies go to the judge when one is configured, else they do not confirm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.endpoint.client import ChatClient, EndpointConfig
from pipeline.grading.confirmation import affirms, asks_yes_no, read_reply
from pipeline.grading.grader import grade
from pipeline.grading.llm_judge import LLMJudge, parse_confirmation
from tests.agents.fake_openai import FakeOpenAI, completion
from tests.grading.grading_helpers import Call, record

DATA = Path(__file__).resolve().parents[1] / "data"
CORPORA = ("confirmation_replies.jsonl", "confirmation_holdout.jsonl")


def corpus(name: str) -> list[dict]:
    rows = [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    assert all(isinstance(r["reply"], str) and isinstance(r["affirms"], bool) for r in rows), name
    return rows


def precision_recall(rows: list[dict]) -> tuple[float, float]:
    said = [(affirms(r["reply"]), r["affirms"]) for r in rows]
    tp = sum(p and t for p, t in said)
    return tp / max(1, sum(p for p, _ in said)), tp / max(1, sum(t for _, t in said))


def test_corpus_is_large_varied_and_balanced():
    rows = corpus(CORPORA[0])
    assert len(rows) >= 300 and len({r["reply"].lower() for r in rows}) == len(rows)
    kinds = {r["kind"] for r in rows}
    assert {"decline", "hedge", "counter_question", "yes_but", "correction", "neutral"} <= kinds
    assert 0.4 < sum(r["affirms"] for r in rows) / len(rows) < 0.65


@pytest.mark.parametrize("name", CORPORA)
def test_precision_and_recall_on_affirmations(name):
    precision, recall = precision_recall(corpus(name))
    assert precision >= 0.98 and recall >= 0.98, (name, precision, recall)


@pytest.mark.parametrize(
    "text",
    [
        "Sounds good, please do that.",
        "Absolutely, go ahead",
        "Yes please — the visa one",
        "Perfect, go ahead with that.",
        "That works for me.",
        "I'm fine with that.",
        "Yes, cancel it. ###STOP###",
        "No problem, go ahead.",
    ],
)
def test_natural_affirmations(text):
    assert read_reply(text).decision == "yes", read_reply(text)


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        ("Yes, but change the size to large first.", "no"),
        ("No, please don't.", "no"),
        ("Actually, I want the blue one instead.", "no"),
        ("Is there a fee for that?", "no"),
        ("Okay, and is there a restocking fee?", "unclear"),
        ("Maybe, let me think.", "unclear"),
        ("Of course. My email is mia@example.com.", "unclear"),
        ("Thanks.", "unclear"),
        ("", "unclear"),
    ],
)
def test_what_does_not_confirm(text, decision):
    assert read_reply(text).decision == decision


def test_an_open_question_is_not_answered_by_a_yes():
    which = "Which items would you like to return, and where should the refund go?"
    assert not asks_yes_no(which) and asks_yes_no("Cancel the first?") and asks_yes_no("Shall I proceed?")
    assert read_reply("Sure, the boots. Refund to the card.", which).decision == "unclear"
    assert read_reply("The boots, to the card. Please go ahead.", which).decision == "yes"
    assert read_reply("Sure, the boots.", "Shall I return the boots?").decision == "yes"


# ---- the check, with and without a judge ----------------------------------------------------------------------
LOOKUP = Call("find_user_id_by_name_zip", {"first_name": "Emma", "last_name": "Smith", "zip": "10192"})
CANCEL = Call("cancel_pending_order", {"order_id": "#W2417020", "reason": "no longer needed"})
ASK = ("agent", "I will cancel order #W2417020 because it is no longer needed. Shall I go ahead?")


def steps(reply: str) -> list:
    return [("user", "hi"), LOOKUP, ASK, ("user", reply), CANCEL]


def fake_judge(url: str) -> LLMJudge:
    return LLMJudge("judge-m", ChatClient(EndpointConfig(base_url=url, max_retries=0, timeout_s=5)))


def test_natural_yes_passes_and_yes_but_fails(tau2_world, tau2_tasks):
    task = tau2_tasks["69"]
    assert grade(tau2_world, task, record(tau2_world, task.id, steps("Sounds good, please do that."))).passed
    failed = grade(tau2_world, task, record(tau2_world, task.id, steps("Yes, but use PayPal instead.")))
    assert failed.failed_components == ["static.confirmation"]


def test_unclear_reply_is_not_a_yes_without_a_judge(tau2_world, tau2_tasks):
    task = tau2_tasks["69"]
    verdict = grade(tau2_world, task, record(tau2_world, task.id, steps("Hmm, I suppose.")))
    assert verdict.failed_components == ["static.confirmation"]
    assert any("unclear answer" in n for n in verdict.component("static.confirmation").notes)


@pytest.mark.parametrize("settled", [True, False])
def test_unclear_reply_goes_to_the_judge(tau2_world, tau2_tasks, settled):
    task = tau2_tasks["69"]
    rubric = json.dumps({"items": [{"item": i, "passed": True} for i in (1, 2, 3)]})
    replies = [completion(json.dumps({"confirmed": settled})), completion(rubric)]
    if not settled:  # a failed trial: the judge also reviews the user simulator's part
        from pipeline.grading.llm_judge import USER_SIM_ISSUES

        replies.append(completion(json.dumps({issue: {"flag": False} for issue in USER_SIM_ISSUES})))
    with FakeOpenAI(replies) as fake:
        verdict = grade(
            tau2_world, task, record(tau2_world, task.id, steps("Hmm, I suppose.")), judge=fake_judge(fake.base_url)
        )
        asked = fake.requests[0]["messages"][1]["content"]
    assert "Shall I go ahead?" in asked and "Hmm, I suppose." in asked
    assert verdict.passed is settled
    assert any("settled by the judge" in n for n in verdict.component("static.confirmation").notes)


def test_clear_replies_never_reach_the_judge(tau2_world, tau2_tasks):
    task = tau2_tasks["69"]
    rubric = json.dumps({"items": [{"item": i, "passed": True} for i in (1, 2, 3)]})
    with FakeOpenAI([completion(rubric)]) as fake:
        verdict = grade(
            tau2_world, task, record(tau2_world, task.id, steps("Yes, go ahead.")), judge=fake_judge(fake.base_url)
        )
        assert len(fake.requests) == 1  # the rubric only
    assert verdict.passed


def test_unreadable_judge_confirmation_is_an_infrastructure_error(tau2_world, tau2_tasks):
    task = tau2_tasks["69"]
    with FakeOpenAI(default=lambda body: completion("I think so")) as fake:
        verdict = grade(
            tau2_world, task, record(tau2_world, task.id, steps("Hmm, I suppose.")), judge=fake_judge(fake.base_url)
        )
    assert verdict.infra_error
    with pytest.raises(ValueError):
        parse_confirmation('{"confirmed": "yes"}')
