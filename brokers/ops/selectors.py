"""Reads of the operations API: reassignment progress, rebalance proposals and plan status.

Reassignment progress joins three sources: the metadata image (which partitions are moving,
their adding/removing replicas), the partition and replica states brokers publish every
second (each adding replica's LEO and bytes on disk against its leader's) and the API's own
record of the moves it started (so a finished move still shows as completed, 100 %).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from brokers.controller import original_replicas, target_replicas
from brokers.metadata.image import ClusterImage, PartitionImage
from brokers.metadata.partition_state import PartitionStatus, ReplicaStatus
from brokers.ops import store
from brokers.ops.planner import PlanError, Proposal, plan_rebalance
from controlplane.cluster import gateway
from controlplane.errors import Unprocessable
from topics import selectors as topic_selectors

__all__ = ["reassignment_list", "rebalance_proposal", "rebalance_status"]


def _percent(done: float, total: float) -> float:
    if total <= 0:
        return 100.0
    return round(max(0.0, min(100.0, 100.0 * done / total)), 2)


def _replica_progress(
    broker: int,
    partition: PartitionImage,
    leader: PartitionStatus | None,
    replica: ReplicaStatus | None,
) -> dict[str, Any]:
    in_sync = broker in partition.isr
    leader_leo = leader.log_end_offset if leader else None
    leader_start = leader.log_start_offset if leader else 0
    leo = replica.log_end_offset if replica else None
    if leo is None and leader is not None:
        reported = leader.follower_log_end_offsets.get(str(broker))
        leo = reported if reported is not None and reported >= 0 else None
    size = replica.size_bytes if replica else 0
    total = leader.size_bytes if leader else 0
    if in_sync:
        percent = 100.0
    elif leader is None or leo is None:
        percent = 0.0
    elif total > 0:
        percent = min(
            _percent(size, total), _percent(leo - leader_start, leader_leo - leader_start)
        )
    else:
        percent = _percent(leo - leader_start, leader_leo - leader_start)
    if not in_sync:
        percent = min(percent, 99.99)
    return {
        "broker": broker,
        "in_sync": in_sync,
        "log_end_offset": leo,
        "leader_log_end_offset": leader_leo,
        "bytes_copied": size,
        "bytes_total": total,
        "percent": percent,
    }


def reassignment_list() -> dict[str, Any]:
    """Ongoing reassignments (any origin) and those the API started recently, with progress."""
    gw = gateway()
    image = gw.image()
    states, replicas = gw.partition_states()
    replica_states = {(r.topic, r.partition, r.broker_id): r for r in replicas}
    tracked = store.tracked_reassignments(gw)
    items = []
    for name, partition in topic_selectors.reassignment_list(image=image):
        key = (name, partition.partition)
        leader = states.get(key)
        progress = [
            _replica_progress(b, partition, leader, replica_states.get((*key, b)))
            for b in partition.adding_replicas
        ]
        percent = (
            round(sum(p["percent"] for p in progress) / len(progress), 2) if progress else 99.99
        )
        items.append(
            {
                "topic": name,
                "partition": partition.partition,
                "state": "in_progress",
                "replicas": list(partition.replicas),
                "original_replicas": list(original_replicas(partition)),
                "target_replicas": list(target_replicas(partition)),
                "adding_replicas": list(partition.adding_replicas),
                "removing_replicas": list(partition.removing_replicas),
                "leader": partition.leader,
                "percent": percent,
                "progress": progress,
                "submitted_ms": tracked.get(key, {}).get("submitted_ms"),
            }
        )
    ongoing = {(i["topic"], i["partition"]) for i in items}
    cutoff = store.now_ms() - store.TRACK_RETENTION_MS
    for key, entry in sorted(tracked.items()):
        if key in ongoing or entry.get("submitted_ms", 0) < cutoff:
            continue
        topic_image = image.topics.get(key[0])
        partition = topic_image.partitions.get(key[1]) if topic_image else None
        if partition is None:
            continue
        done = list(partition.replicas) == list(entry["replicas"])
        items.append(
            {
                "topic": key[0],
                "partition": key[1],
                "state": "completed" if done else "cancelled",
                "replicas": list(partition.replicas),
                "original_replicas": list(entry.get("original_replicas") or []),
                "target_replicas": list(entry["replicas"]),
                "adding_replicas": [],
                "removing_replicas": [],
                "leader": partition.leader,
                "percent": 100.0 if done else 0.0,
                "progress": [],
                "submitted_ms": entry.get("submitted_ms"),
            }
        )
    in_progress = [i for i in items if i["state"] == "in_progress"]
    return {
        "in_progress": len(in_progress),
        "completed": sum(1 for i in items if i["state"] == "completed"),
        "percent": round(sum(i["percent"] for i in in_progress) / len(in_progress), 2)
        if in_progress
        else 100.0,
        "reassignments": items,
    }


# rebalance -------------------------------------------------------------------------------


def cluster_layout(
    image: ClusterImage, topics: Collection[str] | None = None
) -> dict[tuple[str, int], tuple[int, ...]]:
    """Replica lists (a moving partition counts at its target) of ``topics`` or all topics."""
    return {
        (t.name, p.partition): target_replicas(p)
        for t in image.topics.values()
        if topics is None or t.name in topics
        for p in t.partitions.values()
    }


def rebalance_proposal(
    *, exclude_brokers: Sequence[int] = (), topics: Sequence[str] | None = None
) -> Proposal:
    """What the planner proposes for the current cluster (a dry run changes nothing)."""
    image = gateway().image()
    unknown = [b for b in exclude_brokers if b not in image.registrations]
    if unknown:
        raise Unprocessable(
            f"exclude_brokers: unknown broker id(s) {unknown}; registered brokers are "
            f"{sorted(image.registrations)}"
        )
    if topics is not None:
        missing = [t for t in topics if t not in image.topics]
        if missing:
            raise Unprocessable(f"topics: topic(s) {missing} do not exist")
    brokers = {b: info.rack for b, info in image.brokers.items()}
    try:
        return plan_rebalance(
            partitions=cluster_layout(image, None if topics is None else set(topics)),
            brokers=brokers,
            exclude=exclude_brokers,
        )
    except PlanError as exc:
        raise Unprocessable(f"no valid plan: {exc}") from None


def rebalance_status() -> dict[str, Any]:
    """The stored plan with counts per status (state ``none`` when no plan was ever run)."""
    plan = store.rebalance_load(gateway())
    if plan is None:
        plan = {
            "id": None,
            "state": "none",
            "created_ms": None,
            "finished_ms": None,
            "concurrency": None,
            "throttle_bytes_per_sec": None,
            "election": None,
            "message": "no rebalance has been started",
            "before": None,
            "after": None,
            "partitions": [],
        }
    counts = {s: 0 for s in ("pending", "in_flight", "done", "failed", "cancelled")}
    for item in plan["partitions"]:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    return {**plan, **counts, "total": len(plan["partitions"])}
