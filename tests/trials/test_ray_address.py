"""Which Ray the executor joins and how many workers it plans, without starting Ray: the address given, else
$RAY_ADDRESS, else a local instance; an address nothing answers at fails at once; workers fill the cluster."""

from __future__ import annotations

import socket

import pytest

from pipeline.errors import InfrastructureError, InputError
from pipeline.trials.ray_cluster import RayExecutorError, check_reachable, node_counts, plan_workers, resolve_address


def test_the_address_given_then_ray_address_then_local(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_address(None) == "local"
    assert resolve_address("10.0.0.5:6379") == "10.0.0.5:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    assert resolve_address(None) == "10.0.0.9:6379"
    assert resolve_address("auto") == "auto"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_nothing_answers_at_fails_now_naming_it():
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(InfrastructureError, match=rf"no Ray cluster answers at {address}.*measure.ray_address"):
        check_reachable(address, timeout_s=2)
    with pytest.raises(InputError, match=r"'headnode': expected HOST:PORT"):
        check_reachable("headnode")
    for skipped in ("local", "auto", "ray://10.0.0.5:10001"):
        check_reachable(skipped)  # Ray resolves these itself


def test_an_address_that_listens_passes():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        check_reachable(f"127.0.0.1:{s.getsockname()[1]}")


class FakeCluster:
    """What plan_workers reads of Ray: the cluster's resources, all and free."""

    def __init__(self, total: dict, free: dict) -> None:
        self.total, self.free = total, free

    def cluster_resources(self) -> dict:
        return self.total

    def available_resources(self) -> dict:
        return self.free


def test_workers_fill_the_whole_cluster_or_what_is_free_of_one_not_started_here():
    three_nodes = FakeCluster({"CPU": 12.0}, {"CPU": 5.0})
    assert plan_workers(three_nodes, 100, None, 1.0, 0.0, own=True) == (12, 1.0)
    assert plan_workers(three_nodes, 100, None, 1.0, 0.0, own=False) == (5, 1.0)  # other jobs hold 7
    assert plan_workers(three_nodes, 100, None, 2.0, 0.0, own=False) == (2, 2.0)
    assert plan_workers(three_nodes, 3, None, 1.0, 0.0, own=True) == (3, 1.0)  # no more workers than trials
    assert plan_workers(FakeCluster({"CPU": 4.0}, {}), 100, None, 1.0, 0.0, own=False) == (1, 1.0)  # all busy


def test_workers_given_are_kept_sharing_cpus_and_gpus_cap_them():
    cluster = FakeCluster({"CPU": 2.0, "GPU": 1.0}, {"CPU": 2.0, "GPU": 1.0})
    assert plan_workers(cluster, 100, 4, 1.0, 0.0, own=False) == (4, 0.5)
    assert plan_workers(cluster, 100, 4, 1.0, 0.5, own=False) == (2, 1.0)
    with pytest.raises(RayExecutorError, match="asks for 2 GPU but the Ray cluster has 1"):
        plan_workers(cluster, 100, None, 1.0, 2.0, own=True)


def test_node_counts_name_each_node_most_trials_first():
    ran = [("aaaaaaaaaaaa", "10.0.0.1")] * 3 + [("bbbbbbbbbbbb", "10.0.0.2")] * 5
    assert node_counts(ran) == "10.0.0.2 (bbbbbbbb): 5, 10.0.0.1 (aaaaaaaa): 3"
