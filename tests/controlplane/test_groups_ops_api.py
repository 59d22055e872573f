"""``/api/groups/...`` on the shared real cluster: lag, history, offset resets, rebalances.

Offsets are committed with confluent-kafka at known positions, so the API's numbers are
exact; resets are checked against what Kafka's AdminClient then reads back; a forced
rebalance is observed by a live confluent-kafka consumer losing and regaining its partitions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from groups.monitor import Monitor
from tests.controlplane.lag_helpers import LaggingGroup, lagging_group, now_ms
from tests.weir.cluster.conftest import Cluster

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


@pytest.fixture
def lagging(cp_cluster: Cluster, unique: Callable[[str], str]) -> LaggingGroup:
    """Partition 0: 10 records 1 s apart (oldest 60 s old), committed at 3; partition 1: 4
    records, committed at 4."""
    return lagging_group(cp_cluster, topic=unique("ops"), group=unique("ops-group"))


def committed(group: str) -> dict[tuple[str, int], int]:
    result = (
        gateway()
        .admin()
        .list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
        .result(15)
    )
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def test_lag_is_computed_on_demand_without_a_monitor(
    viewer: APIClient, lagging: LaggingGroup
) -> None:
    topic, group = lagging.topic, lagging.group
    response = viewer.get(f"/api/groups/{group}/lag/")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["group"], body["total_lag"], body["state"]) == (group, 7, "Empty")
    p0, p1 = body["partitions"]
    assert (p0["topic"], p0["partition"], p0["committed"], p0["high_watermark"]) == (
        topic,
        0,
        3,
        10,
    )
    assert p0["lag"] == 7 and p0["lag_seconds"] >= 56
    assert (p1["lag"], p1["lag_seconds"]) == (0, 0.0)
    assert body["status"] in ("OK", "WARN", "ERR")


def test_group_list_lag_and_history_follow_the_monitor(
    viewer: APIClient, lagging: LaggingGroup
) -> None:
    group = lagging.group
    monitor = Monitor(gateway(), history_interval_ms=0)
    try:
        start = now_ms()
        monitor.tick(now_ms=start)
        monitor.tick(now_ms=start + 3_000)
    finally:
        monitor.close()
    listed = viewer.get("/api/groups/").json()
    mine = [g for g in listed if g["group"] == group]
    assert mine and mine[0]["total_lag"] == 7 and mine[0]["status"] == "ERR"
    assert mine[0]["members"] == 0 and mine[0]["state"] == "Empty"
    lag = viewer.get(f"/api/groups/{group}/lag/").json()
    assert lag["status"] == "ERR" and lag["partitions"][0]["status"] == "STOP"
    history = viewer.get(f"/api/groups/{group}/lag/history/").json()
    assert len(history["samples"]) == 4
    only_p0 = viewer.get(f"/api/groups/{group}/lag/history/", {"partition": 0}).json()
    assert [s["lag"] for s in only_p0["samples"]] == [7, 7]
    assert [s["status"] for s in only_p0["samples"]] == ["OK", "STOP"]
    statuses = viewer.get(f"/api/groups/{group}/status/history/").json()
    assert [s["status"] for s in statuses["samples"]] == ["OK", "ERR"]
    future = viewer.get(
        f"/api/groups/{group}/lag/history/", {"since": "2999-01-01T00:00:00Z"}
    ).json()
    assert future["samples"] == []
    bad = viewer.get(f"/api/groups/{group}/lag/history/", {"since": "yesterday"})
    assert bad.status_code == 400 and "since" in bad.json()["message"]
    bad = viewer.get(f"/api/groups/{group}/lag/history/", {"partition": "x"})
    assert bad.status_code == 400 and "partition" in bad.json()["message"]


def test_unknown_group_is_404(viewer: APIClient, operator: APIClient, cp_cluster: Cluster) -> None:
    missing = f"missing-{time.monotonic_ns()}"
    response = viewer.get(f"/api/groups/{missing}/lag/")
    assert response.status_code == 404 and missing in response.json()["message"]
    response = operator.post(f"/api/groups/{missing}/rebalance/")
    assert response.status_code == 404 and missing in response.json()["message"]


def test_reset_offsets_dry_run_then_execute(
    operator: APIClient, viewer: APIClient, lagging: LaggingGroup
) -> None:
    topic, group = lagging.topic, lagging.group
    url = f"/api/groups/{group}/reset-offsets/"
    dry = operator.post(url, {"strategy": "earliest", "topics": [topic]}, format="json")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["dry_run"] is True
    assert dry.json()["partitions"] == [
        {"topic": topic, "partition": 0, "current_offset": 3, "new_offset": 0},
        {"topic": topic, "partition": 1, "current_offset": 4, "new_offset": 0},
    ]
    assert committed(group) == {(topic, 0): 3, (topic, 1): 4}  # nothing written
    # Shift clamps into [log start, log end]; datetime finds the first record at that time.
    shift = operator.post(url, {"strategy": "shift", "value": 100}, format="json").json()
    assert [p["new_offset"] for p in shift["partitions"]] == [10, 4]
    at = operator.post(
        url,
        {
            "strategy": "datetime",
            "value": lagging.base + 5_500,
            "partitions": [{"topic": topic, "partition": 0}],
        },
        format="json",
    ).json()
    assert at["partitions"] == [
        {"topic": topic, "partition": 0, "current_offset": 3, "new_offset": 6}
    ]
    recent = operator.post(
        url, {"strategy": "by-duration", "value": "PT1S", "topics": [topic]}, format="json"
    ).json()
    assert [p["new_offset"] for p in recent["partitions"]] == [10, 4]
    executed = operator.post(
        url,
        {
            "strategy": "offset",
            "value": 8,
            "partitions": [{"topic": topic, "partition": 0}],
            "dry_run": False,
        },
        format="json",
    )
    assert executed.status_code == 200, executed.json()
    assert committed(group) == {(topic, 0): 8, (topic, 1): 4}
    assert viewer.post(url, {"strategy": "earliest"}, format="json").status_code == 403


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, "strategy"),
        ({"strategy": "sideways"}, "strategy"),
        ({"strategy": "offset"}, "value"),
        ({"strategy": "shift", "value": "ten"}, "value"),
        ({"strategy": "datetime", "value": "last tuesday"}, "value"),
        ({"strategy": "by-duration", "value": "10 minutes"}, "value"),
        ({"strategy": "earliest", "topics": ["no-such-topic-xyz"]}, "no-such-topic-xyz"),
        ({"strategy": "earliest", "partitions": [{"topic": "t"}]}, "partition"),
        ({"strategy": "earliest", "dry_run": "maybe"}, "dry_run"),
    ],
)
def test_reset_offsets_bad_input_names_the_problem(
    operator: APIClient, lagging: LaggingGroup, body: dict[str, Any], named: str
) -> None:
    response = operator.post(f"/api/groups/{lagging.group}/reset-offsets/", body, format="json")
    assert 400 <= response.status_code < 500, response.json()
    assert named in response.json()["message"]


@pytest.fixture
def live_member(cp_cluster: Cluster, unique: Callable[[str], str]) -> Iterator[dict[str, Any]]:
    """A confluent-kafka consumer in a group, assigned, with its rebalance events recorded."""
    topic, group = unique("live"), unique("live-group")
    cp_cluster.create_topic(topic, partitions=2)
    events: list[str] = []
    consumer = Consumer(
        {
            "bootstrap.servers": cp_cluster.bootstrap(),
            "group.id": group,
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 200,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(
        [topic],
        on_assign=lambda c, parts: events.append(f"assign:{len(parts)}"),
        on_revoke=lambda c, parts: events.append(f"revoke:{len(parts)}"),
    )

    def poll_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; events {events}")
            consumer.poll(0.1)

    poll_until(lambda: "assign:2" in events, 30, "the first assignment")
    try:
        yield {"group": group, "topic": topic, "events": events, "poll_until": poll_until}
    finally:
        consumer.close()


def test_force_rebalance_makes_a_live_member_rejoin(
    operator: APIClient, viewer: APIClient, live_member: dict[str, Any]
) -> None:
    group, events = live_member["group"], live_member["events"]
    assert viewer.post(f"/api/groups/{group}/rebalance/").status_code == 403
    before = len(events)
    response = operator.post(f"/api/groups/{group}/rebalance/")
    assert response.status_code == 200, response.json()
    assert response.json()["previous_state"] == "Stable"
    live_member["poll_until"](
        lambda: "revoke:2" in events[before:] and "assign:2" in events[before:],
        30,
        "a revoke and a new assignment",
    )
    # Executing a reset while the member is there is refused with Kafka's message.
    refused = operator.post(
        f"/api/groups/{group}/reset-offsets/",
        {"strategy": "earliest", "topics": [live_member["topic"]], "dry_run": False},
        format="json",
    )
    assert refused.status_code == 409
    assert "inactive, but the current state is Stable" in refused.json()["message"]


def test_rebalancing_an_empty_group_is_409(operator: APIClient, lagging: LaggingGroup) -> None:
    response = operator.post(f"/api/groups/{lagging.group}/rebalance/")
    assert response.status_code == 409 and "no members" in response.json()["message"]
