"""Random-weight tiny checkpoints of real architectures, each with its family's real chat template (TRL's copies
in trl/chat_templates) and a small byte-level BPE tokenizer trained offline on the text it will render."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

SHAPE = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 16384,
}


def template(name: str) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def _qwen2(**kw: Any):
    from transformers import Qwen2Config

    return Qwen2Config(**{**SHAPE, "tie_word_embeddings": True, **kw})


def _qwen3(**kw: Any):
    from transformers import Qwen3Config

    return Qwen3Config(**{**SHAPE, "head_dim": 8, "tie_word_embeddings": True, **kw})


def _llama(**kw: Any):
    from transformers import LlamaConfig

    return LlamaConfig(**{**SHAPE, "tie_word_embeddings": False, **kw})


def _gemma3(**kw: Any):
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(**{**SHAPE, "head_dim": 8, "sliding_window": 64, **kw})


@dataclass(frozen=True)
class Family:
    name: str
    template: str
    config: Callable[..., Any]
    cls: str  # the transformers class it must load as
    format: str  # the chat format its template calls for
    special: tuple[str, ...]
    added: tuple[str, ...]
    eos: str
    pad: str
    bos: str | None = None
    dtype: torch.dtype = torch.float32
    call: str = ""  # a recorded tool call in the family's syntax (find_user_id_by_email, email a@b.com)


EMAIL_CALL = {"name": "find_user_id_by_email", "arguments": {"email": "a@b.com"}}
_HERMES_CALL = f"<tool_call>\n{json.dumps(EMAIL_CALL)}\n</tool_call>"
_CHATML = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
FAMILIES = {
    "qwen2": Family(
        "qwen2", "qwen2_5", _qwen2, "Qwen2ForCausalLM", "hermes", _CHATML, ("<tool_call>", "</tool_call>"),
        "<|im_end|>", "<|endoftext|>", dtype=torch.bfloat16, call="Let me look.\n" + _HERMES_CALL,
    ),
    "qwen3": Family(
        "qwen3", "qwen3", _qwen3, "Qwen3ForCausalLM", "qwen3", _CHATML,
        ("<tool_call>", "</tool_call>", "<think>", "</think>"), "<|im_end|>", "<|endoftext|>",
        call="<think>\nThe customer gave an email.\n</think>\n\n" + _HERMES_CALL,
    ),
    "llama3": Family(
        "llama3", "llama3_1", _llama, "LlamaForCausalLM", "llama3",
        ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
         "<|eom_id|>", "<|python_tag|>"),
        (), "<|eot_id|>", "<|end_of_text|>", bos="<|begin_of_text|>",
        call='<|python_tag|>{"name": "find_user_id_by_email", "parameters": {"email": "a@b.com"}}',
    ),
    "gemma3": Family(
        "gemma3", "gemma3", _gemma3, "Gemma3ForCausalLM", "generic",
        ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"), ("<tool_call>", "</tool_call>"),
        "<eos>", "<pad>", bos="<bos>", call=_HERMES_CALL,
    ),
}  # fmt: skip


def build_tokenizer(family: Family, corpus: list[str], vocab_size: int = 2000) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(family.special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([template(family.template), *corpus], trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in family.added])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=family.bos,
        eos_token=family.eos,
        pad_token=family.pad,
        chat_template=template(family.template),
        clean_up_tokenization_spaces=False,
    )


def build_checkpoint(
    family: Family, path: Path, corpus: list[str], seed: int = 0, shape: dict[str, int] | None = None
) -> Path:
    """A random-weight checkpoint of `family` saved with save_pretrained (no agentloop.json); `shape` overrides
    `SHAPE` (a GPU engine wants wider heads than the CPU tests need)."""
    from transformers import AutoModelForCausalLM

    tokenizer = build_tokenizer(family, corpus)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (family.eos, family.pad, family.bos) if t}
    config = family.config(
        vocab_size=len(tokenizer),
        eos_token_id=ids[family.eos],
        pad_token_id=ids[family.pad],
        bos_token_id=ids.get(family.bos) if family.bos else None,
        **(shape or {}),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config).to(family.dtype)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


def corpus() -> list[str]:
    """What the checkpoints will read: the small world's policy, the tool schemas, a few customer lines."""
    from pipeline.domains.retail.tools import TOOLS
    from pipeline.domains.retail.worlds import generate_world

    world = generate_world(seed=5, n_users=10, n_orders=20, n_products=8)
    schemas = TOOLS.schemas()
    return [
        world.policy,
        *(json.dumps(s, ensure_ascii=False) for s in schemas),
        *(json.dumps(s, ensure_ascii=False, indent=4) for s in schemas),
        "Hi, I want to cancel an order. My email is noone@example.com. Thanks, bye.",
    ] * 3
