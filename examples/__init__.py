"""Example environments and domains that are not part of the `pipeline` package (importable from the repository
root: `--domain examples.postgres_env:PostgresEnvironment`)."""
