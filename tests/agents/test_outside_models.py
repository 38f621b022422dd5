"""Outside checkpoints of real architectures (random weights, real chat templates) through `hf:PATH`, offline:
each loads in its own class and dtype, decodes with the logits of a direct forward, renders its prompt with its
template, reads its own tool-call syntax, records its format on first use, and measures on a small world."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from typer.testing import CliRunner

from pipeline.agents.backends.hf import HFAgent, PrefixCache
from pipeline.agents.checkpoint import META_FILE
from pipeline.agents.registry import make_agent
from pipeline.authoring.templates import generate_tasks
from pipeline.dataset.io import write_tasks
from pipeline.domains.retail.tools import TOOLS
from pipeline.formats import ChatFormatError
from pipeline.measure import MeasureConfig, measure
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Message
from pipeline.world.registry import load_world
from tests.agents.tiny_families import EMAIL_CALL, FAMILIES, build_checkpoint, corpus

WORLD = "gen-5-8x10x20"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def texts():
    return corpus()


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_checkpoint(request, tmp_path_factory, texts):
    family = FAMILIES[request.param]
    return family, build_checkpoint(family, tmp_path_factory.mktemp(family.name), texts)


def _policy_and_user():
    world = load_world(WORLD)
    return world.policy, [Message(role="user", content="Hi, I want to cancel an order. My email is a@b.com.")]


def test_loads_in_its_own_class_and_dtype_and_records_its_format(family_checkpoint):
    family, path = family_checkpoint
    assert not (path / META_FILE).exists()
    agent = make_agent(f"hf:{path},max_new_tokens=8")
    assert type(agent.model).__name__ == family.cls and agent.model.dtype == family.dtype
    assert agent.format.name == family.format
    attn = agent.model.model.layers[0].self_attn
    if family.name == "qwen2":
        assert attn.q_proj.bias is not None and attn.k_proj.bias is not None and attn.v_proj.bias is not None
    if family.name == "qwen3":
        assert attn.q_norm.weight.shape == (8,) and attn.k_norm.weight.shape == (8,)
    meta = json.loads((path / META_FILE).read_text())
    assert meta["chat_format"] == family.format and meta["architecture"] == family.cls
    assert meta["dtype"] == str(family.dtype).removeprefix("torch.") and len(meta["template_hash"]) == 16
    again = HFAgent(path, max_new_tokens=8)  # read back from agentloop.json
    assert again.format.name == family.format and again.meta.template_hash == meta["template_hash"]


def test_decoding_logits_equal_a_direct_forward_of_its_own_class(family_checkpoint):
    family, path = family_checkpoint
    agent = HFAgent(path, dtype="float32")
    policy, messages = _policy_and_user()
    ids = agent.format.prompt_ids(messages, TOOLS.schemas(), policy, agent.tokenizer)[:600]
    direct = getattr(transformers, family.cls).from_pretrained(str(path), dtype=torch.float32).eval()
    with torch.no_grad():
        want = direct(torch.tensor([ids])).logits[0, -1]
    cache = PrefixCache(agent.model, lean=agent.lean)
    cache.logits(ids[:-5])
    got = cache.logits(ids[-5:])  # incremental, through the key/value cache
    assert torch.allclose(got, want, atol=1e-4), float((got - want).abs().max())


def test_the_prompt_is_its_template_and_its_own_syntax_parses(family_checkpoint):
    family, path = family_checkpoint
    agent = HFAgent(path)
    tok = agent.tokenizer
    policy, messages = _policy_and_user()
    ids = agent.format.prompt_ids(messages, TOOLS.schemas(), policy, tok)
    text = tok.decode(ids, skip_special_tokens=False)
    if family.format == "generic":  # no tools in its template: schemas in the system text, Gemma's turns
        assert text.startswith(f"<bos><start_of_turn>user\n{policy.strip()}") and "<tools>" in text
        assert text.endswith("<start_of_turn>model\n")
    else:
        chat = [{"role": "system", "content": policy}, {"role": "user", "content": messages[0].content}]
        want = tok.apply_chat_template(chat, tools=TOOLS.schemas(), add_generation_prompt=True, tokenize=False)
        assert text == want
    end = sorted(agent.stop_ids)[0]
    generated = tok(family.call, add_special_tokens=False)["input_ids"] + [end]
    reply = agent.format.parse(agent.format.decode(tok, generated), tools=TOOLS.schemas())
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(EMAIL_CALL["name"], EMAIL_CALL["arguments"])]
    assert "think" not in (reply.content or "")


def test_a_measure_runs_and_records_what_the_model_wrote(family_checkpoint, tmp_path):
    family, path = family_checkpoint
    world = load_world(WORLD)
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, generate_tasks(world, 2, seed=1))
    cfg = MeasureConfig(
        world=WORLD,
        tasks=tasks,
        agent=f"hf:{path},max_new_tokens=12,temperature=1.0",
        trials=1,
        resamples=20,
        limits=Limits(max_turns=6),
    )
    summary = measure(cfg, tmp_path / "run")
    assert summary.infra_errors == 0 and summary.valid_trials == 2
    agent = HFAgent(path)
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").open()]
    replies = [Message(**m) for t in trajectories for m in t["messages"] if m["role"] == "assistant"]
    assert len(replies) >= 2 and all(r.raw is not None and r.usage.prompt_tokens > 1000 for r in replies)
    for r in replies:  # what was recorded is what the format reads from the raw text
        again = agent.format.parse(
            r.raw, id_prefix=r.tool_calls[0].id[:-1] if r.tool_calls else "x", tools=TOOLS.schemas()
        )
        assert (again.content, again.tool_calls) == (r.content, r.tool_calls)


def test_device_dtype_and_format_are_chosen_in_the_spec(tmp_path, texts):
    path = build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", texts)  # saved in bfloat16
    agent = make_agent(f"hf:{path},device=cpu,dtype=float32,format=hermes")
    assert agent.model.dtype == torch.float32 and agent.model.device.type == "cpu"
    with pytest.raises(ValueError, match="dtype 'float8'"):
        make_agent(f"hf:{path},dtype=float8")


def test_model_import_records_the_format_and_a_changed_template_is_refused(tmp_path, texts):
    from pipeline.cli import app

    path = build_checkpoint(FAMILIES["llama3"], tmp_path / "llama", texts)
    runner = CliRunner()
    out = runner.invoke(app, ["model", "import", str(path)])
    assert out.exit_code == 0, out.output
    assert "format llama3, LlamaForCausalLM, float32" in out.output
    again = runner.invoke(app, ["model", "import", str(path)])
    assert again.exit_code == 2 and "--force" in again.output
    bad = runner.invoke(app, ["model", "import", str(path), "--force", "--format", "chatml-9"])
    assert bad.exit_code == 2 and "unknown chat format 'chatml-9'" in bad.output
    (path / "chat_template.jinja").write_text("{{ messages }}{{ tools }}")  # the template changed after import
    with pytest.raises(ChatFormatError, match=f"{META_FILE}.*--force"):
        HFAgent(path)
