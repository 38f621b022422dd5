"""`single_token_id`: one lookup per stop token, the same answer as the whole vocabulary gives.

Stop tokens are looked up at every render (SFT renders every prefix of every conversation); building the
vocabulary dict each time cost SmolLM2's SFT minutes before its first step.
"""

from __future__ import annotations

from pipeline.formats import single_token_id
from tests.agents.tiny_families import FAMILIES, build_tokenizer, corpus


class _VocabOnly:
    def __init__(self, vocab):
        self.vocab = vocab

    def get_vocab(self):
        return dict(self.vocab)


def test_lookup_matches_the_vocabulary_for_added_special_unknown_and_plain_tokens():
    fam = FAMILIES["qwen2"]
    tok = build_tokenizer(fam, corpus(), vocab_size=600)
    vocab = tok.get_vocab()
    plain = next(t for t in vocab if t.isalpha() and len(t) > 2)
    for token in (*fam.special, *fam.added, plain, "<|not-a-token|>", "no such token"):
        assert single_token_id(tok, token) == vocab.get(token), token
    assert single_token_id(tok, "<|im_end|>") is not None and single_token_id(tok, "<|not-a-token|>") is None


def test_unk_token_is_found_and_unknown_tokens_are_not_the_unk_id():
    fam = FAMILIES["gemma3"]
    tok = build_tokenizer(fam, corpus(), vocab_size=600)
    tok.add_special_tokens({"unk_token": "<unk>"})
    assert single_token_id(tok, "<unk>") == tok.get_vocab()["<unk>"]
    assert single_token_id(tok, "<end_of_turn>") == tok.get_vocab()["<end_of_turn>"]
    assert single_token_id(tok, "<|im_end|>") is None  # not this family's: the lookup's unk id is not an answer


def test_a_tokenizer_without_the_lookup_falls_back_to_its_vocabulary():
    assert single_token_id(_VocabOnly({"<eos>": 3}), "<eos>") == 3
    assert single_token_id(_VocabOnly({"<eos>": 3}), "<bos>") is None
