"""One three-broker cluster (real ``runbroker`` processes, the suite's private Redis) shared by
the housekeeping tests, a ``ClusterGateway`` on it, and helpers to look at replicas on disk.

Topics are small-segment (``segment.bytes`` ~1 KB) so a few dozen records make several
segments; every test uses topics of its own (``unique``), so they share the cluster safely.
``__consumer_offsets`` rolls small segments too (``offsets.topic.segment.bytes``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from controlplane.cluster import ClusterGateway
from tests.weir.cluster.conftest import (
    BROKER_IDS,
    FAST_CONFIGS,
    Cluster,
    merge_configs,
    new_cluster,
    wait_until,
)
from weir.log.checkpoint import read_offset_checkpoint
from weir.protocol.inflate import iter_records
from weir.protocol.records import iter_batches

HOUSEKEEPING_CONFIGS = [
    "offsets.topic.segment.bytes=1024",
    "group.initial.rebalance.delay.ms=0",
]


@pytest.fixture(scope="package")
def hk_cluster(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = new_cluster(
        tmp_path_factory.mktemp("housekeeping"),
        redis_url=redis_server,
        cluster_id=f"hk-{uuid.uuid4().hex[:10]}",
        configs=merge_configs(FAST_CONFIGS, HOUSEKEEPING_CONFIGS),
    )
    cluster.start_all(30)
    try:
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="package")
def gw(hk_cluster: Cluster) -> Iterator[ClusterGateway]:
    gateway = ClusterGateway(redis_url=hk_cluster.redis_url, cluster_id=hk_cluster.keys.cluster_id)
    try:
        yield gateway
    finally:
        gateway.close()


# helpers ----------------------------------------------------------------------------------
def produce_records(
    cluster: Cluster,
    topic: str,
    records: list[tuple[bytes | None, bytes | None, int | None]],
    **config: Any,
) -> list[int]:
    """Produce ``(key, value, timestamp)`` records to partition 0 one batch each, in order
    (acks=all, idempotent); their offsets."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0,
            "max.in.flight.requests.per.connection": 1,
            **config,
        }
    )
    offsets: dict[int, int] = {}
    errors: list[str] = []

    def delivered(index: int, err: Any, message: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            offsets[index] = message.offset()

    for index, (key, value, timestamp) in enumerate(records):
        kwargs: dict[str, Any] = {"key": key, "value": value, "partition": 0}
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        producer.produce(topic, on_delivery=lambda e, m, i=index: delivered(i, e, m), **kwargs)
        # One record per batch: many small batches make many small segments.
        producer.flush(10)
    remaining = producer.flush(20)
    assert remaining == 0 and not errors, (remaining, errors)
    return [offsets[i] for i in range(len(records))]


def segment_bases(cluster: Cluster, broker_id: int, topic: str, index: int = 0) -> list[int]:
    directory = cluster[broker_id].data_dir / f"{topic}-{index}"
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))


def segment_files(cluster: Cluster, broker_id: int, topic: str, index: int = 0) -> list[Path]:
    directory = cluster[broker_id].data_dir / f"{topic}-{index}"
    return sorted(directory.glob("*.log"))


def disk_records(
    cluster: Cluster, broker_id: int, topic: str, index: int = 0
) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in a replica's segment files (CRC-checked)."""
    out = []
    for path in segment_files(cluster, broker_id, topic, index):
        data = path.read_bytes()
        for pos, _ in iter_batches(data, check_crc=True):
            out.extend((r.offset, r.key, r.value) for r in iter_records(data, pos))
    return out


def log_start_checkpoint(cluster: Cluster, broker_id: int, topic: str, index: int = 0) -> int:
    path = cluster[broker_id].data_dir / "log-start-offset-checkpoint"
    return read_offset_checkpoint(path).get((topic, index), 0)


def inventory(gw: ClusterGateway, broker_id: int, topic: str) -> dict[str, Any]:
    """One broker's inventory entry of ``topic``-0 (through the housekeeping channel)."""
    channel = gw.commands(timeout_s=10)
    reply = channel.request({broker_id: ("inventory", {"topics": [topic]})})[broker_id]
    assert reply.ok, reply.error
    (entry,) = [p for p in reply.result["partitions"] if p["partition"] == 0]
    return entry


def wait_replicas_caught_up(gw: ClusterGateway, topic: str, end: int) -> None:
    """Every replica's LEO and HW reached ``end`` (followers learn the HW one fetch later)."""

    def probe() -> bool:
        for broker_id in BROKER_IDS:
            entry = inventory(gw, broker_id, topic)
            if entry["log_end_offset"] < end or entry["high_watermark"] < end:
                return False
        return True

    wait_until(probe, 20, f"every replica of {topic} at {end}")
