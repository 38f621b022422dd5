"""SFT of outside checkpoints (random-weight tiny Qwen2 and Llama with their real chat templates): the loss mask is
the assistant turns of the model's own rendering, over-long examples are dropped and counted, LoRA trains through
peft and the merged result loads again by `hf:PATH` in its own class and dtype."""

from __future__ import annotations

import json
import logging
import re

import pytest
import torch

from pipeline.agents.backends.loading import resolve_format
from pipeline.agents.checkpoint import META_FILE
from pipeline.agents.registry import make_agent
from pipeline.domains.retail.tools import TOOLS
from pipeline.errors import InputError
from pipeline.train.lora import LoraSpec
from pipeline.train.sft import run_sft
from pipeline.train.sft_base import fit_length, load_base
from pipeline.train.sft_config import SFTConfig
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus, template
from tests.train.helpers import gold, world

HEADERS = {"qwen2": "<|im_start|>", "llama3": "<|start_header_id|>"}
ENDS = {"qwen2": "<|im_end|>", "llama3": "<|eot_id|>"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    texts = corpus()
    root = tmp_path_factory.mktemp("outside")
    return {name: build_checkpoint(FAMILIES[name], root / name, texts) for name in ("qwen2", "llama3")}


def _runs(ids: list[int], mask: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i, (t, m) in enumerate(zip(ids, mask, strict=True)):
        if m:
            if i == 0 or not mask[i - 1]:
                runs.append([])
            runs[-1].append(t)
    return runs


@pytest.mark.parametrize("name", ["qwen2", "llama3"])
def test_the_mask_covers_the_assistant_turns_of_the_models_own_rendering(checkpoints, name):
    base = load_base(checkpoints[name])
    traj = gold()[0]
    columns = base.encode([traj])
    assert len(columns["input_ids"]) == 1  # both templates render the conversation as one growing prefix
    ids, mask = columns["input_ids"][0], columns["assistant_masks"][0]
    fmt, tok = base.format, base.tokenizer
    last = max(i for i, m in enumerate(traj.messages) if m.role == "assistant")
    rendered = fmt.render(traj.messages[: last + 1], TOOLS.schemas(), world().policy, tok, add_generation_prompt=False)
    assert tok.decode(ids, skip_special_tokens=False) == rendered  # the exact text evaluation renders
    turns = [m for m in traj.messages if m.role == "assistant"]
    runs = [tok.decode(r, skip_special_tokens=False) for r in _runs(ids, mask)]
    assert len(runs) == len(turns)
    for run, turn in zip(runs, turns, strict=True):
        assert run.endswith(ENDS[name]) and HEADERS[name] not in run  # the turn and its end, never a header
        if turn.tool_calls:
            assert all(f'"{c.name}"' in run for c in turn.tool_calls)
        elif turn.content:
            assert turn.content.strip() in run
    trained = "".join(runs)
    for m in traj.messages:
        if m.role in ("user", "tool") and m.content and len(m.content) > 20:
            assert m.content not in trained  # customer lines and tool results are context only
    assert world().policy.splitlines()[0] not in trained


def test_the_qwen_mask_is_trls_training_template_mask_less_the_newlines_around_the_turn(checkpoints):
    """TRL's qwen2_5_training.jinja marks the same tokens, plus the newline after `assistant` (part of the
    generation prompt the model is given) and after `<|im_end|>` (never generated: decoding stops before it)."""
    base = load_base(checkpoints["qwen2"])
    traj = gold()[1]
    [ids], [mask] = base.encode([traj]).values()
    last = max(i for i, m in enumerate(traj.messages) if m.role == "assistant")
    conversation = base.format.template_messages(traj.messages[: last + 1], TOOLS.schemas(), world().policy)
    trl = base.tokenizer.apply_chat_template(
        conversation,
        tools=TOOLS.schemas(),
        chat_template=template("qwen2_5_training"),
        return_assistant_tokens_mask=True,
        return_dict=True,
    )
    assert list(trl["input_ids"]) == ids
    extra = [i for i, (a, b) in enumerate(zip(trl["assistant_masks"], mask, strict=True)) if a != b]
    assert all(trl["assistant_masks"][i] == 1 and mask[i] == 0 for i in extra)
    assert {base.tokenizer.decode([ids[i]]) for i in extra} == {"\n"}
    assert len(extra) == 2 * len(_runs(ids, mask))


def test_over_long_examples_are_dropped_and_counted(checkpoints, caplog):
    base = load_base(checkpoints["qwen2"])
    columns = base.encode(list(gold()[:4]))
    lengths = sorted(len(x) for x in columns["input_ids"])
    limit = lengths[1]  # keeps the two shortest
    with caplog.at_level(logging.WARNING, logger="pipeline.train.sft_base"):
        kept, counts = fit_length(columns, limit, "auto", codec=False)
    assert [len(x) for x in kept["input_ids"]] == [n for n in (len(x) for x in columns["input_ids"]) if n <= limit]
    assert counts == {"mode": "drop", "max_length": limit, "over_length": 2, "dropped": 2, "longest": lengths[-1]}
    assert f"dropped 2 of 4 examples longer than max_length={limit}" in caplog.text
    with pytest.raises(InputError, match=rf"all 4 examples are longer than max_length=64 .*longest is {lengths[-1]}"):
        fit_length(columns, 64, "drop", codec=False)


def test_the_codec_keeps_truncating_as_the_embedded_default_always_did():
    from pipeline.train.sft import encode_for_sft
    from tests.train.helpers import COMPACT, tokenizer

    columns = encode_for_sft(list(gold()[:4]), tokenizer(), COMPACT)
    limit = sorted(len(x) for x in columns["input_ids"])[1]
    kept, counts = fit_length(columns, limit, "auto", codec=True)
    assert kept is columns and counts["mode"] == "truncate" and counts["over_length"] == 2 and counts["dropped"] == 0


def test_all_examples_too_long_is_a_clear_error_before_training(checkpoints, tmp_path):
    params = SFTConfig(base=checkpoints["llama3"], data=[], max_length=256, threads=1)
    with pytest.raises(InputError, match=r"all 2 examples are longer than max_length=256 tokens \(the longest is"):
        run_sft(params, tmp_path / "out", trajectories=list(gold()[:2]))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["qwen2", "llama3"])
def test_lora_sft_saves_the_merged_model_in_its_own_class_and_dtype(checkpoints, name, tmp_path):
    family = FAMILIES[name]
    params = SFTConfig(
        base=checkpoints[name],
        data=[],
        max_length=8192,
        max_steps=2,
        batch_size=1,
        learning_rate=5e-2,
        threads=1,
        logging_steps=1,
        lora=LoraSpec(rank=4, alpha=8, save_adapter=True),
    )
    result = run_sft(params, tmp_path / "sft", trajectories=list(gold()[:2]))
    assert result.steps == 2 and result.manifest["length"]["mode"] == "drop"
    assert 0 < result.manifest["assistant_tokens"] < result.manifest["tokens"] / 4

    agent = make_agent(f"hf:{tmp_path / 'sft'}")
    assert type(agent.model).__name__ == family.cls and agent.model.dtype == family.dtype
    assert agent.format.name == family.format
    meta = json.loads((tmp_path / "sft" / META_FILE).read_text())
    assert meta["architecture"] == family.cls and meta["dtype"] == str(family.dtype).removeprefix("torch.")
    assert meta["parent"] == str(checkpoints[name]) and meta["training"]["lora"]["r"] == 4
    assert json.loads((tmp_path / "sft" / "adapter" / "adapter_config.json").read_text())["r"] == 4

    before = make_agent(f"hf:{checkpoints[name]}").model.state_dict()
    after = agent.model.state_dict()
    assert before.keys() == after.keys()  # merged: the plain architecture, no adapter tensors
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all(re.search(r"\.(q|k|v|o|gate|up|down)_proj\.weight$", k) for k in changed)


def test_the_chat_format_recorded_is_the_bases(checkpoints):
    fmt, tok, meta, ours = resolve_format(checkpoints["qwen2"])
    assert not ours and meta.chat_format == "hermes" and fmt.template_hash(tok) == meta.template_hash


@pytest.mark.parametrize("has_bf16", [True, False])
def test_bf16_on_a_cpu_autocasts_only_where_the_cpu_has_it(checkpoints, tmp_path, monkeypatch, caplog, has_bf16):
    """`bf16` on a CPU with AMX or AVX-512 BF16 runs the products in bfloat16 around float32 weights (saved in the
    base's dtype); on another CPU it trains in float32 and says so."""
    import pipeline.train.sft as sft

    monkeypatch.setattr(sft, "_cpu_has_bf16", lambda: has_bf16)
    seen: set[torch.dtype] = set()

    def record(module, args, output):
        if isinstance(module, torch.nn.Linear) and torch.is_grad_enabled():
            seen.add(output.dtype)

    hook = torch.nn.modules.module.register_module_forward_hook(record)
    params = SFTConfig(
        base=checkpoints["llama3"], data=[], max_length=8192, max_steps=1, batch_size=1, learning_rate=5e-2,
        threads=1, logging_steps=1, bf16=True, lora=LoraSpec(rank=4, alpha=8),
    )  # fmt: skip
    try:
        with caplog.at_level(logging.INFO, logger="pipeline.train.sft"):
            result = run_sft(params, tmp_path / "sft", trajectories=list(gold()[:1]))
    finally:
        hook.remove()
    assert result.steps == 1 and all(torch.isfinite(torch.tensor(loss)) for loss in result.losses)
    assert seen == ({torch.bfloat16} if has_bf16 else {torch.float32})
    assert ("no bf16 instructions" in caplog.text) is not has_bf16
    assert make_agent(f"hf:{tmp_path / 'sft'}").model.dtype == FAMILIES["llama3"].dtype
