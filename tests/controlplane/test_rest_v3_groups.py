"""REST Proxy v3 consumer groups: groups, consumers, assignments, lags and lag summary,
checked against what was produced and committed with confluent-kafka on the real cluster."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from django.conf import settings
from rest_framework.test import APIClient

from tests.controlplane.lag_helpers import commit, now_ms, produce_at, wait_high_watermarks

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def _base(cluster_id: str) -> str:
    return f"/kafka/v3/clusters/{cluster_id}/consumer-groups"


def test_lags_and_lag_summary_equal_high_watermark_minus_committed(
    cp_cluster, viewer: APIClient, unique
) -> None:
    topic, group = unique("v3-lag"), unique("v3-lag-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    produce_at(cp_cluster, topic, 0, [now_ms()] * 10)
    produce_at(cp_cluster, topic, 1, [now_ms()] * 4)
    wait_high_watermarks({(topic, 0): 10, (topic, 1): 4})
    commit(cp_cluster, group, {(topic, 0): 3, (topic, 1): 4})
    base = _base(settings.WEIR_CLUSTER_ID)

    lags = viewer.get(f"{base}/{group}/lags")
    assert lags.status_code == 200, lags.json()
    rows = {(r["topic_name"], r["partition_id"]): r for r in lags.json()["data"]}
    assert {k: (r["current_offset"], r["log_end_offset"], r["lag"]) for k, r in rows.items()} == {
        (topic, 0): (3, 10, 7),
        (topic, 1): (4, 4, 0),
    }
    assert lags.json()["kind"] == "KafkaConsumerLagList"
    one = viewer.get(f"{base}/{group}/lags/{topic}/partitions/0").json()
    assert (one["kind"], one["lag"]) == ("KafkaConsumerLag", 7)

    summary = viewer.get(f"{base}/{group}/lag-summary").json()
    assert summary["kind"] == "KafkaConsumerGroupLagSummary"
    assert (summary["total_lag"], summary["max_lag"]) == (7, 7)
    assert (summary["max_lag_topic_name"], summary["max_lag_partition_id"]) == (topic, 0)
    assert summary["max_lag_partition"]["related"].endswith(f"/topics/{topic}/partitions/0")

    detail = viewer.get(f"{base}/{group}").json()
    assert (detail["consumer_group_id"], detail["state"]) == (group, "EMPTY")
    listed = viewer.get(base).json()
    assert group in {g["consumer_group_id"] for g in listed["data"]}


def test_live_member_shows_as_consumer_with_assignments(
    cp_cluster, viewer: APIClient, unique
) -> None:
    topic, group = unique("v3-members"), unique("v3-members-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    consumer = Consumer(
        {
            "bootstrap.servers": cp_cluster.bootstrap(),
            "group.id": group,
            "client.id": "billing-app",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        base = _base(settings.WEIR_CLUSTER_ID)
        deadline = time.monotonic() + 30
        members: list = []
        while time.monotonic() < deadline:
            consumer.poll(0.2)
            response = viewer.get(f"{base}/{group}/consumers")
            if response.status_code == 200:
                members = response.json()["data"]
                if members and viewer.get(f"{base}/{group}").json()["state"] == "STABLE":
                    break
        assert len(members) == 1, members
        member = members[0]
        assert member["client_id"] == "billing-app"
        consumer_id = member["consumer_id"]
        assignments = viewer.get(f"{base}/{group}/consumers/{consumer_id}/assignments").json()
        assert sorted((a["topic_name"], a["partition_id"]) for a in assignments["data"]) == [
            (topic, 0),
            (topic, 1),
        ]
        one = viewer.get(f"{base}/{group}/consumers/{consumer_id}/assignments/{topic}/partitions/1")
        assert one.json()["kind"] == "KafkaConsumerAssignment"
        detail = viewer.get(f"{base}/{group}").json()
        assert detail["partition_assignor"] in ("range", "roundrobin", "cooperative-sticky")
        assert (detail["type"], detail["is_mixed_consumer_group"]) == ("CLASSIC", False)
        # A live group that has committed nothing has no lags: 404, as in Confluent's proxy.
        for path in ("lags", "lag-summary"):
            nothing = viewer.get(f"{base}/{group}/{path}")
            assert nothing.status_code == 404, nothing.content
            assert "offsets" in nothing.json()["message"]
    finally:
        consumer.close()


def test_unknown_group_consumer_and_cluster_are_404(cp_cluster, viewer: APIClient) -> None:
    base = _base(settings.WEIR_CLUSTER_ID)
    missing = viewer.get(f"{base}/no-such-group-xyz")
    assert missing.status_code == 404
    assert "no-such-group-xyz" in missing.json()["message"]
    assert viewer.get(f"{base}/no-such-group-xyz/lags").status_code == 404
    assert viewer.get("/kafka/v3/clusters/other/consumer-groups").status_code == 404
