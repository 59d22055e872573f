"""The record side of one replication flow: copy source records to the target, at least once.

``Replicator`` does for one flow ``<src>-><dst>`` what MM2's ``MirrorSourceTask`` does inside
Kafka Connect, with plain confluent-kafka clients and no Connect cluster:

- A ``Consumer`` on the source (group ``mirror-<src>-><dst>``, ``enable.auto.commit=false``,
  ``isolation.level=read_committed``, ``auto.offset.reset=earliest`` as MM2) subscribes to the
  planned source topics (``topics.plan_topics``). Several replicators with the same group split
  the partitions through Kafka's own group protocol.
- An idempotent ``acks=all`` ``Producer`` on the target writes each record to the remote topic
  (``plan.remote_names``) and the *same partition number*, with its key, value, headers and
  timestamp (as CreateTime, whatever the source timestamp type). The target must already have
  the topics and enough partitions (``topics.apply_plan``); a record for a partition the
  target lacks fails its delivery and stops the replicator, never lands elsewhere.

Delivery guarantee
------------------
A source offset is committed only after the target acknowledged every record up to it: each
delivery callback advances that partition's *acknowledged position*; the idempotent producer
keeps per-partition order, so the callbacks of a partition arrive in offset order and the
position is the offset after the last acknowledged record. Batches are pipelined:
``run_once`` consumes a batch and hands it to the producer without waiting for the earlier
ones, up to ``_MAX_IN_FLIGHT`` unacknowledged records (beyond that it waits, in slices that
report how many records are waiting and give up when the runner stops). Every
``_COMMIT_INTERVAL_S``, and whenever the source has nothing new, it commits the acknowledged
positions synchronously. An unreachable target therefore holds records in the idempotent
producer, which retries them until ``message.timeout.ms``; the replicator never drops them
and never commits past them, and ``stalled_for`` tells how long the target has acknowledged
nothing. A crash anywhere therefore re-copies only records after the last commit
(duplicates, never a gap). A failed delivery stops the replicator with ``ReplicationError``
*before* anything past it is committed; a new replicator resumes from the last commit. When
partitions are revoked (rebalance) or the replicator closes, the producer is flushed and the
acknowledged positions committed first, so the next owner starts where this one stopped.
Source errors that librdkafka recovers from itself (a broker restarting, all
brokers down for a while) are logged at most every ``_LOG_EVERY_S`` seconds and replication
goes on when the source is back; only a fatal consumer error stops the replicator.

Subscription
------------
``set_topics`` replaces the mapping (new source topics, topics that left the filter); the
consumer re-subscribes, and the rebalance that follows commits what was acknowledged first.

Offset syncs
------------
For each acknowledged record the replicator knows both offsets (source, and target from the
delivery report) and feeds them to ``OffsetSyncPolicy``. It keeps the rule of MM2's
``OffsetSyncWriter.PartitionState``: a sync is *urgent* for the first record of a partition
in this replicator's lifetime, when the target offset has drifted ``offset.lag.max`` or more
past the last sync's (+1, because MM2 translates one past the sync), when source offsets were
skipped (compaction, transaction markers) and when the target went backwards (truncated).
Weir adds *break* syncs so that translation can be exact (``translate``): whenever the step
from the previous acknowledged pair to the current one is not (+1 source, +1 target), it
emits the previous pair (the end of the old linear run; unless it was the last sync already)
and the current one. Between two consecutive syncs of one lifetime the mapping is then
linear (``target = sync.target + (offset - sync.source)``) unless the two are the ends of a
break, where no record lies between them. The extra syncs are true (source, target) pairs, so
MM2's own tooling still reads them correctly; it just has more to choose from.
Syncs are written at each commit, right after the batch that produced them was
acknowledged: first the urgent ones in the order they arose, then, for each partition, the
latest pair seen since (MM2's "delayed" syncs, which it too writes at each offset commit), so
that a translator never lags a commit. Syncs go to
``mm2-offset-syncs.<...>.internal`` on the cluster ``offset-syncs.topic.location`` names, one
partition, compacted, as ``formats.OffsetSync`` records (MM2's bytes). Offset-sync writes are
best effort, as in MM2: a failed one is logged and counted, never fatal.

Counters
--------
``stats`` maps each source (topic, partition) to ``PartitionStats``: records and bytes copied,
the last source offset mirrored and the target offset it landed at, the last record's
timestamp and replication latency (target acknowledgement time minus record timestamp, MM2's
``replication-latency-ms``), for the mirrors API; ``positions`` gives, for the partitions this
process owns, the next offset to copy and the source high watermark (librdkafka's cached
value from the last fetch: no extra request).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from weir.mirror.config import Flow
from weir.mirror.formats import OffsetSync
from weir.mirror.topics import ensure_internal_topic

__all__ = [
    "OffsetSyncPolicy",
    "PartitionStats",
    "ReplicationError",
    "Replicator",
    "group_id",
]

log = logging.getLogger("weir.mirror")

_BATCH = 500
_TIMEOUT_S = 30.0
_LOG_EVERY_S = 10.0
_COMMIT_INTERVAL_S = 0.5  # MM2 commits every offset.flush.interval.ms (10 s); sooner is cheap
_MAX_IN_FLIGHT = 20_000  # records produced and not yet acknowledged by the target

TP = tuple[str, int]
_Sync = tuple[str, int, int, int]  # an offset sync before it is encoded


class ReplicationError(RuntimeError):
    """The target refused a record or the source failed; nothing past it was committed."""


def group_id(flow: Flow) -> str:
    """The source consumer group of ``flow``: ``mirror-<src>-><dst>``."""
    return f"mirror-{flow.name}"


@dataclass(slots=True)
class PartitionStats:
    """What one source partition has had copied."""

    records: int = 0
    bytes: int = 0
    last_source_offset: int = -1
    last_target_offset: int = -1
    committed_offset: int = -1  # the next source offset to read after a restart
    last_timestamp_ms: int = -1  # of the last record copied
    replication_latency_ms: float = -1.0  # of the last record: ack time - record timestamp
    replication_latency_max_ms: float = -1.0  # largest since ``reset_latency_max``
    record_age_ms: float = -1.0  # of the last record polled: poll time - record timestamp


@dataclass(slots=True)
class _SyncState:
    previous: tuple[int, int]  # the last acknowledged (source, target) pair
    last_sync: tuple[int, int]  # the last pair this policy made urgent


class OffsetSyncPolicy:
    """When to write an offset sync: MM2's ``OffsetSyncWriter`` rule plus Weir's break syncs
    (see module docstring)."""

    def __init__(self, offset_lag_max: int) -> None:
        self.offset_lag_max = offset_lag_max
        self._states: dict[TP, _SyncState] = {}

    def update(self, tp: TP, upstream: int, downstream: int) -> list[tuple[int, int]]:
        """Record that source offset ``upstream`` landed at ``downstream``; the (source,
        target) pairs to sync now (urgent), oldest first, or an empty list if it can wait."""
        current = (upstream, downstream)
        s = self._states.get(tp)
        if s is None:  # first record of this lifetime
            self._states[tp] = _SyncState(current, current)
            return [current]
        previous, s.previous = s.previous, current
        if upstream - previous[0] != 1 or downstream - previous[1] != 1:
            # A break (MM2: skipped source offsets or a target that went back; Weir: any step
            # that is not +1/+1): both ends, so that every run between syncs is linear.
            urgent = [current] if previous == s.last_sync else [previous, current]
        elif downstream - (s.last_sync[1] + 1) >= self.offset_lag_max:
            urgent = [current]
        else:
            return []
        s.last_sync = current
        return urgent

    def forget(self, tp: TP) -> None:
        """Drop a partition (revoked): its next record starts a new lifetime."""
        self._states.pop(tp, None)


class Replicator:
    """Copies the records of one flow's planned topics from source to target (one thread)."""

    def __init__(
        self,
        flow: Flow,
        *,
        topics: Mapping[str, str],
        source_config: Mapping[str, str],
        target_config: Mapping[str, str],
        offset_syncs_config: Mapping[str, str] | None = None,
        batch_size: int = _BATCH,
        stop_event: threading.Event | None = None,
        on_wait: Callable[[int], None] | None = None,
    ) -> None:
        """``topics``: source topic -> target topic (``TopicsPlan.remote_names``). Client
        configs come from ``MirrorConfig.client_config``; ``offset_syncs_config`` is the
        producer config of the offset-syncs cluster (defaults to the target's or source's).
        While waiting for the target's acknowledgements, ``on_wait(records_waiting)`` is called
        about once a second, and a set ``stop_event`` gives up the wait (nothing committed)."""
        self.flow = flow
        self.topics = dict(topics)
        self.batch_size = batch_size
        self._stop_event = stop_event
        self._on_wait = on_wait
        self._last_source_error_log = 0.0
        self.stats: dict[TP, PartitionStats] = {}
        self.offset_sync_failures = 0
        self._acked: dict[TP, int] = {}  # next source offset after the last acknowledged record
        self._committed: dict[TP, int] = {}
        self._errors: list[str] = []
        self._sync_policy = OffsetSyncPolicy(flow.offset_lag_max)
        # (topic, partition, source offset, target offset), turned into records when sent
        self._delayed_syncs: dict[TP, _Sync] = {}
        self._urgent_syncs: dict[tuple[str, int, int], _Sync] = {}
        self._consumer = Consumer(
            {
                **source_config,
                "group.id": group_id(flow),
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "on_commit": self._on_commit_error,
            }
        )
        self._producer = Producer(
            {**target_config, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
        if flow.emit_offset_syncs_enabled:
            if offset_syncs_config is None:
                on_source = flow.offset_syncs_topic_location == "source"
                offset_syncs_config = source_config if on_source else target_config
            self._syncs_config: dict[str, str] | None = dict(offset_syncs_config)
            self._syncs_producer: Producer | None = Producer(
                {**offset_syncs_config, "acks": "all", "linger.ms": 0}
            )
        else:
            self._syncs_config = None
            self._syncs_producer = None
        self._started = False
        self._abandoned = False
        self._subscribed: list[str] = []
        self._last_commit = 0.0
        self._last_progress = time.monotonic()
        # (target topic, partition) -> (source topic, source offset, bytes, timestamp) of the
        # records produced and not yet reported, oldest first
        self._pending: dict[TP, deque[tuple[str, int, int, int]]] = {}

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Create the offset-syncs topic if needed and subscribe to the source topics."""
        if self._started:
            return
        if self._syncs_config is not None:
            try:
                ensure_internal_topic(
                    AdminClient(self._syncs_config),
                    self.flow.offset_syncs_topic,
                    replication_factor=self.flow.offset_syncs_topic_replication_factor,
                    cluster=self.flow.offset_syncs_cluster,
                )
            except RuntimeError as exc:
                raise ReplicationError(f"{self.flow.name}: {exc}") from exc
        self._started = True
        self._subscribe()

    def set_topics(self, topics: Mapping[str, str]) -> None:
        """Mirror ``topics`` (source -> target) from now on; re-subscribes when it changed."""
        self.topics = dict(topics)
        if self._started:
            self._subscribe()

    def _subscribe(self) -> None:
        names = sorted(self.topics)
        if names == self._subscribed:
            return
        if names:
            self._consumer.subscribe(names, on_assign=self._on_assign, on_revoke=self._on_revoke)
        else:
            self._consumer.unsubscribe()
        self._subscribed = names

    def abandon(self) -> None:
        """Close without committing anything more (after a ``ReplicationError``): what was not
        committed is copied again by the next owner of the partitions."""
        self._abandoned = True  # the revoke callback of close() must not commit
        self._producer.purge()
        self._errors.append("abandoned")  # callbacks of purged records move no position
        try:
            self._consumer.close()
        finally:
            if self._syncs_producer is not None:
                self._syncs_producer.flush(1.0)

    def positions(self) -> dict[TP, tuple[int, int]]:
        """For each partition this process owns: (next source offset to copy, source high
        watermark), -1 where not known yet (no fetch answered)."""
        try:
            assigned = self._consumer.assignment()
        except Exception:
            return {}
        if not assigned:
            return {}
        try:
            fetched = {(p.topic, p.partition): p.offset for p in self._consumer.position(assigned)}
        except Exception:
            fetched = {}
        out: dict[TP, tuple[int, int]] = {}
        for p in assigned:
            tp = (p.topic, p.partition)
            try:
                _low, high = self._consumer.get_watermark_offsets(p, cached=True)
            except Exception:
                high = -1
            position = self._acked.get(tp, self._committed.get(tp, fetched.get(tp, -1)))
            out[tp] = (position if position >= 0 else -1, high if high >= 0 else -1)
        return out

    def reset_latency_max(self) -> None:
        """Start a new window for ``PartitionStats.replication_latency_max_ms``."""
        for stats in self.stats.values():
            stats.replication_latency_max_ms = stats.replication_latency_ms

    def close(self) -> None:
        """Deliver what is in flight, commit it, and close the clients."""
        try:
            if self._started:
                self._drain_and_commit()
        finally:
            self._consumer.close()
            if self._syncs_producer is not None:
                self._syncs_producer.flush(_TIMEOUT_S)

    def run_once(self, timeout: float = 1.0) -> int:
        """Copy one batch (waiting up to ``timeout`` for records) without waiting for the
        target's acknowledgements of earlier ones; every ``_COMMIT_INTERVAL_S`` (and when the
        source is idle) commit what the target acknowledged so far and write the offset syncs.
        The number of records copied."""
        self.start()
        self._producer.poll(0)  # serve delivery callbacks of what is in flight
        if not self._producer_in_flight():
            self._last_progress = time.monotonic()
        self._raise_delivery_errors()
        messages = self._consumer.consume(self.batch_size, timeout)
        polled_ms = time.time() * 1000
        newest: dict[TP, int] = {}  # the last record timestamp polled per partition
        copied = 0
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.fatal():
                    raise ReplicationError(f"{self.flow.name}: source error: {error}")
                # librdkafka reconnects and rejoins by itself (broker restarts, all brokers
                # down for a while); say so now and then, and go on.
                now = time.monotonic()
                if now - self._last_source_error_log >= _LOG_EVERY_S:
                    self._last_source_error_log = now
                    log.warning("mirror %s: source error (retrying): %s", self.flow.name, error)
                continue
            tp, timestamp = self._produce(message)
            newest[tp] = timestamp
            copied += 1
        for tp, timestamp in newest.items():
            if timestamp >= 0:
                stats = self.stats.get(tp) or self.stats.setdefault(tp, PartitionStats())
                stats.record_age_ms = max(0.0, polled_ms - timestamp)
        self._producer.poll(0)  # once per batch: callbacks of what was acknowledged meanwhile
        self._wait_for_room()
        self._raise_delivery_errors()
        now = time.monotonic()
        if not copied or now - self._last_commit >= _COMMIT_INTERVAL_S:
            self._commit()
            self._last_commit = now
        return copied

    def stalled_for(self) -> float:
        """Seconds since the target last acknowledged anything while records were in flight
        (0 when nothing is in flight)."""
        if not self._producer_in_flight():
            return 0.0
        return time.monotonic() - self._last_progress

    def _producer_in_flight(self) -> int:
        return len(self._producer)

    def _wait_for_room(self) -> None:
        """Pipelining's bound: no more than ``_MAX_IN_FLIGHT`` records unacknowledged."""
        while (in_flight := self._producer_in_flight()) > _MAX_IN_FLIGHT:
            self._producer.poll(0.2)
            self._raise_delivery_errors()
            if self._stop_event is not None and self._stop_event.is_set():
                raise ReplicationError(
                    f"{self.flow.name}: stopped with {in_flight} records not yet acknowledged "
                    "by the target; nothing past them was committed"
                )
            if self._on_wait is not None:
                self._on_wait(in_flight)

    def _raise_delivery_errors(self) -> None:
        if self._errors:
            raise ReplicationError(
                f"{self.flow.name}: the target refused records, nothing past them was "
                f"committed: {'; '.join(self._errors[:5])}"
            )

    # -- copying ------------------------------------------------------------------------------
    def _produce(self, message: Message) -> tuple[TP, int]:
        """Hand one record to the producer; its source partition and timestamp (-1: none)."""
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        value, key = message.value(), message.key()
        _, timestamp = message.timestamp()
        remote = self.topics[topic]
        kwargs: dict[str, Any] = {"partition": partition, "headers": message.headers() or []}
        if timestamp >= 0:
            kwargs["timestamp"] = timestamp
        while True:
            try:
                self._producer.produce(
                    remote, value=value, key=key, on_delivery=self._on_delivery, **kwargs
                )
                break
            except BufferError:  # the local queue is full: serve callbacks, then retry
                self._producer.poll(0.1)
        size = len(value or b"") + len(key or b"")
        # One bound callback for every record (no closure per record): the idempotent
        # producer reports a partition's records in order, so its oldest pending entry is the
        # one a report is about.
        pending = self._pending.get((remote, partition))
        if pending is None:
            pending = self._pending[(remote, partition)] = deque()
        pending.append((topic, offset, size, timestamp))
        return (topic, partition), timestamp

    def _on_delivery(self, err: KafkaError | None, sent: Message) -> None:
        remote, partition = sent.topic(), sent.partition()
        assert remote is not None and partition is not None
        topic, upstream, size, timestamp = self._pending[(remote, partition)].popleft()
        tp = (topic, partition)
        if err is not None:
            self._errors.append(f"{tp[0]}[{tp[1]}]@{upstream}: {err}")
            return
        if self._errors:
            return  # something before it failed: do not move the position past the gap
        downstream = sent.offset()
        assert downstream is not None
        now = time.monotonic()
        self._last_progress = now
        stats = self.stats.get(tp)
        if stats is None:
            stats = self.stats[tp] = PartitionStats()
        stats.records += 1
        stats.bytes += size
        stats.last_source_offset = upstream
        stats.last_target_offset = downstream
        if timestamp >= 0:
            latency = max(0.0, time.time() * 1000 - timestamp)
            stats.last_timestamp_ms = timestamp
            stats.replication_latency_ms = latency
            if latency > stats.replication_latency_max_ms:
                stats.replication_latency_max_ms = latency
        self._acked[tp] = upstream + 1
        if self._syncs_producer is None:
            return
        urgent = self._sync_policy.update(tp, upstream, downstream)
        if urgent:
            self._delayed_syncs.pop(tp, None)
            for up, down in urgent:  # keyed by source offset too: a break queues two
                self._urgent_syncs[(*tp, up)] = (*tp, up, down)
        else:
            self._delayed_syncs[tp] = (*tp, upstream, downstream)

    def _drain_and_commit(self) -> None:
        while True:
            remaining = self._producer.flush(1.0)
            self._raise_delivery_errors()
            if not remaining:
                break
            if self._stop_event is not None and self._stop_event.is_set():
                raise ReplicationError(
                    f"{self.flow.name}: stopped with {remaining} records not yet acknowledged "
                    "by the target; nothing past them was committed"
                )
            if self._on_wait is not None:
                self._on_wait(remaining)
        self._commit()

    def _commit(self) -> None:
        offsets = [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in self._acked.items()
            if self._committed.get((topic, partition)) != offset
        ]
        if offsets:
            self._consumer.commit(offsets=offsets, asynchronous=False)
            for tp in offsets:
                key = (tp.topic, tp.partition)
                self._committed[key] = tp.offset
                self.stats.setdefault(key, PartitionStats()).committed_offset = tp.offset
        # Urgent syncs first (a delayed one must not overwrite them), then the delayed ones,
        # which MM2 promotes at each offset commit.
        self._send_syncs(self._urgent_syncs)
        self._send_syncs(self._delayed_syncs)

    # -- offset syncs -------------------------------------------------------------------------
    def _send_syncs(self, syncs: dict[Any, _Sync]) -> None:
        if self._syncs_producer is None or not syncs:
            return
        for sync in syncs.values():
            key, value = OffsetSync(*sync).to_record()
            self._syncs_producer.produce(
                self.flow.offset_syncs_topic,
                key=key,
                value=value,
                partition=0,
                on_delivery=self._on_sync_delivery,
            )
        syncs.clear()
        self._syncs_producer.poll(0)

    def _on_sync_delivery(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self.offset_sync_failures += 1
            log.error("mirror %s: offset sync not written: %s", self.flow.name, err)

    # -- group callbacks ----------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.info("mirror %s: assigned %s", self.flow.name, _names(partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            if not self._abandoned:
                self._drain_and_commit()
        finally:
            for p in partitions:
                key = (p.topic, p.partition)
                self._acked.pop(key, None)
                self._committed.pop(key, None)
                self._sync_policy.forget(key)
                self._delayed_syncs.pop(key, None)

    def _on_commit_error(self, err: KafkaError | None, _partitions: list[TopicPartition]) -> None:
        if err is not None:
            log.warning("mirror %s: commit failed: %s", self.flow.name, err)


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{p.topic}[{p.partition}]" for p in partitions) or "nothing"
