"""An SFTTrainer whose loss projects only the labelled (assistant) positions through the LM head.

TRL's own SFT loss runs a chunked, fused LM head that keeps to the labelled positions only on Triton devices; on
CPU it scores every position of the batch (prompt, user and tool tokens, padding) and computes entropy and top-1
statistics for each. On the embedded default that was half of every step. This trainer computes the same
token-mean cross-entropy from the decoder's hidden states at the labelled positions alone, and logs token accuracy
(not entropy). `run_sft` uses it on CPU; on GPU TRL's fused head (which never builds the full logits) stays.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from trl import SFTTrainer

IGNORE = -100


def supports_labelled_loss(model: Any) -> bool:
    """A plain decoder + linear head: no logit soft-capping or scaling that the head's output would skip."""
    config = model.config
    return getattr(config, "final_logit_softcapping", None) is None and getattr(config, "logit_scale", None) is None


class LabelledLossSFTTrainer(SFTTrainer):
    """`SFTTrainer` with the loss computed on labelled positions only (same value as TRL's `nll` loss)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        # TRL types a trainer's args as transformers' TrainingArguments; an SFTTrainer's are an SFTConfig
        if return_outputs or self.args.loss_type != "nll" or self.accelerator.num_processes > 1:  # type: ignore[attr-defined]
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        features = {k: v for k, v in inputs.items() if k != "labels"}
        labels = inputs["labels"][:, 1:]
        mask = labels != IGNORE
        targets = labels[mask]
        with self.accelerator.autocast():  # the model's own forward would be wrapped in it
            hidden = model.get_decoder()(**features, use_cache=False).last_hidden_state[:, :-1]
            logits = model.get_output_embeddings()(hidden[mask]).float()
        count = mask.sum() if num_items_in_batch is None else num_items_in_batch
        loss = F.cross_entropy(logits, targets, reduction="sum") / torch.as_tensor(count).clamp(min=1)
        mode = "train" if model.training else "eval"
        with torch.no_grad():
            correct = (logits.argmax(-1) == targets).sum().item()
        self._metrics[mode]["mean_token_accuracy"].append(correct / max(1, targets.numel()))
        if mode == "train":
            self._total_train_tokens += int(inputs["attention_mask"].sum()) if "attention_mask" in inputs else 0
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
        return loss
