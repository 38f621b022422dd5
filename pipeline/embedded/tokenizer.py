"""The embedded default's tokenizer: a byte-level BPE the project trains on text it makes itself.

Digits are split before BPE, so every digit is its own token and a model copies an id (order number, item id,
zip code) digit by digit instead of learning a vocabulary of number fragments. The codec's control tokens are
single tokens. The corpus is the policy, the tool schemas and conversations rendered by the codec from look-ups
in a generated world (never the held-out evaluation world), so the merges fit what the model will read.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from pipeline.agents.scripted import phrases
from pipeline.domains.retail import phrases as R
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tools import TOOLS, execute
from pipeline.formats import (
    ADDED_TOKENS,
    ENDOFTEXT,
    IM_END,
    SPECIAL_TOKENS,
    CodecConfig,
    check_tokenizer,
    render_conversation,
)
from pipeline.rollout import Message, ToolCall

log = logging.getLogger(__name__)
_WORDS = r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}_]+| ?\p{N}+| ?[^\s\p{L}\p{N}_]+|\s+(?!\S)|\s+"""
"""GPT-2's split with '_' counted as a letter, so tool and field names (get_order_details) can become one token."""
_WORDS_BARE = r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}_]+|\p{N}+|[^\s\p{L}\p{N}_]+|\s+"""
"""The same without a leading space on words: a value is the same tokens in prose (`is maya`) and in JSON
(`"maya`), so copying it from what the customer said into a tool call starts on a token the model has seen."""


class TokenizerConfig(BaseModel):
    """How the tokenizer is trained; same config and corpus, same tokenizer."""

    model_config = ConfigDict(extra="forbid")

    vocab_size: int = Field(default=2048, ge=300, description="Total vocabulary, codec tokens included.")
    min_frequency: int = Field(default=2, ge=1, description="Minimum pair count for a merge.")
    model_max_length: int = Field(default=2048, ge=16, description="Longest sequence the model is built for.")
    words: Literal["gpt2", "bare"] = Field(
        default="gpt2",
        description="Pre-split: 'gpt2' keeps a leading space on words; 'bare' makes spaces their own tokens, so a"
        " word is the same token after a space or a quote (easier copying, ~20% more tokens of prose).",
    )


def train_tokenizer(texts: Iterable[str], config: TokenizerConfig | None = None) -> PreTrainedTokenizerFast:
    """Train the byte-level BPE on `texts` (in order) and wrap it for transformers."""
    config = config or TokenizerConfig()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.Split(Regex(_WORDS if config.words == "gpt2" else _WORDS_BARE), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size - len(ADDED_TOKENS),
        min_frequency=config.min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    fast = wrap(tok, config.model_max_length)
    check_tokenizer(fast)
    log.info("trained tokenizer: %d tokens", len(fast))
    return fast


def wrap(tok: Tokenizer, model_max_length: int = 2048) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )


# ---- the corpus ---------------------------------------------------------------------------------------------
def build_corpus(world: RetailWorld, n_conversations: int = 200, seed: int = 0) -> list[str]:
    """Policy, tool schemas, fixed phrases, and look-up conversations rendered in every codec mode."""
    rng = random.Random(seed)
    texts = [world.policy, POLICY_SUMMARY]
    texts += [
        render_conversation([], TOOLS.schemas(), world.policy, config)[0].text
        for config in (CodecConfig(system=s, policy_summary=POLICY_SUMMARY) for s in ("full", "compact"))
    ]
    texts += [R.ASK_EMAIL, R.ASK_NAME_ZIP, phrases.NOT_FOUND_IDENTITY, phrases.GOODBYE]
    user_ids = sorted(world.db.users)
    rng.shuffle(user_ids)
    configs = [
        CodecConfig(policy_summary=POLICY_SUMMARY),
        CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY),
    ]
    for i, user_id in enumerate(user_ids[:n_conversations]):
        messages = lookup_conversation(world, user_id, rng)
        config = configs[i % len(configs)]
        segs = render_conversation(messages, [], None, config)
        texts.append("".join(s.text for s in segs))
    return texts


def lookup_conversation(world: RetailWorld, user_id: str, rng: random.Random) -> list[Message]:
    """A plausible conversation made of real look-ups of one customer (tool outputs come from the world)."""
    session = world.session()
    user = world.db.users[user_id]
    messages: list[Message] = []
    n = 0

    def call(name: str, arguments: dict) -> str:
        nonlocal n
        messages.append(Message(role="assistant", tool_calls=[ToolCall(id=f"c{n}", name=name, arguments=arguments)]))
        event = execute(session, name, arguments)
        messages.append(Message(role="tool", content=event.content, tool_call_id=f"c{n}", name=name))
        n += 1
        return event.content

    messages.append(Message(role="user", content=f"Hi, I need help with an order. My email is {user.email}."))
    call("find_user_id_by_email", {"email": user.email})
    call("get_user_details", {"user_id": user_id})
    for order_id in user.orders[:2]:
        order = world.db.orders[order_id]
        call("get_order_details", {"order_id": order_id})
        item = rng.choice(order.items)
        call("get_product_details", {"product_id": item.product_id})
        lines = [f"{R.describe_item(item.name, item.options)}, item id {item.item_id}, {phrases.money(item.price)}"]
        intent = "cancel" if order.status == "pending" else "return"
        messages.append(Message(role="assistant", content=R.confirm(intent, order_id, lines)))
        messages.append(Message(role="user", content=rng.choice(["yes", "Yes, please.", "no, wait"])))
    messages.append(Message(role="assistant", content=phrases.ANYTHING_ELSE))
    messages.append(Message(role="user", content="No, that's all. Thanks!"))
    messages.append(Message(role="assistant", content=phrases.GOODBYE))
    return messages
