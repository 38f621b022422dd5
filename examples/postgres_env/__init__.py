"""A subscriptions service whose tools are SQL against PostgreSQL, behind agentloop's environment protocol.

`PostgresEnvironment(world)` (a world is `pg-<seed>`) is the factory the loop names:
`--domain examples.postgres_env:PostgresEnvironment`. See `environment.py` for the per-episode isolation and
docs/postgres-environment.md for running it.
"""

from examples.postgres_env.environment import (
    APPLICATION,
    DatabaseUnavailable,
    PostgresEnvironment,
    PostgresEnvUsageError,
    PostgresTaskSetupError,
    close_idle_connections,
    database_url,
    janitor,
)

__all__ = [
    "APPLICATION",
    "DatabaseUnavailable",
    "PostgresEnvUsageError",
    "PostgresEnvironment",
    "PostgresTaskSetupError",
    "close_idle_connections",
    "database_url",
    "janitor",
]
