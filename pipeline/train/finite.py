"""Training stops on a non-finite loss or weights: a learning rate of 1e30, say, never writes a checkpoint of NaNs.

`FiniteCallback` checks, after every optimizer step, the weights being trained (and every logged loss and gradient
norm); the first infinite or NaN value stops the trainer with `NonFiniteTrainingError`, which names the step and
the learning rate, before anything is saved.
"""

from __future__ import annotations

import math

import torch
from transformers import TrainerCallback

from pipeline.errors import TrainingError


class NonFiniteTrainingError(TrainingError, ValueError):
    """Training produced an infinite or NaN loss or weight; nothing was saved."""


def first_non_finite(model: torch.nn.Module, trainable_only: bool = True) -> str | None:
    """The name of the first parameter holding an infinite or NaN value, or None."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if (p.requires_grad or not trainable_only) and not bool(torch.isfinite(p).all()):
                return name
    return None


class FiniteCallback(TrainerCallback):
    """Stops training at the first non-finite loss, gradient norm or trained weight (see the module)."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = learning_rate

    def _fail(self, step: int, what: str) -> None:
        raise NonFiniteTrainingError(
            f"training stopped at step {step}: {what} is not finite (learning rate {self.learning_rate:g}); nothing"
            " was saved — lower the learning rate"
        )

    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "grad_norm"):
            value = (logs or {}).get(key)
            if isinstance(value, int | float) and not math.isfinite(value):
                self._fail(state.global_step, f"the {key.replace('_', ' ')} ({value})")

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if model is not None:
            name = first_non_finite(model)
            if name is not None:
                self._fail(state.global_step, f"weight {name}")
