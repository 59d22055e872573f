"""Generating a reassignment (``POST /api/reassignments/generate/``) on the shared real cluster.

The equivalent of ``kafka-reassign-partitions --generate``: topics piled on broker 1 are
proposed onto brokers 2 and 3 — every replica leaves broker 1, the replicas are spread
evenly, nothing moves until the proposal is executed (and the proposal executes as it is),
bad input gets a 4xx naming the problem, viewers get 403.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

URL = "/api/reassignments/generate/"


@pytest.fixture(scope="module")
def two_replicas(cp_cluster: Cluster) -> str:
    name = f"gen-bad-{uuid.uuid4().hex[:8]}"
    cp_cluster.create_topic(name, replica_assignment=[[1, 2]])
    return name


def layout(topic: str) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.replicas for p in gateway().image().topics[topic].partitions.values()}


def test_generate_moves_every_replica_to_the_chosen_brokers_and_changes_nothing(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    single, pair = unique("gen-rf1"), unique("gen-rf2")
    cp_cluster.create_topic(single, replica_assignment=[[1], [1]])
    cp_cluster.create_topic(pair, replica_assignment=[[1, 2], [2, 3]])
    response = operator.post(URL, {"topics": [single, pair], "brokers": [3, 2]}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["topics"] == [single, pair] and body["brokers"] == [2, 3]
    assert body["partitions_total"] == 4
    proposed = {(d["topic"], d["partition"]): d for d in body["partitions"]}
    # [2, 3] is already on the chosen brokers; everything touching broker 1 changes.
    assert set(proposed) >= {(single, 0), (single, 1), (pair, 0)}
    final = {
        **{(single, p): r for p, r in layout(single).items()},
        **{(pair, p): r for p, r in layout(pair).items()},
        **{k: tuple(d["proposed_replicas"]) for k, d in proposed.items()},
    }
    assert all(set(r) <= {2, 3} for r in final.values()), final
    assert [len(final[(single, p)]) for p in (0, 1)] == [1, 1]
    # The two single-replica partitions land on different brokers.
    assert {final[(single, 0)], final[(single, 1)]} == {(2,), (3,)}
    assert proposed[(single, 0)]["moves"] == 1 and proposed[(single, 0)]["current_replicas"] == [1]
    assert body["replica_moves"] == sum(d["moves"] for d in body["partitions"])
    # Before and after cover the broker the topics leave as well as the targets.
    assert body["before"]["replicas_per_broker"] == {"1": 3, "2": 2, "3": 1}
    assert body["after"]["replicas_per_broker"]["1"] == 0
    assert sum(body["after"]["replicas_per_broker"].values()) == 6
    # A dry run: nothing moved.
    assert layout(single) == {0: (1,), 1: (1,)}
    # The proposal is what POST /api/reassignments/ takes.
    execute = operator.post(
        "/api/reassignments/",
        {
            "partitions": [
                {
                    "topic": d["topic"],
                    "partition": d["partition"],
                    "replicas": d["proposed_replicas"],
                }
                for d in body["partitions"]
            ]
        },
        format="json",
    )
    assert execute.status_code == 202, execute.json()
    wait_until(
        lambda: all(set(r) <= {2, 3} for r in layout(single).values()),
        30,
        lambda: cp_cluster.describe(single),
    )


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"brokers": [2]}, 400, ["topics", "required"]),
        ({"topics": [], "brokers": [2]}, 400, ["topics"]),
        ({"topics": ["{t}"], "brokers": []}, 400, ["brokers"]),
        ({"topics": ["no-such-topic"], "brokers": [2]}, 422, ["['no-such-topic'] do not exist"]),
        ({"topics": ["{t}"], "brokers": [2, 9]}, 422, ["unknown broker id(s) [9]"]),
        ({"topics": ["{t}"], "brokers": [2]}, 422, ["replication factor 2", "only 1 target"]),
        ({"topics": ["{t}"], "brokers": [-1]}, 400, ["brokers"]),
    ],
)
def test_bad_generate_requests_get_4xx_naming_the_problem(
    two_replicas: str, operator: APIClient, body: dict[str, list], status: int, words: list[str]
) -> None:
    topic = two_replicas
    filled = {k: [topic if v == "{t}" else v for v in vs] for k, vs in body.items()}
    response = operator.post(URL, filled, format="json")
    assert response.status_code == status, response.json()
    message = response.json()["message"]
    assert all(w in message for w in words), message


def test_viewers_cannot_generate(viewer: APIClient) -> None:
    response = viewer.post(URL, {"topics": ["t"], "brokers": [1]}, format="json")
    assert response.status_code == 403
    assert "needs the operator role" in response.json()["message"]
