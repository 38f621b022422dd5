"""The wall-clock budget of a training run stops it before the step that would overrun, never before the first."""

from __future__ import annotations

import pydantic
import pytest
from transformers import TrainerControl, TrainerState

from pipeline.train.grpo_config import GRPOConfig
from pipeline.train.time_budget import TimeBudgetCallback


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def steps_run(budget_s: float, step_s: float, max_steps: int) -> int:
    clock = Clock()
    callback = TimeBudgetCallback(budget_s, clock=clock)
    state, control = TrainerState(max_steps=max_steps), TrainerControl()
    callback.on_train_begin(None, state, control)
    while state.global_step < max_steps and not control.should_training_stop:
        clock.now += step_s
        state.global_step += 1
        callback.on_step_end(None, state, control)
    return state.global_step


def test_as_many_steps_as_fit_the_budget():
    assert steps_run(budget_s=1200, step_s=250, max_steps=100) == 4  # a fifth would end at 1250 s
    assert steps_run(budget_s=1200, step_s=240, max_steps=100) == 5  # the fifth ends at 1200 s exactly
    assert steps_run(budget_s=1200, step_s=5000, max_steps=100) == 1  # the first step always runs
    assert steps_run(budget_s=1200, step_s=10, max_steps=7) == 7  # the step count still bounds it


def test_the_budget_is_a_positive_number_of_minutes(tmp_path):
    with pytest.raises(pydantic.ValidationError, match="max_minutes"):
        GRPOConfig(base=tmp_path, tasks=[], max_minutes=0)
    assert GRPOConfig(base=tmp_path, tasks=[]).max_minutes is None
