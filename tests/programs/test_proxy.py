"""The per-episode model proxy against real upstreams on 127.0.0.1 (a scripted OpenAI-compatible server), driven by
the official `openai` client as a program drives it: calls forwarded and recorded per episode (messages, tools,
completion, usage, latency, token ids where the upstream returns them), upstream failures answered 502 / 504 and
recorded as infrastructure, the upstream's 4xx forwarded as the program's own, streaming refused, a closed
episode 404."""

from __future__ import annotations

import httpx
import openai
import pytest

from pipeline.programs.proxy import ModelCall, ModelProxy, ProxyError
from tests.programs.scripted_model import MODEL, ScriptedModel, free_port, status, text, tool_call

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_user",
            "description": "Find a user by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        },
    }
]


def client(base_url: str, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="the-programs-own-key", max_retries=0, **kw)


@pytest.fixture
def proxy():
    def make(upstream: ScriptedModel | str, **kw) -> ModelProxy:
        url = upstream if isinstance(upstream, str) else upstream.base_url
        made = ModelProxy(url, **kw)
        made.start()
        started.append(made)
        return made

    started: list[ModelProxy] = []
    yield make
    for made in started:
        made.stop()


def test_a_programs_calls_are_forwarded_and_recorded(proxy):
    with ScriptedModel([tool_call("find_user", {"email": "a@b.c"}, "call_1"), text("Found you.")]) as upstream:
        served = proxy(upstream, api_key="upstream-key")
        base = served.open("ep-1")
        assert base == f"{served.public_url}/episodes/ep-1/v1"
        llm = client(base)
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "I am a@b.c"}]
        first = llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.3)
        assert first.choices[0].finish_reason == "tool_calls"
        assert first.choices[0].message.tool_calls[0].function.name == "find_user"
        assert first.choices[0].logprobs is None  # the proxy's own request for log-probabilities is not shown
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "call_1", "content": '{"user_id": "u1"}'},
        ]
        second = llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == "Found you."

    calls = served.calls("ep-1")
    assert [c.index for c in calls] == [0, 1] and all(isinstance(c, ModelCall) for c in calls)
    one, two = calls
    assert one.model == MODEL and one.messages == messages[:2] and one.tools == TOOLS
    assert one.params["temperature"] == 0.3 and "logprobs" not in one.params  # what the program sent, exactly
    assert one.status == 200 and one.finish_reason == "tool_calls"
    assert one.tool_calls[0]["function"] == {"name": "find_user", "arguments": '{"email": "a@b.c"}'}
    assert one.usage is not None and one.usage.prompt_tokens == 7 and one.usage.total_tokens > 7
    assert one.latency_s > 0 and one.started_at <= two.started_at
    assert one.token_ids is None and one.prompt_token_ids is None  # this upstream returns none
    assert two.messages == messages and two.message == {"role": "assistant", "content": "Found you."}
    # the upstream got the proxy's key, not the program's, and was asked for the token ids
    sent = upstream.requests[0]
    assert sent["authorization"] == "Bearer upstream-key"
    assert sent["body"]["logprobs"] is True and sent["body"]["return_token_ids"] is True
    assert served.failures("ep-1") == []
    record = served.close("ep-1")
    assert record.calls == calls and record.failures == []


def test_token_ids_are_kept_where_the_upstream_returns_them(proxy):
    with ScriptedModel([text("Hello there, how can I help?")], vllm_ids=True) as upstream:
        served = proxy(upstream)
        llm = client(served.open("ep"))
        answer = llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].logprobs is None
        assert "token_ids" not in (answer.choices[0].model_extra or {})
        assert "prompt_token_ids" not in (answer.model_extra or {})
        asked = llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], logprobs=True)
        assert asked.choices[0].logprobs is not None  # the program asked: it gets them

    plain, _ = served.calls("ep")
    completion = plain.choices[0]
    assert completion.token_ids and completion.token_ids == list(range(100, 100 + len(completion.token_ids)))
    assert completion.logprobs == [-0.5] * len(completion.token_ids)
    assert plain.prompt_token_ids == [1, 2, 3, 4, 5, 6, 7]
    assert plain.response is not None and plain.response["prompt_token_ids"] == [1, 2, 3, 4, 5, 6, 7]


def test_ids_in_logprobs_entries_are_read_too(proxy):
    from pipeline.programs.proxy import _sampled

    entries = [{"id": 5, "token": "a", "logprob": -1.0}, {"id": 9, "logprob": 0}]
    llama = {"message": {}, "logprobs": {"content": entries}}
    assert _sampled(llama) == ([5, 9], [-1.0, 0.0])
    vllm = {"message": {}, "logprobs": {"content": [{"token": "token_id:42", "logprob": -0.1}]}}
    assert _sampled(vllm) == ([42], [-0.1])
    assert _sampled({"message": {}, "logprobs": None}) == (None, None)


@pytest.mark.parametrize("refusal", [400, 422])
def test_an_upstream_refusing_the_extra_fields_is_asked_plainly_from_then_on(proxy, refusal):
    with ScriptedModel([text("ok")]) as upstream:
        upstream.refuse_fields, upstream.refuse_status = {"return_token_ids"}, refusal
        served = proxy(upstream)
        llm = client(served.open("ep"))
        for _ in range(2):
            assert llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert ["return_token_ids" in r["body"] for r in upstream.requests] == [True, False, False]
    assert [c.status for c in served.calls("ep")] == [200, 200] and served.failures("ep") == []


def test_upstream_failures_are_infrastructure_answered_502_or_504(proxy):
    with ScriptedModel([status(500, "CUDA out of memory"), status(503, "busy"), text("ok")]) as upstream:
        served = proxy(upstream)
        llm = client(served.open("ep"))
        for expected in (502, 502):
            with pytest.raises(openai.APIStatusError) as caught:
                llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
            assert caught.value.status_code == expected
        assert "CUDA out of memory" in served.failures("ep")[0].message
        assert llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    failures = served.failures("ep")
    assert [(f.kind, f.status, f.upstream_status) for f in failures] == [
        ("server_error", 502, 500),
        ("server_error", 502, 503),
    ]
    assert [c.status for c in served.calls("ep")] == [200]  # a failure is not a call the program made
    assert failures[0].request == {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}

    # refused connections: nothing listens on the upstream's port
    gone = proxy(f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(openai.APIStatusError) as caught:
        client(gone.open("ep")).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
    (failure,) = gone.failures("ep")
    assert failure.kind == "unreachable" and failure.upstream_status is None and "127.0.0.1" in failure.message


def test_a_slow_upstream_is_a_timeout_504(proxy):
    with ScriptedModel([text("late")], delay=2.0) as upstream:
        served = proxy(upstream, timeout=0.3)
        with pytest.raises(openai.APIStatusError) as caught:
            client(served.open("ep")).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 504
    (failure,) = served.failures("ep")
    assert failure.kind == "timeout" and failure.status == 504 and served.calls("ep") == []


def test_a_non_completion_answer_is_a_bad_response(proxy):
    answers = [
        {"hello": "world"},
        {"choices": [{"index": 0}]},
        {"choices": [{"message": {}}], "usage": {"prompt_tokens": "many"}},
    ]
    with ScriptedModel([lambda body, ids=False, a=a: (200, a) for a in answers]) as upstream:
        served = proxy(upstream)
        llm = client(served.open("ep"))
        for _ in answers:
            with pytest.raises(openai.APIStatusError) as caught:
                llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
            assert caught.value.status_code == 502
    failures = served.failures("ep")
    assert [f.kind for f in failures] == ["bad_response"] * 3 and "choices[0] has no message" in failures[1].message


def test_the_upstreams_4xx_is_the_programs_request_forwarded_and_recorded(proxy):
    with ScriptedModel([status(400, "This model's maximum context length is 2048 tokens")]) as upstream:
        served = proxy(upstream, ask_token_ids=False)
        with pytest.raises(openai.BadRequestError) as caught:
            client(served.open("ep")).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert "maximum context length" in str(caught.value)
    (call,) = served.calls("ep")
    assert call.status == 400 and "maximum context length" in (call.error or "") and call.choices == []
    assert served.failures("ep") == []


def test_streaming_is_refused_with_a_clear_400(proxy):
    with ScriptedModel([text("ok")]) as upstream:
        served = proxy(upstream)
        with pytest.raises(openai.BadRequestError) as caught:
            client(served.open("ep")).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True
            )
    assert "stream=true is not supported by the model proxy" in str(caught.value)
    assert upstream.requests == [] and served.calls("ep") == [] and served.failures("ep") == []


def test_episodes_are_apart_and_a_closed_one_is_404(proxy):
    with ScriptedModel([text("ok")]) as upstream:
        served = proxy(upstream)
        a, b = client(served.open("a")), client(served.open("b"))
        a.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "from a"}])
        for _ in range(2):
            b.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "from b"}])
        assert [c.messages[0]["content"] for c in served.calls("a")] == ["from a"]
        assert [c.index for c in served.calls("b")] == [0, 1]
        assert [m.id for m in a.models.list().data] == [MODEL]  # /v1/models forwarded
        served.close("a")
        with pytest.raises(openai.NotFoundError, match="unknown or closed episode 'a'"):
            a.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
        answer = httpx.get(f"{served.public_url}/episodes/b/v1/embeddings")
        assert answer.status_code == 404 and "not /embeddings" in answer.json()["error"]["message"]
        bad = httpx.post(f"{served.public_url}/episodes/b/v1/chat/completions", content=b"{not json")
        assert bad.status_code == 400
    with pytest.raises(ProxyError, match="unknown or closed episode 'a'"):
        served.calls("a")
    with pytest.raises(ProxyError, match="already open"):
        served.open("b")


def test_bad_setup_is_named():
    with pytest.raises(ProxyError, match="upstream_base_url"):
        ModelProxy("localhost:8000/v1")
    with pytest.raises(ProxyError, match="timeout"):
        ModelProxy("http://127.0.0.1:1/v1", timeout=0)
    with pytest.raises(ProxyError, match="not served yet"):
        ModelProxy("http://127.0.0.1:1/v1").open("ep")
    with pytest.raises(ProxyError, match="episode_id"):
        ModelProxy("http://127.0.0.1:1/v1", public_url="http://127.0.0.1:2").open("a/b")


def test_episodes_in_flight_at_once_are_recorded_apart(proxy):
    from concurrent.futures import ThreadPoolExecutor

    with ScriptedModel([text("ok")], delay=0.05) as upstream:
        served = proxy(upstream)
        ids = [f"ep{n}" for n in range(6)]
        urls = {episode: served.open(episode) for episode in ids}

        def drive(episode: str) -> None:
            llm = client(urls[episode])
            for turn in range(3):
                llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"{episode}/{turn}"}])

        with ThreadPoolExecutor(len(ids)) as pool:
            list(pool.map(drive, ids))
    for episode in ids:
        calls = served.calls(episode)
        assert [c.index for c in calls] == [0, 1, 2]
        assert [c.messages[0]["content"] for c in calls] == [f"{episode}/{turn}" for turn in range(3)]


def test_the_shared_proxy_and_the_error_that_excludes_a_trial():
    from pipeline.errors import InfrastructureError
    from pipeline.programs.proxy import model_proxy

    with ScriptedModel([status(502, "bad gateway"), text("ok")]) as upstream:
        shared = model_proxy(upstream.base_url)
        assert model_proxy(upstream.base_url + "/") is shared and model_proxy(upstream.base_url, "k") is not shared
        llm = openai.OpenAI(base_url=shared.open("shared-ep"), api_key="x", max_retries=1)  # retries, succeeds
        assert llm.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
        record = shared.close("shared-ep")
    assert [c.status for c in record.calls] == [200] and len(record.failures) == 1
    error = record.infrastructure_error()
    assert isinstance(error, InfrastructureError) and "shared-ep: the model failed: server_error" in str(error)
    assert record.model_copy(update={"failures": []}).infrastructure_error() is None
