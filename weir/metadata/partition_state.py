"""Live partition state in Redis, for readers that do not speak the Kafka protocol.

Theory of operation
-------------------
About once a second every broker writes, in one pipeline, the state of the replicas it hosts:

* ``partition_state`` (hash, field ``<topic>/<partition>``), written by the **leader**: leader,
  leader epoch, ISR, LEO, HW, log start offset, size on disk, each follower's last known LEO,
  and ``updated_ms``;
* ``replica_state`` (hash, field ``<topic>/<partition>/<broker>``), written by **every
  replica**: its LEO, log start offset, size on disk and ``updated_ms``.

Readers (the control plane, lag monitoring, reassignment progress) judge freshness by
``updated_ms``: a field older than a few seconds belongs to a broker that stopped writing.
Fields of partitions that no longer exist on a broker are removed by that broker. This is
observability data, not coordination: nothing in the data plane reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import redis.asyncio as aioredis

from weir.metadata.keys import KeyLayout

__all__ = ["PartitionStatePublisher", "PartitionStatus", "ReplicaStatus", "read_partition_states"]


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """One partition as its leader sees it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    log_end_offset: int
    high_watermark: int
    log_start_offset: int
    size_bytes: int
    follower_log_end_offsets: Mapping[str, int]
    updated_ms: int


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """One replica as its own broker sees it."""

    topic: str
    partition: int
    broker_id: int
    log_end_offset: int
    log_start_offset: int
    size_bytes: int
    is_leader: bool
    updated_ms: int


def partition_state_key(keys: KeyLayout) -> str:
    return keys.key("partition_state")


def replica_state_key(keys: KeyLayout) -> str:
    return keys.key("replica_state")


class PartitionStatePublisher:
    """Writes this broker's partition and replica state to Redis in one round trip."""

    def __init__(self, redis: aioredis.Redis, *, cluster_id: str, broker_id: int) -> None:
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        self.broker_id = broker_id
        self._published_partitions: set[str] = set()
        self._published_replicas: set[str] = set()

    async def publish(
        self, partitions: Iterable[PartitionStatus], replicas: Iterable[ReplicaStatus]
    ) -> None:
        partition_fields = {
            f"{p.topic}/{p.partition}": json.dumps(asdict(p), separators=(",", ":"))
            for p in partitions
        }
        replica_fields = {
            f"{r.topic}/{r.partition}/{r.broker_id}": json.dumps(asdict(r), separators=(",", ":"))
            for r in replicas
        }
        stale_partitions = self._published_partitions - set(partition_fields)
        stale_replicas = self._published_replicas - set(replica_fields)
        pipe = self.redis.pipeline(transaction=False)
        if partition_fields:
            pipe.hset(partition_state_key(self.keys), mapping=partition_fields)
        if replica_fields:
            pipe.hset(replica_state_key(self.keys), mapping=replica_fields)
        if stale_partitions:
            pipe.hdel(partition_state_key(self.keys), *stale_partitions)
        if stale_replicas:
            pipe.hdel(replica_state_key(self.keys), *stale_replicas)
        await pipe.execute()
        self._published_partitions = set(partition_fields)
        self._published_replicas = set(replica_fields)


async def read_partition_states(
    redis: aioredis.Redis, *, cluster_id: str
) -> tuple[list[PartitionStatus], list[ReplicaStatus]]:
    """Everything published, for the control plane."""
    keys = KeyLayout(cluster_id)
    raw_partitions = await redis.hgetall(partition_state_key(keys))
    raw_replicas = await redis.hgetall(replica_state_key(keys))
    partitions = []
    for value in raw_partitions.values():
        data = json.loads(value)
        data["isr"] = tuple(data["isr"])
        partitions.append(PartitionStatus(**data))
    replicas = [ReplicaStatus(**json.loads(value)) for value in raw_replicas.values()]
    return partitions, replicas
