"""Retention and compaction on command: a broker's side of the command channel.

Theory of operation
-------------------
Celery decides *when* logs are trimmed and compacted (``brokers.ops.housekeeping``); the
broker that owns the files does the work. The two sides meet on the broker command channel
(``weir.commands``: one Redis stream per broker, one reply list per command), so nothing
non-Kafka travels on the Kafka port. :class:`Housekeeping` registers three commands there;
it gets the replica manager, the topic configs and the clock, not the whole broker.

Commands:

``inventory`` ``{"topics": [...] | null}``
    Every local replica (of those topics): log start, LEO, HW, leadership, its segments
    (base offset, next offset, size, largest timestamp), the effective topic configs that
    retention and compaction obey, and for compacted topics the cleaner checkpoint and the
    dirty ratio. The driver decides from the leader's inventory.
``delete_records_before`` ``{"partitions": [{"topic", "partition", "offset"}]}``
    Move each log start up to ``offset`` (``Log.delete_records_before``: whole segments
    below it go) and write ``log-start-offset-checkpoint``. A leader refuses an offset above
    its HW; a follower whose LEO is still below the offset leaves it to its fetcher (the
    leader answers OFFSET_OUT_OF_RANGE and the fetcher restarts the log at the leader's
    log start), so no replica ever fetches deleted data again.
``compact`` ``{"topic", "partition", "now_ms"?}``
    Kafka's log cleaner on this replica: ``cleanable_range`` from the cleaner checkpoint,
    ``prepare_clean`` in a worker thread (reading and rewriting inactive segments is the
    heavy part; the event loop keeps serving Kafka meanwhile), ``commit_clean`` back on the
    loop thread (the ``Log`` is single-threaded), then the checkpoint moves to the clean's
    ``first_dirty_offset``. The answer is the ``CleanStats`` and how many segments fewer
    the log has (the cleaner merges what it shrank).

``log.cleaner.enable`` (read-only, default true) is this broker's own switch, as on a Kafka
broker whose cleaner is not started: with false, ``compact`` skips every partition here
(``"skipped"``, no error) and the inventory says so (``cleaner_enabled``), so its compacted
logs keep growing while the other replicas' are still compacted.

Each partition has a lock: a retention command waits for a clean of the same partition to
finish (rather than making it abort), and one clean runs at a time per broker, as with
Kafka's default ``log.cleaner.threads=1``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.commands import CommandError
from weir.log.errors import LogError

if TYPE_CHECKING:
    from weir.commands import CommandServer
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager

__all__ = ["Housekeeping", "partition_inventory"]

log = logging.getLogger("weir.housekeeping")

# On shutdown, how long a clean in progress gets to stop reading the logs before they close.
STOP_WAIT_S = 4.0


class CleanCancelledError(Exception):
    """Raised inside the cleaner's thread (through its progress callback) on shutdown."""


class Housekeeping:
    """Retention and compaction commands of one broker (see the module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        *,
        topic_config: Callable[[str], Any],
        time_ms: Callable[[], int],
        cleaner_enabled: bool = True,
    ) -> None:
        self.replicas = replicas
        self.topic_config = topic_config
        self.time_ms = time_ms
        self.cleaner_enabled = cleaner_enabled
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._cleaning = asyncio.Semaphore(1)

    def register(self, server: CommandServer) -> None:
        """Serve ``inventory``, ``delete_records_before`` and ``compact`` on ``server``."""
        server.register("inventory", self._inventory)
        server.register("delete_records_before", self._delete_records_before)
        server.register("compact", self.compact)

    async def _inventory(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.inventory(args.get("topics"))

    async def _delete_records_before(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self.delete_records_before(args.get("partitions"))

    # inventory ------------------------------------------------------------------------
    def inventory(self, topics: Any) -> dict[str, Any]:
        if topics is not None and not (
            isinstance(topics, list) and all(isinstance(t, str) for t in topics)
        ):
            raise CommandError("topics must be a list of names or null")
        wanted = None if topics is None else set(topics)
        now = self.time_ms()
        partitions = []
        for partition in list(self.replicas.partitions()):
            if wanted is not None and partition.topic not in wanted:
                continue
            if partition.log.closed:
                continue
            partitions.append(
                partition_inventory(
                    partition,
                    config=self.topic_config(partition.topic),
                    cleaner_checkpoint=self.replicas.cleaner_checkpoint(
                        partition.topic, partition.index
                    ),
                    first_dirty_offset=self.replicas.cleaner_offset(partition),
                    now_ms=now,
                )
            )
        return {"now_ms": now, "cleaner_enabled": self.cleaner_enabled, "partitions": partitions}

    # retention ------------------------------------------------------------------------
    async def delete_records_before(self, items: Any) -> dict[str, Any]:
        if not isinstance(items, list):
            raise CommandError("partitions must be a list of {topic, partition, offset}")
        results = []
        moved = False
        for item in items:
            topic, index, offset = _partition_args(item, "offset")
            outcome = await self._delete_one(topic, index, offset)
            moved = moved or outcome.get("segments_deleted", 0) > 0 or outcome.get("moved", False)
            results.append(outcome)
        if moved:
            # A restart must not resurrect the old log start (its segments are gone anyway,
            # but the offsets below it inside the first kept segment are not).
            self.replicas.checkpoint_log_starts()
        return {"partitions": results}

    async def _delete_one(self, topic: str, index: int, offset: int) -> dict[str, Any]:
        outcome: dict[str, Any] = {"topic": topic, "partition": index, "offset": offset}
        partition = self.replicas.get(topic, index)
        if partition is None:
            return {**outcome, "error": f"no replica of {topic}-{index} on this broker"}
        async with self._lock(topic, index):
            log_obj = partition.log
            if log_obj.closed:
                return {**outcome, "error": f"the log of {topic}-{index} is closed"}
            start = log_obj.log_start_offset
            outcome.update(log_start_before=start, log_start=start)
            if partition.is_leader and offset > partition.high_watermark:
                return {
                    **outcome,
                    "error": f"offset {offset} is above the high watermark "
                    f"{partition.high_watermark} of {topic}-{index}",
                }
            if offset > log_obj.log_end_offset:
                # A lagging follower: its fetcher meets OFFSET_OUT_OF_RANGE at the leader
                # and restarts the log at the leader's (new) log start.
                return {**outcome, "deferred": True, "log_end_offset": log_obj.log_end_offset}
            segments, size = len(log_obj.segments), log_obj.size_bytes
            try:
                new_start = partition.delete_records_before(offset)
            except LogError as exc:
                return {**outcome, "error": str(exc)}
            deleted = segments - len(log_obj.segments)
            if new_start > start:
                log.info(
                    "retention: %s-%d log start %d -> %d (%d segments, %d bytes deleted)",
                    topic,
                    index,
                    start,
                    new_start,
                    deleted,
                    size - log_obj.size_bytes,
                )
            return {
                **outcome,
                "log_start": new_start,
                "moved": new_start > start,
                "segments_deleted": deleted,
                "bytes_deleted": size - log_obj.size_bytes,
            }

    # compaction -----------------------------------------------------------------------
    async def compact(self, args: dict[str, Any]) -> dict[str, Any]:
        topic, index, _ = _partition_args(args, None)
        now_arg = args.get("now_ms")
        if now_arg is not None and (isinstance(now_arg, bool) or not isinstance(now_arg, int)):
            raise CommandError("now_ms must be an integer")
        partition = self.replicas.get(topic, index)
        if partition is None:
            raise CommandError(f"no replica of {topic}-{index} on this broker")
        config = self.topic_config(topic)
        if not config.compact:
            raise CommandError(
                f"{topic} has cleanup.policy={','.join(config.cleanup_policy)}, not compact"
            )
        if not self.cleaner_enabled:
            return {
                "topic": topic,
                "partition": index,
                "is_leader": partition.is_leader,
                "stats": None,
                "skipped": "log.cleaner.enable=false on this broker",
            }
        from weir.log import cleaner  # written alongside; imported when first needed

        async with self._cleaning, self._lock(topic, index):
            log_obj = partition.log
            if log_obj.closed:
                raise CommandError(f"the log of {topic}-{index} is closed")
            now = self.time_ms() if now_arg is None else now_arg
            clean_offset = self.replicas.cleaner_offset(partition)
            first, end = cleaner.cleanable_range(
                log_obj,
                clean_offset=clean_offset,
                high_watermark=partition.high_watermark,
                now_ms=now,
                min_compaction_lag_ms=config.min_compaction_lag_ms,
            )
            base = {
                "topic": topic,
                "partition": index,
                "is_leader": partition.is_leader,
                "clean_offset": clean_offset,
                "range": [first, end],
            }
            if end <= first:
                return {**base, "stats": None, "skipped": "nothing to clean"}
            stopping = threading.Event()

            def progress(_fraction: float) -> None:
                # The cleaner reports progress as it goes: the place to give up when the
                # broker is stopping (its logs are about to close under the thread).
                if stopping.is_set():
                    raise CleanCancelledError(f"clean of {topic}-{index} cancelled")

            work = asyncio.ensure_future(
                asyncio.to_thread(
                    cleaner.prepare_clean,
                    log_obj,
                    clean_offset=first,
                    end_offset=end,
                    now_ms=now,
                    delete_retention_ms=config.delete_retention_ms,
                    progress=progress,
                )
            )
            try:
                prepared = await asyncio.shield(work)
            except asyncio.CancelledError:
                stopping.set()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait({work}, timeout=STOP_WAIT_S)
                raise
            segments_before = len(log_obj.segments)
            try:
                stats = cleaner.commit_clean(log_obj, prepared)
            except cleaner.CleanAbortedError as exc:
                raise CommandError(f"clean of {topic}-{index} aborted: {exc}") from None
            self.replicas.update_cleaner_offset(partition, stats.first_dirty_offset)
            log.info(
                "compacted %s-%d [%d, %d): %d -> %d bytes, %d of %d records kept",
                topic,
                index,
                first,
                end,
                stats.bytes_before,
                stats.bytes_after,
                stats.records_kept,
                stats.records_read,
            )
            return {
                **base,
                "stats": dataclasses.asdict(stats),
                # Cleaning merges small cleaned segments (Kafka groups them by size).
                "segments_removed": segments_before - len(log_obj.segments),
            }

    def _lock(self, topic: str, index: int) -> asyncio.Lock:
        return self._locks.setdefault((topic, index), asyncio.Lock())


def partition_inventory(
    partition: Partition,
    *,
    config: Any,
    cleaner_checkpoint: int | None,
    first_dirty_offset: int,
    now_ms: int,
) -> dict[str, Any]:
    """What the driver needs to decide retention and compaction for one local replica."""
    log_obj = partition.log
    segments = log_obj.segments
    rows = []
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        rows.append(
            {
                "base_offset": segment.base_offset,
                "next_offset": log_obj.log_end_offset if following is None else following,
                "size": segment.size,
                "largest_timestamp": _largest_timestamp(segment),
            }
        )
    entry: dict[str, Any] = {
        "topic": partition.topic,
        "partition": partition.index,
        "is_leader": partition.is_leader,
        "leader_epoch": partition.leader_epoch,
        "log_start_offset": log_obj.log_start_offset,
        "log_end_offset": log_obj.log_end_offset,
        "high_watermark": partition.high_watermark,
        "size_bytes": log_obj.size_bytes,
        "segments": rows,
        "config": {
            "cleanup.policy": list(config.cleanup_policy),
            "retention.ms": config.retention_ms,
            "retention.bytes": config.retention_bytes,
            "min.cleanable.dirty.ratio": config.min_cleanable_dirty_ratio,
            "delete.retention.ms": config.delete_retention_ms,
            "min.compaction.lag.ms": config.min_compaction_lag_ms,
            "max.compaction.lag.ms": config.max_compaction_lag_ms,
            "segment.bytes": config.segment_bytes,
        },
        "cleaner_checkpoint": cleaner_checkpoint,
        "first_dirty_offset": first_dirty_offset,
        "dirty": None,
    }
    if config.compact:
        entry["dirty"] = _dirty(
            partition, first_dirty_offset, now_ms=now_ms, max_lag_ms=config.max_compaction_lag_ms
        )
    return entry


def _dirty(
    partition: Partition, first_dirty_offset: int, *, now_ms: int, max_lag_ms: int
) -> dict[str, Any] | None:
    """The dirty ratio and, for ``max.compaction.lag.ms``, how overdue the oldest dirty
    record is (``max_compaction_delay_ms``, 0 when it is not)."""
    try:
        from weir.log import cleaner
    except ImportError:  # the cleaner is not installed: no compaction decisions
        return None
    dirty_bytes, total, ratio = cleaner.dirty_ratio(
        partition.log, clean_offset=first_dirty_offset, high_watermark=partition.high_watermark
    )
    overdue = cleaner.max_compaction_delay(
        partition.log,
        clean_offset=first_dirty_offset,
        now_ms=now_ms,
        max_compaction_lag_ms=max_lag_ms,
    )
    return {
        "dirty_bytes": dirty_bytes,
        "cleanable_bytes": total,
        "ratio": ratio,
        "max_compaction_delay_ms": overdue,
    }


def _largest_timestamp(segment: Any) -> int:
    """Kafka's ``LogSegment.largestTimestamp``: the max record timestamp, or the file's
    modification time for a segment whose records carry none."""
    timestamp = int(segment.largest_timestamp)
    if timestamp >= 0:
        return timestamp
    try:
        return int(os.stat(segment.log_path).st_mtime * 1000)
    except OSError:
        return -1


def _partition_args(item: Any, number: str | None) -> tuple[str, int, int]:
    """``topic``, ``partition`` and (when ``number`` names it) that integer field."""
    if not isinstance(item, dict):
        raise CommandError("each partition must be an object")
    topic, index = item.get("topic"), item.get("partition")
    if not isinstance(topic, str) or not topic:
        raise CommandError("topic must be a non-empty string")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise CommandError(f"partition of {topic} must be a non-negative integer")
    value = 0
    if number is not None:
        raw = item.get(number)
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise CommandError(f"{number} of {topic}-{index} must be a non-negative integer")
        value = raw
    return topic, index, value
