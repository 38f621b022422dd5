"""The local Ray instance of tests/trials, for the program agent on Ray."""

from tests.trials.conftest import ray_cluster  # noqa: F401 - a fixture, used by name
