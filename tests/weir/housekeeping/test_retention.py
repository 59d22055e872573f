"""Retention through the housekeeping channel, against three real brokers.

Expectations are derived from the leader's own segment files on disk (not from the
inventory the driver decides on), and every replica's directory and checkpoint is checked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from brokers.ops.housekeeping import run_retention
from controlplane.cluster import ClusterGateway
from tests.weir.cluster.conftest import BROKER_IDS, Cluster, wait_until
from tests.weir.housekeeping.conftest import (
    disk_records,
    inventory,
    log_start_checkpoint,
    produce_records,
    segment_bases,
    segment_files,
    wait_replicas_caught_up,
)

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
PAD = b"x" * 200  # ~270-byte batches: three or so per 1000-byte segment


SmallSegmentTopic = Callable[[dict[str, str]], str]


@pytest.fixture
def small_segment_topic(hk_cluster: Cluster, unique: Callable[[str], str]) -> SmallSegmentTopic:
    """Makes a new topic with 1000-byte segments and ``config`` (its retention settings)."""

    def make(config: dict[str, str]) -> str:
        return hk_cluster.create_topic(
            unique("retention"), config={"segment.bytes": "1000", **config}
        )

    return make


def _aged(
    prefix: bytes, count: int, age_ms: int, *, key: bytes | None = None
) -> list[tuple[bytes | None, bytes, int]]:
    """``count`` padded records ``<prefix>-00``, ``<prefix>-01``, ... whose CreateTime is
    ``age_ms`` before now, for ``produce_records``."""
    created = int(time.time() * 1000) - age_ms
    return [(key, b"%s-%02d" % (prefix, i) + PAD, created) for i in range(count)]


def _check_every_replica(
    cluster: Cluster, gw: ClusterGateway, topic: str, start: int, *, checkpointed: bool = True
) -> None:
    """Each replica starts at ``start``: in its inventory, its log-start checkpoint (written at
    once by a retention command; by the periodic checkpoint when a follower adopted it from
    a fetch), and no segment file wholly below ``start`` is left in its directory."""
    for broker_id in BROKER_IDS:
        entry = inventory(gw, broker_id, topic)
        assert entry["log_start_offset"] == start, (broker_id, entry)
        if checkpointed:
            assert log_start_checkpoint(cluster, broker_id, topic) == start, broker_id
        bases = segment_bases(cluster, broker_id, topic)
        assert bases[0] <= start, (broker_id, bases)
        assert all(base > start for base in bases[1:]), (broker_id, bases)


class _Lines(logging.Handler):
    """Collects librdkafka's log lines (the consumer reports its offset resets there)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _reset_seen(consumer: Consumer, lines: _Lines, where: str) -> bool:
    message = consumer.poll(0.2)
    assert message is None, "a latest consumer read before any new record"
    return any("offset reset" in line and where in line for line in lines.lines)


def test_retention_ms_deletes_exactly_the_expired_segments_and_consumers_reset(
    hk_cluster: Cluster,
    gw: ClusterGateway,
    unique: Callable[[str], str],
    small_segment_topic: SmallSegmentTopic,
) -> None:
    topic = small_segment_topic({"retention.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    old = [(None, b"old-%02d" % i + PAD, now - 2 * HOUR_MS + i) for i in range(12)]
    new = [(None, b"new-%02d" % i + PAD, now) for i in range(6)]
    produce_records(hk_cluster, topic, old + new)
    wait_replicas_caught_up(gw, topic, 18)
    leader = hk_cluster.leader(topic)
    before = segment_bases(hk_cluster, leader, topic)
    # Kafka's rule from the files: every segment before the one holding the first recent
    # record (offset 12) is wholly expired; that one and all after it stay.
    expected = max(base for base in before if base <= 12)
    assert expected > 0 and len(before) >= 4, before

    steps: list[tuple[float, str]] = []
    result = run_retention(gw=gw, topics=[topic], progress=lambda f, m: steps.append((f, m)))

    assert result.errors == []
    assert (result.partitions_examined, result.partitions_acted) == (1, 1)
    assert result.records_removed == expected
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert result.segments_deleted >= len([b for b in before if b < expected])
    assert result.bytes_reclaimed > 0
    assert result.detail[0]["reasons"] == ["retention.ms"]
    assert segment_bases(hk_cluster, leader, topic) == [b for b in before if b >= expected]
    _check_every_replica(hk_cluster, gw, topic, expected)
    for broker_id in BROKER_IDS:
        offsets = [offset for offset, _, _ in disk_records(hk_cluster, broker_id, topic)]
        assert offsets[-1] == 17 and offsets[0] <= expected

    # A second run finds nothing more to delete.
    again = run_retention(gw=gw, topics=[topic])
    assert (again.partitions_examined, again.partitions_acted, again.errors) == (1, 0, [])

    # Consumers below the new log start get OFFSET_OUT_OF_RANGE and reset per policy.
    tp = TopicPartition(topic, 0, 1)
    earliest = Consumer(
        {
            "bootstrap.servers": hk_cluster.bootstrap(),
            "group.id": unique("earliest"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    lines = _Lines()
    rdkafka_log = logging.getLogger(unique("rdkafka"))
    rdkafka_log.addHandler(lines)
    rdkafka_log.propagate = False
    latest = Consumer(
        {
            "bootstrap.servers": hk_cluster.bootstrap(),
            "group.id": unique("latest"),
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
        },
        logger=rdkafka_log,
    )
    try:
        earliest.assign([tp])
        first = wait_until(lambda: earliest.poll(0.5), 20, "a record after the reset")
        assert first.error() is None and first.offset() == expected
        assert first.value() == (old + new)[expected][1]

        latest.assign([tp])
        # Produce only once the consumer has reset to the end, else it would skip the record.
        wait_until(
            lambda: _reset_seen(latest, lines, "to offset END"),
            20,
            lambda: f"the latest consumer's reset to the end: {lines.lines}",
        )
        produce_records(hk_cluster, topic, [(None, b"after-reset", None)])
        message = wait_until(lambda: latest.poll(0.5), 20, "the record produced after reset")
        assert message.error() is None and (message.offset(), message.value()) == (
            18,
            b"after-reset",
        )
    finally:
        earliest.close()
        latest.close()

    # Leadership moves: the new leader serves from the new log start, and the old leader
    # (restarted) kept its own from the checkpoint.
    hk_cluster.stop(leader)
    hk_cluster.wait_partition(topic, lambda p: p.leader not in (-1, leader), what="new leader")
    # (A new leader's HW catches up with the surviving follower's next fetch.)
    watermarks = wait_until(
        lambda: (w := hk_cluster.watermarks(topic))[1] == 19 and w, 20, "the new leader's HW"
    )
    assert watermarks == (expected, 19)
    hk_cluster.restart(leader)
    hk_cluster.wait_full_isr(topic)
    wait_replicas_caught_up(gw, topic, 19)
    _check_every_replica(hk_cluster, gw, topic, expected)


def test_retention_bytes_removes_the_oldest_segments(
    hk_cluster: Cluster, gw: ClusterGateway, small_segment_topic: SmallSegmentTopic
) -> None:
    topic = small_segment_topic({"retention.ms": "-1"})
    # Ancient timestamps: with retention.ms=-1 they must not matter.
    produce_records(hk_cluster, topic, _aged(b"r", 20, 1000 * HOUR_MS))
    wait_replicas_caught_up(gw, topic, 20)
    leader = hk_cluster.leader(topic)
    files = segment_files(hk_cluster, leader, topic)
    sizes = [path.stat().st_size for path in files]
    bases = segment_bases(hk_cluster, leader, topic)
    limit = sum(sizes) // 2
    # Kafka's rule: drop the oldest while what is left stays at least retention.bytes.
    excess, count = sum(sizes) - limit, 0
    while count < len(sizes) - 1 and excess - sizes[count] >= 0:
        excess -= sizes[count]
        count += 1
    assert count >= 1
    expected = bases[count]
    admin = hk_cluster.admin()
    entry = ConfigEntry("retention.bytes", str(limit), incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(10)

    def trimmed() -> bool:
        result = run_retention(gw=gw, topics=[topic])
        assert result.errors == []
        return result.partitions_acted == 1 and result.detail[0]

    detail = wait_until(trimmed, 10, "the new retention.bytes to reach the leader")
    assert detail["reasons"] == ["retention.bytes"] and detail["log_start"] == expected
    assert segment_bases(hk_cluster, leader, topic) == bases[count:]
    _check_every_replica(hk_cluster, gw, topic, expected)
    remaining = sum(p.stat().st_size for p in segment_files(hk_cluster, leader, topic))
    assert remaining >= limit


def test_the_active_segment_is_never_deleted(
    hk_cluster: Cluster, gw: ClusterGateway, small_segment_topic: SmallSegmentTopic
) -> None:
    topic = small_segment_topic({"retention.ms": "1", "retention.bytes": "1"})
    produce_records(hk_cluster, topic, _aged(b"a", 10, HOUR_MS))
    wait_replicas_caught_up(gw, topic, 10)
    leader = hk_cluster.leader(topic)
    active = segment_bases(hk_cluster, leader, topic)[-1]
    assert active > 0

    result = run_retention(gw=gw, topics=[topic])

    assert result.errors == [] and result.partitions_acted == 1
    assert segment_bases(hk_cluster, leader, topic) == [active]
    _check_every_replica(hk_cluster, gw, topic, active)
    assert hk_cluster.watermarks(topic) == (active, 10)
    assert [o for o, _, _ in hk_cluster.read_all(topic)] == list(range(active, 10))


def test_a_replica_that_missed_a_run_catches_up_with_its_leader(
    hk_cluster: Cluster, gw: ClusterGateway, small_segment_topic: SmallSegmentTopic
) -> None:
    topic = small_segment_topic({"retention.ms": str(HOUR_MS)})
    produce_records(hk_cluster, topic, _aged(b"m", 12, 2 * HOUR_MS) + _aged(b"fresh", 1, 0))
    wait_replicas_caught_up(gw, topic, 13)
    leader = hk_cluster.leader(topic)
    absent = next(b for b in BROKER_IDS if b != leader)
    hk_cluster.stop(absent)
    try:
        missed = run_retention(gw=gw, topics=[topic])
    finally:
        hk_cluster.restart(absent)
    assert missed.errors == [
        f"broker {absent}: inventory failed: broker is not alive",
        f"broker {absent}: retention failed: broker is not alive",
    ]
    assert missed.partitions_acted == 1
    expected = missed.detail[0]["log_start"]
    assert missed.detail[0]["replicas"][str(absent)] == {"error": "broker is not alive"}
    hk_cluster.wait_full_isr(topic)
    # Back in the ISR, the follower adopts its leader's log start from the fetch responses
    # (as Kafka's followers do), deleting the segments below it without another run.
    wait_until(
        lambda: inventory(gw, absent, topic)["log_start_offset"] == expected,
        20,
        f"broker {absent} to adopt its leader's log start {expected}",
    )
    _check_every_replica(hk_cluster, gw, topic, expected, checkpointed=False)

    caught_up = run_retention(gw=gw, topics=[topic])

    assert caught_up.errors == [] and caught_up.partitions_acted == 0, caught_up.detail


def test_compacted_topics_are_left_to_compaction(
    hk_cluster: Cluster, gw: ClusterGateway, small_segment_topic: SmallSegmentTopic
) -> None:
    topic = small_segment_topic({"retention.ms": "1", "cleanup.policy": "compact"})
    produce_records(hk_cluster, topic, _aged(b"c", 8, HOUR_MS, key=b"k"))
    result = run_retention(gw=gw, topics=[topic])
    assert (result.partitions_examined, result.partitions_acted, result.errors) == (0, 0, [])
    assert hk_cluster.watermarks(topic)[0] == 0
