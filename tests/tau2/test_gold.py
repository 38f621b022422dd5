"""Gold-equivalent conversations: every retail task's passes the strict verdict with natural confirmations, and
each perturbation breaks it."""

from __future__ import annotations

import pytest

from pipeline.errors import TaskError
from pipeline.grading.grader import grade
from pipeline.tau2.gold import PERTURBATIONS, gold_conversation, perturb

NATURAL = ("Sounds good, please do that.", "Absolutely, go ahead.", "Yes please, that's correct.", "Perfect, go ahead.")


def test_every_gold_conversation_passes_strict(domain):
    failed = {}
    for task in domain.tasks:
        verdict = grade(domain.world, task, gold_conversation(domain.world, task, NATURAL))
        if not verdict.passed:
            failed[task.id] = verdict.failed_components
    assert not failed and len(domain.tasks) == 114


def test_a_yes_but_reply_fails_the_confirmation(domain):
    task = domain.task("69")
    verdict = grade(domain.world, task, gold_conversation(domain.world, task, ("Yes, but use PayPal instead.",)))
    assert verdict.failed_components == ["static.confirmation"]


@pytest.mark.parametrize("how", ["missing_write", "wrong_argument", "extra_write"])
def test_perturbations_that_change_the_state_fail_strict(domain, how):
    task = domain.task("69")
    verdict = grade(domain.world, task, perturb(domain.world, task, how))
    assert "state" in verdict.failed_components


def test_perturb_names_what_it_cannot_do(domain):
    with pytest.raises(TaskError, match="unknown perturbation"):
        perturb(domain.world, domain.task("69"), "nonsense")
    no_info = next(t for t in domain.tasks if not t.evaluation.communicate_info)
    with pytest.raises(TaskError, match="nothing to perturb"):
        perturb(domain.world, no_info, "info_not_communicated")
    assert set(PERTURBATIONS) >= {"missing_write", "max_steps"}
