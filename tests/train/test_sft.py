"""SFT through TRL: a handful of codec-rendered trajectories lower the loss (assistant tokens only), and the
checkpoint records codec hash, data manifest and config, reloads in the `hf` backend and acts in the runner."""

from __future__ import annotations

import json

import pytest

from pipeline.agents.backends.hf import HFAgent
from pipeline.agents.checkpoint import META_FILE, read_meta
from pipeline.domains.retail.tools import TOOLS
from pipeline.errors import InputError
from pipeline.formats.codec import codec_hash, encode_conversation
from pipeline.rollout.runner import Limits, run_episode
from pipeline.train.sft import encode_for_sft, mix_anchors, run_sft, verify
from pipeline.train.sft_config import SFTConfig
from pipeline.users.scripted import ScriptedUser
from tests.train.helpers import COMPACT, gold, tasks, tiny_checkpoint, tokenizer, world, write_jsonl


@pytest.mark.slow  # TRL's import and trainer set-up alone take several seconds
def test_sft_lowers_the_loss_and_the_checkpoint_reloads_and_acts(tmp_path):
    base = tiny_checkpoint(tmp_path / "base")
    data = write_jsonl(tmp_path / "data.jsonl", gold()[:4])
    anchors = write_jsonl(tmp_path / "anchors.jsonl", gold()[4:6])
    task_file = tmp_path / "tasks.jsonl"
    write_jsonl(task_file, tasks())
    params = SFTConfig(
        base=base,
        data=[data],
        anchors=[anchors],
        anchor_share=0.25,
        tasks=[task_file],
        epochs=6,
        learning_rate=1e-2,
        batch_size=2,
        logging_steps=1,
        max_length=4096,
        threads=1,
    )
    result = run_sft(params, tmp_path / "sft")
    assert result.steps >= 6 and len(result.losses) == result.steps
    assert result.last_loss < 0.8 * result.first_loss, result.losses

    meta = read_meta(tmp_path / "sft")
    assert meta.codec_hash == codec_hash(COMPACT) and meta.parent == str(base)
    assert meta.training["kind"] == "sft" and meta.training["learning_rate"] == 1e-2
    assert meta.data_manifest["data_counts"] == {
        "verified": 4,
        "failed_verification": 0,
        "unverified": 0,
        "infra_error": 0,
    }
    assert meta.data_manifest["anchor_examples"] == 1 and meta.data_manifest["examples"] == 5
    assert len(meta.data_manifest["data"][0]["sha256"]) == 64
    assert json.loads((tmp_path / "sft" / META_FILE).read_text())["codec_hash"] == meta.codec_hash

    agent = HFAgent(tmp_path / "sft", max_new_tokens=16)
    traj = run_episode(world(), tasks()[0], agent, ScriptedUser(), limits=Limits(max_turns=6, max_steps_per_turn=2))
    assert traj.termination != "infra_error"
    assert any(m.role == "assistant" and m.usage and m.usage.completion_tokens for m in traj.messages)


def test_rendering_masks_only_assistant_tokens_and_matches_the_codec():
    traj = gold()[0]
    columns = encode_for_sft([traj], tokenizer(), COMPACT)
    enc = encode_conversation(traj.messages, TOOLS.schemas(), world().policy, tokenizer(), COMPACT)
    assert columns["input_ids"] == [enc.ids] and columns["assistant_masks"] == [enc.assistant_mask]
    said = tokenizer().decode([t for t, m in zip(enc.ids, enc.assistant_mask, strict=True) if m])
    assert "find_user_id_by_email" in said and "<|im_start|>user" not in said and "###STOP###" not in said


def test_verification_drops_failing_trajectories_and_anchor_mix_has_its_share():
    good, bad = gold()[0], gold()[1].model_copy(deep=True)
    bad.messages = bad.messages[:3]  # cut short: the task's write never happens
    by_id = {t.id: t for t in tasks()}
    kept, counts = verify([good, bad], by_id)
    assert kept == [good] and counts["verified"] == 1 and counts["failed_verification"] == 1
    mixed = mix_anchors(list(gold()[:6]), list(gold()[6:]), share=0.25, seed=0)
    assert len(mixed) == 8 and sum(t in gold()[6:] for t in mixed) == 2


def test_reads_bare_and_curated_rows_and_names_a_bad_line(tmp_path):
    from pipeline.train.sft import read_trajectories

    traj = gold()[0]
    bare, curated, bad = tmp_path / "bare.jsonl", tmp_path / "selected.jsonl", tmp_path / "bad.jsonl"
    bare.write_text(traj.model_dump_json() + "\n")
    curated.write_text(json.dumps({"task_id": traj.task_id, "role": "target", "trajectory": traj.model_dump()}) + "\n")
    bad.write_text(traj.model_dump_json() + "\n" + '{"messages": 3}\n')
    assert read_trajectories(bare) == read_trajectories(curated) == [traj]
    with pytest.raises(InputError, match=r"bad.jsonl:2: not a trajectory"):
        read_trajectories(bad)


@pytest.mark.slow  # imports TRL
def test_labelled_loss_equals_trls_loss_and_micro_batches_take_the_same_steps(tmp_path):
    import torch
    from datasets import Dataset
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    from pipeline.agents.checkpoint import load_checkpoint
    from pipeline.train.labelled_loss import LabelledLossSFTTrainer

    ckpt = load_checkpoint(tiny_checkpoint(tmp_path / "base"))
    columns = encode_for_sft(list(gold()[:3]), ckpt.tokenizer, COMPACT)
    args = TRLSFTConfig(output_dir=str(tmp_path / "scratch"), use_cpu=True, report_to=[], max_length=4096)
    losses = []
    for cls in (SFTTrainer, LabelledLossSFTTrainer):
        trainer = cls(model=ckpt.model, args=args, train_dataset=Dataset.from_dict(columns))
        batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])  # padded: lengths differ
        assert (batch["attention_mask"] == 0).any()
        with torch.no_grad():
            losses.append(trainer.compute_loss(ckpt.model, dict(batch)).item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)

    data = write_jsonl(tmp_path / "data.jsonl", gold()[:8])
    common = dict(base=tmp_path / "base", data=[data], epochs=1, batch_size=4, threads=1, logging_steps=1)
    whole = run_sft(SFTConfig(**common, micro_batch_size=4), tmp_path / "whole")
    micro = run_sft(SFTConfig(**common, micro_batch_size=1), tmp_path / "micro")
    assert whole.steps == micro.steps == 2
    assert micro.losses == pytest.approx(whole.losses, rel=1e-3)
    with pytest.raises(ValueError, match="micro_batch_size 3 must divide batch_size 4"):
        SFTConfig(**{**common, "micro_batch_size": 3})


@pytest.mark.slow  # imports TRL and peft
def test_lora_sft_trains_the_adapter_and_saves_merged_plain_weights(tmp_path):
    import torch

    from pipeline.agents.checkpoint import load_checkpoint
    from pipeline.train.lora import LoraSpec

    base = tiny_checkpoint(tmp_path / "base")
    data = write_jsonl(tmp_path / "data.jsonl", gold()[:4])
    params = SFTConfig(
        base=base,
        data=[data],
        epochs=4,
        learning_rate=5e-2,
        batch_size=2,
        threads=1,
        logging_steps=1,
        lora=LoraSpec(rank=4, alpha=8),
    )
    result = run_sft(params, tmp_path / "lora")
    assert result.last_loss < result.first_loss, result.losses
    before, after = load_checkpoint(base).model.state_dict(), load_checkpoint(tmp_path / "lora").model.state_dict()
    assert before.keys() == after.keys()  # merged: no adapter tensors left, loads as the plain architecture
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all("proj" in k for k in changed)  # only the adapted projections moved


def test_training_on_cpu_flushes_subnormals_and_sets_the_process_back():
    import torch

    from pipeline.agents.backends.denormals import flushed_denormals

    supported = torch.set_flush_denormal(True)  # False on a CPU without FTZ/DAZ
    torch.set_flush_denormal(False)
    tiny = torch.tensor([1e-39], dtype=torch.float32)  # subnormal in fp32
    assert (tiny * 1.0).item() != 0.0
    with flushed_denormals(True):
        assert ((tiny * 1.0).item() == 0.0) == supported
    assert (tiny * 1.0).item() != 0.0  # the process's setting is set back
    with flushed_denormals(False):
        assert (tiny * 1.0).item() != 0.0
