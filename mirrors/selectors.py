"""Reads of the mirrors app: every flow with its processes, lag, throughput and ages.

Theory of operation
-------------------
A flow's view merges two sources (see :mod:`mirrors.sources`):

1. The ``FlowStatus`` records of the live ``mirror-maker`` processes: which processes run it
   and in what state, their errors, the topics and partitions each one copies with its
   counters, throughput (summed over processes), the checkpoint/heartbeat leader's last
   checkpoint and heartbeat, and the target groups offset sync skipped because they were
   active there.
2. When ``WEIR_MIRROR_PROPERTIES`` is set, the clusters themselves, so the lag is right even
   when no process is alive (a stopped mirror is exactly when an operator looks): for an
   enabled flow, the source topics the flow mirrors (``topics.skip_reason``, MM2's rule), their
   high watermarks and log starts (two batched ListOffsets), and the committed offsets of the
   mirror's source group ``mirror-<src>-><dst>`` (one OffsetFetch). A partition's lag in
   records is high watermark - committed offset (the log start when nothing is committed:
   the mirror starts at ``earliest``); its lag in seconds is the age of the oldest record not
   yet copied, read with one assign-only consumer over every lagging partition within a short
   budget. The result is cached for :data:`CLUSTER_CACHE_S` seconds per flow, so a page open
   in several browsers and a Prometheus scrape cost one read. If a cluster does not answer,
   the flow says so in ``cluster_error`` and the processes' own figures are shown.

Every age is in seconds from now; ``None`` means never (no checkpoint written yet).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import redis
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from controlplane.errors import ApiError, KafkaUnavailable, NotFound
from groups.selectors import group_committed_offsets, partition_offsets
from mirrors.sources import (
    MirrorSetup,
    admin_client,
    consumer,
    mirror_setup,
    published_statuses,
)
from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.replicate import group_id
from weir.mirror.status import FlowStatus, now_ms
from weir.mirror.topics import skip_reason

__all__ = ["CLUSTER_CACHE_S", "flow_get", "flow_list", "merge_state"]

CLUSTER_CACHE_S = 2.0
TIMEOUT_S = 5.0
# How long the lag-seconds read waits for the first uncopied record of each partition.
LAG_SECONDS_BUDGET_S = 1.5
MAX_ERRORS = 20

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SourceLag:
    """One source partition's lag as the clusters say it."""

    high_watermark: int
    position: int  # the mirror group's committed offset (log start when none)
    lag_records: int
    lag_seconds: float | None  # None: not read within the budget


_cache_lock = threading.Lock()
_cluster_cache: dict[tuple[str, int], tuple[float, dict[TP, SourceLag]]] = {}


def merge_state(states: Iterable[str]) -> str:
    """One flow's state from its processes': ``down`` without any, ``retrying`` when one is,
    ``running`` when all are, else ``starting`` (or ``stopped`` when every process stops)."""
    found = set(states)
    if not found:
        return "down"
    for state in ("retrying", "starting"):
        if state in found:
            return state
    return "running" if "running" in found else "stopped"


def _age_s(at_ms: int | None, now: int) -> float | None:
    return None if at_ms is None else max(0.0, (now - at_ms) / 1000)


def _mirrored_partitions(admin: Any, flow: Flow) -> list[TP]:
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    return sorted(
        (name, partition)
        for name, info in metadata.topics.items()
        if info.error is None and skip_reason(flow, name) is None
        for partition in info.partitions
    )


def _oldest_uncopied_ages(
    config: MirrorConfig, flow: Flow, positions: dict[TP, int], now: int
) -> dict[TP, float]:
    """Age in seconds of the record at each position (the oldest not yet copied)."""
    if not positions:
        return {}
    reader = consumer(config, flow.source)
    ages: dict[TP, float] = {}
    try:
        reader.assign([TopicPartition(t, p, offset) for (t, p), offset in positions.items()])
        deadline = time.monotonic() + LAG_SECONDS_BUDGET_S
        while len(ages) < len(positions) and time.monotonic() < deadline:
            for message in reader.consume(500, 0.2):
                if message.error() is not None:
                    continue
                tp = (message.topic() or "", message.partition() or 0)
                if tp in positions and tp not in ages:
                    _, stamp = message.timestamp()
                    ages[tp] = max(0.0, (now - stamp) / 1000) if stamp > 0 else 0.0
                    reader.pause([TopicPartition(*tp)])
    finally:
        reader.close()
    return ages


def _read_source_lag(config: MirrorConfig, flow: Flow) -> dict[TP, SourceLag]:
    admin = admin_client(config, flow.source)
    partitions = _mirrored_partitions(admin, flow)
    if not partitions:
        return {}
    try:
        committed = group_committed_offsets(admin=admin, group=group_id(flow), timeout_s=TIMEOUT_S)
    except NotFound:  # the mirror never committed: it starts at the log start
        committed = {}
    ends = partition_offsets(
        admin=admin, partitions=partitions, spec=OffsetSpec.latest(), timeout_s=TIMEOUT_S
    )
    starts = partition_offsets(
        admin=admin, partitions=partitions, spec=OffsetSpec.earliest(), timeout_s=TIMEOUT_S
    )
    positions = {tp: max(committed.get(tp, starts[tp]), starts[tp]) for tp in partitions}
    lagging = {tp: positions[tp] for tp in partitions if ends[tp] > positions[tp]}
    ages = _oldest_uncopied_ages(config, flow, lagging, now_ms())
    return {
        tp: SourceLag(
            high_watermark=ends[tp],
            position=positions[tp],
            lag_records=max(0, ends[tp] - positions[tp]),
            lag_seconds=ages.get(tp) if tp in lagging else 0.0,
        )
        for tp in partitions
    }


def _source_lag(config: MirrorConfig, flow: Flow) -> dict[TP, SourceLag]:
    """:func:`_read_source_lag`, cached for :data:`CLUSTER_CACHE_S` per flow and config."""
    key = (flow.name, id(config))
    with _cache_lock:
        cached = _cluster_cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < CLUSTER_CACHE_S:
            return cached[1]
    found = _read_source_lag(config, flow)
    with _cache_lock:
        _cluster_cache[key] = (time.monotonic(), found)
    return found


def _partition_rows(
    flow: Flow | None, statuses: list[FlowStatus], lag: dict[TP, SourceLag] | None
) -> list[dict[str, Any]]:
    rows: dict[TP, dict[str, Any]] = {}
    # The freshest report of a partition wins (two reports happen while it changes owner).
    for status in sorted(statuses, key=lambda s: s.updated_at_ms):
        for p in status.partitions:
            rows[(p.source_topic, p.partition)] = {**asdict(p), "process_id": status.process_id}
    for tp, found in (lag or {}).items():
        row = rows.get(tp)
        if row is None:
            assert flow is not None
            row = rows[tp] = {
                "source_topic": tp[0],
                "partition": tp[1],
                "target_topic": flow.policy.format_remote_topic(flow.source, tp[0]),
                "process_id": None,
            }
        row["source_end_offset"] = found.high_watermark
        row["committed_offset"] = found.position
        row["lag_records"] = found.lag_records
        if found.lag_seconds is not None:
            row["lag_seconds"] = found.lag_seconds
        elif row.get("lag_seconds") is None:
            row["lag_seconds"] = None
    return [rows[tp] for tp in sorted(rows)]


def _flow_view(
    name: str, flow: Flow | None, statuses: list[FlowStatus], setup: MirrorSetup, now: int
) -> dict[str, Any]:
    source = flow.source if flow is not None else statuses[0].source
    target = flow.target if flow is not None else statuses[0].target
    enabled = flow.enabled if flow is not None else any(s.replicating for s in statuses)
    lag: dict[TP, SourceLag] | None = None
    cluster_error = None
    if flow is not None and flow.enabled and setup.config is not None:
        try:
            lag = _source_lag(setup.config, flow)
        except (KafkaException, ApiError) as exc:
            cluster_error = f"{flow.source}: {exc.message if isinstance(exc, ApiError) else exc}"
    partitions = _partition_rows(flow, statuses, lag)
    errors = sorted(
        (
            {"process_id": s.process_id, **e}
            for s in statuses
            for e in s.errors
            if isinstance(e, dict)
        ),
        key=lambda e: e.get("at_ms", 0),
        reverse=True,
    )[:MAX_ERRORS]
    checkpoints = [s.last_checkpoint_ms for s in statuses if s.last_checkpoint_ms is not None]
    heartbeats = [s.last_heartbeat_ms for s in statuses if s.last_heartbeat_ms is not None]
    last_checkpoint = max(checkpoints, default=None)
    last_heartbeat = max(heartbeats, default=None)
    lag_seconds = [p["lag_seconds"] for p in partitions if p.get("lag_seconds") is not None]
    topics = sorted(
        {t for s in statuses for t in s.topics} | {p["source_topic"] for p in partitions}
    )
    return {
        "flow": name,
        "source": source,
        "target": target,
        "enabled": enabled,
        "configured": flow is not None,
        "state": merge_state(s.state for s in statuses),
        "processes_alive": len(statuses),
        "processes": [
            {
                "process_id": s.process_id,
                "state": s.state,
                "leader": s.leader,
                "started_at_ms": s.started_at_ms,
                "updated_at_ms": s.updated_at_ms,
                "error": s.error,
            }
            for s in statuses
        ],
        "error": next((s.error for s in statuses if s.error), None),
        "errors": errors,
        "cluster_error": cluster_error,
        "lag_from": "clusters" if lag is not None else "processes",
        "topics": topics,
        "skipped_topics": {k: v for s in statuses for k, v in s.skipped_topics.items()},
        "partitions": partitions,
        "lag_records": sum(p.get("lag_records") or 0 for p in partitions),
        "lag_seconds": max(lag_seconds, default=0.0),
        "record_rate": sum(s.record_rate for s in statuses),
        "byte_rate": sum(s.byte_rate for s in statuses),
        "records_total": sum(s.records_total for s in statuses),
        "bytes_total": sum(s.bytes_total for s in statuses),
        "last_checkpoint_ms": last_checkpoint,
        "checkpoint_age_s": _age_s(last_checkpoint, now),
        "last_heartbeat_ms": last_heartbeat,
        "heartbeat_age_s": _age_s(last_heartbeat, now),
        "synced_groups": sorted({g for s in statuses for g in s.synced_groups}),
        "skipped_active_groups": sorted({g for s in statuses for g in s.skipped_active_groups}),
    }


def _statuses() -> list[FlowStatus]:
    try:
        return published_statuses()
    except (redis.RedisError, OSError) as exc:
        raise KafkaUnavailable(f"the coordination store did not answer: {exc}") from None


def _config_view(setup: MirrorSetup) -> dict[str, Any]:
    return {
        "path": setup.path,
        "loaded": setup.config is not None,
        "error": setup.error,
        "clusters": list(setup.config.clusters) if setup.config else [],
    }


def flow_list(*, with_clusters: bool = True) -> dict[str, Any]:
    """Every flow: the properties file's (when set) and any a live process publishes.
    ``with_clusters=False`` shows only what the processes publish (no cluster reads)."""
    setup = mirror_setup()
    by_flow: dict[str, list[FlowStatus]] = defaultdict(list)
    for status in _statuses():
        by_flow[status.flow].append(status)
    flows: dict[str, Flow | None] = {}
    if setup.config is not None:
        flows.update((f.name, f) for f in setup.config.flows)
    flows.update((name, flows.get(name)) for name in by_flow)
    used = setup if with_clusters else MirrorSetup(setup.path, None, setup.error)
    now = now_ms()
    return {
        "config": _config_view(setup),
        "at_ms": now,
        "flows": [_flow_view(n, flows[n], by_flow[n], used, now) for n in sorted(flows)],
    }


def flow_get(*, source: str, target: str) -> dict[str, Any]:
    """One flow (``source->target``); NotFound when neither the file nor a process has it."""
    name = f"{source}->{target}"
    setup = mirror_setup()
    statuses = [s for s in _statuses() if s.flow == name]
    flow = None
    if setup.config is not None:
        flow = next((f for f in setup.config.flows if f.name == name), None)
    if flow is None and not statuses:
        where = f"in {setup.path} nor " if setup.config is not None else ""
        raise NotFound(f"no mirror flow {name}: not {where}published by a running mirror-maker")
    now = now_ms()
    view = _flow_view(name, flow, statuses, setup, now)
    return {"config": _config_view(setup), "at_ms": now, **view}
