"""Agent specs with settings no backend can honour fail at once, with the spec and the setting named."""

from __future__ import annotations

import pytest

from pipeline.agents.registry import UnknownAgentError, make_agent


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hf:/nonexistent,max_new_tokens=-5", "max_new_tokens: Input should be greater than or equal to 1"),
        ("hf:/nonexistent,max_new_tokens=0", "max_new_tokens: Input should be greater than or equal to 1"),
        ("hf:/nonexistent,max_new_tokens=2.5", "max_new_tokens: Input should be a valid integer"),
        ("hf:/nonexistent,max_new_tokens=inf", "'max_new_tokens' must be a finite number, got 'inf'"),
        ("hf:/nonexistent,temperature=nan", "'temperature' must be a finite number"),
        ("hf:/nonexistent,top_p=0", "top_p: Input should be greater than 0"),
        ("hf:/nonexistent,seed=-1", "seed: Input should be greater than or equal to 0"),
        ("flawed:invention=0.2,seed=inf", "'seed' must be a finite number"),
    ],
)
def test_bad_settings_are_refused_before_anything_loads(spec, message):
    with pytest.raises(UnknownAgentError, match=f"agent '{spec}'.*") as info:
        make_agent(spec)
    assert message in str(info.value)


def test_openai_without_a_base_url_fails_at_once(monkeypatch):
    monkeypatch.delenv("AGENTLOOP_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UnknownAgentError, match="no endpoint given: set AGENTLOOP_BASE_URL"):
        make_agent("openai:some-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert make_agent("openai:some-model").client.config.base_url == "http://127.0.0.1:1/v1"
