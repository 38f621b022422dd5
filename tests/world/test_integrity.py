"""A world read from a file keeps its data model: every owner and every reference to another table's key names a
record the world holds, and nothing costs a negative amount; otherwise it is refused naming table, record and
field. Checked on a plug-in domain the checks know nothing of (the library) and on τ²-bench's data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.world import WorldLoadError, load_world
from pipeline.world.integrity import integrity_problems

LIBRARY = "tests.domains.library.domain:LIBRARY"
HERE = Path(__file__).resolve().parents[1] / "domains" / "library"


def _library(tmp_path: Path, edit) -> str:
    db = json.loads((HERE / "db.json").read_text())
    edit(db)
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "db.json").write_text(json.dumps(db))
    return str(folder)


def test_the_shipped_worlds_keep_their_data_model():
    assert integrity_problems(load_world("library", LIBRARY)) == []
    assert integrity_problems(load_world("gen-3-4x10x20")) == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("member_id", "M999", "table loans, record 'L0000': field member_id: owner 'M999' is no record of the world"),
        ("book_id", "B999", "table loans, record 'L0000': field book_id: refers to books 'B999'"),
    ],
)
def test_a_record_owned_by_nobody_or_naming_no_record_is_refused(tmp_path, field, value, message):
    ref = _library(tmp_path, lambda db: db["loans"]["L0000"].update({field: value}))
    with pytest.raises(WorldLoadError, match=message):
        load_world(ref, LIBRARY)


def test_a_negative_price_in_tau2_data_is_refused(tmp_path, tau2_dir):
    folder = tmp_path / "retail"
    shutil.copytree(tau2_dir, folder)
    db = json.loads((folder / "db.json").read_text())
    product = next(iter(db["products"].values()))
    item = next(iter(product["variants"]))
    product["variants"][item]["price"] = -5.0
    (folder / "db.json").write_text(json.dumps(db))
    with pytest.raises(WorldLoadError, match=rf"field variants\.{item}\.price: negative price -5"):
        load_world(str(folder))


def test_a_field_that_only_shares_a_key_fields_name_is_no_reference(tmp_path):
    def rename_all(db):
        for i, loan in enumerate(db["loans"].values()):
            loan["book_id"] = f"shelf-{i}"  # a field of its own under the name, never a book

    assert integrity_problems(load_world(_library(tmp_path, rename_all), LIBRARY)) == []
