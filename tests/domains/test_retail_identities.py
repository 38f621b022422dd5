"""A retail world where one identity names two customers is refused at load, naming both records."""

from __future__ import annotations

import copy
import json

import pytest

from pipeline.domains.retail.state import WorldLoadError
from pipeline.domains.retail.worlds import world_from_dict

SOFIA = "sofia_rossi_8776"


@pytest.fixture(scope="module")
def db(tau2_dir) -> dict:
    return json.loads((tau2_dir / "db.json").read_text())


def _with_twin(db: dict, **changes) -> dict:
    data = copy.deepcopy(db)
    twin = copy.deepcopy(data["users"][SOFIA])
    twin.update(user_id="sofia_rossi_0001", orders=[], **changes)
    data["users"]["sofia_rossi_0001"] = twin
    return data


def test_two_users_with_the_same_name_and_zip_are_refused(db):
    data = _with_twin(db, email="another.sofia@example.com")
    data["users"]["sofia_rossi_0001"]["name"] = {"first_name": "SOFIA", "last_name": "rossi"}  # case does not count
    with pytest.raises(WorldLoadError, match=r"db\.json: .*'sofia_rossi_8776' and 'sofia_rossi_0001' share the name"):
        world_from_dict(data, source="db.json")


def test_emails_differing_only_in_case_are_refused(db):
    email = db["users"][SOFIA]["email"]
    data = _with_twin(db, email=email.upper(), address={**db["users"][SOFIA]["address"], "zip": "00000"})
    with pytest.raises(WorldLoadError, match=rf"'sofia_rossi_8776' and 'sofia_rossi_0001' share the email '{email}'"):
        world_from_dict(data, source="db.json")


def test_distinct_identities_load_and_both_authenticate(db):
    data = _with_twin(db, email="another.sofia@example.com", address={**db["users"][SOFIA]["address"], "zip": "00000"})
    world = world_from_dict(data)
    assert world.user_by_email["another.sofia@example.com"] == "sofia_rossi_0001"
    assert world.user_by_email[db["users"][SOFIA]["email"].lower()] == SOFIA
