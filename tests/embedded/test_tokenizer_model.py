"""The embedded default's tokenizer (digits whole, codec tokens single, deterministic, lossless) and model
(size, seeded initialisation, checkpoints that record and enforce their codec)."""

from __future__ import annotations

import json
import re

import pytest
import torch

from pipeline.agents.checkpoint import (
    META_FILE,
    CheckpointMeta,
    ModelConfig,
    load_checkpoint,
    load_tokenizer,
    save_checkpoint,
    save_tokenizer,
)
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.worlds import generate_world
from pipeline.embedded.model import build_model, count_parameters
from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
from pipeline.errors import InputError
from pipeline.formats.codec import (
    ADDED_TOKENS,
    IM_END,
    SPECIAL_TOKENS,
    CodecConfig,
    CodecMismatchError,
    codec_hash,
    compact_tool_result,
)

COMPACT = CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return build_corpus(generate_world(seed=11, n_users=80), n_conversations=80)


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return train_tokenizer(corpus)


def test_corpus_holds_rendered_conversations_with_real_tool_output(corpus):
    world = generate_world(seed=11, n_users=80)
    joined = "\n".join(corpus)
    assert world.policy in corpus
    assert "<|im_start|>tool\n" in joined and "<tool_call>" in joined
    some_order = next(iter(world.db.orders))
    assert some_order in joined and ") item " in joined and '"item_id": ' in joined  # both renderings
    assert corpus == build_corpus(generate_world(seed=11, n_users=80), n_conversations=80)


def test_tokenizer_keeps_every_digit_its_own_token(tokenizer):
    assert len(tokenizer) == 2048
    with_digits = [t for t in tokenizer.get_vocab() if re.search(r"\d", t)]
    assert sorted(with_digits) == list("0123456789")
    ids = tokenizer.encode("order #W5918442, item 1008292230, $12.50", add_special_tokens=False)
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert [p for p in pieces if p.isdigit()] == list("59184421008292230") + list("1250")


def test_each_order_line_puts_its_own_tokens_before_its_item_id(tokenizer):
    """The copy circuit continues what followed the last three tokens written: in a compact order, the three tokens
    before an item's id must differ from line to line (with `(options) item <id>` they were `) item ` on all)."""
    world = generate_world(seed=11, n_users=80)
    order = next(o for o in world.db.orders.values() if len({it.name for it in o.items}) >= 3)
    text = compact_tool_result(json.dumps(order.model_dump(mode="json")))
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    starts = [s for s, _ in enc["offset_mapping"]]
    contexts = []
    for item in order.items:
        at = starts.index(text.index(f" {item.item_id}") + 1)  # the id's first digit is a token of its own
        contexts.append(tuple(enc["input_ids"][at - 3 : at]))
    assert len(set(contexts)) == len(contexts)


def test_codec_tokens_are_single_tokens_and_text_round_trips(tokenizer, corpus):
    for tok in (*SPECIAL_TOKENS, *ADDED_TOKENS):
        assert len(tokenizer.encode(tok, add_special_tokens=False)) == 1
    assert tokenizer.eos_token == IM_END and tokenizer.pad_token == "<|endoftext|>"
    assert len(tokenizer.encode("get_order_details", add_special_tokens=False)) == 1
    samples = [*corpus[:20], "  odd  spacing\n\n\tand ünïcode 🙂 ", "<tool_call>\n{}\n</tool_call>"]
    for text in samples:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert tokenizer.decode(ids, skip_special_tokens=False) == text


def test_training_is_deterministic(corpus, tokenizer):
    again = train_tokenizer(corpus)
    assert again.backend_tokenizer.to_str() == tokenizer.backend_tokenizer.to_str()
    other = train_tokenizer(corpus[::-1][:40], TokenizerConfig(vocab_size=1024))
    assert len(other) == 1024 and other.backend_tokenizer.to_str() != tokenizer.backend_tokenizer.to_str()


def test_tokenizer_saves_and_loads(tokenizer, tmp_path):
    save_tokenizer(tokenizer, tmp_path)
    loaded = load_tokenizer(tmp_path)
    text = "<|im_start|>user\nMy email is a.b0055@example.com<|im_end|>\n"
    assert loaded.encode(text) == tokenizer.encode(text) and loaded.eos_token_id == tokenizer.eos_token_id


def test_default_model_is_the_small_llama(tokenizer):
    model = build_model(ModelConfig(), tokenizer)
    assert 0.75e6 < count_parameters(model) < 0.82e6
    cfg = model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.vocab_size) == (128, 2, 4, 2048)
    assert cfg.eos_token_id == tokenizer.convert_tokens_to_ids(IM_END)
    same = build_model(ModelConfig(), tokenizer)
    other = build_model(ModelConfig(seed=1), tokenizer)
    w = model.model.embed_tokens.weight
    assert torch.equal(w, same.model.embed_tokens.weight) and not torch.equal(w, other.model.embed_tokens.weight)


def test_checkpoint_round_trip_records_codec_and_refuses_another(tokenizer, tmp_path):
    model = build_model(ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2), tokenizer)
    meta = CheckpointMeta.for_codec(COMPACT, training={"lr": 1e-3}, data_manifest={"train.jsonl": "sha256:abc"})
    save_checkpoint(tmp_path, model, tokenizer, meta)
    recorded = json.loads((tmp_path / META_FILE).read_text())
    assert recorded["codec_hash"] == codec_hash(COMPACT) and recorded["training"] == {"lr": 1e-3}
    ckpt = load_checkpoint(tmp_path)
    ids = torch.tensor([tokenizer.encode("hello <tool_call>")])
    with torch.no_grad():
        assert torch.allclose(ckpt.model(ids).logits, model.eval()(ids).logits)
    assert ckpt.meta == meta
    with pytest.raises(CodecMismatchError, match=META_FILE):
        load_checkpoint(tmp_path, codec_config=CodecConfig())
    recorded["codec_hash"] = "0" * 16  # trained under a template this code no longer renders
    (tmp_path / META_FILE).write_text(json.dumps(recorded))
    with pytest.raises(CodecMismatchError, match=str(tmp_path / META_FILE)):
        load_checkpoint(tmp_path)
    with pytest.raises(InputError, match=META_FILE):
        load_checkpoint(tmp_path / "missing")


def test_bare_words_make_a_value_the_same_tokens_in_prose_and_in_json(corpus):
    bare = train_tokenizer(corpus, TokenizerConfig(vocab_size=600, words="bare"))
    said = bare.tokenize("My email is maya.okafor0650@example.com.")
    called = bare.tokenize('{"email": "maya.okafor0650@example.com"}')
    start = said.index(bare.tokenize("maya")[0])
    assert said[start : start + 6] == called[called.index(said[start]) :][:6]
    assert bare.decode(bare.encode(" x  y ", add_special_tokens=False)) == " x  y "
