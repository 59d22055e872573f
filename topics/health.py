"""Partition health: the one definition the dashboard, the lag monitor and the metrics share.

Kafka's words, over the metadata image and (when given) the leader's published state:

* **offline**: no live leader (``leader < 0`` or the leader's lease expired), Kafka's
  ``OfflinePartitionsCount``;
* **under-replicated**: the ISR is smaller than the replica set (``UnderReplicatedPartitions``);
* **under min ISR**: the ISR is smaller than ``min.insync.replicas``, so ``acks=all``
  produces fail (``UnderMinIsrPartitionCount``);
* **at min ISR**: the ISR is exactly ``min.insync.replicas``: one more loss and it is under
  (``AtMinIsrPartitionCount``).

The ISR is the one the leader last published when a fresh partition state is passed (it is
newer than the image's, which changes only through AlterPartition), else the image's.
Pure functions: no Redis, no Django; callers read the image and states once per view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from weir.metadata.image import PartitionImage
from weir.metadata.partition_state import PartitionStatus

__all__ = ["HealthCounts", "PartitionHealth", "health_counts", "partition_health"]


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One partition's health (see the module docstring for each word)."""

    isr: tuple[int, ...]
    offline: bool
    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool


@dataclass(frozen=True, slots=True)
class HealthCounts:
    """How many partitions of a set are in each state."""

    partitions: int = 0
    offline: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0


def partition_health(
    partition: PartitionImage,
    *,
    live: frozenset[int],
    state: PartitionStatus | None = None,
    min_isr: int = 1,
) -> PartitionHealth:
    """The health of ``partition`` given the live brokers and its ``min.insync.replicas``."""
    isr = tuple(state.isr if state is not None else partition.isr)
    return PartitionHealth(
        isr=isr,
        offline=partition.leader < 0 or partition.leader not in live,
        under_replicated=len(isr) < len(partition.replicas),
        under_min_isr=len(isr) < min_isr,
        at_min_isr=len(isr) == min_isr,
    )


def health_counts(
    partitions: Iterable[PartitionImage], *, live: frozenset[int], min_isr: int = 1
) -> HealthCounts:
    """Counts over ``partitions`` by the image's ISR (what the dashboard shows)."""
    count = offline = under = under_min = at_min = 0
    for partition in partitions:
        health = partition_health(partition, live=live, min_isr=min_isr)
        count += 1
        offline += health.offline
        under += health.under_replicated
        under_min += health.under_min_isr
        at_min += health.at_min_isr
    return HealthCounts(count, offline, under, under_min, at_min)
