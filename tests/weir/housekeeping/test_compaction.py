"""Compaction through the housekeeping channel, against three real brokers: every replica
cleans its own log, a consumer reads back the latest value per key at its original offset,
and ``__consumer_offsets`` is compacted the same way (the committed offset survives a
coordinator failover onto a compacted follower)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from brokers.ops.housekeeping import run_compaction
from controlplane.cluster import ClusterGateway
from tests.weir.cluster.conftest import BROKER_IDS, Cluster, wait_until
from tests.weir.housekeeping.conftest import (
    disk_records,
    inventory,
    produce_records,
    segment_bases,
    wait_replicas_caught_up,
)

pytestmark = pytest.mark.integration

KEYS = 6
PAD = b"-" * 120


def _expected_after_clean(
    produced: list[tuple[bytes | None, bytes | None]], end: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    """Below ``end`` only each key's latest record (tombstones included, as they are dirty
    in this first clean); from ``end`` on, everything."""
    latest = {key: offset for offset, (key, _) in enumerate(produced[:end])}
    return [
        (offset, key, value)
        for offset, (key, value) in enumerate(produced)
        if offset >= end or latest[key] == offset
    ]


def test_compaction_keeps_the_latest_value_per_key_on_every_replica(
    hk_cluster: Cluster, gw: ClusterGateway, unique
) -> None:
    topic = unique("compact")
    hk_cluster.create_topic(
        topic,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1000",
            "min.cleanable.dirty.ratio": "0.1",
        },
    )
    produced: list[tuple[bytes | None, bytes | None]] = []
    for n in range(60):
        key = b"key-%d" % (n % KEYS)
        value = None if n == 40 else b"%s=v%02d" % (key, n) + PAD  # one tombstone (key-4)
        produced.append((key, value))
    produce_records(
        hk_cluster, topic, [(k, v, None) for k, v in produced], **{"compression.type": "lz4"}
    )
    wait_replicas_caught_up(gw, topic, 60)
    leader = hk_cluster.leader(topic)
    before = {b: len(segment_bases(hk_cluster, b, topic)) for b in BROKER_IDS}
    assert inventory(gw, leader, topic)["dirty"]["ratio"] == 1.0

    steps: list[tuple[float, str]] = []
    result = run_compaction(gw=gw, topics=[topic], progress=lambda f, m: steps.append((f, m)))

    assert result.errors == []
    assert (result.partitions_examined, result.partitions_acted) == (1, 1)
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert steps[-1][1] == f"compacted {topic}-0"
    assert result.bytes_reclaimed > 0 and result.records_removed > 0
    replicas = result.detail[0]["replicas"]
    assert set(replicas) == {str(b) for b in BROKER_IDS}
    for broker_id in BROKER_IDS:
        outcome = replicas[str(broker_id)]
        stats = outcome["stats"]
        start, end = outcome["range"]
        assert start == 0 and end > 0 and stats["first_dirty_offset"] == end
        assert stats["bytes_after"] < stats["bytes_before"], (broker_id, outcome)
        # On disk, byte for byte what Kafka's cleaner leaves, each record at its offset.
        assert disk_records(hk_cluster, broker_id, topic) == _expected_after_clean(produced, end), (
            broker_id
        )
        assert len(segment_bases(hk_cluster, broker_id, topic)) == (
            before[broker_id] - outcome["segments_removed"]
        )
        entry = inventory(gw, broker_id, topic)
        assert entry["cleaner_checkpoint"] == end
        assert entry["dirty"]["dirty_bytes"] == 0
        checkpoint = hk_cluster[broker_id].data_dir / "cleaner-offset-checkpoint"
        assert f"{topic} 0 {end}" in checkpoint.read_text().splitlines()

    # A consumer sees the compacted log: offsets preserved, the latest value of every key.
    leader_end = replicas[str(leader)]["range"][1]
    records = hk_cluster.read_all(topic)
    assert records == _expected_after_clean(produced, leader_end)
    latest = {key: value for key, value in produced}
    assert {key: value for _, key, value in records} == latest

    # Nothing dirty is left: the next run finds no partition worth cleaning.
    again = run_compaction(gw=gw, topics=[topic])
    assert (again.partitions_examined, again.partitions_acted, again.errors) == (1, 0, [])


def test_consumer_offsets_are_compacted_and_the_commit_survives_failover(
    hk_cluster: Cluster, gw: ClusterGateway, unique
) -> None:
    topic, group = unique("committed"), unique("group")
    hk_cluster.create_topic(topic)
    consumer = Consumer(
        {
            "bootstrap.servers": hk_cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        for offset in range(1, 301):
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()
    admin = hk_cluster.admin()
    description = admin.describe_consumer_groups([group])[group].result(10)
    coordinator = description.coordinator.id

    result = run_compaction(gw=gw, topics=["__consumer_offsets"])

    assert result.errors == []
    assert result.partitions_acted >= 1 and result.bytes_reclaimed > 0
    cleaned = [d for d in result.detail if any(r.get("stats") for r in d["replicas"].values())]
    assert all(
        r.get("stats") and r["stats"]["bytes_after"] < r["stats"]["bytes_before"]
        for d in cleaned
        for r in d["replicas"].values()
    )
    assert _committed(hk_cluster, group, topic) == 300

    # The coordinator goes away: a follower, compacted by its own broker, takes over the
    # group and still knows the last commit.
    hk_cluster.stop(coordinator)
    try:
        assert (
            wait_until(
                lambda: _committed(hk_cluster, group, topic, timeout=5),
                30,
                "the committed offset from the new coordinator",
            )
            == 300
        )
    finally:
        hk_cluster.restart(coordinator)
        hk_cluster.wait_full_isr(topic)


def _committed(cluster: Cluster, group: str, topic: str, timeout: float = 10) -> int | None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group})
    try:
        (found,) = consumer.committed([TopicPartition(topic, 0)], timeout=timeout)
        return found.offset if found.error is None and found.offset >= 0 else None
    finally:
        consumer.close()
