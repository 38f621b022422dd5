"""`dtype=fast`: bfloat16 where the CPU has bf16 instructions (AMX, AVX-512 BF16), float32 elsewhere, read at run
time; the dtype asked for is in the agent's recorded settings, and `auto` (the default) records nothing."""

from __future__ import annotations

import pytest
import torch

from pipeline.agents.backends import hardware
from pipeline.agents.registry import UnknownAgentError, make_agent
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return build_checkpoint(FAMILIES["llama3"], tmp_path_factory.mktemp("llama3"), corpus(), seed=1)


@pytest.mark.parametrize(
    ("flags", "dtype"),
    [(["avx2", "avx512f", "amx_tile", "amx_bf16"], "bfloat16"), (["avx512_bf16"], "bfloat16"), (["avx2"], "float32")],
)
def test_fast_is_bfloat16_only_where_the_cpu_has_it(monkeypatch, llama, flags, dtype):
    monkeypatch.setattr(hardware, "cpu_info", lambda: {"cpu_model": "test", "cpu_flags": flags})
    assert hardware.fast_dtype(None) == dtype
    agent = make_agent(f"hf:{llama},dtype=fast,max_new_tokens=4")
    assert agent.model.dtype == getattr(torch, dtype)
    assert agent.settings["dtype"] == dtype


def test_the_default_records_no_dtype_and_a_bad_one_is_refused(llama):
    assert "dtype" not in make_agent(f"hf:{llama},max_new_tokens=4").settings
    with pytest.raises(UnknownAgentError, match="dtype 'fastest': expected one of auto, fast, float32"):
        make_agent(f"hf:{llama},dtype=fastest")


def test_this_machines_cpu_is_named_with_its_flags():
    info = hardware.cpu_info()
    assert info["cpu_model"] and set(info["cpu_flags"]) <= set(hardware.RECORDED_FLAGS)
