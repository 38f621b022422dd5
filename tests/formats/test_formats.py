"""Chat formats: each family's recorded outputs give the same tool names and arguments; thinking never reaches the
visible reply; templates render our conversations (history re-rendering noted where it happens); detection."""

from __future__ import annotations

import json

import pytest

from pipeline.domains.retail.tools import TOOLS
from pipeline.formats import FORMATS, ChatFormatError, CodecFormat, detect_format, get_format
from pipeline.formats.parsers import parse_hermes, parse_llama3, parse_mistral, parse_qwen3_coder
from pipeline.rollout.trajectory import Message, ToolCall
from tests.agents.tiny_families import FAMILIES, build_tokenizer, corpus, template

EXCHANGE = {
    "name": "exchange_delivered_order_items",
    "arguments": {
        "order_id": "#W2378156",
        "item_ids": ["1151293680", "4983901480"],
        "new_item_ids": ["7706410293", "7747408585"],
        "payment_method_id": "credit_card_9513926",
    },
}
ZIP = {"name": "find_user_id_by_name_zip", "arguments": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}}


def _xml(call: dict) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in call["arguments"].items()
    )
    return f"<tool_call>\n<function={call['name']}>\n{params}</function>\n</tool_call>"


def _params(call: dict) -> dict:
    return {"name": call["name"], "parameters": call["arguments"]}


# one recorded output per format and call, in that family's syntax
RECORDED = {
    "hermes": lambda c: f"I'll check that.\n<tool_call>\n{json.dumps(c)}\n</tool_call>",
    "qwen3": lambda c: (
        f"<think>\nThe customer wants {c['name']}.\n</think>\n\n<tool_call>\n{json.dumps(c)}\n</tool_call>"
    ),
    "qwen3_coder": lambda c: f"<think>\nok\n</think>\n\n{_xml(c)}",
    "llama3": lambda c: f"<|python_tag|>{json.dumps(_params(c))}",
    "llama3_bare": lambda c: json.dumps(_params(c)),
    "mistral": lambda c: f"[TOOL_CALLS][{json.dumps(c)}]",
    "mistral_args": lambda c: f"[TOOL_CALLS]{c['name']}[ARGS]{json.dumps(c['arguments'])}",
    "generic": lambda c: f"<tool_call>\n{json.dumps(c)}\n</tool_call>",
}


@pytest.mark.parametrize("call", [EXCHANGE, ZIP], ids=["exchange", "zip"])
@pytest.mark.parametrize("key", sorted(RECORDED))
def test_recorded_outputs_give_identical_tool_names_and_arguments(key, call):
    fmt = get_format(key.removesuffix("_bare").removesuffix("_args"))
    message = fmt.parse(RECORDED[key](call), id_prefix="call_3_", tools=TOOLS.schemas())
    assert [(c.name, c.arguments) for c in message.tool_calls] == [(call["name"], call["arguments"])]
    assert message.tool_calls[0].id == "call_3_0" and message.raw == RECORDED[key](call)
    assert json.loads(message.tool_calls[0].raw_arguments) == call["arguments"]
    assert "think" not in (message.content or "") and call["name"] not in (message.content or "")


def test_the_embedded_codec_reads_its_own_output_as_before():
    text = f"<tool_call>\n{json.dumps(ZIP)}\n</tool_call><|im_end|>"
    message = get_format("agentloop").parse(text, id_prefix="call_0_")
    assert (message.tool_calls[0].name, message.tool_calls[0].arguments) == (ZIP["name"], ZIP["arguments"])


def test_parameters_or_arguments_and_arguments_as_a_json_string():
    for body in (_params(ZIP), {"name": ZIP["name"], "arguments": json.dumps(ZIP["arguments"])}):
        calls = parse_hermes(f"<tool_call>{json.dumps(body)}</tool_call>").calls
        assert calls[0].arguments == ZIP["arguments"]


def test_broken_calls_stay_calls_with_their_text():
    broken = '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1"\n</tool_call>'
    (call,) = parse_hermes(broken).calls
    assert call.name == "get_order_details" and call.arguments is None and call.raw_arguments.startswith('{"name"')
    (call,) = parse_llama3('<|python_tag|>{"name": "calculate", "parameters": {').calls
    assert call.name == "calculate" and call.arguments is None
    (call,) = parse_qwen3_coder("<tool_call>\nnot xml\n</tool_call>").calls
    assert call.name == "" and call.arguments is None and call.raw_arguments == "not xml"


def test_thinking_is_kept_in_raw_never_in_the_visible_reply():
    qwen3 = get_format("qwen3")
    answer = qwen3.parse("<think>\nShe is verified; say the order total.\n</think>\n\nYour order total is $54.04.")
    assert answer.content == "Your order total is $54.04." and "verified" in answer.raw and not answer.tool_calls
    opened_by_prompt = qwen3.parse("hidden plan\n</think>\n\nHello!")  # templates that end the prompt in <think>
    assert opened_by_prompt.content == "Hello!"
    ran_out = qwen3.parse("<think>\nstill thinking about the refund")
    assert ran_out.content is None and not ran_out.tool_calls


def test_llama3_text_stays_text_and_several_calls_are_read():
    assert parse_llama3("Sure, what is your email?").calls == []
    assert parse_llama3('{"answer": 3}').content == '{"answer": 3}'  # JSON without a name is a reply
    two = parse_llama3(f"{json.dumps(_params(ZIP))}; {json.dumps(_params(EXCHANGE))}").calls
    assert [c.name for c in two] == [ZIP["name"], EXCHANGE["name"]]


def test_mistral_keeps_the_text_before_the_calls_and_reads_several():
    text = f"Checking both.[TOOL_CALLS][{json.dumps(ZIP)}, {json.dumps(EXCHANGE)}]"
    parsed = parse_mistral(text)
    assert parsed.content == "Checking both." and [c.name for c in parsed.calls] == [ZIP["name"], EXCHANGE["name"]]


def test_qwen3_coder_values_follow_the_schema():
    xml = _xml({"name": "calculate", "arguments": {"expression": "2 + 3"}})
    assert parse_qwen3_coder(xml, tools=TOOLS.schemas()).calls[0].arguments == {"expression": "2 + 3"}
    typed = '<tool_call><function=f><parameter=n>\n3\n</parameter><parameter=s>\n["a"]\n</parameter></function>'
    tools = [{"function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}, "s": {}}}}}]
    assert parse_qwen3_coder(typed, tools=tools).calls[0].arguments == {"n": 3, "s": ["a"]}
    assert parse_qwen3_coder(_xml(ZIP)).calls[0].arguments["zip"] == "19122"  # no schema: text stays text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("qwen2_5", "hermes"),
        ("qwen3", "qwen3"),
        ("qwen3_5_think", "qwen3_coder"),
        ("llama3_1", "llama3"),
        ("llama3_2", "llama3"),
        ("gemma3", "generic"),
    ],
)
def test_the_template_names_the_format(name, expected):
    class Tok:
        chat_template = template(name)

    assert detect_format(Tok()) == expected


def test_unknown_format_names_the_choices():
    with pytest.raises(ChatFormatError, match="hermes, qwen3"):
        get_format("chatml-9")


@pytest.fixture(scope="module")
def tokenizers():
    texts = corpus()[:20]
    return {name: build_tokenizer(f, texts, vocab_size=600) for name, f in FAMILIES.items()}


def _conversation(call: dict, raw: str | None = None) -> list[Message]:
    tc = ToolCall(id="call_0_0", name=call["name"], arguments=call["arguments"])
    return [
        Message(role="user", content="Hi, I'm Yusuf Rossi, zip 19122."),
        Message(role="assistant", tool_calls=[tc], raw=raw),
        Message(role="tool", content='"yusuf_rossi_9620"', tool_call_id="call_0_0", name=call["name"]),
    ]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_rendered_call_parses_back_to_the_same_call(family, tokenizers):
    """The template's rendering of a past call, read by the format's parser, is that call (render/parse parity)."""
    fam, tok = FAMILIES[family], tokenizers[family]
    fmt = get_format(fam.format)
    history = _conversation(ZIP)[:1]
    prompt = fmt.render(history, TOOLS.schemas(), "Be helpful.", tok)
    full = fmt.render(_conversation(ZIP)[:2], TOOLS.schemas(), "Be helpful.", tok, add_generation_prompt=False)
    head = prompt.split("<think>")[0] if fam.format == "qwen3" else prompt
    assert full.startswith(head)
    reply = fmt.decode(tok, tok(full[len(prompt) :] if full.startswith(prompt) else full[len(head) :])["input_ids"])
    (call,) = fmt.parse(reply, tools=TOOLS.schemas()).tool_calls
    assert (call.name, call.arguments) == (ZIP["name"], ZIP["arguments"])


def test_qwen3_re_renders_history_dropping_thinking_before_the_last_customer_message(tokenizers):
    tok, fmt = tokenizers["qwen3"], get_format("qwen3")
    raw = f"<think>\nlook her up\n</think>\n\n<tool_call>\n{json.dumps(ZIP)}\n</tool_call>"
    turn = _conversation(ZIP, raw=raw)
    assert "look her up" in fmt.render(turn, TOOLS.schemas(), "Be helpful.", tok)  # same exchange: kept
    later = [*turn, Message(role="assistant", content="Found you."), Message(role="user", content="Thanks")]
    assert "look her up" not in fmt.render(later, TOOLS.schemas(), "Be helpful.", tok)  # a later question: dropped


def test_llama3_takes_several_calls_as_consecutive_messages(tokenizers):
    calls = [ToolCall(id=f"c{i}", name=c["name"], arguments=c["arguments"]) for i, c in enumerate((ZIP, EXCHANGE))]
    messages = [Message(role="user", content="hi"), Message(role="assistant", tool_calls=calls)]
    text = get_format("llama3").render(messages, TOOLS.schemas(), "Be helpful.", tokenizers["llama3"])
    header = '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": '
    assert text.count(header) == 2  # the template itself refuses two calls in one message


def test_a_llama3_tokenizer_passes_its_format_check_and_is_refused_by_the_codec_with_the_reason(tokenizers):
    tok = tokenizers["llama3"]
    FORMATS["llama3"].check_tokenizer(tok)  # no <|endoftext|> needed
    assert FORMATS["llama3"].stop_ids(tok) == {
        tok.convert_tokens_to_ids("<|eot_id|>"),
        tok.convert_tokens_to_ids("<|eom_id|>"),
    }
    with pytest.raises(ChatFormatError, match="<|endoftext|>"):
        CodecFormat().check_tokenizer(tok)
    tok.chat_template = None
    with pytest.raises(ChatFormatError, match="chat template"):
        detect_format(tok)
