"""Property-based fuzzing of the file formats a user hands agentloop: whatever the bytes, reading a tasks file or a
params.yaml either succeeds or fails with the format's own error naming the file, never anything else."""

from __future__ import annotations

import json

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import TaskFileError, read_tasks
from pipeline.loop.params import Params, ParamsError, load_params
from pipeline.world.registry import load_world

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
GOOD = generate_tasks(load_world("gen-3-8x20x40"), 1, seed=2)[0].model_dump(mode="json")


def _mutate(data, path_and_value):
    """The valid task with one field (at a path drawn from its keys) replaced by a drawn value."""
    keys, value = path_and_value
    node = data
    for key in keys[:-1]:
        if not isinstance(node, dict) or key not in node:
            return data
        node = node[key]
    if isinstance(node, dict) and keys:
        node[keys[-1]] = value
    return data


def _paths(obj, prefix=()):
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    return out


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_as_a_tasks_file(tmp_path, raw):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(raw)
    try:
        read_tasks(path)
    except TaskFileError as exc:
        assert str(path) in str(exc)


@FUZZ
@given(st.sampled_from(_paths(GOOD)), values)
def test_a_valid_task_with_one_field_replaced(tmp_path, keys, value):
    data = _mutate(json.loads(json.dumps(GOOD)), (keys, value))
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(data) + "\n")
    try:
        read_tasks(path)
    except TaskFileError as exc:
        assert f"{path}:1" in str(exc)


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(Params.model_fields)), values, max_size=4))
def test_any_sections_as_params(tmp_path, data):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        load_params(path)
    except ParamsError as exc:
        assert str(path) in str(exc)


@FUZZ
@given(st.text(max_size=300))
def test_any_text_as_params(tmp_path, text):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    try:
        load_params(path)
    except ParamsError as exc:
        assert str(path) in str(exc)
