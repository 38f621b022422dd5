"""Training steps on the loop's progress display (a bar in a terminal, a log line every tenth otherwise)."""

from __future__ import annotations

from transformers import TrainerCallback

from pipeline.progress import Tracker


class TrackerCallback(TrainerCallback):
    """Feeds a trainer's optimizer steps to a `Tracker`; the total is known once training begins."""

    def __init__(self, tracker: Tracker):
        self.tracker = tracker

    def on_train_begin(self, args, state, control, **kwargs):
        if state.max_steps:
            self.tracker.set_total(int(state.max_steps))

    def on_step_end(self, args, state, control, **kwargs):
        self.tracker.advance()
