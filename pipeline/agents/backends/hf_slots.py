"""A batch's key/value cache layer whose rows are slots of preallocated buffers (see `hf_padded`)."""

from __future__ import annotations

from typing import Any, cast

import torch
from transformers.cache_utils import DynamicLayer


class SlotLayer(DynamicLayer):
    """One layer's keys and values for every slot of a batch, in buffers (slots, heads, positions, dim) that a
    pass writes in place: rows 0..n are the rows generating, columns `begin`..`end` the positions any of them
    holds, each row's tokens ending at `end` (a row shorter than the longest is masked on the left). A row
    joining or leaving copies its own keys and values and nothing else."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.buffers = (keys, values)
        self.device, self.is_initialized = keys.device, True
        self.show(0, 0, 0)

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to do: the buffers exist before the first pass."""

    def show(self, rows: int, begin: int, end: int) -> None:
        """What the next pass reads: the first `rows` slots, columns `begin`..`end`."""
        self.rows, self.begin, self.end = rows, begin, end
        self.keys = self.buffers[0][:rows, :, begin:end]
        self.values = self.buffers[1][:rows, :, begin:end]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        width = key_states.shape[-2]
        for buffer, new in zip(self.buffers, (key_states, value_states), strict=True):
            buffer[: self.rows, :, self.end : self.end + width] = new
        self.show(self.rows, self.begin, self.end + width)
        return cast(torch.Tensor, self.keys), cast(torch.Tensor, self.values)
