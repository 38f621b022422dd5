"""The embedded default's tests train tiny models too: one torch thread, as training's tests."""

from tests.train.conftest import one_torch_thread  # noqa: F401 (an autouse fixture, here for this folder too)
