"""Helpers shared by the lag monitor and messages tests: produce records (with chosen
timestamps), commit offsets."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from controlplane.cluster import gateway
from tests.weir.cluster.conftest import Cluster, wait_until


def produce_records(
    cluster: Cluster, topic: str, records: list[dict[str, Any]], *, partition: int = 0
) -> None:
    """Each dict: value, and optionally key, headers, timestamp (CreateTime; none: now); in
    order, acknowledged by all in-sync replicas."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    errors: list[Any] = []
    for record in records:
        producer.produce(
            topic,
            record.get("value"),
            key=record.get("key"),
            partition=partition,
            headers=record.get("headers"),
            timestamp=record.get("timestamp", 0),
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(20) == 0 and not errors, errors


def produce_at(
    cluster: Cluster, topic: str, partition: int, timestamps_ms: list[int], value: bytes = b"v"
) -> None:
    """One record of ``value`` per timestamp (CreateTime)."""
    records = [{"value": value, "timestamp": stamp} for stamp in timestamps_ms]
    produce_records(cluster, topic, records, partition=partition)


def commit(cluster: Cluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` without joining it (a simple commit, like Kafka's)."""
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def wait_high_watermarks(expected: dict[tuple[str, int], int], timeout: float = 15) -> None:
    """Until the leaders' published partition states show these high watermarks."""

    def published() -> bool:
        states, _ = gateway().partition_states()
        return all(
            key in states and states[key].high_watermark == hw for key, hw in expected.items()
        )

    wait_until(published, timeout, lambda: f"high watermarks {expected}")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class LaggingGroup:
    """A consumer group with no members whose committed offsets trail ``topic``; ``base`` is
    the CreateTime (ms) of partition 0's first record."""

    topic: str
    group: str
    base: int


def lagging_group(cluster: Cluster, *, topic: str, group: str) -> LaggingGroup:
    """Partition 0: 10 records 1 s apart (the oldest 60 s old), committed at 3 (7 behind);
    partition 1: 4 records, committed at 4 (caught up). What the lag tests measure."""
    cluster.create_topic(topic, partitions=2)
    base = now_ms() - 60_000
    produce_at(cluster, topic, 0, [base + i * 1_000 for i in range(10)])
    produce_at(cluster, topic, 1, [base] * 4)
    commit(cluster, group, {(topic, 0): 3, (topic, 1): 4})
    wait_high_watermarks({(topic, 0): 10, (topic, 1): 4})
    return LaggingGroup(topic, group, base)
