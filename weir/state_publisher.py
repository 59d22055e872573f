"""Partition and replica state for the control plane, published once a second.

Each broker writes what only it knows -- for every local replica its log end, log start and
size; for every partition it leads the ISR, high watermark and each follower's log end --
through ``PartitionStatePublisher``, plus its metrics snapshot (``BrokerMetrics.publish``).
The dashboard, the monitor and the Prometheus exporter read them from Redis. This is
observability only: when Redis is away a round is skipped and the next one tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.metadata.partition_state import (
    PartitionStatePublisher,
    PartitionStatus,
    ReplicaStatus,
)
from weir.process_stats import process_stats

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from weir.config import BrokerConfig
    from weir.metrics import BrokerMetrics
    from weir.replica_manager import ReplicaManager

__all__ = ["PUBLISH_INTERVAL_S", "StatePublisher"]

log = logging.getLogger("weir.broker")

PUBLISH_INTERVAL_S = 1.0


@dataclass(eq=False, repr=False, kw_only=True)
class StatePublisher:
    """Publishes this broker's replica and partition states and metrics."""

    redis: aioredis.Redis
    cluster_id: str
    broker_id: int
    replicas: ReplicaManager
    metrics: BrokerMetrics
    config: Callable[[], BrokerConfig]
    time_ms: Callable[[], int]
    _publisher: PartitionStatePublisher = field(init=False)

    def __post_init__(self) -> None:
        self._publisher = PartitionStatePublisher(
            self.redis, cluster_id=self.cluster_id, broker_id=self.broker_id
        )

    async def run(self) -> None:
        while True:
            await asyncio.sleep(PUBLISH_INTERVAL_S)
            await self.publish_once()

    def states(self, now: int) -> tuple[list[PartitionStatus], list[ReplicaStatus]]:
        """The partitions led here and every local replica, as of ``now``."""
        partitions: list[PartitionStatus] = []
        replicas: list[ReplicaStatus] = []
        for p in list(self.replicas.partitions()):
            log_obj = p.log
            # What a replica's and a partition's status both say about the local log.
            local: dict[str, Any] = {
                "topic": p.topic,
                "partition": p.index,
                "log_end_offset": log_obj.log_end_offset,
                "log_start_offset": log_obj.log_start_offset,
                "size_bytes": log_obj.size_bytes,
                "updated_ms": now,
            }
            replicas.append(ReplicaStatus(**local, broker_id=self.broker_id, is_leader=p.is_leader))
            state = p.leader_state
            if state is None:
                continue
            partitions.append(
                PartitionStatus(
                    **local,
                    leader=self.broker_id,
                    leader_epoch=p.leader_epoch,
                    isr=tuple(p.isr),
                    high_watermark=p.high_watermark,
                    follower_log_end_offsets={
                        str(f.broker_id): f.log_end_offset for f in state.followers.values()
                    },
                )
            )
        return partitions, replicas

    async def publish_once(self) -> None:
        now = self.time_ms()
        partitions, replicas = self.states(now)
        try:
            await self._publisher.publish(partitions, replicas)
            await self.metrics.publish(
                self.redis,
                keys=self._publisher.keys,
                broker_id=self.broker_id,
                now_ms=now,
                # The control plane cannot see static configs; it needs this one to
                # count under-min-ISR partitions.
                extra={
                    "min_insync_replicas": int(self.config().get("min.insync.replicas")),
                    "process": process_stats(self.replicas.partitions()),
                },
            )
        except Exception as exc:  # Redis away: observability only, try again later
            log.debug("publishing partition state failed: %s", exc)
