"""Stage fingerprints from dvc.lock."""

from __future__ import annotations

import copy

import pytest
import yaml

from pipeline.tracking.dvc import DvcLockError, dvc_stage_hashes

LOCK = {
    "schema": "2.0",
    "stages": {
        "measure": {
            "cmd": "python stages/measure.py",
            "deps": [{"path": "stages/measure.py", "hash": "md5", "md5": "aa", "size": 10}],
            "params": {"params.yaml": {"measure.k": 4}},
            "outs": [{"path": "out/measure", "hash": "md5", "md5": "bb.dir", "size": 99, "nfiles": 3}],
        },
        "gate": {
            "cmd": "python stages/gate.py",
            "params": {"params.yaml": {"gate.margin": 0.0}},
            "outs": [{"path": "out/gate.json", "hash": "md5", "md5": "cc", "size": 5}],
        },
    },
}


def test_digest_changes_only_for_the_stage_that_changed(tmp_path):
    lock = tmp_path / "dvc.lock"
    lock_data = copy.deepcopy(LOCK)
    lock.write_text(yaml.safe_dump(lock_data))
    before = dvc_stage_hashes(lock)
    assert set(before) == {"measure", "gate"} and all(len(v) == 12 for v in before.values())
    lock_data["stages"]["gate"]["params"]["params.yaml"]["gate.margin"] = 0.05
    lock.write_text(yaml.safe_dump(lock_data))
    after = dvc_stage_hashes(lock)
    assert after["measure"] == before["measure"]
    assert after["gate"] != before["gate"]


def test_missing_lock_means_not_run_yet(tmp_path):
    assert dvc_stage_hashes(tmp_path / "dvc.lock") == {}


def test_a_file_that_is_not_a_lock_is_an_error(tmp_path):
    lock = tmp_path / "dvc.lock"
    lock.write_text("just: text\n")
    with pytest.raises(DvcLockError, match="stages"):
        dvc_stage_hashes(lock)
