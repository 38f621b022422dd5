"""A checkpoint whose weights hold NaN or infinity is refused where it is loaded, naming the folder and a
parameter that is not finite: measured, it would pass^1 0% with exit 0, as if the agent were merely bad."""

from __future__ import annotations

import pytest
from safetensors.torch import load_file, save_file

from pipeline.agents import load_checkpoint, load_model
from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.checkpoint import NonFiniteWeightsError, check_finite_files
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus
from tests.train.helpers import tiny_checkpoint


def _spoil(path, value: float, every: bool = False):
    """The checkpoint's weights file rewritten with `value` in one tensor (or in every floating one)."""
    (file,) = sorted(path.glob("*.safetensors"))
    tensors = load_file(str(file))
    spoiled = next(name for name in sorted(tensors) if "layers.0" in name and name.endswith("weight"))
    for name, tensor in tensors.items():
        if (every or name == spoiled) and tensor.is_floating_point():
            tensor.view(-1)[:3] = value
    save_file(tensors, str(file), metadata={"format": "pt"})
    return spoiled


@pytest.fixture(scope="module")
def agentloop_checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("ours") / "ckpt")


@pytest.fixture(scope="module")
def outside_checkpoint(tmp_path_factory):
    return build_checkpoint(FAMILIES["qwen2"], tmp_path_factory.mktemp("qwen2") / "ckpt", corpus())


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("which", ["agentloop", "outside"])
def test_a_checkpoint_with_non_finite_weights_is_refused_at_load_naming_a_parameter(
    tmp_path, agentloop_checkpoint, outside_checkpoint, which, value
):
    import shutil

    source = agentloop_checkpoint if which == "agentloop" else outside_checkpoint
    path = tmp_path / "spoiled"
    shutil.copytree(source, path)
    load_model(path)  # a clean copy loads
    check_finite_files(path)
    spoiled = _spoil(path, value)
    for load in (load_model, check_finite_files, HFAgent) + ((load_checkpoint,) if which == "agentloop" else ()):
        with pytest.raises(NonFiniteWeightsError) as err:
            load(path)
        message = str(err.value)
        assert message.startswith(f"{path}: the weights are not finite: parameter ") and "\n" not in message
        assert spoiled.removeprefix("model.") in message and "holds 3 NaN/inf of" in message, load


def test_measure_refuses_an_all_nan_checkpoint_in_one_line(tmp_path, agentloop_checkpoint):
    import shutil

    from pipeline.authoring.templates import generate_tasks
    from pipeline.dataset.io import write_tasks
    from pipeline.world.registry import load_world
    from tests.test_cli_bad_inputs import WORLD, clear_error, measure

    path = tmp_path / "nan"
    shutil.copytree(agentloop_checkpoint, path)
    _spoil(path, float("nan"), every=True)
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(load_world(WORLD), 1, seed=1))
    result = measure(tasks, tmp_path / "run", "--agent", f"hf:{path}")
    clear_error(result, str(path), "the weights are not finite", "parameters hold some")
    assert not (tmp_path / "run" / "metrics.json").exists()
