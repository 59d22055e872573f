"""``/api/mirrors/`` and the failover action against two real in-process Weir clusters, with
statuses published through the mirror's own ``StatusStore`` and MM2 checkpoints written with
``formats.Checkpoint`` (see conftest for the data)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from tests.mirrors.conftest import RECORD_TS, Mirrored
from weir.mirror.status import FlowStatus, GroupCheckpoint, PartitionStatus, StatusStore, now_ms

pytestmark = pytest.mark.django_db

FAILOVER = "/api/mirrors/east/west/failover/"


@pytest.fixture
def store(mirrored: Mirrored) -> Iterator[StatusStore]:
    """The store the mirror-maker processes publish to; emptied after the test."""
    gw = gateway()
    found = StatusStore(gw.redis, gw.cluster_id)
    yield found
    for status in found.read_all():
        found.remove(status)


def _process(process_id: str, **fields: object) -> FlowStatus:
    return FlowStatus(
        flow="east->west", source="east", target="west", process_id=process_id, **fields
    )


def _flow(answer: dict, name: str) -> dict:
    return next(f for f in answer["flows"] if f["flow"] == name)


def test_lag_comes_from_the_clusters_when_no_mirror_runs(
    mirrored: Mirrored, viewer: APIClient
) -> None:
    answer = viewer.get("/api/mirrors/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["config"]["loaded"] and body["config"]["error"] is None
    flow = _flow(body, "east->west")
    assert (flow["enabled"], flow["configured"], flow["state"]) == (True, True, "down")
    assert flow["processes_alive"] == 0 and flow["lag_from"] == "clusters"
    lag = {(p["source_topic"], p["partition"]): p for p in flow["partitions"]}
    assert set(lag) == {("orders", 0), ("orders", 1)}
    assert (lag["orders", 0]["lag_records"], lag["orders", 1]["lag_records"]) == (2, 0)
    assert lag["orders", 0]["target_topic"] == "east.orders"
    assert lag["orders", 0]["committed_offset"] == 3
    # The oldest uncopied record (offset 3) was stamped RECORD_TS + 3.
    expected_age = (now_ms() - (RECORD_TS + 3)) / 1000
    assert abs(lag["orders", 0]["lag_seconds"] - expected_age) < 60
    assert lag["orders", 1]["lag_seconds"] == 0
    assert flow["lag_records"] == 2
    # MM2 runs heartbeats for every pair: west->east is listed, not enabled, without lag.
    back = _flow(body, "west->east")
    assert (back["enabled"], back["partitions"]) == (False, [])


def test_published_statuses_are_merged_per_flow(
    mirrored: Mirrored, viewer: APIClient, store: StatusStore
) -> None:
    now = now_ms()
    store.publish(
        _process(
            "host-1-a",
            state="running",
            leader=True,
            topics=["orders"],
            partitions=[PartitionStatus("orders", 0, "east.orders", records=7, lag_records=99)],
            record_rate=10.0,
            byte_rate=1000.0,
            last_checkpoint_ms=now - 4000,
            last_heartbeat_ms=now - 1000,
            checkpoints=[GroupCheckpoint("app", "orders", 0, "east.orders", 3, 3, True)],
            skipped_active_groups=["busy"],
        )
    )
    store.publish(
        _process(
            "host-2-b",
            state="retrying",
            partitions=[PartitionStatus("orders", 1, "east.orders", records=5)],
            record_rate=5.0,
            byte_rate=500.0,
            error="west: broker transport failure",
            errors=[{"at_ms": now - 500, "message": "west: broker transport failure"}],
        )
    )
    answer = viewer.get("/api/mirrors/east/west/")
    assert answer.status_code == 200, answer.content
    flow = answer.json()
    assert (flow["flow"], flow["processes_alive"], flow["state"]) == ("east->west", 2, "retrying")
    assert (flow["record_rate"], flow["byte_rate"]) == (15.0, 1500.0)
    assert 3.5 < flow["checkpoint_age_s"] < 60 and 0.5 < flow["heartbeat_age_s"] < 60
    assert flow["skipped_active_groups"] == ["busy"]
    assert flow["errors"][0]["process_id"] == "host-2-b"
    assert flow["error"] == "west: broker transport failure"
    rows = {p["partition"]: p for p in flow["partitions"]}
    assert (rows[0]["process_id"], rows[0]["records"]) == ("host-1-a", 7)
    assert rows[0]["lag_records"] == 2  # the clusters' figure, not the process's stale 99


def test_an_unknown_flow_is_404(mirrored: Mirrored, viewer: APIClient) -> None:
    answer = viewer.get("/api/mirrors/east/nowhere/")
    assert answer.status_code == 404
    assert "east->nowhere" in answer.json()["message"]


def test_dry_run_translates_the_latest_checkpoints_capped_at_the_log_end(
    mirrored: Mirrored, operator: APIClient
) -> None:
    answer = operator.post(FAILOVER, {"group": "app", "dry_run": True}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["flow"], body["group"], body["dry_run"]) == ("east->west", "app", True)
    assert body["checkpoints_topic"] == "east.checkpoints.internal"
    rows = {r["partition"]: r for r in body["partitions"]}
    assert rows[0] == {
        "topic": "east.orders",
        "partition": 0,
        "source_topic": "orders",
        "translated_offset": 3,  # the newest checkpoint of partition 0, not the first
        "checkpoint_offset": 3,
        "source_committed_offset": 3,
        "target_committed_offset": None,
        "target_end_offset": 3,
    }
    assert (rows[1]["checkpoint_offset"], rows[1]["translated_offset"]) == (7, 5)  # capped
    committed = _committed(mirrored, "app")
    assert committed == {}  # a dry run writes nothing


def test_viewer_cannot_fail_over(mirrored: Mirrored, viewer: APIClient) -> None:
    answer = viewer.post(FAILOVER, {"group": "app"}, format="json")
    assert answer.status_code == 403
    assert "operator" in answer.json()["message"]


def test_commit_writes_the_translated_offsets_on_the_target_and_is_audited(
    mirrored: Mirrored, operator: APIClient
) -> None:
    from controlplane.models import AuditEntry

    answer = operator.post(FAILOVER, {"group": "other", "dry_run": False}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["dry_run"] is False
    assert _committed(mirrored, "other") == {("east.orders", 0): 1}
    again = operator.post(FAILOVER, {"group": "other"}, format="json").json()
    assert again["partitions"][0]["target_committed_offset"] == 1
    entry = AuditEntry.objects.filter(path=FAILOVER, status_code=200).order_by("id").first()
    assert entry is not None and entry.username == "operator-user"
    assert entry.action == "mirrors-failover" and "source=east target=west" in entry.target
    assert '"other"' in entry.request_body


def test_commit_is_refused_while_the_group_is_active_on_the_target(
    mirrored: Mirrored, operator: APIClient
) -> None:
    member = Consumer(
        {
            "bootstrap.servers": mirrored.west.bootstrap,
            "group.id": "busy",
            "enable.auto.commit": False,
        }
    )
    member.subscribe(["east.orders"])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the consumer never joined"
        member.poll(0.2)
    try:
        dry = operator.post(FAILOVER, {"group": "busy"}, format="json").json()
        assert dry["members_on_target"] == 1
        answer = operator.post(FAILOVER, {"group": "busy", "dry_run": False}, format="json")
        assert answer.status_code == 409, answer.content
        assert "active on west" in answer.json()["message"]
    finally:
        member.close()
    assert _committed(mirrored, "busy") == {}  # nothing was written


def test_a_group_without_checkpoints_is_404(mirrored: Mirrored, operator: APIClient) -> None:
    answer = operator.post(FAILOVER, {"group": "nobody"}, format="json")
    assert answer.status_code == 404
    assert "no checkpoints for group 'nobody'" in answer.json()["message"]


def test_without_the_setting_flows_come_from_statuses_and_failover_says_why(
    mirrored: Mirrored, operator: APIClient, store: StatusStore, settings: object
) -> None:
    settings.WEIR_MIRROR_PROPERTIES = ""  # type: ignore[attr-defined]
    store.publish(_process("host-1-a", state="running"))
    body = operator.get("/api/mirrors/").json()
    assert body["config"] == {"path": "", "loaded": False, "error": None, "clusters": []}
    assert [f["flow"] for f in body["flows"]] == ["east->west"]
    assert _flow(body, "east->west")["configured"] is False
    answer = operator.post(FAILOVER, {"group": "app"}, format="json")
    assert answer.status_code == 404
    assert "WEIR_MIRROR_PROPERTIES is not set" in answer.json()["message"]


def test_a_bad_properties_file_is_a_clear_error(
    mirrored: Mirrored, operator: APIClient, tmp_path: Path, settings: object
) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = east, west\neast.bootstrap.servers = localhost:1\n")
    settings.WEIR_MIRROR_PROPERTIES = str(bad)  # type: ignore[attr-defined]
    body = operator.get("/api/mirrors/").json()
    assert "west.bootstrap.servers: required" in body["config"]["error"]
    answer = operator.post(FAILOVER, {"group": "app"}, format="json")
    assert answer.status_code == 503
    assert "west.bootstrap.servers: required" in answer.json()["message"]


def test_metrics_carry_mm2_and_weir_names(
    mirrored: Mirrored, anonymous: APIClient, store: StatusStore
) -> None:
    store.publish(
        _process(
            "host-1-a",
            state="running",
            partitions=[
                PartitionStatus(
                    "orders",
                    0,
                    "east.orders",
                    records=7,
                    bytes=70,
                    lag_records=2,
                    lag_seconds=1.5,
                    replication_latency_ms=12.0,
                    replication_latency_max_ms=30.0,
                    record_age_ms=5.0,
                )
            ],
            last_checkpoint_ms=now_ms(),
            last_heartbeat_ms=now_ms(),
        )
    )
    text = anonymous.get("/metrics").content.decode()
    labels = 'partition="0",source="east",target="west",topic="east.orders"'
    for name, value in (
        ("kafka_connect_mirror_mirrorsourceconnector_record_count", "7.0"),
        ("kafka_connect_mirror_mirrorsourceconnector_byte_count", "70.0"),
        ("kafka_connect_mirror_mirrorsourceconnector_record_age_ms", "5.0"),
        ("kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms", "12.0"),
        ("kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max", "30.0"),
        ("weir_mirror_lag_records", "2.0"),
        ("weir_mirror_lag_seconds", "1.5"),
    ):
        assert f"{name}{{{labels}}} {value}" in text, name
    assert 'weir_mirror_processes{source="east",target="west"} 1.0' in text
    assert 'weir_mirror_checkpoint_age_seconds{source="east",target="west"}' in text
    assert 'weir_mirror_heartbeat_age_seconds{source="east",target="west"}' in text


def _committed(mirrored: Mirrored, group: str) -> dict[tuple[str, int], int]:
    admin = mirrored.admin("west")
    request = [ConsumerGroupTopicPartitions(group)]
    try:
        result = admin.list_consumer_group_offsets(request)[group].result(30)
    except Exception:
        return {}
    return {(t.topic, t.partition): t.offset for t in result.topic_partitions if t.offset >= 0}
