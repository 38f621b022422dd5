"""params.yaml validation and the stage list in dvc.yaml."""

import re
import subprocess
import sys

import pytest
import yaml

from pipeline.loop.params import Params, ParamsError, load_params
from tests.loop.loop_helpers import ROOT


def test_repo_params_are_valid_and_complete():
    params = load_params(ROOT / "params.yaml")
    assert params == Params.model_validate(yaml.safe_load((ROOT / "params.yaml").read_text()))
    assert set(yaml.safe_load((ROOT / "params.yaml").read_text())) == set(Params.model_fields)


def test_unknown_key_fails_with_its_path(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("gate:\n  k: 4\n  marginn: 0.1\n")
    with pytest.raises(ParamsError, match=r"params.yaml: gate.marginn: Extra inputs are not permitted"):
        load_params(path)
    path.write_text("baseline:\n  source: somewhere\n")
    with pytest.raises(ParamsError, match=r"baseline.source"):
        load_params(path)
    path.write_text("embedded:\n  corpus_taskss: 3\n")  # checked lazily, but checked
    with pytest.raises(ParamsError, match=r"params.yaml: embedded: .*corpus_taskss: Extra inputs are not permitted"):
        load_params(path)


def test_reading_params_needs_no_torch(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("embedded:\n  corpus_tasks: 12\n")
    assert load_params(path).embedded_config().corpus_tasks == 12
    code = (
        "import sys; from pipeline.loop.params import load_params; "
        f"p = load_params({str(ROOT / 'params.yaml')!r}); assert p.embedded == {{}}; "
        "assert 'torch' not in sys.modules, 'reading params.yaml imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_loop_step_is_a_stage_with_its_script_and_params():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert list(stages) == [
        "eval_tasks",
        "embedded_data",
        "embedded",
        "baseline",
        "measure",
        "target",
        "synthesize",
        "curate",
        "train",
        "remeasure",
        "gate",
        "report",
        "promote",
    ]
    for name, stage in stages.items():
        script = f"stages/{name}.py"
        assert stage["cmd"] == f"python {script}"
        assert script in stage["deps"] and (ROOT / script).exists()
        assert stage.get("params"), name
        for dep in stage["deps"]:
            if dep.startswith("pipeline/"):
                assert (ROOT / dep).exists(), dep
    lines = (ROOT / "stages" / "measure.py").read_text().splitlines()
    assert len([line for line in lines if line.strip()]) <= 6  # thin


def test_the_stages_that_read_the_domain_depend_on_it():
    """A stage whose function (or a helper it calls) reads `world.domain` lists that param and the domains' code,
    so that `-S world.domain=...` or a change to a domain reruns it; one that does not read it lists neither."""
    import importlib
    import inspect

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    reading = set()
    for name in stages:
        script = (ROOT / "stages" / f"{name}.py").read_text()
        called = re.search(r"run_stage\(\"\w+\", (\w+)\)", script).group(1)
        module = importlib.import_module(re.search(rf"from ([\w.]+) import {called}\b", script).group(1))
        source = inspect.getsource(getattr(module, called))
        helpers = [h for h in re.findall(r"\b(_?\w+)\(p\b", source) if hasattr(module, h)]
        source += "".join(inspect.getsource(getattr(module, h)) for h in helpers)
        if "p.world.domain" in source:
            reading.add(name)
    assert reading >= {"eval_tasks", "measure", "target", "synthesize", "curate", "remeasure", "gate"}
    for name, stage in stages.items():
        assert ("world.domain" in stage["params"]) == (name in reading), name
        assert ("pipeline/domains" in stage["deps"]) == (name in reading), name
        assert ("pipeline/explore" in stage["deps"]) == (name in reading), name  # the generic capabilities


def test_a_key_given_twice_is_an_error_naming_it_and_its_lines(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("measure:\n  trials: 4\n  seed: 0\n  trials: 2\n")
    with pytest.raises(ParamsError, match=r"duplicate key 'trials' \(first on line 2, again on line 4\)"):
        load_params(path)
    path.write_text("gate:\n  k: 2\ngate:\n  k: 3\n")
    with pytest.raises(ParamsError, match="duplicate key 'gate'"):
        load_params(path)


def test_an_empty_file_is_an_error_not_the_code_defaults(tmp_path):
    path = tmp_path / "params.yaml"
    for text in ("", "# nothing here\n"):
        path.write_text(text)
        with pytest.raises(ParamsError, match="empty file"):
            load_params(path)
    path.write_text("- a list\n")
    with pytest.raises(ParamsError, match="expected a mapping of sections"):
        load_params(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("measure:\n  trials: true\n", "measure.trials: Input should be a valid integer"),
        ("measure:\n  trials: '4'\n", "measure.trials: Input should be a valid integer"),
        ("measure:\n  trials: 4.0\n", "measure.trials: Input should be a valid integer"),
        ("train:\n  use_curated: 1\n", "train.use_curated: Input should be a valid boolean"),
        ("train:\n  learning_rate: 1e-3\n", "write it with a dot"),
    ],
)
def test_values_are_not_coerced(tmp_path, text, message):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match=re.escape(message)):
        load_params(path)


def test_gate_k_above_the_trials_fails_at_load(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("measure:\n  trials: 2\ngate:\n  k: 4\n")
    with pytest.raises(ParamsError, match="gate.k=4 exceeds measure.trials=2"):
        load_params(path)
    path.write_text("measure:\n  trials: 4\ngate:\n  k: 4\n")
    assert load_params(path).gate.k == 4


@pytest.mark.parametrize(
    ("lora", "message"),
    [
        ("{rank: 0}", r"train.lora.rank: Input should be greater than or equal to 1"),
        ("{r: 8}", r"train.lora.r: Extra inputs are not permitted"),
        ("{dropout: 1.0}", r"train.lora.dropout: Input should be less than 1"),
        ("{alpha: 16.5}", r"train.lora.alpha: Input should be a valid integer"),
        ("{target_modules: []}", r"train.lora.target_modules: List should have at least 1 item"),
        ("{target_modules: [q_proj, q_proj]}", r"train.lora.target_modules: .*distinct, non-empty module names"),
        ("true", r"train.lora: Input should be a valid dictionary"),
    ],
)
def test_bad_lora_fields_fail_with_their_path(tmp_path, lora, message):
    path = tmp_path / "params.yaml"
    path.write_text(f"train:\n  lora: {lora}\n")
    with pytest.raises(ParamsError, match=message):
        load_params(path)


def test_train_defaults_are_full_fp32_sft_and_the_section_is_the_sft_config(tmp_path):
    from pipeline.train.lora import lora_record
    from pipeline.train.sft_config import SFTConfig

    train = load_params(ROOT / "params.yaml").train
    assert (train.lora, train.bf16, train.gradient_accumulation_steps, train.overlong) == (None, False, 1, "auto")
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  bf16: true\n  gradient_accumulation_steps: 4\n  lora: {rank: 8, alpha: 16}\n")
    train = load_params(path).train
    assert train.lora.rank == 8 and train.lora.dropout == 0.0 and "down_proj" in train.lora.target_modules
    run = train.sft_config(base=tmp_path / "base", data=[tmp_path / "d.jsonl"])
    assert type(run) is SFTConfig and run.lora == train.lora and run.gradient_accumulation_steps == 4
    # the checkpoint's training record keeps its schema: grad_accum, LoRA as {enabled, r, ...}
    record = run.record()
    assert record["grad_accum"] == 4 and record["lora"] == lora_record(train.lora)
    assert record["lora"]["enabled"] and (record["lora"]["r"], record["lora"]["alpha"]) == (8, 16)
    assert lora_record(None)["enabled"] is False  # null: LoRA off, as the defaults always were
    assert list(SFTConfig(base=tmp_path).record())[:3] == ["base", "data", "anchors"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("train:\n  base: models/x\n", r"train: .*base: set by the train stage"),
        ("train:\n  data: [a.jsonl]\n", r"train: .*data: set by the train stage"),
        ("measure:\n  world: gen-5\n", r"measure: .*world: set by the loop from world.eval_world"),
        ("measure:\n  agent: oracle\n", r"measure: .*agent: set by the loop"),
        ("measure:\n  verdict: tau2\n", r"measure: .*verdict: set by the loop from gate.verdict"),
    ],
)
def test_the_inputs_the_stages_fill_in_are_refused_in_the_file(tmp_path, text, message):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match=message):
        load_params(path)


def test_the_code_defaults_are_the_committed_params():
    """A section left out of params.yaml runs as the committed file would (one class per job, one set of values)."""
    assert Params() == load_params(ROOT / "params.yaml")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("measure:\n  temperature: .inf\n", "measure.temperature: inf"),
        ("train:\n  learning_rate: .nan\n", "train.learning_rate: nan"),
        ("target:\n  config:\n    weights:\n      invention: -.inf\n", "target.config.weights.invention: -inf"),
        ("embedded:\n  loop:\n    lr: .inf\n", "embedded.loop.lr: inf"),
    ],
)
def test_a_non_finite_number_anywhere_is_refused_with_its_path(tmp_path, text, where):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match=re.escape(f"params.yaml: {where} is not a finite number")):
        load_params(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("target:\n  config:\n    weights:\n      invention: -1.0\n", "target.config.weights.invention"),
        ("target:\n  config:\n    dials:\n      invention:\n        twin: 1.5\n", "less than or equal to 1"),
    ],
)
def test_negative_mode_weights_and_probabilities_above_one_are_refused(tmp_path, text, needle):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match=re.escape(needle)):
        load_params(path)


def test_measure_tasks_can_be_set_and_defaulted_sections_are_named(tmp_path, caplog):
    path = tmp_path / "params.yaml"
    path.write_text("measure:\n  tasks: data/imported/tasks.jsonl\n")
    with caplog.at_level("WARNING", logger="pipeline.loop.params"):
        params = load_params(path)
    assert str(params.measure.tasks) == "data/imported/tasks.jsonl"
    assert "measure" not in params.defaulted and {"world", "gate", "train"} <= set(params.defaulted)
    assert "no section loop, world," in caplog.text and "the code's defaults apply" in caplog.text
    path.write_text("measure:\n  tasks: 3\n")
    with pytest.raises(ParamsError, match="measure.tasks"):
        load_params(path)
    assert load_params(ROOT / "params.yaml").defaulted == ()


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("champion", "champion"),
        ("challenger", "challenger"),
        ("3", "3"),  # a YAML number, as `dvc exp run -S baseline.source=3` writes it
        ("'12'", "12"),
        ("agent:oracle", "agent:oracle"),
    ],
)
def test_baseline_source_names_an_alias_a_version_or_an_agent(tmp_path, text, source):
    path = tmp_path / "params.yaml"
    path.write_text(f"baseline:\n  source: {text}\n")
    assert load_params(path).baseline.source == source


@pytest.mark.parametrize("text", ["latest", "0", "-1", "v3", "true"])
def test_baseline_source_refuses_what_names_no_version(tmp_path, text):
    path = tmp_path / "params.yaml"
    path.write_text(f"baseline:\n  source: {text}\n")
    with pytest.raises(ParamsError, match=r"baseline.source"):
        load_params(path)


def test_each_iteration_trains_in_a_world_of_its_own_seed(tmp_path):
    path = tmp_path / "params.yaml"

    def world(iteration: int, train: str = "gen-7", per_iteration: bool = True, eval_world: str = "gen-101") -> str:
        path.write_text(
            f"loop: {{iteration: {iteration}}}\nworld: {{train_world: {train}, eval_world: {eval_world},"
            f" train_world_per_iteration: {str(per_iteration).lower()}}}\n"
        )
        return load_params(path).train_world()

    assert [world(n) for n in (1, 2, 3)] == ["gen-7", "gen-8", "gen-9"]
    assert world(3, per_iteration=False) == "gen-7"
    assert world(2, train="gen-7-20x80x160") == "gen-8-20x80x160"
    assert world(1, train="../shared/tau2_retail") == "../shared/tau2_retail"  # iteration 1 keeps it as given
    with pytest.raises(ParamsError, match=r"world.train_world_per_iteration needs a generated world"):
        world(2, train="../shared/tau2_retail")
    with pytest.raises(ParamsError, match=r"iteration 3 would train in 'gen-9', the evaluation world"):
        world(3, eval_world="gen-9")
    assert load_params(ROOT / "params.yaml").world.train_world_per_iteration  # the loop's default: fresh worlds
