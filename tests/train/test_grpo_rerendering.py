"""A template that re-renders history (Qwen3 drops the thinking of turns before the last customer message), under
GRPO, SFT and the hf backend's key/value cache, on a random-weight tiny Qwen3 with its real template.

GRPO: the episode's stream keeps every turn as the policy sampled it, thinking included; it must be exactly what
TRL's prefix-preserving `qwen3_training` template renders for the conversation, its sampled runs the policy's ids,
its logprobs a forward over the stream, and each prompt the stream so far. SFT: every assistant turn is trained
once, with its thinking, after the very prompt evaluation gives it. The cache: a prompt whose earlier turns were
re-rendered reuses only the common prefix and gives the logits of a fresh forward."""

from __future__ import annotations

import pytest
import torch

from pipeline.agents.backends.hf import PrefixCache, sample
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.rollout.runner import Limits
from pipeline.rollout.trajectory import Message
from pipeline.train.grpo_rollouts import EpisodeRollouts, PolicyAgent, PolicyEpisode, local_generate, score
from pipeline.train.sft_base import load_base
from pipeline.users.scripted import ScriptedUser
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus, template
from tests.train.helpers import gold, tasks, world

LIMITS = Limits(max_turns=30, max_tool_calls=12, max_steps_per_turn=3)
HEADER = "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    return load_base(build_checkpoint(FAMILIES["qwen3"], tmp_path_factory.mktemp("qwen3") / "ckpt", corpus()))


def _thinking(message: Message, n: int) -> Message:
    text = f"<think>\nStep {n}: what the customer needs next.\n</think>\n\n"
    return message.model_copy(update={"raw": text + (message.content or "")})


class ThinkingOracle(PolicyAgent):
    """The oracle's messages, each after a thought, written as Qwen3 writes them (the template's own rendering of
    the turn), sampled as tokens with the live model's logprobs; every prompt and reply is kept."""

    def __init__(self, base: PolicyAgent, model) -> None:
        super().__init__(
            base.tokenizer, base.format, base.generate, context=base.context, max_new_tokens=400,
            stop_ids=base.stop_ids,
        )  # fmt: skip
        self.model, self.calls = model, []

    def start(self, info):
        return _Thinking(self, info)


class _Thinking(PolicyEpisode):
    def __init__(self, agent, info) -> None:
        super().__init__(agent, info)
        self.oracle = OracleAgent().start(info)

    def act(self, messages):
        a = self.agent
        turn = _thinking(self.oracle.act(messages), self.turn)
        rendered = a.format.render(
            [Message(role="user", content="-"), turn], self.info.tools, None, a.tokenizer, add_generation_prompt=False
        )
        text = rendered[rendered.index(HEADER) + len(HEADER) : rendered.rindex("<|im_end|>")]
        ids = a.tokenizer(text, add_special_tokens=False)["input_ids"] + [a.end_id]

        def generate(prompt, room, generator):
            a.calls.append((list(prompt), list(ids)))
            return list(ids), score(a.model, prompt, ids)

        a.generate = generate
        return super().act(messages)


def _runs(ids, mask):
    runs: list[list[int]] = []
    for i, (t, m) in enumerate(zip(ids, mask, strict=True)):
        if m:
            if i == 0 or not mask[i - 1]:
                runs.append([])
            runs[-1].append(t)
    return runs


def test_a_qwen3_episode_trains_on_the_stream_it_sampled_though_the_template_re_renders(qwen3):
    tok, fmt, model = qwen3.tokenizer, qwen3.format, qwen3.model.eval()
    base = PolicyAgent(tok, fmt, None, context=int(model.config.max_position_embeddings), max_new_tokens=400)  # type: ignore[arg-type]
    base.generate = local_generate(model, base.stop_ids, 1.0)
    agent = ThinkingOracle(base, model)
    task = tasks()[0]
    rollouts = EpisodeRollouts(
        world=world(), tasks={task.id: task}, user=ScriptedUser(), make_agent=lambda: agent, limits=LIMITS
    )
    s = rollouts.episode(agent, task)
    assert s.reward == 1.0  # the oracle's episode passes: the stream parsed back into the right calls
    messages = s.trajectory.messages
    last = max(i for i, m in enumerate(messages) if m.role == "assistant")
    tools, policy = world().tools.schemas(), world().policy

    # the template re-rendered: evaluation's prompt of the last turn has lost the first turn's thinking
    first = next(m for m in messages if m.role == "assistant")
    evaluation = fmt.render(messages[:last], tools, policy, tok)
    assert "Step 0:" in first.raw and "Step 0:" not in evaluation
    assert sum(m.role == "user" for m in messages[:last]) >= 2

    # the stream is the prefix-preserving training template's rendering: every turn with its thinking
    stream = tok.decode(s.prompt_ids + s.completion_ids, skip_special_tokens=False)
    conversation = fmt.template_messages(messages[: last + 1], tools, policy)
    want = tok.apply_chat_template(conversation, tools=tools, chat_template=template("qwen3_training"), tokenize=False)
    assert stream == want.removesuffix("\n")
    assert all(f"Step {n}:" in stream for n in range(len(agent.calls)))

    # sampled runs are the policy's ids, each prompt is the stream so far, logprobs a forward over the stream
    ids = s.prompt_ids + s.completion_ids
    assert _runs(s.completion_ids, s.env_mask) == [reply for _, reply in agent.calls]
    assert all(prompt == ids[: len(prompt)] for prompt, _ in agent.calls)
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
    p = len(s.prompt_ids)
    sampled = [i for i, m in enumerate(s.env_mask) if m]
    direct = [float(logp[p + i - 1, s.completion_ids[i]]) for i in sampled]
    assert max(abs(d - s.logprobs[i]) for d, i in zip(direct, sampled, strict=True)) < 1e-4


def _with_thinking(messages):
    out, n = [], 0
    for m in messages:
        if m.role == "assistant":
            m, n = _thinking(m, n), n + 1
        out.append(m)
    return out


def test_qwen3_sft_trains_each_turn_with_its_thinking_after_the_prompt_evaluation_gives_it(qwen3):
    tok, fmt = qwen3.tokenizer, qwen3.format
    traj = gold()[0]
    messages = _with_thinking(traj.messages)
    assert sum(m.role == "user" for m in messages) >= 2  # a customer message after a thinking turn
    tools, policy = world().tools.schemas(), world().policy
    prompts = {fmt.render(messages[:j], tools, policy, tok): j for j, m in enumerate(messages) if m.role == "assistant"}
    columns = qwen3.encode([traj.model_copy(update={"messages": messages})])
    assert len(columns["input_ids"]) > 1  # the template re-renders: some turns are examples of their own
    trained: list[int] = []
    for ids, mask in zip(columns["input_ids"], columns["assistant_masks"], strict=True):
        for i, run in _starts(mask):
            context = tok.decode(ids[:i], skip_special_tokens=False)
            assert context in prompts  # trained after the very prompt evaluation gives that turn
            j = prompts[context]
            text = tok.decode(ids[i : i + run], skip_special_tokens=False)
            assert (
                text.startswith("<think>\n")
                and f"Step {len([m for m in messages[:j] if m.role == 'assistant'])}:" in text
            )
            assert text.endswith("<|im_end|>") and HEADER not in text
            trained.append(j)
    assert sorted(trained) == [j for j, m in enumerate(messages) if m.role == "assistant"]  # each turn once


def _starts(mask):
    """(start, length) of each run of 1s."""
    out, i = [], 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            out.append((i, j - i))
            i = j
        else:
            i += 1
    return out


def test_the_key_value_cache_reuses_only_what_the_re_rendered_prompt_shares(qwen3):
    tok, fmt, model = qwen3.tokenizer, qwen3.format, qwen3.model.eval()
    messages = _with_thinking(gold()[0].messages)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    tools, policy = world().tools.schemas(), world().policy
    first = fmt.prompt_ids(messages[: users[1]], tools, policy, tok)  # the turn the customer answers, thinking kept
    second = fmt.prompt_ids(messages[: users[1] + 1], tools, policy, tok)  # that turn's thinking is dropped now
    cache = PrefixCache(model, lean=False)
    sample(model, first, max_new_tokens=3, stop_ids=set(), prefix=cache)
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert common < len(first) and cache.reuse(second) == common and cache.cached == common
    got = cache.logits(second[common:])
    with torch.no_grad():
        want = model(input_ids=torch.tensor([second])).logits[0, -1].float()
    assert torch.allclose(got, want, atol=1e-4)


class _Forgetful:
    """Qwen3's format, but a conversation that goes on renders without its earlier assistant turns at all."""

    def __init__(self, fmt) -> None:
        self.fmt, self.name, self.stops = fmt, "forgetful", fmt.stops

    def render(self, messages, tools, policy, tokenizer, *, add_generation_prompt=True):
        if messages and messages[-1].role != "assistant":
            messages = [m for m in messages if m.role != "assistant"]
        return self.fmt.render(messages, tools, policy, tokenizer, add_generation_prompt=add_generation_prompt)

    def prompt_ids(self, messages, tools, policy, tokenizer):
        return self.fmt.prompt_ids(messages, tools, policy, tokenizer)


def test_a_turn_the_new_rendering_has_lost_is_a_clear_error(qwen3):
    from pipeline.formats import ChatFormatError
    from pipeline.train.grpo_transcript import Transcript

    tok, fmt = qwen3.tokenizer, qwen3.format
    stops = fmt.stop_ids(tok)
    transcript = Transcript(_Forgetful(fmt), tok, world().tools.schemas(), world().policy, stops, min(stops))
    messages = list(gold()[0].messages)
    transcript.prompt(messages[:1])
    said = tok("Hello.<|im_end|>", add_special_tokens=False)["input_ids"]
    transcript.sampled(said, [-1.0] * len(said), 1)
    with pytest.raises(ChatFormatError, match="assistant turn 1 cannot be found"):
        transcript.prompt(messages[:3])
