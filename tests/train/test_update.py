"""Training that moves the weights absurdly far is refused, naming the setting or the parameter: LoRA's scale and
the learning rate are bounded in the config, and a trained model is compared with its base before it is saved."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from pipeline.train.grpo_config import GRPOConfig
from pipeline.train.lora import LoraSpec
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig
from pipeline.train.update import AbsurdUpdateError, check_update, relative_update
from tests.train.helpers import gold, tiny_checkpoint, write_jsonl


def test_lora_scale_and_learning_rate_are_bounded_in_the_config(tmp_path):
    with pytest.raises(ValidationError, match=r"alpha 1000000000 over rank 16 .* alpha <= 64 \* rank"):
        LoraSpec(rank=16, alpha=10**9)
    assert LoraSpec(rank=8, alpha=512).alpha == 512
    with pytest.raises(ValidationError, match="learning_rate"):
        SFTConfig(base=tmp_path, learning_rate=10.0)
    with pytest.raises(ValidationError, match="learning_rate"):
        GRPOConfig(base=tmp_path, tasks=[], learning_rate=5.0)


def test_the_relative_update_is_the_change_over_the_weight():
    w = torch.full((4, 4), 0.5)
    assert relative_update(w, w) == 0.0
    assert relative_update(w, w * 3) == pytest.approx(2.0)
    assert relative_update(torch.zeros(3), torch.full((3,), 0.02)) == pytest.approx(1.0)  # floored base
    assert relative_update(w, torch.full((4, 4), float("nan"))) == float("inf")


@pytest.mark.slow  # imports TRL; a few seconds
def test_a_lora_alpha_of_1e9_trains_but_is_not_saved(tmp_path):
    base = tiny_checkpoint(tmp_path / "base")
    data = write_jsonl(tmp_path / "data.jsonl", gold()[:2])
    lora = LoraSpec.model_construct(**{**LoraSpec(rank=4, alpha=8).model_dump(), "alpha": 10**9})  # past the bound
    params = SFTConfig(base=base, data=[data], max_steps=2, batch_size=2, threads=1, learning_rate=1e-3)
    params = params.model_copy(update={"lora": lora})
    with pytest.raises(
        AbsurdUpdateError,
        match=r"training moved weight \S+proj\.weight by .* times its size in .*base \(the bound is 100",
    ):
        run_sft(params, tmp_path / "sft")
    assert not (tmp_path / "sft").exists()


def test_a_base_without_safetensors_is_not_compared(tmp_path):
    assert check_update(torch.nn.Linear(2, 2), tmp_path) is None
