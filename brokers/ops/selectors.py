"""Reads of the operations API: reassignment progress, rebalance proposals and plan status.

The broker layout (``broker_layout``) counts replicas, leaders and preferred leaders per
broker over every partition and returns the replica sets of a bounded, filtered slice of
partitions (the dashboard's broker-by-partition heatmap): one metadata read, whatever the
topic count. A reassignment proposal (``reassignment_proposal``, kafka-reassign-partitions
``--generate``) is the rebalance planner run over the chosen topics with every other broker
excluded.

Reassignment progress joins three sources: the metadata image (which partitions are moving,
their adding/removing replicas), the partition and replica states brokers publish every
second (each adding replica's LEO and bytes on disk against its leader's) and the API's own
record of the moves it started (so a finished move still shows as completed, 100 %).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from brokers.ops import store
from brokers.ops.planner import PlanError, Proposal, distribution, plan_rebalance
from controlplane.cluster import gateway
from controlplane.errors import Unprocessable
from topics import selectors as topic_selectors
from weir.metadata.image import ClusterImage, PartitionImage, original_replicas, target_replicas
from weir.metadata.partition_state import PartitionStatus, ReplicaStatus

__all__ = [
    "HEATMAP_PARTITIONS",
    "OFF_PREFERRED_LISTED",
    "ReassignmentProposal",
    "broker_layout",
    "reassignment_list",
    "reassignment_proposal",
    "rebalance_proposal",
    "rebalance_status",
    "topic_placement",
]

# Partitions the heatmap shows at most (columns); a filter narrows which ones.
HEATMAP_PARTITIONS = 300
# Off-preferred partitions listed by name; beyond this an election over all partitions has
# the same effect (Kafka elects only where the preferred replica does not lead).
OFF_PREFERRED_LISTED = 1000


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


# broker layout ---------------------------------------------------------------------------


def broker_layout(
    *, topic_filter: str = "", limit: int = HEATMAP_PARTITIONS, image: ClusterImage | None = None
) -> dict[str, Any]:
    """Replica, leader and preferred-leader counts per broker, and a slice of partitions.

    ``topic_filter``: a topic's exact name shows that topic, other text the topics whose name
    contains it (case-insensitive), empty every topic; internal topics sort last. At most
    ``limit`` matching partitions are returned as ``[topic, partition, leader, replicas,
    isr]``; counts always cover the whole cluster.
    """
    image = image or gateway().image()
    counts: dict[int, dict[str, int]] = {}

    def count(broker: int) -> dict[str, int]:
        if broker not in counts:
            counts[broker] = {"replicas": 0, "leaders": 0, "preferred": 0, "out_of_sync": 0}
        return counts[broker]

    for broker in image.registrations:
        count(broker)
    wanted = topic_filter.strip()
    exact = wanted in image.topics
    needle = wanted.lower()
    off_preferred: list[list[Any]] = []
    off_preferred_count = partitions = matching = 0
    shown: list[list[Any]] = []
    names = sorted(image.topics, key=lambda n: (topic_selectors.topic_is_internal(n), n))
    for name in names:
        match = name == wanted if exact else needle in name.lower()
        topic = image.topics[name]
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            partitions += 1
            for broker in p.replicas:
                count(broker)["replicas"] += 1
                if broker not in p.isr:
                    count(broker)["out_of_sync"] += 1
            if p.leader >= 0:
                count(p.leader)["leaders"] += 1
            if p.replicas:
                count(p.replicas[0])["preferred"] += 1
                if p.leader != p.replicas[0]:
                    off_preferred_count += 1
                    if len(off_preferred) < OFF_PREFERRED_LISTED:
                        off_preferred.append([name, index])
            if match:
                matching += 1
                if len(shown) < limit:
                    shown.append([name, index, p.leader, list(p.replicas), list(p.isr)])
    return {
        "type": "layout",
        "filter": wanted,
        "topics": len(image.topics),
        "partitions": partitions,
        "matching": matching,
        "shown": shown,
        "limit": limit,
        "brokers": {str(b): counts[b] for b in sorted(counts)},
        "off_preferred": off_preferred_count,
        "off_preferred_partitions": off_preferred,
    }


@dataclass(frozen=True, slots=True)
class ReassignmentProposal:
    """A generated reassignment: the planner's proposal and how many partitions it covered."""

    proposal: Proposal
    partitions_total: int


def topic_placement(*, image: ClusterImage) -> list[dict[str, Any]]:
    """Every topic with its partition count, replication factor and the brokers it uses."""
    found = []
    for name in sorted(image.topics, key=lambda n: (topic_selectors.topic_is_internal(n), n)):
        partitions = image.topics[name].partitions.values()
        found.append(
            {
                "name": name,
                "internal": topic_selectors.topic_is_internal(name),
                "partitions": len(partitions),
                "replication_factor": max((len(p.replicas) for p in partitions), default=0),
                "brokers": sorted({b for p in partitions for b in p.replicas}),
            }
        )
    return found


def reassignment_proposal(*, topics: Sequence[str], brokers: Sequence[int]) -> ReassignmentProposal:
    """Where the planner would put ``topics``' replicas using only ``brokers``.

    kafka-reassign-partitions ``--generate``: every replica on another broker moves to one of
    ``brokers``, and the topics' replicas and preferred leaders are evened out over them with
    as few copies as the planner finds (a replica already on a chosen broker stays).
    """
    image = gateway().image()
    chosen = list(dict.fromkeys(topics))
    missing = [t for t in chosen if t not in image.topics]
    if missing:
        raise Unprocessable(f"topics: topic(s) {missing} do not exist")
    targets = set(brokers)
    unknown = sorted(b for b in targets if b not in image.registrations)
    if unknown:
        raise Unprocessable(
            f"brokers: unknown broker id(s) {unknown}; registered brokers are "
            f"{sorted(image.registrations)}"
        )
    dead = sorted(b for b in targets if b not in image.live_broker_ids)
    if dead:
        raise Unprocessable(f"brokers: broker(s) {dead} are not alive; choose live brokers")
    layout = cluster_layout(image, set(chosen))
    for name in chosen:
        factor = max((len(r) for (t, _), r in layout.items() if t == name), default=0)
        if factor > len(targets):
            raise Unprocessable(
                f"topic {name!r} has replication factor {factor} but only {len(targets)} "
                f"target broker(s) were chosen"
            )
    # Every broker that is not a target must end up empty, registered or not (a replica on
    # a broker that left the cluster still has to move).
    placed = {b for replicas in layout.values() for b in replicas}
    exclude = sorted((set(image.registrations) | placed) - targets)
    live = {b: info.rack for b, info in image.brokers.items()}
    try:
        proposal = plan_rebalance(partitions=layout, brokers=live, exclude=exclude)
    except PlanError as exc:
        raise Unprocessable(f"no valid plan: {exc}") from None
    # The planner's statistics cover the target brokers only; the operator also wants to see
    # the brokers the topics leave.
    everyone = sorted(set(image.registrations) | placed | targets)
    racks = {b: (info.rack if (info := image.registrations.get(b)) else None) for b in everyone}
    after = {**layout, **proposal.proposed()}
    return ReassignmentProposal(
        proposal=Proposal(
            diffs=proposal.diffs,
            before=distribution(layout, racks, everyone),
            after=distribution(after, racks, everyone),
        ),
        partitions_total=len(layout),
    )
