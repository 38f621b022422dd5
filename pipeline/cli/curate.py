"""`agentloop curate`: replay-verify a pool, band its tasks by probing the agent, mix anchors and targets."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from pipeline.cli.console import console, stdout
from pipeline.cli.errors import fail
from pipeline.loop.progress import track


def curate_cmd(
    pool: list[Path] = typer.Option(..., help="Trajectory file or run directory; repeat for more."),
    tasks: Path = typer.Option(..., help="tasks.jsonl with every pooled trajectory's task."),
    world: str = typer.Option(..., help="World reference the pool ran in."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
    agent: str = typer.Option(..., help="Current agent spec to probe (oracle, flawed:..., hf:PATH, ...)."),
    probes: int = typer.Option(1, min=1, help="Probe episodes per task."),
    out: Path = typer.Option(..., help="Output directory: selected.jsonl, manifest.json."),
    anchor_ratio: float = typer.Option(0.3, min=0.0, max=1.0, help="Share of anchors (tasks the agent passes)."),
    edges: str = typer.Option("0,0.08,0.40,0.70,0.90,1", help="Band edges, comma-separated."),
    max_items: int = typer.Option(40, min=1, help="Cap on selected tasks."),
    seed: int = typer.Option(0),
    executor: str = typer.Option("serial", help="Where probes run: serial, or ray (as measure's --executor)."),
    ray_address: str = typer.Option(
        None, "--ray-address", "--address", help="With --executor ray: a Ray cluster's address (as measure's)."
    ),
    workers: int = typer.Option(None, min=1, help="With --executor ray: worker actors (as measure's)."),
    concurrency: int = typer.Option(16, min=1, help="Probes in flight per worker (same verdicts)."),
    held_out: Path = typer.Option(
        None, help="Held-out tasks.jsonl: refuse a pooled task or trajectory about one of its customers."
    ),
) -> None:
    """Replay-verify a pool, band its tasks by probing the agent (Jeffreys posterior), mix anchors and targets."""
    from pipeline.curate import Bands, CurateConfig, curate
    from pipeline.outputs import check_output

    if executor != "ray" and (ray_address or workers):
        fail("--ray-address and --workers need --executor ray")
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
    bands = Bands(edges=values)
    cfg = CurateConfig(
        pool=pool,
        tasks=tasks,
        world=world,
        domain=domain,
        agent=agent,
        probes=probes,
        seed=seed,
        bands=bands,
        anchor_ratio=anchor_ratio,
        max_items=max_items,
        executor=executor,
        ray_address=ray_address,
        workers=workers,
        concurrency=concurrency,
        held_out=held_out,
    )
    with track(f"probe {agent}", None, "probes", console=console) as progress:
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
