"""What a running ``mirror-maker`` process reports about its flows, and where it is kept.

Every ``mirror-maker`` process publishes, every ``PUBLISH_INTERVAL_S`` seconds, one
``FlowStatus`` per flow it runs to the coordination Redis (``WEIR_REDIS_URL``, the cluster
namespace of ``WEIR_CLUSTER_ID``) under ``weir:<cluster_id>:mirror:<flow>:<process_id>``, with
a time to live of ``STATUS_TTL_S``: a process that dies disappears from the listing on its own
within that time. The control plane (``/api/mirrors/``, the ``/mirrors/`` page, ``/metrics``)
reads them with ``StatusStore.read_all`` and merges the processes of one flow.

This is observability only, as the brokers' state publisher is: the mirror runs against any
Kafka-protocol clusters, with or without Weir's Redis, and a publish that fails is logged
once and retried at the next round; it never stops replication.

The record is plain JSON (``FlowStatus.to_json`` / ``from_json``); fields a reader does not
know are ignored, so processes of different versions can share one Redis.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

__all__ = [
    "PUBLISH_INTERVAL_S",
    "STATUS_TTL_S",
    "FlowState",
    "FlowStatus",
    "GroupCheckpoint",
    "PartitionStatus",
    "StatusStore",
    "new_process_id",
    "now_ms",
]

PUBLISH_INTERVAL_S = 2.0
STATUS_TTL_S = 15

FlowState = Literal["starting", "running", "retrying", "stopped"]


def now_ms() -> int:
    return int(time.time() * 1000)


def new_process_id() -> str:
    """``<host>-<pid>-<random>``: unique per process start, readable in the dashboard."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(slots=True)
class PartitionStatus:
    """One source partition a process copies (only the process that owns it reports it)."""

    source_topic: str
    partition: int
    target_topic: str
    records: int = 0  # copied by this process since it started
    bytes: int = 0
    last_source_offset: int = -1
    last_target_offset: int = -1
    committed_offset: int = -1  # next source offset to copy after a restart
    source_end_offset: int = -1  # source high watermark, refreshed each publish
    lag_records: int = 0  # source_end_offset - position (never negative)
    lag_seconds: float = 0.0  # age of the oldest source record not yet copied, 0 when none
    replication_latency_ms: float = -1.0  # last record: target ack time - record timestamp
    replication_latency_max_ms: float = -1.0  # since the previous publish
    record_age_ms: float = -1.0  # last record: poll time - record timestamp


@dataclass(slots=True)
class GroupCheckpoint:
    """One translated group offset (what the checkpoint task last wrote)."""

    group: str
    source_topic: str
    partition: int
    target_topic: str
    upstream_offset: int  # committed on the source
    downstream_offset: int  # the translated offset on the target
    exact: bool  # False when the mirror has not yet copied up to the committed offset


@dataclass(slots=True)
class FlowStatus:
    """One flow as one process runs it."""

    flow: str  # "src->dst"
    source: str
    target: str
    process_id: str
    state: FlowState = "starting"
    started_at_ms: int = field(default_factory=now_ms)
    updated_at_ms: int = field(default_factory=now_ms)
    replicating: bool = True  # False: the flow only emits heartbeats (not enabled)
    topics: list[str] = field(default_factory=list)  # source topics this flow mirrors
    skipped_topics: dict[str, str] = field(default_factory=dict)  # source topic -> why
    partitions: list[PartitionStatus] = field(default_factory=list)
    records_total: int = 0
    bytes_total: int = 0
    record_rate: float = 0.0  # records/s over the last publish interval
    byte_rate: float = 0.0
    # The checkpoint/heartbeat leader among the flow's processes (one at a time).
    leader: bool = False
    last_checkpoint_ms: int | None = None
    last_heartbeat_ms: int | None = None
    checkpoints: list[GroupCheckpoint] = field(default_factory=list)
    synced_groups: list[str] = field(default_factory=list)  # offsets written on the target
    skipped_active_groups: list[str] = field(default_factory=list)  # active on the target
    error: str | None = None  # the current problem (retrying), None when healthy
    errors: list[dict[str, Any]] = field(default_factory=list)  # recent {"at_ms", "message"}

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> FlowStatus:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["partitions"] = [_load(PartitionStatus, p) for p in data.get("partitions", [])]
        values["checkpoints"] = [_load(GroupCheckpoint, c) for c in data.get("checkpoints", [])]
        return cls(**values)


def _load(cls: Any, data: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})


class StatusStore:
    """Publish and read ``FlowStatus`` records in one cluster's Redis namespace."""

    def __init__(self, redis: Any, cluster_id: str) -> None:
        """``redis``: a synchronous ``redis.Redis`` (``weir.metadata.redis_url.sync_client``)."""
        self.redis = redis
        self.prefix = f"weir:{cluster_id}:mirror:"

    def key(self, status: FlowStatus) -> str:
        return f"{self.prefix}{status.flow}:{status.process_id}"

    def publish(self, status: FlowStatus, *, ttl_s: int = STATUS_TTL_S) -> None:
        status.updated_at_ms = now_ms()
        self.redis.set(self.key(status), status.to_json(), ex=ttl_s)

    def remove(self, status: FlowStatus) -> None:
        self.redis.delete(self.key(status))

    def read_all(self) -> list[FlowStatus]:
        """Every live process's status of every flow, sorted by flow then process."""
        keys = sorted(self.redis.scan_iter(match=f"{self.prefix}*", count=500))
        if not keys:
            return []
        out = []
        for raw in self.redis.mget(keys):
            if raw is None:  # expired between SCAN and MGET
                continue
            try:
                out.append(FlowStatus.from_json(raw))
            except (ValueError, TypeError):
                continue  # a record this version cannot read: skip it, never fail the page
        return sorted(out, key=lambda s: (s.flow, s.process_id))
