"""`agentloop world replay`: every task of a τ²-bench domain directory replayed on a fresh session, one JSON line
per task (its gold actions' end state, the tables the domain's importer names, its env assertions' outcomes)."""

from __future__ import annotations

from pathlib import Path

from pipeline.dataset import replay_task, write_lines
from pipeline.world import checked_world, domain_of_directory, resolve_domain


def write_replay(path: str | Path, out_file: str | Path, domain: str | None = None) -> list[dict]:
    """Replay every task of a τ²-bench domain directory (its domain named, or found from its tables) on a
    fresh session each, in task-file order; write one JSON line per task atomically; return the lines."""
    d = resolve_domain(domain) if domain else domain_of_directory(Path(path))
    importer = d.require("tau2_importer", needed_for="world replay")
    world, tasks = importer.load(path)
    checked_world(world, path)
    return write_lines(out_file, [replay_task(world, task, importer.replay_tables) for task in tasks])
