"""The ``weir`` source over a compacted topic: offsets with gaps are read exactly.

Compaction (run here through the control plane's housekeeping driver, as Celery runs it)
leaves a partition whose offsets are sparse. The source must return exactly the records a
plain consumer sees, and a range whose ends fall in the gaps must stop and start at the next
surviving record, never wait for offsets that will not come.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from brokers.ops.housekeeping import run_compaction
from controlplane.cluster import gateway
from tests.spark_jobs.conftest import digest, frame_digest
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.integration

KEYS = 20
RECORDS = 600


def _consumer_view(bootstrap: str, topic: str) -> list[tuple]:
    """Every record of partition 0 as a plain consumer reads it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ref-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    rows = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition within 10 s"
            if message.error():
                assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                return rows
            rows.append((topic, 0, message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def compacted(cp_cluster: Cluster) -> tuple[str, list[tuple]]:
    topic = f"spark-compacted-{uuid.uuid4().hex[:8]}"
    cp_cluster.create_topic(
        topic,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "4000",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    producer = Producer(
        {"bootstrap.servers": cp_cluster.bootstrap(), "batch.size": 1500, "linger.ms": 2}
    )
    # Keys in a random order, so the survivors of compaction are scattered with gaps between.
    keys = random.Random(7)
    for i in range(RECORDS):
        key = f"key-{keys.randrange(KEYS)}".encode()
        producer.produce(topic, f"value-{i:04d}".encode() * 4, key)
        producer.poll(0)
    assert producer.flush(30) == 0
    result = run_compaction(gw=gateway(), topics=[topic])
    assert result.errors == [] and result.partitions_acted == 1, result
    rows = _consumer_view(cp_cluster.bootstrap(), topic)
    # Compaction really left gaps: far fewer records than offsets.
    assert KEYS <= len(rows) < RECORDS // 2 and rows[-1][2] == RECORDS - 1
    return topic, rows


def _read(spark: object, bootstrap: str, topic: str, **options: str) -> object:
    reader = (
        spark.read.format("weir")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_a_compacted_partition_reads_exactly_what_a_consumer_sees(
    spark: object, bootstrap: str, compacted: tuple[str, list[tuple]]
) -> None:
    topic, rows = compacted
    frame = _read(spark, bootstrap, topic, maxRecordsPerPartition="50")
    assert frame_digest(frame) == (len(rows), digest(rows))


def test_range_ends_inside_gaps_stop_at_the_surviving_records(
    spark: object, bootstrap: str, compacted: tuple[str, list[tuple]]
) -> None:
    topic, rows = compacted
    offsets = [r[2] for r in rows]
    # Both ends fall in gaps (offsets compaction removed) between surviving records.
    kept = set(offsets)
    gaps = [o for o in range(offsets[0], offsets[-1]) if o not in kept]
    assert len(gaps) >= 2, offsets
    start, end = gaps[0], gaps[-1]
    frame = _read(
        spark,
        bootstrap,
        topic,
        startingOffsets=json.dumps({topic: {"0": start}}),
        endingOffsets=json.dumps({topic: {"0": end}}),
    )
    expected = [r for r in rows if start <= r[2] < end]
    assert expected, "the chosen range holds surviving records"
    assert frame_digest(frame) == (len(expected), digest(expected))
