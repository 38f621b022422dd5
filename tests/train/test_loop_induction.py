"""The plain training loop (weighted masks, length buckets) and the planted copy circuit."""

from __future__ import annotations

import random

import pytest
import torch

from pipeline.agents.checkpoint import ModelConfig
from pipeline.embedded.build import EmbeddedConfig
from pipeline.embedded.copy_circuit import COPY_ROPE, offset_attention, plant_copy_circuit
from pipeline.embedded.model import build_model
from pipeline.embedded.train_loop import IGNORE, Example, LoopConfig, batches, collate, masked_loss, train_loop
from pipeline.embedded.warmup import WarmupConfig, warmup_examples
from tests.train.helpers import TINY, tokenizer


def test_collate_masks_zero_weight_tokens_and_padding():
    b = collate([Example([5, 6, 7], [0, 1, 0.5]), Example([8], [1])], pad_id=0, max_length=8)
    assert b["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["labels"].tolist() == [[IGNORE, 6, 7], [8, IGNORE, IGNORE]]
    assert b["weights"].tolist() == [[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]]
    logits = torch.zeros(2, 3, 10)
    logits[0, 0, 6] = logits[0, 1, 7] = 50.0  # both weighted targets predicted: loss 0
    assert float(masked_loss(logits, b["labels"], b["weights"])) < 1e-6


def test_batches_respect_the_token_budget_and_cover_every_example():
    rng = random.Random(0)
    examples = [Example([1] * n, [1] * n) for n in rng.choices(range(10, 400), k=60)]
    out = batches(examples, batch_tokens=1000, max_length=300, rng=random.Random(1))
    assert sorted(i for b in out for i in b) == list(range(60))
    assert all(len(b) * max(min(len(examples[i].ids), 300) for i in b) <= 1000 or len(b) == 1 for b in out)


def test_train_loop_lowers_the_loss_on_the_masked_tokens():
    model = build_model(TINY, tokenizer())
    examples = warmup_examples(tokenizer(), WarmupConfig(sequences=8, seq_tokens=128))
    result = train_loop(
        model,
        examples,
        tokenizer().pad_token_id,
        LoopConfig(epochs=15, learning_rate=1e-2, batch_tokens=512, warmup_steps=2),
    )
    assert result.steps >= 30 and result.tokens > 0
    assert sum(result.losses[-5:]) / 5 < 0.8 * sum(result.losses[:5]) / 5


@pytest.mark.parametrize(("offsets", "code"), [(3, 8), (4, 6)])
def test_planted_circuit_copies_ids_and_words_before_any_training(offsets, code):
    tok = tokenizer()
    config = ModelConfig(max_position_embeddings=4096, rope_scaling=COPY_ROPE)  # the embedded default's shape
    model = build_model(config, tok)
    plant_copy_circuit(model, tok, offsets=offsets, code=code)
    x = torch.randint(20, len(tok), (1, 120))
    for offset in range(1, offsets + 1):
        assert offset_attention(model, x, layer=0, head=offset - 1, offset=offset) > 0.97
    rng = random.Random(0)
    digits = [tok.convert_tokens_to_ids(c) for c in "0123456789"]
    for pool in (digits, list(range(20, len(tok)))):
        hits = total = 0
        for gap in (5, 1500):
            number = [rng.choice(pool) for _ in range(10)]
            filler = [rng.randrange(20, len(tok)) for _ in range(30 + gap)]
            ids = filler[:30] + number + filler[30:] + number
            with torch.no_grad():
                pred = model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
            start = 30 + len(number) + gap
            for j in range(offsets, len(number)):  # once the key's tokens are written again, the rest is copied
                hits += pred[start + j - 1] == number[j]
                total += 1
        assert hits / total > 0.9


def test_a_four_token_key_copies_ids_with_a_repeated_three_token_stretch():
    """`0877779` holds `7 7 7` twice: a three-token key copies the wrong continuation, a four-token key does not."""
    tok = tokenizer()
    digits = [tok.convert_tokens_to_ids(c) for c in "0123456789"]
    number = [digits[int(c)] for c in "3087777912"]
    filler = [random.Random(1).randrange(20, len(tok)) for _ in range(60)]
    ids = filler[:30] + number + filler[30:] + number
    start = 30 + len(number) + 30
    exact = {}
    for offsets, code in ((3, 8), (4, 6)):
        model = build_model(ModelConfig(max_position_embeddings=4096, rope_scaling=COPY_ROPE), tok)
        plant_copy_circuit(model, tok, offsets=offsets, code=code)
        with torch.no_grad():
            pred = model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
        exact[offsets] = all(pred[start + j - 1] == number[j] for j in range(4, len(number)))
    assert exact == {3: False, 4: True}


def test_the_circuit_refuses_a_key_the_heads_cannot_hold():
    tok = tokenizer()
    model = build_model(ModelConfig(max_position_embeddings=4096, rope_scaling=COPY_ROPE), tok)
    with pytest.raises(ValueError, match="a layer-0 head per offset, but the model has 4 heads"):
        plant_copy_circuit(model, tok, offsets=5, code=4)
    with pytest.raises(ValueError, match=r"offsets x code \(4 x 9\) exceeds the head width \(32\)"):
        plant_copy_circuit(model, tok, offsets=4, code=9)


def test_embedded_config_names_the_fields_of_a_circuit_that_does_not_fit():
    with pytest.raises(ValueError, match=r"copy_offsets / copy_code .*offsets \(5\) needs .* 4 heads"):
        EmbeddedConfig(copy_offsets=5)
    with pytest.raises(ValueError, match=r"copy_offsets / copy_code .*\(4 x 9\) exceeds the head width \(32\)"):
        EmbeddedConfig(copy_offsets=4, copy_code=9)
    assert EmbeddedConfig(copy_circuit=False, copy_offsets=5).copy_offsets == 5


def test_untouched_model_does_not_copy():
    tok = tokenizer()
    model = build_model(ModelConfig(max_position_embeddings=4096, rope_scaling=COPY_ROPE), tok)
    number = [tok.convert_tokens_to_ids(c) for c in "5182730964"]
    ids = list(range(40, 70)) + number + list(range(80, 87)) + number
    with torch.no_grad():
        pred = model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
    assert sum(pred[46 + j] == number[j] for j in range(3, 10)) <= 2  # pred[i] is the guess for ids[i + 1]
