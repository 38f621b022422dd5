"""Training stops on a non-finite loss or weights, and writes nothing; non-finite settings are refused up front."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.train.finite import NonFiniteTrainingError
from pipeline.train.sft import run_sft
from pipeline.train.sft_config import SFTConfig
from tests.train.helpers import gold, tasks, tiny_checkpoint, write_jsonl


def _params(tmp_path, lr):
    base = tiny_checkpoint(tmp_path / "base")
    data = write_jsonl(tmp_path / "data.jsonl", gold()[:2])
    task_file = write_jsonl(tmp_path / "tasks.jsonl", tasks())
    common = dict(base=base, data=[data], tasks=[task_file], max_steps=3, batch_size=2, threads=1, logging_steps=50)
    return SFTConfig(**common, learning_rate=lr)


@pytest.mark.parametrize("lr", [float("inf"), float("nan")])
def test_a_non_finite_learning_rate_is_refused_before_training(tmp_path, lr):
    with pytest.raises(ValidationError, match="finite number"):
        _params(tmp_path, lr)


@pytest.mark.slow  # imports TRL; a few seconds
def test_a_learning_rate_of_1e30_stops_training_and_saves_nothing(tmp_path):
    params = _params(tmp_path, 1e-3).model_copy(update={"learning_rate": 1e30})  # past the config's bound
    with pytest.raises(
        NonFiniteTrainingError, match=r"training stopped at step \d+: .* not finite \(learning rate 1e\+30\)"
    ):
        run_sft(params, tmp_path / "sft")
    assert not (tmp_path / "sft").exists()
