"""`agentloop env ...`: an environment served over HTTP (`env serve`)."""

from __future__ import annotations

import typer

from pipeline.cli.console import console
from pipeline.cli.errors import fail

app = typer.Typer(help="Environments: serve one over HTTP.", no_args_is_help=True)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def default_worlds(domain: str) -> list[str]:
    """The worlds `env serve` serves when --worlds is not given: a domain with a generator, the loop's evaluation
    and training worlds (`world.eval_world`, `world.train_world`: gen-101, gen-7); one without (telecom), its
    τ²-bench data set's directory where it is found; another service (http://HOST:PORT), the worlds it serves. An
    environment of one's own names its worlds."""
    from pipeline.environment.factory import is_environment_reference
    from pipeline.loop.params import WorldParams
    from pipeline.tau2.data import Tau2DataNotFound, tau2_data_dir
    from pipeline.world import ProtocolDomain, resolve_domain

    if is_environment_reference(domain):
        fail(f"--worlds: name the worlds {domain} serves (an environment of your own has no default world)")
    found = resolve_domain(domain)
    if isinstance(found, ProtocolDomain):
        if not found.worlds:
            fail(f"--worlds: name the worlds {domain} serves (an environment of your own has no default world)")
        return list(found.worlds)
    if found.generator() is not None:
        defaults = WorldParams()
        return [defaults.eval_world, defaults.train_world]
    base = domain.removesuffix("+generic")
    try:
        return [str(tau2_data_dir(base))]
    except Tau2DataNotFound:
        fail(f"--worlds: domain {domain!r} generates no world and no τ²-bench {base} data was found; name its worlds")


@app.command("serve")
def env_serve(
    domain: str = typer.Option(
        ...,
        help="A domain (retail, airline, telecom, retail+generic, module:attribute of a Domain) or module:attribute"
        " of an environment class or factory of your own (called with a world's name).",
    ),
    worlds: str = typer.Option(
        None,
        help="Comma-separated worlds: references the domain reads (a τ²-bench directory, a db.json, gen-3), or"
        " names for your own environment (default: gen-101,gen-7 for a domain that generates worlds; telecom: the"
        " τ²-bench data set).",
    ),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8765, min=1, max=65535),
    ttl: float = typer.Option(600.0, min=0.001, help="Seconds an idle episode lives before it is closed."),
    max_episodes: int = typer.Option(
        1000, min=1, help="Episodes open at once; beyond, the least recently used idle one is closed."
    ),
) -> None:
    """Serve an environment over HTTP: each POST /episodes opens an isolated episode of a world (OpenAPI schema
    at /openapi.json); idle episodes expire."""
    from pipeline.environment.factory import environment_factory
    from pipeline.environment.service import create_app

    names = [w.strip() for w in worlds.split(",") if w.strip()] if worlds is not None else default_worlds(domain)
    if not names:
        fail(f"--worlds: no world named in {worlds!r}")
    factory, served = environment_factory(domain, names)
    app = create_app(factory, served, ttl_s=ttl, max_episodes=max_episodes, domain=domain)
    if host not in LOOPBACK:
        console.print(f"[yellow]warning:[/yellow] listening on {host}: anyone who reaches it can open episodes")
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    shown = ", ".join(name if ref == name else f"{name} ({ref})" for name, ref in served.items())
    import socket

    import uvicorn

    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: a response written in parts (MCP's) never waits out a delayed ACK
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError as exc:
        fail(f"--host {host} --port {port}: cannot listen there: {exc.strerror or exc}")
    console.print(f"serving {domain} on {url} (worlds: {shown}; schema: {url}/openapi.json)", soft_wrap=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
