"""`TimeBudgetCallback`: train as many optimizer steps as fit a wall-clock budget, then stop cleanly.

A GRPO step on CPU costs minutes (its episodes are generated before the gradient), so "as many steps as fit 20
minutes" is the setting a user can state; a step count is a guess. After each step the callback stops the trainer
when the next step, at the mean duration of the steps so far, would end past the budget. The model trained so far
is then saved as after the last planned step; at least one step always runs.
"""

from __future__ import annotations

import logging
import time

from transformers import TrainerCallback

log = logging.getLogger(__name__)


class TimeBudgetCallback(TrainerCallback):
    """Stops training before a step that would end after `seconds` of wall time from the start of training."""

    def __init__(self, seconds: float, clock=time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started: float | None = None
        self.stopped_at: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        if self.started is None or state.global_step < 1:
            return
        elapsed = self.clock() - self.started
        per_step = elapsed / state.global_step
        if state.global_step < state.max_steps and elapsed + per_step > self.seconds:
            log.info(
                "time budget: stopping after step %d of %d (%.0f s spent, a step takes %.0f s, budget %.0f s)",
                state.global_step, state.max_steps, elapsed, per_step, self.seconds,
            )  # fmt: skip
            self.stopped_at = state.global_step
            control.should_training_stop = True
