"""A world's name is a name: a domain naming its world by the folder reference it read gives tasks, their ids and
records the folder's own name, never its path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.authoring.templates import generate_tasks
from pipeline.world.registry import load_world
from pipeline.world.tables import World, world_name
from tests.domains.library.domain import HERE, Library


class ByReference(Library):
    """The library, its world named by the reference it was loaded from (as a new domain's `load` may)."""

    name = "library-by-reference"

    def load(self, ref: str) -> World | None:
        world = super().load(ref)
        return World({t: world.table(t) for t in world.table_names}, world.policy, ref, self) if world else None


BY_REFERENCE = ByReference()


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("gen-7", "gen-7"),
        ("tau2_retail", "tau2_retail"),
        ("../shared/clinic", "clinic"),
        ("/srv/worlds/clinic/", "clinic"),
    ],
)
def test_a_path_given_as_a_name_is_reduced_to_the_folders_name(given, name):
    assert world_name(given) == name


def test_tasks_of_a_world_read_from_a_folder_carry_its_name(tmp_path):
    folder = tmp_path / "worlds" / "branch_library"
    folder.mkdir(parents=True)
    shutil.copy(HERE / "db.json", folder / "db.json")
    ref = str(folder)
    world = load_world(ref, "tests.world.test_world_name:BY_REFERENCE")
    assert world.name == "branch_library"
    tasks = generate_tasks(world, 3)
    assert tasks and {t.world for t in tasks} == {"branch_library"}
    assert all(t.id.startswith("branch_library-s0-") and str(Path(ref).parent) not in t.id for t in tasks)
