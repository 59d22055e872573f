"""Writes of the operations API: reassignments, preferred elections, throttles, rebalances.

Every change goes through the cluster gateway as a Kafka request to the controller
(AlterPartitionReassignments, ElectLeaders) or an AdminClient config change (throttles); the
controller owns the metadata. Inputs are checked against the current metadata image first,
so a bad request gets a 4xx naming the problem (unknown topic, partition or broker,
duplicate or empty replica lists) instead of a per-partition Kafka error.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from brokers.ops import store
from brokers.ops.planner import PartitionDiff, Proposal
from brokers.ops.requests import (
    PartitionKey,
    alter_reassignments_request,
    elect_leaders_request,
    error_name,
    reassignment_outcomes,
)
from brokers.ops.throttle import (
    ThrottleError,
    alter_configs,
    clear_throttle_resources,
    throttle_resources,
)
from controlplane.cluster import ClusterGateway, gateway
from controlplane.errors import BadRequest, Conflict, KafkaUnavailable, Unprocessable
from weir.metadata.image import ClusterImage, original_replicas

__all__ = [
    "election_preferred",
    "error_name",
    "leaders_elect",
    "reassignment_cancel",
    "reassignment_execute",
    "reassignments_alter",
    "rebalance_cancel",
    "rebalance_start",
    "throttles_clear_if_idle",
    "validate_partitions",
]

TIMEOUT = datetime.timedelta(seconds=30)


def validate_partitions(image: ClusterImage, keys: Iterable[PartitionKey]) -> None:
    """422 naming the first partition the cluster does not have."""
    for topic, partition in keys:
        found = image.topics.get(topic)
        if found is None:
            raise Unprocessable(f"topic {topic!r} does not exist")
        if partition not in found.partitions:
            raise Unprocessable(
                f"topic {topic!r} has no partition {partition} "
                f"(it has {len(found.partitions)} partitions)"
            )


def _ongoing(image: ClusterImage) -> dict[PartitionKey, Any]:
    return {
        (t.name, p.partition): p
        for t in image.topics.values()
        for p in t.partitions.values()
        if p.adding_replicas or p.removing_replicas
    }


# reassignments ---------------------------------------------------------------------------


def reassignments_alter(
    gw: ClusterGateway, targets: Sequence[tuple[str, int, Sequence[int] | None]]
) -> dict[PartitionKey, tuple[str, str | None]]:
    """AlterPartitionReassignments; (error name, message) per partition ("NONE" when accepted)."""
    response = gw.request_controller(alter_reassignments_request(targets, timeout=TIMEOUT))
    if response.error_code != ErrorCode.none:
        raise KafkaUnavailable(
            f"the controller refused the reassignment: {error_name(response.error_code)} "
            f"{response.error_message or ''}".strip()
        )
    return reassignment_outcomes(response)


def reassignment_execute(
    *,
    partitions: Sequence[tuple[str, int, Sequence[int]]],
    throttle_bytes_per_sec: int | None = None,
) -> dict[str, Any]:
    """Start moving each partition to its replica list, optionally throttled.

    Returns the accepted and the rejected partitions; raises 422 when none was accepted.
    """
    gw = gateway()
    image = gw.image()
    if not partitions:
        raise BadRequest("partitions: the list is empty; name at least one partition to move")
    seen: set[PartitionKey] = set()
    for index, (topic, partition, replicas) in enumerate(partitions):
        where = f"partitions[{index}] ({topic}-{partition})"
        if (topic, partition) in seen:
            raise BadRequest(f"{where}: the partition appears more than once")
        seen.add((topic, partition))
        if not replicas:
            raise BadRequest(f"{where}: replicas is empty; a partition needs at least one")
        duplicates = sorted({r for r in replicas if list(replicas).count(r) > 1})
        if duplicates:
            raise BadRequest(
                f"{where}: replicas {list(replicas)} list broker(s) {duplicates} more than once"
            )
    validate_partitions(image, seen)
    known = set(image.registrations)
    for index, (topic, partition, replicas) in enumerate(partitions):
        unknown = [r for r in replicas if r not in known]
        if unknown:
            raise Unprocessable(
                f"partitions[{index}] ({topic}-{partition}): unknown broker id(s) {unknown}; "
                f"registered brokers are {sorted(known)}"
            )
    moves = [
        PartitionDiff(
            topic,
            partition,
            original_replicas(image.topics[topic].partitions[partition]),
            tuple(replicas),
        )
        for topic, partition, replicas in partitions
    ]
    if throttle_bytes_per_sec is not None:
        throttle_set(gw, image, moves, throttle_bytes_per_sec)
    results = reassignments_alter(gw, [(m.topic, m.partition, m.proposed) for m in moves])
    accepted, rejected = [], []
    submitted = store.now_ms()
    for move in moves:
        error, message = results.get((move.topic, move.partition), ("UNKNOWN_SERVER_ERROR", None))
        item = {"topic": move.topic, "partition": move.partition, "replicas": list(move.proposed)}
        if error == "NONE":
            accepted.append(item)
        else:
            rejected.append({**item, "error": error, "message": message or error})
    store.track_reassignments(
        gw,
        [
            {
                **item,
                "original_replicas": list(m.current),
                "submitted_ms": submitted,
                "throttle_bytes_per_sec": throttle_bytes_per_sec,
            }
            for item in accepted
            for m in moves
            if (m.topic, m.partition) == (item["topic"], item["partition"])
        ],
    )
    if not accepted:
        raise Unprocessable(
            "no reassignment was accepted: "
            + "; ".join(f"{r['topic']}-{r['partition']}: {r['message']}" for r in rejected)
        )
    return {
        "accepted": accepted,
        "rejected": rejected,
        "throttle_bytes_per_sec": throttle_bytes_per_sec,
    }


def reassignment_cancel(*, partitions: Sequence[PartitionKey] | None = None) -> dict[str, Any]:
    """Cancel ongoing moves (all, or the listed partitions): they return to their old replicas."""
    gw = gateway()
    image = gw.image()
    ongoing = _ongoing(image)
    if partitions is None:
        wanted = sorted(ongoing)
        idle: list[PartitionKey] = []
    else:
        validate_partitions(image, partitions)
        wanted = [k for k in dict.fromkeys(partitions) if k in ongoing]
        idle = [k for k in dict.fromkeys(partitions) if k not in ongoing]
    cancelled, failed = [], []
    if wanted:
        results = reassignments_alter(gw, [(t, p, None) for t, p in wanted])
        for key in wanted:
            error, message = results.get(key, ("UNKNOWN_SERVER_ERROR", None))
            item = {"topic": key[0], "partition": key[1]}
            if error == "NONE":
                cancelled.append(item)
            else:
                failed.append({**item, "error": error, "message": message or error})
        store.untrack_reassignments(gw, [(c["topic"], c["partition"]) for c in cancelled])
    throttles_clear_if_idle(gw=gw)
    return {
        "cancelled": cancelled,
        "failed": failed,
        "not_in_progress": [{"topic": t, "partition": p} for t, p in idle],
    }


# throttles -------------------------------------------------------------------------------


def throttle_set(
    gw: ClusterGateway, image: ClusterImage, moves: Sequence[PartitionDiff], rate: int
) -> None:
    """Throttle ``moves`` (merged into the topics' current throttled-replica lists)."""
    resources = throttle_resources(
        moves,
        rate,
        live_brokers=image.brokers,
        existing={m.topic: image.topic_config(m.topic) for m in moves},
    )
    try:
        alter_configs(gw.admin(), resources)
    except ThrottleError as exc:
        raise KafkaUnavailable(str(exc)) from None
    brokers = {b for m in moves for b in (*m.current, *m.proposed) if b in image.brokers}
    store.throttle_mark(gw, brokers=brokers, topics={m.topic for m in moves})


def throttles_clear_if_idle(*, gw: ClusterGateway | None = None) -> bool:
    """Remove the throttles the API set once no partition is moving; True if it cleared any.

    Broker-level rates are shared by every move, so nothing is cleared while any reassignment
    is in flight or a rebalance still has partitions to submit.
    """
    gw = gw or gateway()
    brokers, topics = store.throttle_marks(gw)
    if not brokers and not topics:
        return False
    image = gw.image()
    if _ongoing(image):
        return False
    plan = store.rebalance_load(gw)
    if plan is not None and plan.get("state") == "running":
        return False
    live = [b for b in brokers if b in image.brokers]
    existing = [t for t in topics if t in image.topics]
    try:
        alter_configs(gw.admin(), clear_throttle_resources(brokers=live, topics=existing))
    except ThrottleError:
        return False  # retried by the periodic cleanup
    store.throttle_unmark(gw, brokers=live, topics=topics)
    return True


# elections -------------------------------------------------------------------------------


def election_preferred(*, partitions: Sequence[PartitionKey] | None) -> dict[str, Any]:
    """Preferred-leader election for ``partitions`` (None: every partition).

    ``ELECTION_NOT_NEEDED`` (the preferred replica already leads) is reported, not an error.
    For an election over every partition Kafka reports only the partitions whose leader
    changed.
    """
    gw = gateway()
    if partitions is not None:
        if not partitions:
            raise BadRequest('partitions: the list is empty; omit it or send {"all": true}')
        validate_partitions(gw.image(), partitions)
    return leaders_elect(gw, None if partitions is None else list(dict.fromkeys(partitions)))


def leaders_elect(gw: ClusterGateway, partitions: list[PartitionKey] | None) -> dict[str, Any]:
    response = gw.request_controller(elect_leaders_request(partitions, timeout=TIMEOUT))
    if response.error_code != ErrorCode.none:
        raise KafkaUnavailable(f"leader election failed: {error_name(response.error_code)}")
    results = []
    for topic in response.replica_election_results:
        for result in topic.partition_result:
            name = error_name(result.error_code)
            results.append(
                {
                    "topic": topic.topic,
                    "partition": int(result.partition_id),
                    "error_code": int(result.error_code),
                    "error": None if name == "NONE" else name,
                    "elected": name == "NONE",
                    "succeeded": name in ("NONE", "ELECTION_NOT_NEEDED"),
                    "message": {
                        "NONE": "the preferred replica was elected leader",
                        "ELECTION_NOT_NEEDED": "the preferred replica already leads",
                    }.get(name, result.error_message or name),
                }
            )
    results.sort(key=lambda r: (r["topic"], r["partition"]))
    return {
        "results": results,
        "elected": sum(1 for r in results if r["elected"]),
        "not_needed": sum(1 for r in results if r["error"] == "ELECTION_NOT_NEEDED"),
        "failed": sum(1 for r in results if not r["succeeded"]),
    }


# rebalance -------------------------------------------------------------------------------


def rebalance_start(
    *, proposal: Proposal, concurrency: int, throttle_bytes_per_sec: int | None
) -> dict[str, Any]:
    """Store ``proposal`` as the plan the executor runs (409 while another one runs)."""
    gw = gateway()
    image = gw.image()
    moving = [d for d in proposal.diffs if (d.topic, d.partition) in _ongoing(image)]
    if moving:
        raise Conflict(
            f"partition {moving[0].topic}-{moving[0].partition} is being reassigned; "
            "wait for it or cancel it before rebalancing"
        )
    with store.rebalance_lock(gw, blocking=True) as locked:
        if not locked:
            raise KafkaUnavailable("the rebalance executor is busy; retry")
        current = store.rebalance_load(gw)
        if current is not None and current.get("state") == "running":
            raise Conflict(
                f"rebalance {current['id']} is still running; cancel it (DELETE) or wait"
            )
        now = store.now_ms()
        plan = {
            "id": uuid.uuid4().hex,
            "state": "running" if proposal.diffs else "completed",
            "created_ms": now,
            "finished_ms": None if proposal.diffs else now,
            "concurrency": concurrency,
            "throttle_bytes_per_sec": throttle_bytes_per_sec,
            "election": None,
            "message": "" if proposal.diffs else "the cluster is already balanced",
            "before": proposal.before.to_dict(),
            "after": proposal.after.to_dict(),
            "partitions": [
                {
                    **d.to_dict(),
                    "status": "pending",
                    "message": "",
                    "started_ms": None,
                    "finished_ms": None,
                }
                for d in proposal.diffs
            ],
        }
        store.rebalance_save(gw, plan)
    return plan


def rebalance_cancel() -> dict[str, Any]:
    """Stop the running plan: submit nothing more and cancel the moves in flight."""
    gw = gateway()
    with store.rebalance_lock(gw, blocking=True) as locked:
        if not locked:
            raise KafkaUnavailable("the rebalance executor is busy; retry")
        plan = store.rebalance_load(gw)
        if plan is None or plan.get("state") != "running":
            raise Conflict("no rebalance is running")
        in_flight = [p for p in plan["partitions"] if p["status"] == "in_flight"]
        results = (
            reassignments_alter(gw, [(p["topic"], p["partition"], None) for p in in_flight])
            if in_flight
            else {}
        )
        now = store.now_ms()
        for item in plan["partitions"]:
            if item["status"] == "pending":
                item["status"] = "cancelled"
            elif item["status"] == "in_flight":
                error, message = results.get((item["topic"], item["partition"]), ("NONE", None))
                # NO_REASSIGNMENT_IN_PROGRESS: it completed just before the cancel arrived.
                item["status"] = "cancelled" if error == "NONE" else "done"
                item["message"] = "" if error == "NONE" else (message or error)
                item["finished_ms"] = now
        plan["state"] = "cancelled"
        plan["finished_ms"] = now
        plan["message"] = "cancelled by an operator"
        store.rebalance_save(gw, plan)
    throttles_clear_if_idle(gw=gw)
    return plan
