"""Cluster rebalance through ``/api/cluster/rebalance/`` on the shared real cluster.

Topics are created with replicas piled on broker 1; the dry run proposes a diff that evens
replicas and leaders and changes nothing; executing it with concurrency 1 (the executor's
tick driven by the test) moves one partition at a time to the proposed layout and ends with
a preferred election; a throttled plan is cancelled while a move is in flight. Every call
names its ``topics`` so other tests' partitions are never moved.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from rest_framework.test import APIClient

from brokers.ops import executor, store
from controlplane.cluster import gateway
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

URL = "/api/cluster/rebalance/"


def layout(topics: list[str]) -> dict[tuple[str, int], tuple[int, ...]]:
    image = gateway().image()
    return {
        (t, p.partition): p.replicas for t in topics for p in image.topics[t].partitions.values()
    }


def fill(cluster: Cluster, topic: str, partitions: int, records: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "1", "linger.ms": 5})
    for partition in range(partitions):
        for i in range(records):
            producer.produce(topic, value=b"%d-" % i + b"x" * 1024, partition=partition)
            if i % 500 == 0:
                producer.poll(0)
    assert producer.flush(30) == 0


def run_plan(client: APIClient, timeout: float = 90) -> dict[str, Any]:
    """Tick the executor until the plan ends; at most one partition moves at a time."""
    deadline = time.monotonic() + timeout
    while True:
        executor.tick()
        status = client.get(URL).json()
        assert status["in_flight"] <= 1, status
        if status["state"] != "running":
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


@pytest.fixture
def skewed(cp_cluster: Cluster, unique: Callable[[str], str]) -> list[str]:
    """Two topics whose replicas and leaders pile up on broker 1."""
    first, second = unique("skew-a"), unique("skew-b")
    cp_cluster.create_topic(first, replica_assignment=[[1, 2], [1, 2], [1, 3], [1, 2]])
    cp_cluster.create_topic(second, replica_assignment=[[1], [1]])
    return [first, second]


def test_dry_run_proposes_an_even_layout_and_changes_nothing(
    skewed: list[str], viewer: APIClient, operator: APIClient
) -> None:
    before = layout(skewed)
    response = operator.post(URL, {"topics": skewed}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dryrun"] is True and body["plan"] is None
    assert body["before"]["replicas_per_broker"] == {"1": 6, "2": 3, "3": 1}
    assert body["before"]["leaders_per_broker"] == {"1": 6, "2": 0, "3": 0}
    assert body["after"]["replica_spread"] <= 1 and body["after"]["leader_spread"] <= 1
    assert body["after"]["replica_stddev"] < body["before"]["replica_stddev"]
    # 10 replicas over 3 brokers: broker 1 gives 2 or 3 of its 6, and nothing else moves.
    assert body["replica_moves"] in (2, 3)
    for diff in body["partitions"]:
        assert before[(diff["topic"], diff["partition"])] == tuple(diff["current_replicas"])
        assert len(set(diff["proposed_replicas"])) == len(diff["current_replicas"])
        assert diff["moves"] == len(set(diff["proposed_replicas"]) - set(diff["current_replicas"]))
    assert layout(skewed) == before
    # Decommissioning broker 3: nothing may stay there.
    excluded = operator.post(URL, {"topics": skewed, "exclude_brokers": [3]}, format="json")
    assert excluded.status_code == 200, excluded.json()
    proposed = {
        (d["topic"], d["partition"]): d["proposed_replicas"] for d in excluded.json()["partitions"]
    }
    final = {**before, **{k: tuple(v) for k, v in proposed.items()}}
    assert all(3 not in replicas for replicas in final.values())
    assert excluded.json()["after"]["replicas_per_broker"] == {"1": 5, "2": 5}
    # A whole-cluster dry run works too (and, being a dry run, moves nothing).
    assert operator.post(URL, {}, format="json").status_code == 200
    assert viewer.post(URL, {"topics": skewed}, format="json").status_code == 403


def test_execute_moves_one_partition_at_a_time_then_elects_leaders(
    cp_cluster: Cluster, skewed: list[str], operator: APIClient
) -> None:
    response = operator.post(
        URL,
        {"topics": skewed, "dryrun": False, "concurrency": 1, "throttle_bytes_per_sec": 10_000_000},
        format="json",
    )
    assert response.status_code == 202, response.json()
    body = response.json()
    plan = body["plan"]
    assert plan["state"] == "running" and plan["pending"] == len(body["partitions"]) > 0
    assert plan["concurrency"] == 1
    again = operator.post(URL, {"topics": skewed, "dryrun": False}, format="json")
    assert again.status_code == 409 and "still running" in again.json()["message"]
    status = run_plan(operator)
    assert status["state"] == "completed", status
    assert status["done"] == status["total"] == len(body["partitions"])
    assert status["failed"] == 0 and status["election"]["failed"] == 0
    proposed = {
        (d["topic"], d["partition"]): tuple(d["proposed_replicas"]) for d in body["partitions"]
    }
    now = layout(skewed)
    assert {k: now[k] for k in proposed} == proposed
    image = gateway().image()
    for topic in skewed:
        for partition in image.topics[topic].partitions.values():
            assert partition.leader == partition.replicas[0], (topic, partition)
    counts: dict[int, int] = {}
    for replicas in now.values():
        for broker in replicas:
            counts[broker] = counts.get(broker, 0) + 1
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    # Planning again finds nothing to do.
    assert operator.post(URL, {"topics": skewed}, format="json").json()["partitions"] == []


def test_cancel_stops_a_throttled_plan_and_rolls_the_move_back(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("skew-slow"), replica_assignment=[[1], [1]])
    fill(cp_cluster, topic, partitions=2, records=1000)
    response = operator.post(
        URL,
        {"topics": [topic], "dryrun": False, "concurrency": 1, "throttle_bytes_per_sec": 20_000},
        format="json",
    )
    assert response.status_code == 202, response.json()
    ((moving, index),) = [(d["topic"], d["partition"]) for d in response.json()["partitions"]]
    assert moving == topic
    executor.tick()
    status = operator.get(URL).json()
    assert status["in_flight"] == 1, status
    partition = gateway().image().topics[topic].partitions[index]
    assert partition.adding_replicas, "the move should be in flight (1 MB at 20 kB/s)"
    cancelled = operator.delete(URL)
    assert cancelled.status_code == 200, cancelled.json()
    assert cancelled.json()["state"] == "cancelled"
    assert cancelled.json()["cancelled"] == 1 and cancelled.json()["in_flight"] == 0
    partition = gateway().image().topics[topic].partitions[index]
    assert partition.replicas == (1,) and not partition.adding_replicas
    assert executor.tick()["state"] == "cancelled"  # a cancelled plan stays cancelled
    again = operator.delete(URL)
    assert again.status_code == 409 and "no rebalance is running" in again.json()["message"]
    wait_until(
        lambda: (info := cp_cluster.agreed_partition(topic, index)) and info.replicas == (1,),
        20,
        lambda: cp_cluster.describe(topic),
    )


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"exclude_brokers": [42]}, 422, ["exclude_brokers", "[42]"]),
        ({"topics": ["no-such-topic"]}, 422, ["no-such-topic", "do not exist"]),
        ({"topics": []}, 400, ["topics"]),
        ({"concurrency": 0}, 400, ["concurrency"]),
        ({"dryrun": "perhaps"}, 400, ["dryrun"]),
        ({"exclude_brokers": [1, 2, 3]}, 422, ["no valid plan"]),
        ({"throttle_bytes_per_sec": -5}, 400, ["throttle_bytes_per_sec"]),
        ([1], 400, ["JSON object"]),
    ],
)
def test_bad_rebalance_requests_get_4xx(
    cp_cluster: Cluster, operator: APIClient, body: Any, status: int, words: list[str]
) -> None:
    response = operator.post(URL, body, format="json")
    assert response.status_code == status, response.json()
    assert all(w in response.json()["message"] for w in words), response.json()


def test_viewers_read_the_plan_but_cannot_start_or_cancel(
    cp_cluster: Cluster, viewer: APIClient
) -> None:
    assert viewer.get(URL).status_code == 200
    for response in (
        viewer.post(URL, {"dryrun": False}, format="json"),
        viewer.delete(URL),
    ):
        assert response.status_code == 403
        assert "needs the operator role" in response.json()["message"]


def test_a_tick_skips_while_another_holds_the_plan_lock(cp_cluster: Cluster) -> None:
    with store.rebalance_lock(gateway(), blocking=False) as held:
        assert held
        assert executor.tick() is None
    with store.rebalance_lock(gateway(), blocking=False) as held:
        assert held, "the lock was not released"
