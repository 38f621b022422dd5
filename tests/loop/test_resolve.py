"""params.yaml resolved before any stage: each name that names nothing usable is one line naming its key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.loop.params import ParamsError, load_params
from pipeline.loop.resolve import resolve_params
from tests.loop.loop_helpers import ROOT


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("world:\n  domain: nope\n", "world.domain: unknown domain 'nope'"),
        ("world:\n  eval_world: gen-x\n  train_world: gen-7\n", "world.eval_world:"),
        ("world:\n  eval_world: gen-7\n  train_world: gen-7\n", "world: train_world 'gen-7' is the evaluation world"),
        ("measure:\n  user: robot\n", "measure.user: unknown user 'robot'"),
        ("measure:\n  judge: gpt\n", "measure.judge: unknown judge 'gpt'"),
        ("measure:\n  ray_address: 'http://x'\n", "measure.ray_address: 'http://x': expected HOST:PORT"),
        ("baseline:\n  source: 'agent:nonsense'\n", "baseline.source: unknown agent 'nonsense'"),
        ("train:\n  method: 'agent:hf:/nowhere'\n", "train.method: agent 'hf:/nowhere': no checkpoint directory"),
    ],
)
def test_a_name_that_names_nothing_is_refused_naming_its_key(tmp_path, text, needle):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match=None) as info:
        resolve_params(load_params(path), str(path))
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_ray_client_address_without_rays_client_is_refused_naming_its_key(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "grpc", None)  # as without the `ray[client]` extra: importing grpc fails
    path = tmp_path / "params.yaml"
    path.write_text("measure:\n  ray_address: 'ray://head:10001'\n")
    with pytest.raises(ParamsError, match=None) as info:
        resolve_params(load_params(path), str(path))
    assert "measure.ray_address: Ray address 'ray://head:10001': a ray:// address needs Ray's client" in str(info.value)


def test_a_checkpoint_a_stage_builds_need_not_exist_yet(tmp_path, monkeypatch):
    """`agent:hf:models/embedded` before the embedded stage has built it: an output of dvc.yaml, so accepted."""
    (tmp_path / "dvc.yaml").write_text("stages:\n  embedded:\n    cmd: x\n    outs:\n      - models/embedded:\n")
    (tmp_path / "params.yaml").write_text(
        "baseline:\n  source: 'agent:hf:models/embedded,max_new_tokens=12'\n"
        "train:\n  method: 'agent:hf:models/elsewhere'\n"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamsError, match=None) as info:
        resolve_params(load_params(tmp_path / "params.yaml"))
    assert "train.method: agent 'hf:models/elsewhere': no checkpoint directory" in str(info.value)


def test_an_empty_model_name_is_refused_at_load(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("promote:\n  model_name: ''\n")
    with pytest.raises(ParamsError, match="promote.model_name"):
        load_params(path)


def test_the_committed_params_resolve():
    resolve_params(load_params(ROOT / "params.yaml"))


def test_a_stage_script_stops_before_its_stage_with_one_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("world:\n  domain: nope\n")
    env = {**os.environ, "AGENTLOOP_PARAMS": str(path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "target.py")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1:] == [
        f"stage target: {path}: world.domain: unknown domain 'nope': "
        "expected one of ['airline', 'retail', 'telecom'] or module:attribute"
    ]
