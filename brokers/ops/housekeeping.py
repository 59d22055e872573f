"""Retention and compaction runs, driven from the control plane (Celery) through Redis.

Theory of operation
-------------------
The brokers own the files; the control plane owns the schedule. A run talks to the brokers
over the broker command channel (``weir.commands``: one Redis stream per broker, one
reply list per command) in three steps:

1. **Inventory.** Every live broker holding replicas of the topics lists them: segments
   (base offset, next offset, size, largest timestamp), log start, LEO, HW, leadership, the
   effective topic configs it obeys, and for compacted topics the cleaner checkpoint and
   dirty ratio. Decisions are made from each partition's *leader* inventory.
2. **Decide** (pure functions, ``retention_decision`` and ``compaction_candidates``).
   Retention follows Kafka's ``UnifiedLog.deleteOldSegments`` for topics whose
   ``cleanup.policy`` includes ``delete``: first the oldest segments whose largest timestamp
   is more than ``retention.ms`` old (-1: no limit), then the oldest while the log stays at
   least ``retention.bytes`` without them (-1: no limit). Only inactive segments wholly below
   the HW qualify, each pass stops at the first segment that does not, and the new log
   start is the base offset of the first segment kept. Compaction picks partitions of
   topics whose policy includes ``compact`` (``__consumer_offsets`` among them) whose dirty
   ratio reached ``min.cleanable.dirty.ratio``, dirtiest first.
3. **Act.** Every replica's broker (leader and followers) is told to move its log start
   (``delete_records_before``) or to compact. Replicas act on their own logs, so follower
   data is removed too and nobody fetches it again. A replica whose log start is behind its
   leader's (it was down during an earlier run; DeleteRecords moves only the leader's) is
   moved up to the leader's on every retention run, whatever the topic's policy.

Nothing here can hang: a broker without a live lease is an error at once, and one that does
not answer before the run's deadline is an error when the deadline passes. Every problem is
one line in ``HousekeepingResult.errors``; the rest of the run goes on. ``detail`` holds one
entry per partition acted on (per replica outcomes included).

Counting: ``segments_deleted`` and ``bytes_reclaimed`` add up every replica (disk space;
for compaction, segments the cleaner merged away); ``records_removed`` counts each partition
once (offsets below the new log start, or records the leader's clean dropped).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import redis

from weir.commands import BrokerReply, CommandClient
from weir.metadata.image import ClusterImage

if TYPE_CHECKING:
    from controlplane.cluster import ClusterGateway

__all__ = [
    "CompactionCandidate",
    "HousekeepingResult",
    "RetentionDecision",
    "compaction_candidates",
    "retention_decision",
    "run_compaction",
    "run_retention",
]

log = logging.getLogger("weir.ops.housekeeping")

Progress = Callable[[float, str], None]
PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class HousekeepingResult:
    """What one retention or compaction run did (see the module docstring for counting)."""

    partitions_examined: int
    partitions_acted: int
    segments_deleted: int
    bytes_reclaimed: int
    records_removed: int
    errors: list[str]
    detail: list[dict]


@dataclass(frozen=True, slots=True)
class RetentionDecision:
    """Where a partition's log should start: ``new_log_start`` (None: keep everything)."""

    new_log_start: int | None
    segments: int = 0
    bytes: int = 0
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactionCandidate:
    topic: str
    partition: int
    dirty_ratio: float
    dirty_bytes: int


# -- decisions (pure) ---------------------------------------------------------------------
def retention_decision(entry: Mapping[str, Any], *, now_ms: int) -> RetentionDecision:
    """Kafka's retention rules applied to one leader inventory entry."""
    config = entry["config"]
    if "delete" not in (p.lower() for p in config["cleanup.policy"]):
        return RetentionDecision(None)
    segments = entry["segments"]
    hw = int(entry["high_watermark"])
    # Never the active segment (the last), and only segments wholly below the HW.
    candidates = []
    for segment in segments[:-1]:
        if segment["next_offset"] > hw:
            break
        candidates.append(segment)
    retention_ms = int(config["retention.ms"])
    retention_bytes = int(config["retention.bytes"])
    reasons = []
    count = 0
    if retention_ms >= 0:
        while (
            count < len(candidates)
            and now_ms - candidates[count]["largest_timestamp"] > retention_ms
        ):
            count += 1
        if count:
            reasons.append("retention.ms")
    if retention_bytes >= 0:
        by_time = count
        excess = int(entry["size_bytes"]) - sum(s["size"] for s in candidates[:count])
        excess -= retention_bytes
        while count < len(candidates) and excess - candidates[count]["size"] >= 0:
            excess -= candidates[count]["size"]
            count += 1
        if count > by_time:
            reasons.append("retention.bytes")
    if count == 0:
        return RetentionDecision(None)
    new_start = max(int(segments[count]["base_offset"]), int(entry["log_start_offset"]))
    if new_start <= int(entry["log_start_offset"]):
        return RetentionDecision(None)
    return RetentionDecision(
        new_log_start=new_start,
        segments=count,
        bytes=sum(s["size"] for s in candidates[:count]),
        reasons=tuple(reasons),
    )


def compaction_candidates(
    entries: Iterable[Mapping[str, Any]], *, max_partitions: int | None = None
) -> list[CompactionCandidate]:
    """Leader entries of compacted topics whose dirty ratio reached
    ``min.cleanable.dirty.ratio``, or whose oldest dirty record is older than
    ``max.compaction.lag.ms`` (Kafka's ``needCompactionNow``: due whatever the ratio),
    dirtiest first."""
    found = []
    for entry in entries:
        config = entry["config"]
        dirty = entry.get("dirty")
        if "compact" not in (p.lower() for p in config["cleanup.policy"]) or not dirty:
            continue
        if dirty["dirty_bytes"] <= 0:
            continue
        overdue = int(dirty.get("max_compaction_delay_ms", 0)) > 0
        if not overdue and dirty["ratio"] < float(config["min.cleanable.dirty.ratio"]):
            continue
        found.append(
            CompactionCandidate(
                topic=entry["topic"],
                partition=int(entry["partition"]),
                dirty_ratio=float(dirty["ratio"]),
                dirty_bytes=int(dirty["dirty_bytes"]),
            )
        )
    found.sort(key=lambda c: (-c.dirty_ratio, -c.dirty_bytes, c.topic, c.partition))
    return found if max_partitions is None else found[: max(max_partitions, 0)]


# -- runs ---------------------------------------------------------------------------------
def _stoppers() -> tuple[type[BaseException], ...]:
    # Imported here, not at the top: controlplane.errors needs Django's settings, and the
    # pure decisions above are useful (and tested) without them.
    from controlplane.errors import KafkaUnavailable

    return (KafkaUnavailable, redis.RedisError, OSError)


@dataclass
class _Run:
    """Counters and messages of a run in progress."""

    progress: Progress | None
    # HousekeepingResult's fields, counted as the run goes.
    partitions_examined: int = 0
    partitions_acted: int = 0
    segments_deleted: int = 0
    bytes_reclaimed: int = 0
    records_removed: int = 0
    errors: list[str] = field(default_factory=list)
    detail: list[dict] = field(default_factory=list)

    def report(self, fraction: float, message: str) -> None:
        if self.progress is None:
            return
        try:
            self.progress(min(max(fraction, 0.0), 1.0), message)
        except Exception:  # a failing progress sink must not stop the housekeeping
            log.exception("progress callback failed")

    def result(self) -> HousekeepingResult:
        return HousekeepingResult(
            **{f.name: getattr(self, f.name) for f in fields(HousekeepingResult)}
        )


def _selected_topics(image: ClusterImage, topics: Sequence[str] | None, run: _Run) -> list[str]:
    if topics is None:
        return sorted(image.topics)
    for name in topics:
        if name not in image.topics:
            run.errors.append(f"unknown topic {name!r}")
    return sorted(t for t in set(topics) if t in image.topics)


@dataclass(frozen=True, slots=True)
class _Inventory:
    """Inventory entries: each partition's leader entry, and every replica's by broker."""

    leaders: dict[PartitionKey, dict[str, Any]]
    replicas: dict[PartitionKey, dict[int, dict[str, Any]]]


def _inventory(
    channel: CommandClient, image: ClusterImage, topics: list[str], run: _Run
) -> _Inventory:
    """Ask every broker holding replicas; an error for each partition without a leader entry."""
    holders: set[int] = set()
    for name in topics:
        for p in image.topics[name].partitions.values():
            holders.update(p.replicas)
    replies = channel.request(
        {b: ("inventory", {"topics": topics}) for b in sorted(holders)},
    )
    found = _Inventory(leaders={}, replicas={})
    for broker_id, reply in sorted(replies.items()):
        if not reply.ok:
            run.errors.append(f"broker {broker_id}: inventory failed: {reply.error}")
            continue
        for entry in (reply.result or {}).get("partitions", []):
            key = (entry["topic"], int(entry["partition"]))
            found.replicas.setdefault(key, {})[broker_id] = entry
            if entry.get("is_leader"):
                found.leaders[key] = entry
    for name in topics:
        for index, p in sorted(image.topics[name].partitions.items()):
            if (name, index) in found.leaders:
                continue
            if p.leader < 0:
                run.errors.append(f"{name}-{index}: no leader")
            elif replies.get(p.leader) is not None and replies[p.leader].ok:
                run.errors.append(f"{name}-{index}: broker {p.leader} does not lead it (yet)")
            else:
                run.errors.append(f"{name}-{index}: no inventory from its leader {p.leader}")
    return found


@dataclass(frozen=True, slots=True)
class _RetentionPlan:
    """Move the log start of ``brokers``' replicas of a partition up to ``target``."""

    target: int
    leader_start: int
    reasons: tuple[str, ...]
    brokers: tuple[int, ...]


def _retention_plans(
    image: ClusterImage, found: _Inventory, *, now_ms: int, run: _Run
) -> dict[PartitionKey, _RetentionPlan]:
    """Kafka's rules on each leader, plus catch-up: a replica whose log start is behind its
    leader's (it was down during an earlier run, or DeleteRecords moved only the leader)
    moves there too, so no replica keeps serving data its leader dropped."""
    plans: dict[PartitionKey, _RetentionPlan] = {}
    for key, entry in sorted(found.leaders.items()):
        replicas = image.topics[key[0]].partitions[key[1]].replicas
        leader_start = int(entry["log_start_offset"])
        if "delete" in (p.lower() for p in entry["config"]["cleanup.policy"]):
            run.partitions_examined += 1
            decision = retention_decision(entry, now_ms=now_ms)
            if decision.new_log_start is not None:
                plans[key] = _RetentionPlan(
                    target=decision.new_log_start,
                    leader_start=leader_start,
                    reasons=decision.reasons,
                    brokers=tuple(replicas),
                )
                continue
        behind = tuple(
            broker_id
            for broker_id, replica in sorted(found.replicas.get(key, {}).items())
            if int(replica["log_start_offset"]) < leader_start
        )
        if behind:
            plans[key] = _RetentionPlan(
                target=leader_start,
                leader_start=leader_start,
                reasons=("leader log start",),
                brokers=behind,
            )
    return plans


def _survey(
    gw: ClusterGateway, channel: CommandClient, topics: list[str] | None, run: _Run
) -> tuple[ClusterImage, _Inventory]:
    """Step 1 of every run: the metadata image and the brokers' inventory of ``topics``."""
    image = gw.image()
    selected = _selected_topics(image, topics, run)
    run.report(0.0, f"inventory of {len(selected)} topics")
    return image, _inventory(channel, image, selected, run)


def run_retention(
    *,
    gw: ClusterGateway,
    now_ms: int | None = None,
    topics: list[str] | None = None,
    progress: Progress | None = None,
    timeout_s: float = 60.0,
) -> HousekeepingResult:
    """Delete the segments past ``retention.ms`` / beyond ``retention.bytes`` everywhere."""
    run = _Run(progress)
    stoppers = _stoppers()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    channel = gw.commands(timeout_s=timeout_s)
    try:
        image, found = _survey(gw, channel, topics, run)
        run.report(0.2, f"inventory of {len(found.leaders)} partitions read")
        plans = _retention_plans(image, found, now_ms=now, run=run)
        if not plans:
            run.report(1.0, f"{run.partitions_examined} partitions examined, nothing to delete")
            return run.result()
        by_broker: dict[int, list[dict[str, Any]]] = {}
        for (name, index), plan in plans.items():
            for broker_id in plan.brokers:
                by_broker.setdefault(broker_id, []).append(
                    {"topic": name, "partition": index, "offset": plan.target}
                )
        answered = [0]

        def on_reply(reply: BrokerReply) -> None:
            answered[0] += 1
            run.report(
                0.2 + 0.8 * answered[0] / len(by_broker),
                f"broker {reply.broker_id} applied retention",
            )

        replies = channel.request(
            {b: ("delete_records_before", {"partitions": items}) for b, items in by_broker.items()},
            on_reply=on_reply,
        )
        _apply_retention_replies(run, plans, replies)
        run.report(
            1.0,
            f"{run.partitions_acted} of {run.partitions_examined} partitions trimmed, "
            f"{run.segments_deleted} segments deleted",
        )
    except stoppers as exc:
        run.errors.append(f"retention stopped: {exc}")
    return run.result()


def _apply_retention_replies(
    run: _Run,
    plans: Mapping[PartitionKey, _RetentionPlan],
    replies: Mapping[int, BrokerReply],
) -> None:
    outcomes: dict[PartitionKey, dict[int, dict[str, Any]]] = {}
    for broker_id, reply in sorted(replies.items()):
        if not reply.ok:
            run.errors.append(f"broker {broker_id}: retention failed: {reply.error}")
            continue
        for item in (reply.result or {}).get("partitions", []):
            outcomes.setdefault((item["topic"], int(item["partition"])), {})[broker_id] = item
    for (name, index), plan in sorted(plans.items()):
        replicas: dict[str, Any] = {}
        moved = False
        for broker_id in plan.brokers:
            item = outcomes.get((name, index), {}).get(broker_id)
            if item is None:
                reply = replies.get(broker_id)
                replicas[str(broker_id)] = {"error": reply.error if reply else "not asked"}
                continue
            if item.get("error"):
                run.errors.append(f"{name}-{index} on broker {broker_id}: {item['error']}")
            run.segments_deleted += int(item.get("segments_deleted", 0))
            run.bytes_reclaimed += int(item.get("bytes_deleted", 0))
            moved = moved or bool(item.get("moved"))
            replicas[str(broker_id)] = {
                k: item[k]
                for k in ("log_start", "segments_deleted", "bytes_deleted", "deferred", "error")
                if k in item
            }
        if moved:
            run.partitions_acted += 1
            run.records_removed += plan.target - plan.leader_start
        run.detail.append(
            {
                "topic": name,
                "partition": index,
                "log_start_before": plan.leader_start,
                "log_start": plan.target,
                "reasons": list(plan.reasons),
                "replicas": replicas,
            }
        )


def run_compaction(
    *,
    gw: ClusterGateway,
    now_ms: int | None = None,
    topics: list[str] | None = None,
    max_partitions: int | None = None,
    progress: Progress | None = None,
    timeout_s: float = 300.0,
) -> HousekeepingResult:
    """Compact the dirtiest partitions of compacted topics on every replica."""
    run = _Run(progress)
    stoppers = _stoppers()
    channel = gw.commands(timeout_s=timeout_s)
    try:
        image, found = _survey(gw, channel, topics, run)
        compacted = [
            entry
            for entry in found.leaders.values()
            if "compact" in (p.lower() for p in entry["config"]["cleanup.policy"])
        ]
        run.partitions_examined = len(compacted)
        blind = sorted({str(e["topic"]) for e in compacted if e.get("dirty") is None})
        if blind:
            run.errors.append(f"no dirty ratio (is the log cleaner installed?) for {blind}")
        chosen = compaction_candidates(compacted, max_partitions=max_partitions)
        run.report(0.05, f"{len(chosen)} of {run.partitions_examined} partitions to compact")
        for number, candidate in enumerate(chosen):
            if channel.remaining() <= 0:
                run.errors.append(
                    f"deadline of {timeout_s:.0f} s passed: {len(chosen) - number} "
                    "partitions not compacted"
                )
                break
            _compact_partition(run, channel, image, candidate, now_ms)
            run.report(
                0.05 + 0.95 * (number + 1) / len(chosen),
                f"compacted {candidate.topic}-{candidate.partition}",
            )
        if not chosen:
            run.report(1.0, f"{run.partitions_examined} partitions examined, none dirty enough")
    except stoppers as exc:
        run.errors.append(f"compaction stopped: {exc}")
    return run.result()


def _compact_partition(
    run: _Run,
    channel: CommandClient,
    image: ClusterImage,
    candidate: CompactionCandidate,
    now_ms: int | None,
) -> None:
    name, index = candidate.topic, candidate.partition
    partition = image.topics[name].partitions[index]
    args: dict[str, Any] = {"topic": name, "partition": index}
    if now_ms is not None:
        args["now_ms"] = now_ms
    replies = channel.request({b: ("compact", args) for b in partition.replicas})
    replicas: dict[str, Any] = {}
    cleaned = False
    for broker_id in partition.replicas:
        reply = replies[broker_id]
        if not reply.ok:
            run.errors.append(f"{name}-{index} on broker {broker_id}: {reply.error}")
            replicas[str(broker_id)] = {"error": reply.error}
            continue
        result = reply.result or {}
        stats = result.get("stats")
        replicas[str(broker_id)] = {
            "range": result.get("range"),
            "stats": stats,
            "segments_removed": result.get("segments_removed", 0),
            **({"skipped": result["skipped"]} if result.get("skipped") else {}),
        }
        if not stats:
            continue
        cleaned = True
        run.segments_deleted += int(result.get("segments_removed", 0))
        run.bytes_reclaimed += int(stats["bytes_before"]) - int(stats["bytes_after"])
        if broker_id == partition.leader:
            run.records_removed += int(stats["records_read"]) - int(stats["records_kept"])
    if cleaned:
        run.partitions_acted += 1
    run.detail.append(
        {
            "topic": name,
            "partition": index,
            "dirty_ratio": candidate.dirty_ratio,
            "dirty_bytes": candidate.dirty_bytes,
            "replicas": replicas,
        }
    )
