"""Train/eval parity for an agent program: gold conversations replayed through the program with the gold teacher as
its model give exactly the calls the program makes at measure time, and SFT on them trains on the prompt that
`agentloop serve` renders for each of those calls."""

from __future__ import annotations

from functools import lru_cache

import httpx
import pytest

from pipeline.agents import make_agent
from pipeline.authoring import generate_tasks
from pipeline.dataset import Task
from pipeline.programs.teacher import GoldTeacher, gold_steps, replay_through_program
from pipeline.rollout import Trajectory
from pipeline.train.sft_calls import NoModelCallsError, call_examples, encode_model_calls
from pipeline.trials.trial import run_trial
from pipeline.users.scripted import ScriptedUser
from pipeline.world import World, load_world
from tests.needs import need_module
from tests.programs.scripted_model import ScriptedModel, text, tool_call

AGENTS_SDK = "program:examples.programs.openai_agents_program:OpenAIAgentsProgram"


@lru_cache(maxsize=1)
def world() -> World:
    return load_world("gen-3")


@lru_cache(maxsize=1)
def tasks() -> tuple[Task, ...]:
    return tuple(generate_tasks(world(), 3, seed=1))


@lru_cache(maxsize=1)
def golds() -> tuple[Trajectory, ...]:
    out = []
    for task in tasks():
        result = run_trial(world(), task, make_agent("oracle"), ScriptedUser(), 0)
        assert result.verdict.passed
        out.append(result.trajectory)
    return tuple(out)


@lru_cache(maxsize=1)
def replayed() -> tuple[Trajectory, ...]:
    need_module("agents", install="pip install -e '.[programs]'")
    out = replay_through_program(AGENTS_SDK, world(), golds(), tasks(), ScriptedUser())
    assert out.counts["kept"] == len(golds()), out.dropped
    return tuple(out.trajectories)


def tool_calls(traj: Trajectory) -> list[tuple[str, dict | None]]:
    return [(c.name, c.arguments) for m in traj.messages if m.role == "assistant" for c in m.tool_calls]


def test_each_gold_step_answers_the_message_before_it():
    steps = gold_steps(golds()[0])
    assert steps and all(s.role == "assistant" for _, s in steps)
    assert steps[0][0] is not None and steps[0][0].role == "user"
    assert not steps[-1][1].tool_calls  # the gold ends with a reply to the customer


def test_the_replay_records_the_programs_calls_and_plays_the_gold():
    for gold, traj in zip(golds(), replayed(), strict=True):
        calls = traj.model_calls
        assert len(calls) == len(gold_steps(gold))
        assert tool_calls(traj) == tool_calls(gold)  # the program executed the gold's calls, over MCP
        said = [m.content for m in traj.messages if m.role == "assistant" and not m.tool_calls]
        assert said == [m.content for m in gold.messages if m.role == "assistant" and not m.tool_calls]
        assert all(c["tools"] for c in calls)  # the program's own tool schemas (from MCP)


def test_the_replayed_calls_are_the_calls_the_program_makes_at_measure_time():
    """The same program measured on the same task, its model answering what the gold did, sends the same requests."""
    gold, replay = golds()[0], replayed()[0]
    script = [
        tool_call(m.tool_calls[0].name, m.tool_calls[0].arguments or {}, m.tool_calls[0].id)
        if m.tool_calls
        else text(m.content or "")
        for _, m in gold_steps(gold)
    ]
    with ScriptedModel(script) as model:
        agent = make_agent(f"{AGENTS_SDK},base_url={model.base_url},model=smol")
        measured = run_trial(world(), tasks()[0], agent, ScriptedUser(), gold.trial).trajectory
    assert len(measured.model_calls) == len(replay.model_calls)
    for at_measure, recorded in zip(measured.model_calls, replay.model_calls, strict=True):
        assert at_measure["messages"] == recorded["messages"]  # system prompt, layout, every message
        assert at_measure["tools"] == recorded["tools"]
        assert {k: v for k, v in at_measure["params"].items() if k != "model"} == recorded["params"]


def test_a_program_that_asks_what_the_gold_does_not_have_is_dropped_as_diverged():
    short = golds()[0].model_copy(update={"messages": golds()[0].messages[:2]})  # the first step only
    need_module("agents", install="pip install -e '.[programs]'")
    out = replay_through_program(AGENTS_SDK, world(), [short], tasks(), ScriptedUser())
    assert out.counts["kept"] == 0 and out.counts["diverged"] + out.counts["failed"] == 1, out.counts


def test_the_teacher_refuses_a_call_out_of_order():
    with GoldTeacher() as teacher:
        teacher.play(golds()[0])
        wrong = {"model": "m", "messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]}
        answer = httpx.post(f"{teacher.base_url}/chat/completions", json=wrong, timeout=10)
        assert answer.status_code == 409 and teacher.diverged and not teacher.finished


def test_a_program_that_resends_its_history_gives_one_example_per_episode():
    for traj in replayed():
        (example,) = call_examples(traj)
        assert example.policy and example.tools
        assert example.messages[-1].role == "assistant" and not example.messages[-1].tool_calls
        assert sum(m.role == "assistant" for m in example.messages) == len(traj.model_calls)


def test_a_trajectory_without_model_calls_is_named():
    with pytest.raises(NoModelCallsError, match="no recorded model calls"):
        call_examples(golds()[0])


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus

    return build_checkpoint(FAMILIES["qwen2"], tmp_path_factory.mktemp("calls") / "qwen2", corpus())


def test_sft_on_model_calls_trains_on_the_prompts_agentloop_serve_renders(qwen):
    """Each recorded call, sent to `agentloop serve`, is rendered to a prompt that the example starts with, and the
    loss starts right after it: the tokens trained on follow exactly the prompt the model is served."""
    from pipeline.serve import create_app, load_engine
    from pipeline.train.sft_base import load_base
    from tests.programs.serving import Served

    base = load_base(qwen)
    traj = replayed()[0]
    columns = encode_model_calls([traj], base.tokenizer, base.format, base.codec)
    (ids,), (mask,) = columns["input_ids"], columns["assistant_masks"]
    with Served(create_app(load_engine(qwen, name="tiny"), default_max_tokens=1)) as served:
        for call in traj.model_calls:
            body = {"model": "tiny", "messages": call["messages"], "tools": call["tools"], "return_token_ids": True}
            answer = httpx.post(f"{served.url}/v1/chat/completions", json=body, timeout=60).json()
            prompt = answer["prompt_token_ids"]
            assert ids[: len(prompt)] == prompt
            assert mask[len(prompt) - 1] == 0 and mask[len(prompt)] == 1  # the completion is what is trained on


def test_sft_on_model_calls_runs(qwen, tmp_path):
    from pipeline.train.lora import LoraSpec
    from pipeline.train.sft import run_sft
    from pipeline.train.sft_config import SFTConfig

    params = SFTConfig(
        base=qwen,
        render="model_calls",
        max_length=8192,
        max_steps=2,
        batch_size=1,
        learning_rate=5e-2,
        threads=1,
        logging_steps=1,
        lora=LoraSpec(rank=4, alpha=8),
    )
    result = run_sft(params, tmp_path / "sft", trajectories=list(replayed()))
    assert result.steps == 2 and result.examples == len(replayed())
    assert 0 < result.manifest["assistant_tokens"] < result.manifest["tokens"]
    assert make_agent(f"hf:{tmp_path / 'sft'}").format.name == "hermes"  # the trained checkpoint loads as an agent


# ---- a checkpoint the harness serves: `serve=PATH` --------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (",serve=m,base_url=http://x/v1", "give base_url (an endpoint) or serve (a checkpoint), not both"),
        (",max_tokens=12", "max_tokens is the served checkpoint's"),
        (",serve=m,max_tokens=0", "max_tokens must be a whole number >= 1"),
        (",model_timeout=0", "model_timeout must be seconds > 0"),
    ],
)
def test_a_bad_serving_setting_is_one_line_naming_it(settings, said):
    from pipeline.agents.registry import UnknownAgentError

    with pytest.raises(UnknownAgentError) as caught:
        make_agent(AGENTS_SDK + settings)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_settings_are_set_and_removed_in_a_spec():
    from pipeline.programs import ProgramAgent, with_settings

    spec = f"{AGENTS_SDK},serve=models/a,model=smol,model_timeout=600"
    assert with_settings(spec, serve="models/b") == f"{AGENTS_SDK},model=smol,model_timeout=600,serve=models/b"
    assert with_settings(spec, serve=None, base_url=None) == f"{AGENTS_SDK},model=smol,model_timeout=600"
    agent = ProgramAgent(spec)
    assert (agent.serve, agent.model, agent.max_tokens, agent.model_timeout_s) == ("models/a", "smol", 256, 600.0)
    assert ProgramAgent(f"{AGENTS_SDK},serve=models/a").model == "model"  # the served name by default


@pytest.mark.slow
def test_a_program_measured_on_a_checkpoint_the_harness_serves(qwen):
    """`serve=PATH`: `agentloop serve` of the checkpoint in a subprocess, the program's calls recorded through the
    proxy with the token ids the server rendered and sampled."""
    need_module("agents", install="pip install -e '.[programs]'")
    agent = make_agent(f"{AGENTS_SDK},serve={qwen},max_tokens=4,model_timeout=300")
    traj = run_trial(world(), tasks()[0], agent, ScriptedUser(max_turns=2), 0).trajectory
    assert not traj.infra_error, traj.error
    assert traj.model_calls and all(c["status"] == 200 for c in traj.model_calls)
    first = traj.model_calls[0]
    assert first["model"] == "model" and first["prompt_token_ids"] and first["choices"][0]["token_ids"]


def test_the_loops_train_stage_trains_a_program_baselines_checkpoint_on_the_programs_calls(qwen, tmp_path, monkeypatch):
    """`baseline.source: agent:program:…,serve=PATH` and `train.method: sft`: the synthesized conversations are
    replayed through the program, PATH is fine-tuned on its calls, and the candidate is the program serving it."""
    import json

    from pipeline.agents.checkpoint import META_FILE
    from pipeline.dataset.io import write_tasks
    from pipeline.loop import paths
    from pipeline.loop.agentref import read_agent_spec, write_agent_ref
    from pipeline.loop.params import Params
    from pipeline.loop.stages import train_candidate
    from tests.train.helpers import gold, tasks, write_jsonl

    need_module("agents", install="pip install -e '.[programs]'")
    monkeypatch.chdir(tmp_path)
    paths.EVAL_TASKS.parent.mkdir(parents=True)
    write_tasks(paths.EVAL_TASKS, list(tasks()[8:10]))
    spec = f"{AGENTS_SDK},serve={qwen},model=smol"
    write_agent_ref(paths.BASELINE_MODEL, spec, source=f"agent:{spec}")
    paths.SYNTH_DIR.mkdir(parents=True)
    write_jsonl(paths.SYNTH_DIR / "trajectories.jsonl", gold()[:3])
    write_tasks(paths.SYNTH_DIR / "tasks.jsonl", list(tasks()[:8]))
    p = Params.model_validate(
        {"train": {"max_steps": 2, "learning_rate": 5.0e-2, "batch_size": 1, "max_length": 8192,
                   "use_curated": False, "lora": {"rank": 4, "alpha": 8}}}
    )  # fmt: skip
    candidate = train_candidate(p)
    checkpoint = paths.CANDIDATE_MODEL / "checkpoint"
    assert candidate == f"{AGENTS_SDK},model=smol,serve={checkpoint}" == read_agent_spec(paths.CANDIDATE_MODEL)
    meta = json.loads((checkpoint / META_FILE).read_text())
    assert meta["training"]["render"] == "model_calls" and meta["training"]["steps"] == 2
    assert meta["data_manifest"]["data_counts"]["verified"] == 3
    replayed = [json.loads(line) for line in (paths.CANDIDATE_MODEL / "program_data.jsonl").open()]
    assert len(replayed) == 3 and all(t["model_calls"] for t in replayed)
