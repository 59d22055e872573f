"""Replica placement: Kafka's ``AdminUtils.assignReplicasToBrokers``, rack-unaware and aware.

Theory of operation
-------------------
Goals (Kafka's): spread replicas evenly over brokers; for the partitions a broker leads,
spread their other replicas over the other brokers; with racks, put the replicas of a
partition on different racks when possible. The first replica of each partition is its
preferred leader, and first replicas go round-robin, so leaders spread too.

Rack-unaware: brokers sorted by id; partition ``p``'s first replica is broker
``(p + start) % n``; the others follow at an increasing *shift* that changes after every
``n`` partitions, so the same broker pairs do not repeat::

    first = (p + start_index) % n
    replica j (j >= 1) = (first + 1 + (shift + j - 1) % (n - 1)) % n

Rack-aware (every broker has a rack): the same on a *rack-alternated* broker list (racks
sorted, brokers of each rack sorted, then interleaved: rack1[0], rack2[0], rack3[0],
rack1[1], ...); a follower is skipped while its rack already holds a replica and some rack
holds none, or while its broker does and some broker holds none. If only some brokers have
a rack, racks are ignored (Kafka's ``RackAwareMode.Safe``).

``start_index`` (and the initial shift) are random unless given, as in Kafka; tests pass
``start_index`` or an ``rng`` for determinism. ``assign_new_partitions`` continues an
existing topic the way Kafka's CreatePartitions does.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from weir.metadata.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

__all__ = ["assign_new_partitions", "assign_replicas", "rack_alternated_brokers"]

log = logging.getLogger("weir.placement")

BrokerRack = tuple[int, str | None]


def assign_replicas(
    *,
    partitions: int,
    replication_factor: int,
    brokers: Sequence[BrokerRack],
    start_index: int | None = None,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> list[list[int]]:
    """Replica lists for ``partitions`` partitions numbered from ``start_partition``."""
    if partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    ids = [b for b, _ in brokers]
    if len(set(ids)) != len(ids):
        raise InvalidReplicaAssignmentError(f"Duplicate broker ids in {sorted(ids)}")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    racks = {b: r for b, r in brokers}
    rack_aware = all(r is not None for r in racks.values())
    if not rack_aware and any(r is not None for r in racks.values()):
        log.warning("only some brokers have a rack; assigning replicas without racks")
    arranged = rack_alternated_brokers(racks) if rack_aware else sorted(ids)
    n = len(arranged)
    rng = rng or random.Random()
    start = start_index if start_index is not None else rng.randrange(n)
    shift = start_index if start_index is not None else rng.randrange(n)
    num_racks = len(set(racks.values())) if rack_aware else 1
    result: list[list[int]] = []
    for partition in range(max(0, start_partition), max(0, start_partition) + partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        if rack_aware:
            result.append(
                _rack_aware(arranged, racks, first, shift * num_racks, replication_factor)
            )
        else:
            result.append(
                [arranged[first]]
                + [
                    arranged[_replica_index(first, shift, j, n)]
                    for j in range(replication_factor - 1)
                ]
            )
    return result


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_aware(
    arranged: list[int],
    racks: dict[int, str | None],
    first: int,
    shift: int,
    replication_factor: int,
) -> list[int]:
    leader = arranged[first]
    replicas = [leader]
    racks_used = {racks[leader]}
    brokers_used = {leader}
    num_racks = len(set(racks.values()))
    k = 0
    while len(replicas) < replication_factor:
        broker = arranged[_replica_index(first, shift, k, len(arranged))]
        rack = racks[broker]
        k += 1
        if (rack not in racks_used or len(racks_used) == num_racks) and (
            broker not in brokers_used or len(brokers_used) == len(arranged)
        ):
            replicas.append(broker)
            racks_used.add(rack)
            brokers_used.add(broker)
    return replicas


def rack_alternated_brokers(racks: dict[int, str | None]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: 0,3,6,1,4,7,... for racks of 0-2, 3-5, 6-8."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(str(rack), []).append(broker)
    columns = [sorted(by_rack[r]) for r in sorted(by_rack)]
    result: list[int] = []
    for row in range(max(len(c) for c in columns)):
        result += [c[row] for c in columns if row < len(c)]
    return result


def assign_new_partitions(
    *,
    existing: Sequence[Sequence[int]],
    count: int,
    brokers: Sequence[BrokerRack],
) -> list[list[int]]:
    """Assignments for ``count`` new partitions of a topic whose partitions are ``existing``.

    As Kafka's CreatePartitions: same replication factor as partition 0, numbering continues
    after the existing partitions, and the round-robin starts at the first broker whose id is
    at least partition 0's preferred leader, so the new leaders continue the old pattern.
    """
    if not existing or not existing[0]:
        raise InvalidPartitionsError("The topic has no partition 0 to continue from.")
    ids = sorted(b for b, _ in brokers)
    start = next((i for i, b in enumerate(ids) if b >= existing[0][0]), 0)
    return assign_replicas(
        partitions=count,
        replication_factor=len(existing[0]),
        brokers=brokers,
        start_index=start,
        start_partition=len(existing),
    )
