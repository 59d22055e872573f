"""Checkpoints, group offset sync and heartbeats of one flow: MM2's checkpoint and heartbeat
connectors, with Weir's exact translation.

``CheckpointTask`` does what MM2's ``MirrorCheckpointTask`` does, one round per ``run_once``
(the runner calls it every ``emit.checkpoints.interval.seconds``):

1. **Leadership.** A consumer on the offset-syncs cluster joins group
   ``mirror-<src>-><dst>-checkpoints`` subscribed to the one-partition offset-syncs topic, so
   among any number of ``mirror-maker`` processes exactly one -- the member assigned partition
   0 -- is the leader; the others' rounds only keep their membership alive. On assignment the
   leader reads the topic from the beginning into a fresh ``translate.SyncHistory``; every
   round it reads what was appended since, up to the end it saw at the round's start.
2. **Translation.** It lists the source's consumer groups that ``groups``/``groups.exclude``
   select (never the mirror's own ``mirror-...`` groups), fetches their committed offsets, and
   translates those of mirrored topics (``translate``), capped at the target's log end.
3. **Checkpoints.** It writes an MM2 ``Checkpoint`` (target topic name in the key) to
   ``<src>.checkpoints.internal`` on the target (created compacted, one partition) for every
   translation that changed since it last wrote one, as MM2 does. Offsets before the oldest
   known sync translate to nothing and are not checkpointed.
4. **Group offset sync** (``sync.group.offsets.enabled``). For each group it describes the
   group on the target. A group with members is *active*: it is skipped, reported in
   ``CheckpointRound.skipped_active_groups`` and logged as a warning once each time it becomes
   active (MM2 skips it silently). Otherwise the translated offsets are committed on the target
   with ``alter_consumer_group_offsets``, partition by partition only where that moves the
   group forward: an offset the target group already has at or beyond the translation is
   never rewound (MM2's rule), and none is ever beyond the target's log end.

``HeartbeatTask`` is MM2's ``MirrorHeartbeatTask``: each ``run_once`` writes
``Heartbeat(source, target, now)`` to ``heartbeats`` on the target (created compacted, one
partition).

Failures: a round that cannot do its job (a cluster unreachable, a topic that cannot be
created) raises ``CheckpointError`` / ``HeartbeatError`` naming the flow and the step; the
runner logs it and tries again at the next interval. A failure confined to one group is
logged and listed in ``CheckpointRound.errors``; the round goes on with the other groups.
Each ``run_once`` is safe to repeat: it creates topics only until they exist and writes only
what changed.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from weir.mirror.config import Flow
from weir.mirror.formats import Checkpoint, Heartbeat, OffsetSync
from weir.mirror.status import GroupCheckpoint
from weir.mirror.topics import ensure_internal_topic
from weir.mirror.translate import SyncHistory

__all__ = [
    "CheckpointError",
    "CheckpointRound",
    "CheckpointTask",
    "HeartbeatError",
    "HeartbeatTask",
    "checkpoints_group_id",
]

log = logging.getLogger("weir.mirror")

_TIMEOUT_S = 30.0
_POLL_S = 0.2
# The groups of any Weir mirror flow (``replicate.group_id`` and the one below).
_MIRROR_GROUP = re.compile(r"mirror-.+->.+")

T = TypeVar("T")


class CheckpointError(RuntimeError):
    """A checkpoint round could not run; the message names the flow and the step."""


class HeartbeatError(RuntimeError):
    """A heartbeat could not be written; the message names the flow and the step."""


def checkpoints_group_id(flow: Flow) -> str:
    """The group whose partition-0 owner leads checkpoints: ``mirror-<src>-><dst>-checkpoints``."""
    return f"mirror-{flow.name}-checkpoints"


@dataclass(slots=True)
class CheckpointRound:
    """What one ``CheckpointTask.run_once`` did."""

    leader: bool
    checkpoints: list[GroupCheckpoint] = field(default_factory=list)  # written this round
    synced_groups: list[str] = field(default_factory=list)  # offsets committed on the target
    skipped_active_groups: list[str] = field(default_factory=list)  # active on the target
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Translated:
    group: str
    source_topic: str
    partition: int
    target_topic: str
    upstream_offset: int
    downstream_offset: int
    exact: bool
    metadata: str


class CheckpointTask:
    """Checkpoints and group offset sync of one flow (see module docstring)."""

    def __init__(
        self,
        flow: Flow,
        *,
        source_admin_config: Mapping[str, str],
        target_admin_config: Mapping[str, str],
        target_producer_config: Mapping[str, str],
        syncs_consumer_config: Mapping[str, str],
        topics: Mapping[str, str],
    ) -> None:
        """``topics``: source topic -> target topic (``TopicsPlan.remote_names``);
        ``syncs_consumer_config``: a consumer of the cluster holding the offset-syncs topic."""
        self.flow = flow
        self.topics = dict(topics)
        self.history = SyncHistory()
        self._source_admin = AdminClient(dict(source_admin_config))
        self._target_admin = AdminClient(dict(target_admin_config))
        on_source = flow.offset_syncs_topic_location == "source"
        self._syncs_admin = self._source_admin if on_source else self._target_admin
        self._producer = Producer({**target_producer_config, "acks": "all", "linger.ms": 0})
        intervals = [
            i
            for i in (flow.emit_checkpoints_interval_s, flow.sync_group_offsets_interval_s)
            if i is not None
        ]
        # Rounds are the only polls: the group must not evict a leader between two of them.
        poll_interval_ms = min(max(300_000, 3_000 * max(intervals, default=0)), 86_400_000)
        self._consumer = Consumer(
            {
                **syncs_consumer_config,
                "group.id": checkpoints_group_id(flow),
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "max.poll.interval.ms": poll_interval_ms,
            }
        )
        self._leader = False
        self._subscribed = False
        self._checkpoints_topic_ready = False
        self._emitted: dict[tuple[str, str, int], tuple[int, int]] = {}
        self._active: set[str] = set()
        self._delivery_errors: list[str] = []

    # -- life cycle ---------------------------------------------------------------------------
    def set_topics(self, mapping: Mapping[str, str]) -> None:
        """The flow's mirrored topics changed (``topics.plan_topics`` at a refresh)."""
        self.topics = dict(mapping)

    @property
    def leader(self) -> bool:
        return self._leader

    def close(self) -> None:
        """Leave the group (another process takes over) and flush what is in flight."""
        try:
            self._producer.flush(_TIMEOUT_S)
        finally:
            self._consumer.close()

    # -- one round ----------------------------------------------------------------------------
    def run_once(
        self, *, emit_checkpoints: bool = True, sync_group_offsets: bool | None = None
    ) -> CheckpointRound:
        """One round; ``sync_group_offsets`` None means "if the flow enables it"."""
        if sync_group_offsets is None:
            sync_group_offsets = self.flow.sync_group_offsets_interval_s is not None
        self._start()
        self._read_syncs()
        if not self._leader:
            return CheckpointRound(leader=False)
        result = CheckpointRound(leader=True)
        translated = self._translate_groups(result)
        if emit_checkpoints:
            self._emit_checkpoints(translated, result)
        if sync_group_offsets:
            by_group: dict[str, list[_Translated]] = {}
            for t in translated:
                by_group.setdefault(t.group, []).append(t)
            for group, offsets in sorted(by_group.items()):
                self._sync_group(group, offsets, result)
        return result

    def _start(self) -> None:
        if self._subscribed:
            return
        self._call(
            "creating the offset-syncs topic",
            lambda: ensure_internal_topic(
                self._syncs_admin,
                self.flow.offset_syncs_topic,
                replication_factor=self.flow.offset_syncs_topic_replication_factor,
                cluster=self.flow.offset_syncs_cluster,
            ),
        )
        self._consumer.subscribe(
            [self.flow.offset_syncs_topic], on_assign=self._on_assign, on_revoke=self._on_revoke
        )
        self._subscribed = True

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._leader = any(p.partition == 0 for p in partitions)
        if self._leader:
            self.history.clear()
            self._emitted.clear()  # a new leader writes every checkpoint once
            log.info("mirror %s: checkpoint leader; reading offset syncs", self.flow.name)
            for p in partitions:
                p.offset = OFFSET_BEGINNING
            consumer.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if any(p.partition == 0 for p in partitions):
            self._leader = False
            log.info("mirror %s: no longer the checkpoint leader", self.flow.name)

    def _read_syncs(self) -> None:
        """Poll the group (membership, assignment) and, as leader, read syncs to the end."""
        messages = self._consumer.consume(500, _POLL_S)
        if not self._leader:
            self._add_syncs(messages)
            return
        tp = TopicPartition(self.flow.offset_syncs_topic, 0)
        low, end = self._call(
            "reading the offset-syncs end",
            lambda: self._consumer.get_watermark_offsets(tp, timeout=_TIMEOUT_S),
        )
        deadline = time.monotonic() + _TIMEOUT_S
        while True:
            self._add_syncs(messages)
            position = self._consumer.position([tp])[0].offset
            if not self._leader or position >= end or end <= low:
                return
            if time.monotonic() > deadline:
                raise CheckpointError(
                    f"{self.flow.name}: reading {self.flow.offset_syncs_topic} did not reach "
                    f"offset {end} within {_TIMEOUT_S:.0f} s (at {position})"
                )
            messages = self._consumer.consume(500, _POLL_S)

    def _add_syncs(self, messages: Iterable[Any]) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("mirror %s: reading offset syncs: %s", self.flow.name, error)
                continue
            key, value = message.key(), message.value()
            if key is None or value is None:
                continue
            try:
                self.history.add(OffsetSync.from_record(key, value))
            except ValueError as exc:  # not ours to stop on: skip the record, say so
                log.warning(
                    "mirror %s: skipping offset-syncs record at %s: %s",
                    self.flow.name,
                    message.offset(),
                    exc,
                )

    # -- translation --------------------------------------------------------------------------
    def _translate_groups(self, result: CheckpointRound) -> list[_Translated]:
        groups = self._source_groups()
        committed: dict[str, list[TopicPartition]] = {}
        futures = {}
        for group in groups:
            request = [ConsumerGroupTopicPartitions(group)]
            futures[group] = self._source_admin.list_consumer_group_offsets(request)[group]
        for group, future in futures.items():
            try:
                committed[group] = future.result(_TIMEOUT_S).topic_partitions or []
            except Exception as exc:
                self._group_error(result, group, "fetching its source offsets", exc)
        wanted = [
            (group, tp)
            for group, tps in committed.items()
            for tp in tps
            if tp.topic in self.topics and tp.offset >= 0 and tp.error is None
        ]
        ends = self._target_ends({(self.topics[tp.topic], tp.partition) for _, tp in wanted})
        out = []
        for group, tp in sorted(wanted, key=lambda w: (w[0], w[1].topic, w[1].partition)):
            target_topic = self.topics[tp.topic]
            end = ends.get((target_topic, tp.partition))
            translation = self.history.translate(tp.topic, tp.partition, tp.offset, end_offset=end)
            if translation is None:
                log.debug(
                    "mirror %s: %s %s[%d]@%d is before every offset sync",
                    self.flow.name,
                    group,
                    tp.topic,
                    tp.partition,
                    tp.offset,
                )
                continue
            out.append(
                _Translated(
                    group,
                    tp.topic,
                    tp.partition,
                    target_topic,
                    tp.offset,
                    translation.downstream_offset,
                    translation.exact,
                    getattr(tp, "metadata", None) or "",
                )
            )
        return out

    def _source_groups(self) -> list[str]:
        listing = self._call(
            "listing the source's consumer groups",
            lambda: self._source_admin.list_consumer_groups().result(_TIMEOUT_S),
        )
        names = {g.group_id for g in listing.valid}
        return sorted(
            g for g in names if self.flow.group_filter.matches(g) and not _MIRROR_GROUP.fullmatch(g)
        )

    def _target_ends(self, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        if not partitions:
            return {}
        request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in sorted(partitions)}
        futures = self._call(
            "asking the target's log ends", lambda: self._target_admin.list_offsets(request)
        )
        ends = {}
        for tp, future in futures.items():
            info = self._call(
                f"asking the log end of {tp.topic}[{tp.partition}] on the target",
                lambda future=future: future.result(_TIMEOUT_S),
            )
            ends[(tp.topic, tp.partition)] = info.offset
        return ends

    # -- checkpoints --------------------------------------------------------------------------
    def _emit_checkpoints(self, translated: list[_Translated], result: CheckpointRound) -> None:
        changed = [
            t
            for t in translated
            if self._emitted.get((t.group, t.source_topic, t.partition))
            != (t.upstream_offset, t.downstream_offset)
        ]
        if not changed:
            return
        if not self._checkpoints_topic_ready:
            self._call(
                "creating the checkpoints topic",
                lambda: ensure_internal_topic(
                    self._target_admin,
                    self.flow.checkpoints_topic,
                    replication_factor=self.flow.checkpoints_topic_replication_factor,
                    cluster=self.flow.target,
                ),
            )
            self._checkpoints_topic_ready = True
        self._delivery_errors.clear()
        for t in changed:
            key, value = Checkpoint(
                t.group,
                t.target_topic,
                t.partition,
                t.upstream_offset,
                t.downstream_offset,
                t.metadata,
            ).to_record()
            self._producer.produce(
                self.flow.checkpoints_topic,
                key=key,
                value=value,
                partition=0,
                on_delivery=self._on_delivery,
            )
        remaining = self._producer.flush(_TIMEOUT_S)
        if remaining or self._delivery_errors:
            raise CheckpointError(
                f"{self.flow.name}: writing checkpoints to {self.flow.checkpoints_topic} on "
                f"{self.flow.target} failed: "
                + ("; ".join(self._delivery_errors[:3]) or f"{remaining} not acknowledged")
            )
        for t in changed:
            self._emitted[(t.group, t.source_topic, t.partition)] = (
                t.upstream_offset,
                t.downstream_offset,
            )
            result.checkpoints.append(
                GroupCheckpoint(
                    t.group,
                    t.source_topic,
                    t.partition,
                    t.target_topic,
                    t.upstream_offset,
                    t.downstream_offset,
                    t.exact,
                )
            )

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            self._delivery_errors.append(str(err))

    # -- group offset sync --------------------------------------------------------------------
    def _sync_group(self, group: str, offsets: list[_Translated], result: CheckpointRound) -> None:
        try:
            description = self._target_admin.describe_consumer_groups([group])[group].result(
                _TIMEOUT_S
            )
            if description.members:
                self._skip_active(group, len(description.members), result)
                return
            request = [ConsumerGroupTopicPartitions(group)]
            future = self._target_admin.list_consumer_group_offsets(request)[group]
            existing = {
                (tp.topic, tp.partition): tp.offset
                for tp in future.result(_TIMEOUT_S).topic_partitions or []
                if tp.error is None
            }
            moves = [
                TopicPartition(t.target_topic, t.partition, t.downstream_offset)
                for t in offsets
                if existing.get((t.target_topic, t.partition), -1) < t.downstream_offset
            ]
            if moves:
                alter = [ConsumerGroupTopicPartitions(group, moves)]
                self._target_admin.alter_consumer_group_offsets(alter)[group].result(_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() in _ACTIVE_ERRORS:
                self._skip_active(group, None, result)  # a member joined since the describe
                return
            self._group_error(result, group, "syncing its offsets on the target", exc)
            return
        except Exception as exc:
            self._group_error(result, group, "syncing its offsets on the target", exc)
            return
        if group in self._active:
            self._active.discard(group)
            log.info(
                "mirror %s: group %s is no longer active on %s",
                self.flow.name,
                group,
                self.flow.target,
            )
        if moves:
            result.synced_groups.append(group)

    def _skip_active(self, group: str, members: int | None, result: CheckpointRound) -> None:
        result.skipped_active_groups.append(group)
        if group not in self._active:
            self._active.add(group)
            count = f"{members} members" if members is not None else "members"
            log.warning(
                "mirror %s: group %s is active on %s (%s): its offsets are not synced until "
                "it is empty there",
                self.flow.name,
                group,
                self.flow.target,
                count,
            )

    def _group_error(self, result: CheckpointRound, group: str, step: str, exc: Exception) -> None:
        message = f"{self.flow.name}: group {group}: {step} failed: {exc}"
        log.error("mirror %s", message)
        result.errors.append(message)

    def _call(self, step: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except CheckpointError:
            raise
        except Exception as exc:
            raise CheckpointError(f"{self.flow.name}: {step} failed: {exc}") from exc


# The broker refuses an offset commit for a group with members (Kafka: UNKNOWN_MEMBER_ID;
# some brokers answer REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION).
_ACTIVE_ERRORS = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
    }
)


class HeartbeatTask:
    """Writes one heartbeat of the flow to the target per ``run_once`` (MM2's heartbeats)."""

    def __init__(
        self,
        flow: Flow,
        *,
        target_producer_config: Mapping[str, str],
        target_admin_config: Mapping[str, str],
    ) -> None:
        self.flow = flow
        self.topic = flow.policy.heartbeats_topic()
        self._admin = AdminClient(dict(target_admin_config))
        self._producer = Producer({**target_producer_config, "acks": "all", "linger.ms": 0})
        self._topic_ready = False
        self._errors: list[str] = []

    def run_once(self, now_ms: int | None = None) -> Heartbeat:
        """Write ``Heartbeat(source, target, now_ms)`` and wait for it; it, or HeartbeatError."""
        if not self._topic_ready:
            try:
                ensure_internal_topic(
                    self._admin,
                    self.topic,
                    replication_factor=self.flow.heartbeats_topic_replication_factor,
                    cluster=self.flow.target,
                )
            except RuntimeError as exc:
                raise HeartbeatError(f"{self.flow.name}: {exc}") from exc
            self._topic_ready = True
        at = int(time.time() * 1000) if now_ms is None else now_ms
        heartbeat = Heartbeat(self.flow.source, self.flow.target, at)
        key, value = heartbeat.to_record()
        self._errors.clear()
        try:
            self._producer.produce(
                self.topic, key=key, value=value, partition=0, on_delivery=self._on_delivery
            )
        except (BufferError, KafkaException) as exc:
            raise HeartbeatError(f"{self.flow.name}: heartbeat not queued: {exc}") from exc
        remaining = self._producer.flush(_TIMEOUT_S)
        if remaining or self._errors:
            raise HeartbeatError(
                f"{self.flow.name}: heartbeat to {self.topic} on {self.flow.target} not "
                f"written: {'; '.join(self._errors) or 'no acknowledgement'}"
            )
        return heartbeat

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            self._errors.append(str(err))

    def close(self) -> None:
        self._producer.flush(_TIMEOUT_S)
