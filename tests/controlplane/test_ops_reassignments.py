"""Reassignments and preferred elections through ``/api/`` on the shared real cluster.

A throttled move is followed through ``GET /api/reassignments/`` to 100 % and the metadata
shows the new replicas; a slow (throttle-limited) move is cancelled while in flight and the
partition returns to its old replicas; a preferred election moves leadership back after a
reorder; bad input gets a 4xx naming the problem and viewers get 403.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from brokers.ops.throttle import THROTTLE_TOPIC_CONFIGS
from brokers.periodic import clean_reassignment_state
from controlplane.cluster import gateway
from tests.weir.cluster.conftest import Cluster, wait_until
from tests.weir.cluster.helpers import produce_ok

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

KB = b"x" * 1024


def partition_image(topic: str, index: int = 0) -> Any:
    return gateway().image().topics[topic].partitions[index]


def throttle_configs(topic: str) -> dict[str, str]:
    """The throttled-replica lists set on ``topic`` (Kafka's leader and follower configs)."""
    overrides = gateway().image().topic_config(topic)
    return {name: overrides[name] for name in THROTTLE_TOPIC_CONFIGS if name in overrides}


@pytest.fixture(scope="module")
def untouched(cp_cluster: Cluster) -> str:
    """One topic the bad-input and permission cases must leave as it is."""
    name = f"untouched-{uuid.uuid4().hex[:8]}"
    cp_cluster.create_topic(name, replica_assignment=[[1, 2, 3]])
    return name


def reassign(
    client: APIClient,
    topic: str,
    replicas: list[int],
    *,
    throttle: int | None = None,
    version: int | None = 1,
) -> dict[str, Any]:
    """POST the move of ``topic``'s partition 0 (kafka-reassign-partitions' JSON); the 202
    answer."""
    body: dict[str, Any] = {"partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
    if version is not None:
        body["version"] = version
    if throttle is not None:
        body["throttle_bytes_per_sec"] = throttle
    response = client.post("/api/reassignments/", body, format="json")
    assert response.status_code == 202, response.json()
    return response.json()


def entry(client: APIClient, topic: str, index: int = 0) -> dict[str, Any] | None:
    body = client.get("/api/reassignments/").json()
    found = [r for r in body["reassignments"] if (r["topic"], r["partition"]) == (topic, index)]
    return found[0] if found else None


def test_throttled_reassignment_runs_to_completion(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("move"), replica_assignment=[[1, 2]])
    produce_ok(cp_cluster, topic, [KB] * 300, acks="1")
    accepted = reassign(operator, topic, [3, 2], throttle=2_000_000)
    assert accepted["accepted"] == [{"topic": topic, "partition": 0, "replicas": [3, 2]}]
    assert accepted["rejected"] == []
    # The throttle is Kafka's: rates on the brokers, replica lists on the topic.
    throttled = throttle_configs(topic)
    assert set(throttled[THROTTLE_TOPIC_CONFIGS[0]].split(",")) == {"0:1", "0:2"}
    assert throttled[THROTTLE_TOPIC_CONFIGS[1]] == "0:3"
    seen: list[float] = []

    def completed() -> dict[str, Any] | None:
        found = entry(viewer, topic)
        assert found is not None, "the API forgot the reassignment it started"
        seen.append(found["percent"])
        return found if found["state"] == "completed" else None

    done = wait_until(completed, 60, lambda: f"progress {seen[-5:]}\n{cp_cluster.describe()}")
    assert done["percent"] == 100.0
    assert done["target_replicas"] == [3, 2] and done["original_replicas"] == [1, 2]
    assert seen == sorted(seen), f"progress went backwards: {seen}"
    assert partition_image(topic).replicas == (3, 2)
    wait_until(
        lambda: (info := cp_cluster.agreed_partition(topic)) and info.replicas == (3, 2),
        20,
        lambda: cp_cluster.describe(topic),
    )
    # Nothing moves any more: the periodic cleanup removes the throttle, as --verify would.
    clean_reassignment_state()
    assert throttle_configs(topic) == {}


def test_cancel_rolls_an_in_flight_move_back(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("slow"), replica_assignment=[[1]])
    produce_ok(cp_cluster, topic, [b"%d-" % i + KB for i in range(2000)], acks="1")
    # 2 MB at 20 kB/s would take well over a minute.
    reassign(operator, topic, [1, 2], throttle=20_000)

    def copying() -> dict[str, Any] | None:
        found = entry(operator, topic)
        if found is None or found["state"] != "in_progress":
            return None
        (progress,) = found["progress"]
        # Both ends published: the follower's LEO and (fresh) the leader's; right after the
        # reassignment starts the leader's state can be a tick behind.
        return found if progress["log_end_offset"] and progress["leader_log_end_offset"] else None

    moving = wait_until(copying, 30, lambda: f"no progress reported\n{cp_cluster.describe()}")
    assert moving["adding_replicas"] == [2] and moving["removing_replicas"] == []
    assert moving["replicas"] == [1, 2] and moving["target_replicas"] == [1, 2]
    (progress,) = moving["progress"]
    assert progress["broker"] == 2 and not progress["in_sync"]
    assert 0 < progress["log_end_offset"] < progress["leader_log_end_offset"] == 2000
    assert 0 <= moving["percent"] < 100
    cancelled = operator.delete(
        "/api/reassignments/",
        {"partitions": [{"topic": topic, "partition": 0}]},
        format="json",
    )
    assert cancelled.status_code == 200, cancelled.json()
    assert cancelled.json()["cancelled"] == [{"topic": topic, "partition": 0}]
    assert partition_image(topic).replicas == (1,)
    assert entry(operator, topic) is None
    # Cancelling again: nothing is in progress for it.
    again = operator.post(
        "/api/reassignments/cancel/",
        {"partitions": [{"topic": topic, "partition": 0}]},
        format="json",
    )
    assert again.json()["not_in_progress"] == [{"topic": topic, "partition": 0}]
    # Nothing else moves, so the cancel also removed the throttle.
    assert throttle_configs(topic) == {}


def test_preferred_election_moves_leadership_back(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("elect"), replica_assignment=[[1, 2, 3]])
    # A reorder copies nothing and completes at once; the leader stays where it was.
    reassign(operator, topic, [2, 1, 3], version=None)
    assert partition_image(topic).replicas == (2, 1, 3)
    assert partition_image(topic).leader == 1
    body = {"partitions": [{"topic": topic, "partition": 0}]}
    elected = operator.post("/api/elections/preferred/", body, format="json")
    assert elected.status_code == 200, elected.json()
    (result,) = elected.json()["results"]
    assert result["topic"] == topic and result["partition"] == 0
    assert result["elected"] and result["succeeded"] and result["error"] is None
    assert partition_image(topic).leader == 2
    wait_until(lambda: cp_cluster.leader(topic) == 2, 20, lambda: cp_cluster.describe(topic))
    again = operator.post("/api/elections/preferred/", body, format="json").json()
    (result,) = again["results"]
    assert result["error"] == "ELECTION_NOT_NEEDED"
    assert result["succeeded"] and not result["elected"]
    assert again["not_needed"] == 1 and again["failed"] == 0


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"version": 2, "partitions": []}, 400, ["version", "got 2"]),
        ({"version": 1}, 400, ["partitions", "required"]),
        ({"partitions": []}, 400, ["partitions", "empty"]),
        ({"partitions": [{"topic": "T", "partition": 0}]}, 400, ["replicas", "required"]),
        ({"partitions": [{"topic": "{t}", "partition": 0, "replicas": []}]}, 400, ["empty"]),
        (
            {"partitions": [{"topic": "{t}", "partition": 0, "replicas": [1, 2, 1]}]},
            400,
            ["[1]", "more than once"],
        ),
        (
            {
                "partitions": [
                    {"topic": "{t}", "partition": 0, "replicas": [1]},
                    {"topic": "{t}", "partition": 0, "replicas": [2]},
                ]
            },
            400,
            ["appears more than once"],
        ),
        (
            {"partitions": [{"topic": "no-such-topic", "partition": 0, "replicas": [1]}]},
            422,
            ["'no-such-topic' does not exist"],
        ),
        (
            {"partitions": [{"topic": "{t}", "partition": 7, "replicas": [1]}]},
            422,
            ["no partition 7"],
        ),
        (
            {"partitions": [{"topic": "{t}", "partition": 0, "replicas": [1, 9]}]},
            422,
            ["unknown broker id(s) [9]"],
        ),
        (
            {"partitions": [{"topic": "{t}", "partition": -1, "replicas": [1]}]},
            400,
            ["partition"],
        ),
        (
            {
                "partitions": [{"topic": "{t}", "partition": 0, "replicas": [1]}],
                "throttle_bytes_per_sec": 0,
            },
            400,
            ["throttle_bytes_per_sec"],
        ),
        ([1, 2], 400, ["JSON object"]),
    ],
)
def test_bad_reassignments_get_4xx_naming_the_problem(
    untouched: str, operator: APIClient, body: Any, status: int, words: list[str]
) -> None:
    topic = untouched
    text = json.dumps(body).replace("{t}", topic)
    response = operator.post("/api/reassignments/", text, content_type="application/json")
    assert response.status_code == status, response.json()
    message = response.json()["message"]
    assert all(w in message for w in words), message
    assert partition_image(topic).replicas == (1, 2, 3)


def test_bad_elections_and_cancels_get_4xx(untouched: str, operator: APIClient) -> None:
    topic = untouched
    cases = [
        ("/api/elections/preferred/", {"partitions": [{"topic": "nope", "partition": 0}]}, 422),
        ("/api/elections/preferred/", {"partitions": [{"topic": topic, "partition": 3}]}, 422),
        ("/api/elections/preferred/", {"partitions": []}, 400),
        (
            "/api/elections/preferred/",
            {"all": True, "partitions": [{"topic": topic, "partition": 0}]},
            400,
        ),
        ("/api/elections/preferred/", {"partitions": [{"partition": 0}]}, 400),
        ("/api/reassignments/cancel/", {"partitions": [{"topic": "nope", "partition": 0}]}, 422),
        ("/api/reassignments/cancel/", {"partitions": "all"}, 400),
    ]
    for path, body, status in cases:
        response = operator.post(path, body, format="json")
        assert response.status_code == status, (path, body, response.json())
        assert response.json()["message"], (path, body)
    malformed = operator.post(
        "/api/elections/preferred/", "{not json", content_type="application/json"
    )
    assert malformed.status_code == 400
    assert "JSON parse error" in malformed.json()["message"]


def test_viewers_cannot_reassign_elect_or_cancel(untouched: str, viewer: APIClient) -> None:
    topic = untouched
    body = {"partitions": [{"topic": topic, "partition": 0, "replicas": [3, 2, 1]}]}
    calls = [
        viewer.post("/api/reassignments/", body, format="json"),
        viewer.delete("/api/reassignments/", {}, format="json"),
        viewer.post("/api/reassignments/cancel/", {}, format="json"),
        viewer.post("/api/elections/preferred/", {"all": True}, format="json"),
    ]
    for response in calls:
        assert response.status_code == 403
        assert "needs the operator role" in response.json()["message"]
    assert viewer.get("/api/reassignments/").status_code == 200
    assert partition_image(topic).replicas == (1, 2, 3)
