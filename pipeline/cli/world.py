"""`agentloop world ...`: generate a seeded world, replay a τ²-bench domain's gold actions, explore a world."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from pipeline.cli.console import console

app = typer.Typer(help="Worlds: generate, replay τ²-bench domains.", no_args_is_help=True)


@app.command("replay")
def world_replay(
    domain: Path = typer.Option(..., help="τ²-bench domain directory (db.json, tasks.json, policy.md)."),
    out: Path = typer.Option(..., help="Output JSON Lines file, one line per task."),
    kind: str = typer.Option(
        None, "--kind", help="Domain name or module:attribute (default: the domain whose tables db.json holds)."
    ),
) -> None:
    """Replay every task's gold actions on a fresh copy of the database; write each end state."""
    from pipeline.outputs import check_output
    from pipeline.tau2 import write_replay

    check_output(out, "--out", inputs={"--domain": domain})
    lines = write_replay(domain, out, kind)
    failed = sum(1 for line in lines if line["failed_actions"])
    console.print(f"replayed {len(lines)} tasks → {out} ({failed} with refused gold calls)")


MAX_RECORDS = 1_000_000  # records of one kind a generated world may hold (a typo's 10**9 never ends)


@app.command("generate")
def world_generate(
    out: Path = typer.Option(..., help="Output domain directory (db.json + policy.md)."),
    seed: int = typer.Option(0, min=0, help="Generator seed: same seed, same world (gen-<seed>: not negative)."),
    products: int = typer.Option(None, min=1, max=MAX_RECORDS, help="Retail: products (default 50)."),
    users: int = typer.Option(None, min=1, max=MAX_RECORDS, help="Users (default: retail 500, airline 500)."),
    orders: int = typer.Option(None, min=1, max=MAX_RECORDS, help="Retail: orders (default 1000)."),
    flights: int = typer.Option(None, min=2, max=MAX_RECORDS, help="Airline: flights (default 300)."),
    reservations: int = typer.Option(None, min=0, max=MAX_RECORDS, help="Airline: reservations (default 2000)."),
    domain: str = typer.Option(
        "retail", help="Domain whose generator makes the world (retail, airline, or module:attribute)."
    ),
) -> None:
    """Generate a fresh seeded world with a domain's generator (retail's: products, users, orders; airline's:
    flights, users, reservations). Sizes not given take the generator's defaults."""
    from pipeline.outputs import atomic_write, check_output
    from pipeline.world import resolve_domain

    check_output(out, "--out", folder=True, owned=("db.json", "policy.md"))
    given = dict(n_products=products, n_users=users, n_orders=orders, n_flights=flights, n_reservations=reservations)
    d = resolve_domain(domain)
    generate = d.require("generator", "world generate")
    world = generate(seed, {k: v for k, v in given.items() if v is not None})
    data = world.to_dict()
    atomic_write(out / "db.json", json.dumps(data, indent=1))
    atomic_write(out / "policy.md", d.policy())
    console.print(f"world {world.name}: {', '.join(f'{len(v)} {k}' for k, v in data.items())} → {out}")


@app.command("explore")
def world_explore(
    world: str = typer.Option(..., help="World reference: a domain directory, a db.json, or a name the domain reads."),
    out: Path = typer.Option(..., help="Output world model (JSON)."),
    seed: int = typer.Option(0, help="Exploration seed: same world and seed, same model."),
    customers: int = typer.Option(24, min=1, help="Customers each write tool is called as."),
    domain: str = typer.Option(None, help="Domain: retail, airline or module:attribute (default: from the world)."),
) -> None:
    """Learn a world model by running the world's write tools as its customers: which records each names, what it
    changes, and when it refuses and why (refusals grouped into preconditions on record fields)."""
    from pipeline.explore import explore
    from pipeline.outputs import check_output
    from pipeline.world import load_world

    check_output(out, "--out", inputs={"--world": world})
    loaded = load_world(world, domain)
    model = explore(loaded, seed=seed, customers=customers)
    model.write(out)
    for name, w in model.writes.items():
        why = sum(r.precondition is not None for r in w.refusals)
        console.print(f"{name}: {w.ok}/{w.calls} calls succeeded; {len(w.refusals)} refusal group(s), {why} explained")
    for name, reason in model.unexplored.items():
        console.print(f"[yellow]{name}: unexplored ({reason})[/yellow]")
    console.print(f"world model of {loaded.name} → {out}")
    if not loaded.domain.provides("tasks"):  # the model is written, but nothing is grown from it: say why now
        from pipeline.explore.generic import generic_gap
        from pipeline.world import domain_label

        gap = generic_gap(loaded.domain, "tasks") or "it provides none"
        label = domain_label(loaded.domain)
        console.print(f"[yellow]note: no tasks can be generated in domain {label!r} from this model: {gap}[/yellow]")
