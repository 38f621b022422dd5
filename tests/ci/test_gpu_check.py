"""bench/gpu_check.sh and gpu_check_smollm2.sh: they parse, every agentloop command and flag they call exists
(`--help` of each sub-command), the fixture builder runs; on a GPU machine with vLLM, the whole check passes in
under 10 minutes (`gpu`)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_check.sh"
SMOLLM2_SCRIPT = ROOT / "bench" / "gpu_check_smollm2.sh"
CALLED = {
    SCRIPT: {("tasks", "generate"), ("train", "sft"), ("train", "grpo")},
    SMOLLM2_SCRIPT: {("model", "import"), ("train", "grpo"), ("measure",), ("gate",)},
}


def _calls(script: Path = SCRIPT) -> list[list[str]]:
    """The words of each `"${AGENTLOOP[@]}" ...` command in the script (continuation lines joined)."""
    text = script.read_text(encoding="utf-8").replace("\\\n", " ")
    calls = []
    for line in text.splitlines():
        if '"${AGENTLOOP[@]}"' in line:
            calls.append(line.split('"${AGENTLOOP[@]}"', 1)[1].split())
    return calls


@pytest.mark.parametrize("script", list(CALLED), ids=lambda p: p.name)
def test_the_script_parses(script):
    assert shutil.which("bash")
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.parametrize("script", list(CALLED), ids=lambda p: p.name)
def test_every_agentloop_command_and_flag_it_calls_exists(script):
    calls = _calls(script)
    groups = ("tasks", "train", "model")
    assert {tuple(c[:2]) if c[0] in groups else tuple(c[:1]) for c in calls} >= CALLED[script]
    runner = CliRunner()
    for words in calls:
        command = words[:2] if words[0] in groups else words[:1]
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "300", "TERM": "dumb"})
        assert result.exit_code == 0, result.output
        # The flags from the command itself, not its rendered help: under GITHUB_ACTIONS (act, runners) rich
        # forces a terminal and shortens long option names in the help table (`--num-generati…`).
        options = _options(command)
        for flag in (w.split("=", 1)[0] for w in words if w.startswith("--")):
            assert flag in options, f"agentloop {' '.join(command)} has no {flag}"


def _options(command: list[str]) -> set[str]:
    import typer

    cmd = typer.main.get_command(app)
    for word in command:
        assert hasattr(cmd, "get_command"), f"agentloop {' '.join(command)}: {word} is not a sub-command"
        with cmd.make_context("agentloop", ["--help"], resilient_parsing=True) as ctx:
            cmd = cmd.get_command(ctx, word)
        assert cmd is not None, f"agentloop has no {' '.join(command)}"
    return {opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)}


@pytest.mark.slow
def test_the_fixture_builder_writes_a_qwen2_checkpoint_with_wide_heads(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_fixture.py"), "--out", str(tmp_path / "m"), "--hidden", "128",
         "--heads", "2", "--kv-heads", "1"],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert '"head_dim": 64' in out.stdout
    from pipeline.agents.backends.loading import resolve_format

    fmt, _, meta, ours = resolve_format(tmp_path / "m")
    assert fmt.name == "hermes" and not ours and meta.architecture == "Qwen2ForCausalLM"


@pytest.mark.gpu
def test_the_gpu_check_passes(tmp_path):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vLLM (the gpu extra)")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    run = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("gpu_check ")]
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    steps = [line.split()[1] for line in lines if line.split()[1] != "done"]
    assert steps == ["env", "fixture", "tasks", "serve", "openai", "vllm-backend", "sft-lora-bf16", "grpo-vllm"]
    assert all(line.split()[2] == "ok" for line in lines if line.split()[1] != "done")
