"""`llamacpp:PATH`: a Llama-architecture checkpoint exported to GGUF and run by llama.cpp, offline, on a
random-weight tiny Llama with Llama 3's real chat template: the export keeps the forward pass (float32 logits
equal to transformers' up to summation order), episodes are the `hf` backend's token for token, quantized weights
run, and what cannot be exported is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pipeline.agents.backends.gguf_export import GGUFExportError, export_gguf
from pipeline.agents.registry import UnknownAgentError, checkpoint_digest, make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.measure import MeasureConfig, measure
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

WORLD = "gen-5-8x10x20"


@pytest.fixture(autouse=True)
def gguf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_GGUF_CACHE", str(tmp_path / "gguf-cache"))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return build_checkpoint(FAMILIES["llama3"], tmp_path_factory.mktemp("llama3"), corpus(), seed=3)


def _llama_cpp_logits(gguf_path, ids: list[int]) -> np.ndarray:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=512, n_threads=1, verbose=False)
    try:
        llm.eval(ids)
        return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).copy()
    finally:
        llm.close()


def test_the_export_keeps_the_forward_pass(llama):
    from transformers import AutoModelForCausalLM

    ids = list(range(5, 200, 3))
    model = AutoModelForCausalLM.from_pretrained(str(llama), dtype=torch.float32).eval()
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0, -1].numpy()
    f32 = _llama_cpp_logits(export_gguf(llama, "f32"), ids)
    assert f32.shape == ref.shape
    assert np.abs(f32 - ref).max() < 1e-4 * max(1.0, np.abs(ref).max())
    q8 = _llama_cpp_logits(export_gguf(llama, "q8_0"), ids)
    assert np.abs(q8 - ref).max() < 0.05 * np.abs(ref).max()  # quantized: close, not equal
    assert np.abs(q8 - ref).max() > np.abs(f32 - ref).max()


def test_an_export_is_cached_by_weights_and_a_changed_checkpoint_is_exported_again(llama, tmp_path):
    first = export_gguf(llama, "f32")
    stamp = first.stat().st_mtime_ns
    assert export_gguf(llama, "f32") == first and first.stat().st_mtime_ns == stamp
    other = build_checkpoint(FAMILIES["llama3"], tmp_path / "other", corpus(), seed=4)
    assert export_gguf(other, "f32") != first


def test_episodes_are_the_hf_backends_token_for_token(llama, tmp_path):
    world = __import__("pipeline.world.registry", fromlist=["load_world"]).load_world(WORLD)
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, n=3, seed=2))
    runs = {}
    for engine in ("hf", "llamacpp"):
        out = tmp_path / engine
        cfg = MeasureConfig(world=WORLD, tasks=tasks, agent=f"{engine}:{llama},max_new_tokens=24", trials=1)
        measure(cfg, out)
        lines = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
        runs[engine] = {t["task_id"]: [m.get("content") for m in t["messages"]] for t in lines}
    assert runs["hf"] == runs["llamacpp"]
    assert any(len(m) > 2 for m in runs["hf"].values())  # the agent spoke, more than once somewhere


def test_settings_name_the_engine_and_weight_type(llama):
    agent = make_agent(f"llamacpp:{llama},weights=q8_0,max_new_tokens=8")
    try:
        assert agent.settings["kind"] == "llamacpp" and agent.settings["weights"] == "q8_0"
        assert agent.format.name == FAMILIES["llama3"].format
    finally:
        agent.close()
    assert checkpoint_digest(f"llamacpp:{llama}") == checkpoint_digest(f"hf:{llama}")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("llamacpp:{p},weights=q4", "weights 'q4': expected one of f32, f16, q8_0"),
        ("llamacpp:{p},draft=4", "unknown setting(s) ['draft']"),
        ("llamacpp:{p},threads=0", "threads"),
        ("llamacpp:{p}/nowhere", "no such"),
    ],
)
def test_bad_specs_are_refused_in_one_line(llama, spec, said):
    with pytest.raises(UnknownAgentError) as err:
        make_agent(spec.format(p=llama))
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_checkpoint_of_another_architecture_is_refused_naming_it(tmp_path):
    qwen = build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", corpus())
    with pytest.raises(GGUFExportError, match="model_type 'qwen2'.*Llama-architecture checkpoints only"):
        export_gguf(qwen, "f32")
    with pytest.raises(UnknownAgentError, match="model_type 'qwen2'"):
        make_agent(f"llamacpp:{qwen}")
