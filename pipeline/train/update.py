"""Training must not move the weights absurdly far: a trained model is compared with the checkpoint it started from
before it is saved.

A loss can look fine while the weights are ruined (LoRA's `alpha: 1e9` "trained" to a mean loss of 0.006 while
the merged weights moved by 75,614 and every answer broke). So after training, and after LoRA is merged, each
weight the base checkpoint holds is compared with its trained value: the update's root-mean-square over the
base weight's (`relative_update`, the base's floored at `RMS_FLOOR` so a zero-initialised bias can move). One
over `MAX_RELATIVE_UPDATE` refuses the checkpoint, naming the parameter and the bound; nothing is saved.

The comparison reads the base's safetensors one tensor at a time (no second copy of the model in memory); a base
stored otherwise is not compared (logged).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from pipeline.errors import TrainingError

log = logging.getLogger(__name__)
MAX_RELATIVE_UPDATE = 100.0  # a sane fine-tune moves a weight by a fraction of its size, rarely more than a few times
RMS_FLOOR = 0.02  # the usual initialisation's scale: below it a weight's own size says nothing


class AbsurdUpdateError(TrainingError, ValueError):
    """Training moved a weight far beyond any sane fine-tune; nothing was saved."""


def _rms(t: torch.Tensor) -> float:
    return float(t.float().pow(2).mean().sqrt()) if t.numel() else 0.0


def relative_update(before: torch.Tensor, after: torch.Tensor) -> float:
    """How far `after` moved from `before`: the update's RMS over the base weight's (floored at RMS_FLOOR); an
    update that is not finite is infinitely far."""
    delta = after.detach().float().cpu() - before.float()
    size = _rms(delta)
    return size / max(_rms(before), RMS_FLOOR) if size == size else float("inf")


def largest_update(model: torch.nn.Module, base: str | Path) -> tuple[str, float] | None:
    """(parameter, relative update) of the weight that moved most from the base checkpoint, or None when the base
    holds no safetensors to compare with."""
    from safetensors import safe_open

    files = sorted(Path(base).glob("*.safetensors"))
    if not files:
        log.info("%s: no safetensors weights; the trained update is not compared with the base", base)
        return None
    params = dict(model.named_parameters())
    worst: tuple[str, float] | None = None
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open is not a mapping
                trained = params.get(name)
                if trained is None:
                    continue
                before = handle.get_tensor(name)
                if before.shape != trained.shape:
                    continue
                moved = relative_update(before, trained)
                if worst is None or moved > worst[1]:
                    worst = (name, moved)
    return worst


def check_update(model: torch.nn.Module, base: str | Path, bound: float = MAX_RELATIVE_UPDATE) -> float | None:
    """Refuse (AbsurdUpdateError naming the parameter) a trained model a weight of which moved more than `bound`
    times the base weight's size; returns the largest relative update (None: not compared)."""
    worst = largest_update(model, base)
    if worst is None:
        return None
    name, moved = worst
    if not moved <= bound:
        raise AbsurdUpdateError(
            f"training moved weight {name} by {moved:.3g} times its size in {base} (the bound is {bound:g},"
            " pipeline.train.update.MAX_RELATIVE_UPDATE); nothing was saved — lower the learning rate or LoRA's"
            " alpha"
        )
    log.info("largest relative update: %s moved %.3g times its size", name, moved)
    return moved
