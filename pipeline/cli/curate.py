"""`agentloop curate`: replay-verify a pool, band its tasks by probing the agent, mix anchors and targets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from pipeline.cli.console import console, stdout
from pipeline.cli.errors import fail
from pipeline.cli.options import config_options
from pipeline.progress import track


@config_options(
    "pipeline.curate:CurateConfig",
    exclude=("bands", "limits"),
    names={"ray_address": ("--ray-address", "--address")},
    required=("pool", "tasks", "world", "agent"),
    help={"pool": "Trajectory file or run directory; repeat for more."},
)
def curate_cmd(
    *,
    settings: dict[str, Any],
    out: Path = typer.Option(..., help="Output directory: selected.jsonl, manifest.json."),
    edges: str = typer.Option("0,0.08,0.40,0.70,0.90,1", help="Band edges, comma-separated."),
) -> None:
    """Replay-verify a pool, band its tasks by probing the agent (Jeffreys posterior), mix anchors and targets."""
    from pipeline.curate import Bands, CurateConfig, curate
    from pipeline.outputs import check_output

    if settings["executor"] != "ray" and (settings["ray_address"] or settings["workers"]):
        fail("--ray-address and --workers need --executor ray")
    pool, tasks, world, held_out = (settings[name] for name in ("pool", "tasks", "world", "held_out"))
    check_output(
        out,
        "--out",
        folder=True,
        inputs={"--pool": pool, "--tasks": tasks, "--world": world, "--held-out": held_out},
        owned=("selected.jsonl", "manifest.json"),
    )
    try:
        values = [float(x) for x in edges.split(",")]
    except ValueError:
        fail(f"--edges {edges!r}: expected numbers separated by commas")
    cfg = CurateConfig.model_validate({**settings, "bands": Bands(edges=values)})
    with track(f"probe {cfg.agent}", None, "probes", console=console) as progress:
        m = curate(cfg, out, on_probe=lambda r: progress.advance(r.verdict.passed), on_total=progress.set_total)
    table = Table(title=f"curated {m['selected']} of {m['pool']['trajectories']} pooled trajectories")
    table.add_column("band")
    table.add_column("tasks", justify="right")
    for band, n in m["band_histogram"].items():
        table.add_row(band, str(n))
    stdout().print(table)
    r = m["ratio"]
    console.print(
        f"anchors {r['anchors']}, targets {r['targets']} (requested anchor share "
        f"{r['requested_anchor_share']}); rejections {m['rejections']}; wrote {out}/selected.jsonl"
    )
