"""The `compact` chat format: a short system turn and Python-call tool syntax inside the model's own template.

Calls render and read back to the same call; whatever a model writes is read without raising (a broken call
stays a call the world refuses); and measure (`hf`), serve, SFT and GRPO render one conversation to the very
same token ids."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from pipeline.agents.backends.hf import HFAgent, HFAgentEpisode
from pipeline.agents.backends.loading import import_model
from pipeline.domains.retail.tools import TOOLS
from pipeline.endpoint.wire import to_openai_messages
from pipeline.errors import InputError
from pipeline.formats import get_format
from pipeline.formats.compact_template import format_call, parse_call
from pipeline.rollout.protocols import EpisodeInfo
from pipeline.rollout.trajectory import ToolCall
from pipeline.serve.app import create_app
from pipeline.serve.engine import load_engine
from pipeline.train.grpo_transcript import Transcript
from pipeline.train.sft_base import load_base
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus
from tests.train.helpers import gold, world

SCHEMAS = TOOLS.schemas()


def _calls():
    return [c for traj in gold() for m in traj.messages for c in m.tool_calls]


def test_every_gold_call_renders_and_reads_back_the_same():
    fmt = get_format("compact")
    calls = _calls()
    assert len(calls) > 20 and len({c.name for c in calls}) > 4
    for call in calls:
        text = format_call(call)
        assert text.startswith("<tool_call>") and "\n" not in text
        back = fmt.parse(text, tools=SCHEMAS).tool_calls
        assert [(c.name, c.arguments) for c in back] == [(call.name, call.arguments)], text


def test_lenient_where_the_intent_is_plain():
    fmt = get_format("compact")
    reads = {
        'find_user_id_by_email("a@b.com")': ("find_user_id_by_email", {"email": "a@b.com"}),
        '<tool_call> get_order_details(order_id="#W1") </tool_call>': ("get_order_details", {"order_id": "#W1"}),
        '<tool_call>{"name": "calculate", "arguments": {"expression": "1+1"}}</tool_call>': (
            "calculate", {"expression": "1+1"}
        ),
        "<tool_call>modify_pending_order_items(order_id='#W1', item_ids=['1'], new_item_ids=('2',), "
        "payment_method_id=null)": (
            "modify_pending_order_items",
            {"order_id": "#W1", "item_ids": ["1"], "new_item_ids": ["2"], "payment_method_id": None},
        ),
    }  # fmt: skip
    for text, (name, args) in reads.items():
        (call,) = fmt.parse(text, tools=SCHEMAS).tool_calls
        assert (call.name, call.arguments) == (name, args), text
    said = fmt.parse('Sure, I can help. <tool_call>calculate(expression="2*3")</tool_call>', tools=SCHEMAS)
    assert said.content == "Sure, I can help." and said.tool_calls[0].arguments == {"expression": "2*3"}
    plain = fmt.parse("Could you give me your email (and zip code)?", tools=SCHEMAS)
    assert plain.content.startswith("Could you") and not plain.tool_calls
    assert not fmt.parse("summarize(this)", tools=SCHEMAS).tool_calls  # not a tool: text


def test_broken_calls_stay_calls_the_world_refuses():
    broken = [
        "<tool_call>get_order_details(order_id=#W123)</tool_call>",
        "<tool_call>get_order_details(order_id=os.getcwd())</tool_call>",
        '<tool_call>find_user_id_by_email(email="a@b.com"',
        "<tool_call>get_user_details(1, 2, 3)</tool_call>",
        "<tool_call>get_user_details(user_id='a', user_id='b')</tool_call>",
        "<tool_call>__import__('os').system('x')</tool_call>",
        "<tool_call></tool_call>",
    ]
    fmt = get_format("compact")
    for text in broken:
        (call,) = fmt.parse(text, tools=SCHEMAS).tool_calls
        assert call.arguments is None and call.raw_arguments is not None, text
    assert fmt.parse(broken[0], tools=SCHEMAS).tool_calls[0].name == "get_order_details"
    kept = ToolCall(id="c", name="get_order_details", arguments=None, raw_arguments="get_order_details(order_id=#W1)")
    assert format_call(kept) == "<tool_call>get_order_details(order_id=#W1)</tool_call>"  # history shows it as said
    rng = random.Random(0)
    alphabet = "<>_/()[]{}=,\"'tool_call abcdef123\n#:-."
    for _ in range(3000):  # whatever a model writes is read, never raised on
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        fmt.parse(text, tools=SCHEMAS)
        parse_call(text, "c0", SCHEMAS)


@pytest.fixture(scope="module")
def compact_checkpoint(tmp_path_factory):
    path = build_checkpoint(FAMILIES["qwen2"], tmp_path_factory.mktemp("qwen2") / "ckpt", corpus())
    assert import_model(path, "compact").chat_format == "compact"
    return path


@pytest.mark.slow
def test_measure_serve_sft_and_grpo_render_the_same_tokens(compact_checkpoint, monkeypatch):
    traj = next(t for t in gold() if sum(1 for m in t.messages if m.tool_calls) >= 2)
    w = world()
    policy, tools, messages = w.policy, SCHEMAS, traj.messages
    turns = [i for i, m in enumerate(messages) if m.role == "assistant"]

    seen: list[list[int]] = []
    fmt_cls = type(get_format("compact"))
    real = fmt_cls.prompt_ids
    monkeypatch.setattr(fmt_cls, "prompt_ids", lambda self, *a, **k: seen.append(real(self, *a, **k)) or seen[-1])

    # measure: the hf backend's episode, one token per turn
    agent = HFAgent(compact_checkpoint, max_new_tokens=1)
    assert agent.format.name == "compact"
    info = EpisodeInfo(task=traj_task(traj), trial=0, seed=0, policy=policy, tools=tools)
    measured = []
    for i in turns:
        HFAgentEpisode(agent, info).act(list(messages[:i]))
        measured.append(seen[-1])

    # serve: the OpenAI-compatible app over the same checkpoint, the conversation sent as a client sends it
    engine = load_engine(compact_checkpoint, "tiny")
    client = TestClient(create_app(engine))
    served = []
    for i in turns:
        body = {
            "model": "tiny", "messages": to_openai_messages(messages[:i], system=policy), "max_tokens": 1,
            "tools": tools,
        }  # fmt: skip
        assert client.post("/v1/chat/completions", json=body).status_code == 200
        served.append(seen[-1])
    assert served == measured

    # SFT: the trained sequence; before each assistant turn, exactly the prompt measure gave it
    base = load_base(compact_checkpoint)
    assert base.format.name == "compact"
    columns = base.encode([traj])
    (ids,), (mask,) = columns["input_ids"], columns["assistant_masks"]
    starts = [j for j in range(len(mask)) if mask[j] and (j == 0 or not mask[j - 1])]
    assert len(starts) == len(turns)
    assert [ids[:s] for s in starts] == measured

    # GRPO: the episode's token stream, each turn's prompt the stream so far, ending as the SFT sequence
    stream = Transcript(base.format, base.tokenizer, tools, policy, base.format.stop_ids(base.tokenizer), 0)
    for n, (i, s) in enumerate(zip(turns, starts, strict=True)):
        assert stream.prompt(list(messages[:i])) == measured[n]
        end = next(j for j in range(s, len(mask)) if not mask[j]) if 0 in mask[s:] else len(mask)
        stream.sampled(ids[s:end], [0.0] * (end - s), i)
    assert stream.ids == ids[: len(stream.ids)] and len(stream.ids) >= starts[-1]


def traj_task(traj):
    from pipeline.dataset.task import Provenance, Task, UserScript

    return Task(
        id=traj.task_id, world=traj.world, user_script=UserScript(goal="-"), provenance=Provenance(source="eval")
    )


def test_the_compact_prompt_is_under_a_third_of_the_generic_one(compact_checkpoint):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(compact_checkpoint))
    traj = gold()[0]
    lengths = {
        name: len(get_format(name).prompt_ids(list(traj.messages[:1]), SCHEMAS, world().policy, tokenizer))
        for name in ("generic", "compact")
    }
    assert lengths["compact"] < 0.3 * lengths["generic"], lengths


def test_a_summary_stands_only_for_the_exact_policy_it_was_written_for(tmp_path):
    from pipeline.formats.compact_template import render_system
    from pipeline.formats.summaries import digest, summaries

    policy = world().policy
    short = render_system(policy, [])
    assert short.startswith("You are a store's customer-service assistant") and len(short) < len(policy) / 4
    edited = policy + "\n- Never offer a discount."
    assert render_system(edited, []) == edited.strip()  # an edited policy renders in full
    (tmp_path / "x.md").write_text(f"---\nsummarizes:\n  - {digest('p')}\n---\nshort p\n")
    assert summaries(tmp_path) == {digest("p"): "short p"}
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "y.md").write_text("no front matter\n")
    with pytest.raises(InputError, match=r"y.md: a policy summary opens with front matter"):
        summaries(tmp_path / "bad")


def test_a_template_of_user_and_model_turns_only_gets_tool_results_as_user_turns(tmp_path):
    """Gemma's template raises unless user and model alternate: compact gives it each tool result as a user turn
    (SFT locates every assistant turn in it); a template with a tool role (ChatML) keeps its tool turns."""
    from pipeline.formats.compact_template import takes_tool_turns
    from pipeline.train.sft_template import assistant_spans

    traj = next(t for t in gold() if sum(1 for m in t.messages if m.tool_calls) >= 2)
    fmt, policy, messages = get_format("compact"), world().policy, traj.messages
    gemma = load_base(build_checkpoint(FAMILIES["gemma3"], tmp_path / "gemma3", corpus())).tokenizer
    qwen = load_base(build_checkpoint(FAMILIES["qwen2"], tmp_path / "qwen2", corpus())).tokenizer
    assert not takes_tool_turns(gemma) and takes_tool_turns(qwen)
    text = fmt.render(messages, SCHEMAS, policy, gemma)
    results = sum(1 for m in messages if m.role == "tool")
    assert text.count("<tool_response>") == results and "<start_of_turn>tool" not in text
    assert "<start_of_turn>user\n<tool_response>" in text
    [(full, spans)] = assistant_spans(fmt, messages, SCHEMAS, policy, gemma)
    assert len(spans) == sum(1 for m in messages if m.role == "assistant")
    assert all(full[a:b].endswith("<end_of_turn>") for a, b in spans)
    # Qwen's template takes tool turns (and renders them its own way): compact hands it `tool` messages as before
    as_tool = fmt.template_messages(messages, SCHEMAS, policy)
    assert sum(1 for m in as_tool if m["role"] == "tool") == results
    assert fmt.render(messages, SCHEMAS, policy, qwen) == qwen.apply_chat_template(
        as_tool, add_generation_prompt=True, tokenize=False
    )
