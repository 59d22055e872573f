"""The rebalance executor: runs a stored plan a few partitions at a time.

Theory of operation
-------------------
``POST /api/cluster/rebalance/`` with ``dryrun: false`` stores the plan in Redis
(:mod:`brokers.ops.store`); :func:`tick`, run every second by ``manage.py monitor``
(``brokers/periodic.py``), moves it forward. One tick, under a Redis lock so two monitors
never act at once:

1. reads the metadata image and marks in-flight partitions ``done`` once the controller has
   finished them (no adding/removing replicas, replica list as planned) or ``failed`` when
   something else changed them (cancelled by hand, topic deleted);
2. submits pending partitions until ``concurrency`` are in flight — setting the replication
   throttle for them first when the plan has one — with one AlterPartitionReassignments;
   a partition the controller refuses is marked ``failed`` with Kafka's error;
3. when nothing is pending or in flight, runs a preferred-leader election over the plan's
   partitions (so leadership follows the new first replicas), removes the throttles and
   marks the plan ``completed``.

A tick is idempotent and keeps no state in memory, so the monitor may restart at any time;
tests call :func:`tick` in a loop.
"""

from __future__ import annotations

import logging
from typing import Any

from brokers.ops import services, store
from brokers.ops.planner import PartitionDiff
from controlplane.cluster import ClusterGateway, gateway
from controlplane.errors import ApiError
from weir.metadata.image import original_replicas

__all__ = ["tick"]

log = logging.getLogger("weir.ops.rebalance")


def tick(*, gw: ClusterGateway | None = None) -> dict[str, Any] | None:
    """Move the running plan forward one step; the plan as stored afterwards (or None)."""
    gw = gw or gateway()
    with store.rebalance_lock(gw, blocking=False) as locked:
        if not locked:
            return None
        plan = store.rebalance_load(gw)
        if plan is None or plan.get("state") != "running":
            return plan
        try:
            _advance(gw, plan)
        except ApiError as exc:  # the cluster did not answer: try again next tick
            log.warning("rebalance %s: %s", plan["id"], exc.message)
            plan["message"] = exc.message
        store.rebalance_save(gw, plan)
    if plan["state"] != "running":
        services.throttles_clear_if_idle(gw=gw)
    return plan


def _partition_or_fail(image: Any, item: dict[str, Any], now: int) -> Any:
    """The plan item's partition in ``image``; None (and the item failed) once it is gone."""
    topic = image.topics.get(item["topic"])
    partition = topic.partitions.get(item["partition"]) if topic else None
    if partition is None:
        item.update(status="failed", message="the partition no longer exists", finished_ms=now)
    return partition


def _advance(gw: ClusterGateway, plan: dict[str, Any]) -> None:
    image = gw.image()
    now = store.now_ms()
    items = plan["partitions"]
    for item in items:
        if item["status"] != "in_flight":
            continue
        partition = _partition_or_fail(image, item, now)
        if partition is None or partition.adding_replicas or partition.removing_replicas:
            continue
        elif list(partition.replicas) == item["proposed_replicas"]:
            item.update(status="done", finished_ms=now)
        else:
            item.update(
                status="failed",
                message=f"the move ended with replicas {list(partition.replicas)}, not the "
                "planned ones (cancelled or replaced by another reassignment)",
                finished_ms=now,
            )
    in_flight = sum(1 for i in items if i["status"] == "in_flight")
    batch = []
    for item in items:
        if in_flight + len(batch) >= plan["concurrency"]:
            break
        if item["status"] != "pending":
            continue
        partition = _partition_or_fail(image, item, now)
        if partition is None:
            continue
        if partition.adding_replicas or partition.removing_replicas:
            continue  # someone else is moving it; wait for that to finish
        batch.append((item, partition))
    if batch:
        _submit(gw, plan, image, batch, now)
    if any(i["status"] in ("pending", "in_flight") for i in items):
        plan["message"] = ""
        return
    _finish(gw, plan, now)


def _submit(gw: ClusterGateway, plan: dict[str, Any], image: Any, batch: list, now: int) -> None:
    rate = plan.get("throttle_bytes_per_sec")
    if rate:
        moves = [
            PartitionDiff(
                i["topic"], i["partition"], original_replicas(p), tuple(i["proposed_replicas"])
            )
            for i, p in batch
        ]
        services.throttle_set(gw, image, moves, rate)
    results = services.reassignments_alter(
        gw, [(i["topic"], i["partition"], i["proposed_replicas"]) for i, _ in batch]
    )
    for item, _ in batch:
        error, message = results.get((item["topic"], item["partition"]), ("NONE", None))
        if error == "NONE":
            item.update(status="in_flight", started_ms=now)
        else:
            item.update(status="failed", message=message or error, finished_ms=now)


def _finish(gw: ClusterGateway, plan: dict[str, Any], now: int) -> None:
    done = [(i["topic"], i["partition"]) for i in plan["partitions"] if i["status"] == "done"]
    if done and plan.get("election") is None:
        election = services.leaders_elect(gw, done)
        plan["election"] = {
            "elected": election["elected"],
            "not_needed": election["not_needed"],
            "failed": election["failed"],
        }
    failed = sum(1 for i in plan["partitions"] if i["status"] == "failed")
    plan["state"] = "completed"
    plan["finished_ms"] = now
    plan["message"] = (
        f"{failed} partition(s) could not be moved" if failed else "every move completed"
    )
