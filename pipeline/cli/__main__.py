"""`python -m pipeline.cli`: the `agentloop` command."""

from pipeline.cli import app

app()
