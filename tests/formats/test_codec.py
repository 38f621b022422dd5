"""The one codec: recorded model outputs read identically by the evaluation and training paths; each turn's
token ids extend the previous turn's; tool results and system prompts in compact form."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from pipeline.dataset.task import Provenance, Task, UserScript
from pipeline.domains.retail.policy import POLICY_SUMMARY
from pipeline.domains.retail.tools import TOOLS, execute
from pipeline.domains.retail.worlds import generate_world
from pipeline.embedded.tokenizer import TokenizerConfig, build_corpus, train_tokenizer
from pipeline.formats.codec import (
    IM_END,
    CodecConfig,
    SegmentIds,
    codec_hash,
    compact_tool_result,
    decode_assistant,
    encode_conversation,
    format_assistant,
    parse_assistant,
    render_conversation,
    render_prompt,
    render_system,
)
from pipeline.rollout.protocols import EpisodeInfo, UserReply
from pipeline.rollout.runner import Limits, run_episode
from pipeline.rollout.trajectory import Message, Trajectory

USER, EMAIL, PENDING, OTHER = "aarav_brown_0493", "aarav.brown0055@example.com", "#W0358158", "#W0779111"
CONFIGS = [CodecConfig(), CodecConfig(system="compact", tool_results="compact", policy_summary=POLICY_SUMMARY)]


def call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


# Raw assistant outputs as models produce them; "" (the agent ends) must come last.
RECORDED: list[str] = [
    "Hello! I can help with that. What is the email address on your account?",
    call("find_user_id_by_email", {"email": EMAIL}),
    call("get_user_details", {"user_id": USER}),
    f"I'll look up your order.\n{call('get_order_details', {'order_id': PENDING})}",  # text + call
    f'<tool_call>{{"name": "get_order_details", "arguments": {{"order_id": "{OTHER}"}}}}</tool_call>',  # no newlines
    call("get_order_details", {"order_id": PENDING}) + "\n" + call("get_order_details", {"order_id": OTHER}),
    '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W03581\n</tool_call>',  # broken JSON
    "<tool_call>\n{'name': 'calculate', 'arguments': {'expression': '2+2'}}\n</tool_call>",  # python, not JSON
    call("refund_everything", {"order_id": PENDING}),  # unknown tool
    call("calculate", {"expression": "(12.5 + 7.25) * 2"}),
    '<tool_call>\n{"name": "calculate", "arguments": "{\\"expression\\": \\"1 + 1\\"}"}\n</tool_call>',  # str args
    '<tool_call>\n{"name": "list_all_product_types"}\n</tool_call>',  # arguments left out
    '<tool_call>\n{"name": "get_user_details", "arguments": {"user_id": "' + USER + '"}}',  # never closed
    "<tool_call>\n</tool_call>",  # empty call
    '<tool_call>\n{"arguments": {"order_id": "' + PENDING + '"}}\n</tool_call>',  # no name
    f"Sure. {call('cancel_pending_order', {'order_id': PENDING, 'reason': 'no longer needed'})} Done soon.",
    "Your order " + PENDING + " is pending. Its total is $123.45 — is there anything else?",
    "Résumé: ünïcode, emoji 🙂 and a stray </tool_call> tag.",
    '{"name": "get_user_details", "arguments": {"user_id": "x"}}',  # JSON without the tags: plain text
    "   ",  # whitespace only: the agent ends
    "",
]


class PlaybackEpisode:
    def __init__(self, outputs: Iterable[str]) -> None:
        self.outputs = iter(outputs)

    def act(self, messages: list[Message]) -> Message:
        return parse_assistant(next(self.outputs), id_prefix=f"call_{len(messages)}_")  # the evaluation path


class PlaybackAgent:
    name = "playback"

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs

    def start(self, info: EpisodeInfo) -> PlaybackEpisode:
        return PlaybackEpisode(self.outputs)


class PatientUser:
    name = "patient-user"

    def start(self, info: EpisodeInfo) -> PatientUser:
        return self

    def respond(self, messages: list[Message]) -> UserReply:
        return UserReply(content=f"My email is {EMAIL}." if not messages else "ok, go on")


@pytest.fixture(scope="module")
def world():
    return generate_world(seed=3, n_users=10, n_orders=20, n_products=8)


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(build_corpus(generate_world(seed=11, n_users=60), 60), TokenizerConfig(vocab_size=1024))


def play(world, outputs: list[str]) -> Trajectory:
    task = Task(
        id="codec",
        world=world.name,
        customer_user_id=USER,
        user_script=UserScript(goal="x"),
        provenance=Provenance(source="eval"),
    )
    return run_episode(world, task, PlaybackAgent(outputs), PatientUser(), limits=Limits(max_steps_per_turn=30))


def calls_of(messages: list[Message]) -> list[tuple]:
    return [
        (c.name, c.arguments, c.raw_arguments if c.arguments is None else None)
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
    ]


def training_path(traj: Trajectory, tokenizer, config: CodecConfig, raw: bool) -> list[Message]:
    """Render → tokenize → decode each assistant span → parse."""
    enc = encode_conversation(traj.messages, TOOLS.schemas(), "policy", tokenizer, config, raw=raw)
    out = []
    for start, end in enc.assistant_spans():
        assert enc.ids[end - 1] == tokenizer.convert_tokens_to_ids(IM_END)
        out.append(parse_assistant(decode_assistant(tokenizer, enc.ids[start:end])))
    return out


def test_recorded_outputs_parse_as_documented():
    p = [parse_assistant(x) for x in RECORDED]
    assert p[0].content and not p[0].tool_calls
    assert [(c.name, c.arguments) for c in p[1].tool_calls] == [("find_user_id_by_email", {"email": EMAIL})]
    assert p[3].content == "I'll look up your order." and p[3].tool_calls[0].arguments == {"order_id": PENDING}
    assert p[4].tool_calls[0].arguments == {"order_id": OTHER} and p[4].content is None
    assert [c.id for c in p[5].tool_calls] == ["call_0", "call_1"]
    assert (p[6].tool_calls[0].name, p[6].tool_calls[0].arguments) == ("get_order_details", None)
    assert p[6].tool_calls[0].raw_arguments == '{"name": "get_order_details", "arguments": {"order_id": "#W03581'
    assert p[7].tool_calls[0].name == "calculate" and p[7].tool_calls[0].arguments is None
    assert p[8].tool_calls[0].name == "refund_everything"
    assert p[10].tool_calls[0].arguments == {"expression": "1 + 1"}
    assert p[11].tool_calls[0].arguments == {}
    assert p[12].tool_calls[0].arguments == {"user_id": USER}
    assert (p[13].tool_calls[0].name, p[13].tool_calls[0].raw_arguments) == ("", "")
    assert p[14].tool_calls[0].name == "" and p[14].tool_calls[0].arguments is None
    assert p[15].content == "Sure.\nDone soon." and p[15].tool_calls[0].name == "cancel_pending_order"
    assert p[17].tool_calls == [] and "</tool_call>" in p[17].content
    assert p[18].tool_calls == []
    assert p[19].content is None and p[20].content is None and p[20].tool_calls == []
    assert all(m.raw == x for m, x in zip(p, RECORDED, strict=True))


def test_format_is_the_inverse_of_parse():
    for x in RECORDED:
        once = parse_assistant(x)
        text = format_assistant(once)
        again = parse_assistant(text)
        assert (again.content, calls_of([again])) == (once.content, calls_of([once])), x
        assert format_assistant(again) == text  # canonical text is a fixed point
    canonical = [RECORDED[0], RECORDED[1], RECORDED[3], RECORDED[5], call("calculate", {"expression": "1"})]
    assert [format_assistant(parse_assistant(x)) for x in canonical] == canonical


@pytest.mark.parametrize("config", CONFIGS, ids=["full", "compact"])
def test_evaluation_and_training_paths_read_recorded_outputs_identically(world, tokenizer, config):
    traj = play(world, RECORDED)
    assert traj.termination == "agent_stop" and traj.error is None
    evaluated = [m for m in traj.messages if m.role == "assistant"]
    assert len(evaluated) == len(RECORDED) - 1  # the whitespace-only output already ends the episode
    ok = [e["name"] for e in traj.world_log if e["ok"]]
    assert {"find_user_id_by_email", "get_user_details", "get_order_details", "cancel_pending_order"} <= set(ok)
    refused = {e["name"]: e["error_category"] for e in traj.world_log if not e["ok"]}
    assert refused["refund_everything"] == "invalid_arguments"
    # the world saw exactly the calls the evaluation path parsed
    assert [(e["name"], e["arguments"]) for e in traj.world_log] == [
        (name, args or {}) for name, args, _ in calls_of(evaluated)
    ]
    for raw in (False, True):
        trained = training_path(traj, tokenizer, config, raw)
        assert calls_of(trained) == calls_of(evaluated)
        assert [m.content for m in trained] == [m.content for m in evaluated]


@pytest.mark.parametrize("config", CONFIGS, ids=["full", "compact"])
def test_each_turn_extends_the_previous_one_token_for_token(world, tokenizer, config):
    traj = play(world, RECORDED)
    tools, policy = TOOLS.schemas(), world.policy
    full = encode_conversation(traj.messages, tools, policy, tokenizer, config)
    spans = iter(full.assistant_spans())
    previous: list[int] = []
    for t, m in enumerate(traj.messages):
        if m.role != "assistant":
            continue
        prompt = encode_conversation(traj.messages[:t], tools, policy, tokenizer, config, add_generation_prompt=True)
        assert full.ids[: len(prompt.ids)] == prompt.ids
        assert prompt.ids[: len(previous)] == previous
        assert next(spans)[0] == len(prompt.ids)  # the assistant's tokens start right after its prompt
        assert render_prompt(traj.messages[:t], tools, policy, config) == tokenizer.decode(prompt.ids)
        previous = prompt.ids
    assert sum(full.assistant_mask) > 0 and len(full.assistant_mask) == len(full.ids)


@pytest.mark.parametrize("config", CONFIGS, ids=["full", "compact"])
def test_remembered_segments_give_the_tokenizers_ids(world, tokenizer, config):
    traj = play(world, RECORDED)
    tools, policy = TOOLS.schemas(), world.policy
    memo = SegmentIds(max_texts=12)  # small, so the memo also starts over mid-conversation
    for t in range(len(traj.messages) + 1):
        for gen in (True, False):
            plain = encode_conversation(traj.messages[:t], tools, policy, tokenizer, config, add_generation_prompt=gen)
            kept = encode_conversation(
                traj.messages[:t], tools, policy, tokenizer, config, add_generation_prompt=gen, memo=memo
            )
            assert kept == plain
    assert memo.known[id(tokenizer)][1]


def test_generated_ids_replace_the_rendered_body(tokenizer):
    messages = [Message(role="user", content="hi"), parse_assistant("Hello there")]
    sampled = tokenizer.encode("Hel", add_special_tokens=False) + tokenizer.encode("lo there", add_special_tokens=False)
    enc = encode_conversation(messages, [], None, tokenizer, completions={1: sampled})
    start, end = enc.assistant_spans()[0]
    assert enc.ids[start:end] == [*sampled, tokenizer.convert_tokens_to_ids(IM_END)]


def test_segments_mark_only_assistant_output_for_training():
    msgs = [
        Message(role="user", content="hi"),
        parse_assistant(call("calculate", {"expression": "1+1"})),
        Message(role="tool", content="2.0", tool_call_id="c", name="calculate"),
        parse_assistant("It is 2."),
    ]
    segs = render_conversation(msgs, TOOLS.schemas(), "Be kind.", add_generation_prompt=True)
    trained = [s.text for s in segs if s.train]
    assert trained == [format_assistant(msgs[1]), IM_END, "It is 2.", IM_END]
    assert segs[0].role == "system" and "Be kind." in segs[0].text and segs[-1].text == "<|im_start|>assistant\n"


def test_compact_tool_results_put_each_record_on_one_line(world):
    session = world.session()
    execute(session, "find_user_id_by_email", {"email": EMAIL})
    order = json.loads(execute(session, "get_order_details", {"order_id": PENDING}).content)
    item = order["items"][0]
    product = execute(session, "get_product_details", {"product_id": item["product_id"]}).content
    lines = compact_tool_result(product).splitlines()
    assert lines[:3] == [f"name: {item['name']}", f"product_id: {item['product_id']}", "variants:"]
    variant = json.loads(product)["variants"][item["item_id"]]
    options = ", ".join(f"{k} {v}" for k, v in variant["options"].items())
    availability = "available" if variant["available"] else "unavailable"
    assert f"({options}) item {item['item_id']} | {availability} | price {variant['price']}" in lines  # id after
    described = ", ".join(f"{k} {v}" for k, v in item["options"].items())
    row = f"{item['name']} {item['item_id']} ({described}) | product_id {item['product_id']} | price {item['price']}"
    assert row in compact_tool_result(json.dumps(order)).splitlines()  # the id right after the name
    user = compact_tool_result(execute(session, "get_user_details", {"user_id": USER}).content)
    assert f"orders: {PENDING} {OTHER}" in user.splitlines()
    assert "fulfillments: (none)" in compact_tool_result(json.dumps(order)).splitlines()
    for plain in ["aarav_brown_0493", "4.0", "Error: order #W1 not found", "[]", "not json {"]:
        assert compact_tool_result(plain) == (plain if plain != "[]" else "(none)")


def test_compact_payment_methods_put_the_customers_words_before_the_id():
    """`visa credit card ending in 9079 credit_card_1`: what a customer says, then the id an agent must copy."""
    methods = {
        "credit_card_1": {"source": "credit_card", "id": "credit_card_1", "brand": "visa", "last_four": "9079"},
        "credit_card_2": {"source": "credit_card", "id": "credit_card_2", "brand": "visa", "last_four": "9079"},
        "paypal_3": {"source": "paypal", "id": "paypal_3"},
        "gift_card_4": {"source": "gift_card", "id": "gift_card_4", "balance": 68.0},
    }
    lines = compact_tool_result(json.dumps({"user_id": "u", "payment_methods": methods})).splitlines()
    assert lines[1:] == [
        "payment_methods:",
        "credit card credit_card_1",  # twins are told apart by their ids, never repeated
        "credit card credit_card_2",
        "PayPal account paypal_3",
        "gift card gift_card_4 | balance 68.0",
    ]
    history = [{"transaction_type": "payment", "amount": 1.0, "payment_method_id": "paypal_3"}]
    assert "transaction_type payment | amount 1.0 | payment_method_id paypal_3" in compact_tool_result(
        json.dumps({"payment_history": history})
    )


def test_no_system_turn(tokenizer):
    segs = render_conversation(
        [Message(role="user", content="hi")], TOOLS.schemas(), "policy", CodecConfig(system="none")
    )
    assert [s.role for s in segs] == ["user"]


def test_compact_system_prompt_is_short_and_names_every_tool(tokenizer):
    tools = TOOLS.schemas()
    compact = render_system("full policy text", tools, CodecConfig(system="compact"))
    full = render_system("full policy text", tools, CodecConfig())
    for name in TOOLS.tools:
        assert f"{name}(" in compact and f'"name": "{name}"' in full
    assert "modify_pending_order_items(order_id, item_ids[], new_item_ids[], payment_method_id)" in compact
    assert 5 * len(tokenizer.encode(compact)) < len(tokenizer.encode(full))


def test_codec_hash_tracks_the_configuration():
    assert codec_hash() == codec_hash(CodecConfig())
    hashes = {codec_hash(c) for c in [*CONFIGS, CodecConfig(tool_results="compact"), CodecConfig(policy_summary="x")]}
    assert len(hashes) == 4
