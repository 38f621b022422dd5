"""`agentloop model import --chat-template FILE`: a base model's checkpoint (or GGUF) holds no chat template; the
import gives it one, and a file that is no template is refused naming its line."""

from __future__ import annotations

import json

from transformers import AutoTokenizer
from typer.testing import CliRunner

from pipeline.agents.checkpoint import META_FILE
from pipeline.cli import app
from tests.agents.tiny_families import FAMILIES, build_checkpoint, corpus, template


def without_template(path):
    (path / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((path / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    assert AutoTokenizer.from_pretrained(str(path)).chat_template is None
    return path


def test_a_checkpoint_without_a_chat_template_gets_the_one_given(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    runner = CliRunner()
    refused = runner.invoke(app, ["model", "import", str(model), "--format", "compact"])
    assert refused.exit_code == 2 and "has none" in refused.output and not (model / META_FILE).exists()
    (tmp_path / "gemma3.jinja").write_text(template("gemma3"))
    done = runner.invoke(
        app, ["model", "import", str(model), "--format", "compact", "--chat-template", str(tmp_path / "gemma3.jinja")]
    )
    assert done.exit_code == 0, done.output
    assert "format compact, Gemma3ForCausalLM" in done.output
    assert AutoTokenizer.from_pretrained(str(model)).chat_template == template("gemma3")
    assert json.loads((model / META_FILE).read_text())["chat_format"] == "compact"


def test_a_file_that_is_no_template_is_named_with_its_line(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    bad = tmp_path / "bad.jinja"
    bad.write_text("{{ bos_token }}\n{% for m in messages %}\n{{ m['content'] }\n")
    result = CliRunner().invoke(app, ["model", "import", str(model), "--chat-template", str(bad)])
    assert result.exit_code == 2 and f"--chat-template {bad}:3: not a Jinja template" in result.output.replace("\n", "")
    empty = tmp_path / "empty.jinja"
    empty.write_text("  \n")
    result = CliRunner().invoke(app, ["model", "import", str(model), "--chat-template", str(empty)])
    assert result.exit_code == 2 and "the file is empty" in result.output
    assert AutoTokenizer.from_pretrained(str(model)).chat_template is None  # nothing was written


def test_a_refused_import_leaves_the_tokenizer_as_it_was(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    (model / META_FILE).write_text("{}")
    (tmp_path / "gemma3.jinja").write_text(template("gemma3"))
    result = CliRunner().invoke(app, ["model", "import", str(model), "--chat-template", str(tmp_path / "gemma3.jinja")])
    assert result.exit_code == 2 and "exists" in result.output
    assert AutoTokenizer.from_pretrained(str(model)).chat_template is None


def _files(path):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(path.iterdir()) if p.is_file()}


def test_every_option_is_checked_before_any_file_is_written(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    (tmp_path / "gemma3.jinja").write_text(template("gemma3"))
    before = _files(model)
    runner = CliRunner()
    for extra in ([], ["--chat-template", str(tmp_path / "gemma3.jinja")], ["--force"], ["--dtype", "float16"]):
        result = runner.invoke(app, ["model", "import", str(model), "--format", "no_such_format", *extra])
        assert result.exit_code == 2 and "unknown chat format 'no_such_format'" in result.output, extra
        assert _files(model) == before, extra  # tokenizer_config.json and the template file untouched
    # a known format the tokenizer cannot carry (agentloop's codec tokens): refused before the template is saved
    result = runner.invoke(
        app, ["model", "import", str(model), "--format", "agentloop", "--chat-template", str(tmp_path / "gemma3.jinja")]
    )
    assert result.exit_code == 2 and "\n" not in result.output.strip() and _files(model) == before


def test_a_gguf_only_option_on_a_directory_or_a_bad_dtype_is_refused_before_any_write(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    (tmp_path / "gemma3.jinja").write_text(template("gemma3"))
    before = _files(model)
    runner = CliRunner()
    for extra, named in (
        (["--dtype", "float16"], "--dtype: "),
        (["--out", str(tmp_path / "o")], "--out: "),
        (["--dtype", "int3"], "--dtype 'int3': expected one of float32, bfloat16, float16"),
    ):
        result = runner.invoke(
            app, ["model", "import", str(model), "--chat-template", str(tmp_path / "gemma3.jinja"), *extra]
        )
        assert result.exit_code == 2 and named in result.output, (extra, result.output)
        assert _files(model) == before and not (tmp_path / "o").exists(), extra


LOOPS = template("gemma3") + "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"


def test_a_template_that_loops_is_refused_at_import_naming_the_file_and_the_bound(tmp_path):
    model = without_template(build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus()))
    (tmp_path / "loops.jinja").write_text(LOOPS)
    before = _files(model)
    result = CliRunner().invoke(
        app, ["model", "import", str(model), "--format", "compact", "--chat-template", str(tmp_path / "loops.jinja")]
    )
    text = result.output.replace("\n", "")
    assert result.exit_code == 2 and f"--chat-template {tmp_path / 'loops.jinja'}: the chat template" in text
    assert "within 5s" in text and "Traceback" not in result.output
    assert _files(model) == before  # refused before anything was written


def test_a_checkpoint_whose_template_loops_is_refused_when_loaded_as_an_agent(tmp_path, monkeypatch):
    import pytest

    from pipeline.agents.backends.loading import resolve_format
    from pipeline.formats import TemplateTimeoutError, probe

    model = build_checkpoint(FAMILIES["gemma3"], tmp_path / "base", corpus())
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    tokenizer.chat_template = LOOPS  # saved behind the import's back
    tokenizer.save_pretrained(str(model))
    monkeypatch.setattr(probe, "PROBE_BOUND_S", 0.5)
    monkeypatch.setattr(probe.probe_template, "__defaults__", (0.5,))
    with pytest.raises(TemplateTimeoutError, match=r"base/chat_template\.jinja: .* within 0\.5s"):
        resolve_format(model, "compact")
