"""Committed offsets of the groups one coordinator owns, as pure logic.

Theory of operation
-------------------
``OffsetStore`` is Kafka's ``OffsetMetadataManager`` without the log: it validates requests
and answers with the ``OffsetCommitRecord`` values to append to ``__consumer_offsets``; it
changes its own state only through ``apply(record)``, which is also what ``records.replay``
calls while loading a partition. The wiring therefore does, for every write::

    outcome = store.commit(...)                  # validate, build records
    append(records.encode(r) for r in outcome.records)
    for r in outcome.records: store.apply(r)     # once the append is acknowledged

so what a client sees acknowledged is always what a new coordinator will replay.

* **Commit** (OffsetCommit). v1+ carry a generation and member id, validated against the
  ``Group`` (``Group.validate_offset_commit``: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while CompletingRebalance; a valid commit also
  refreshes the member's session). Generation -1 with no member is a "simple" commit (admin
  client, manual assignment), accepted when the group has no members. Each partition stores
  offset, leader epoch, metadata (at most ``offset.metadata.max.bytes`` characters, else
  OFFSET_METADATA_TOO_LARGE) and the commit time ``now_ms``; v2-v4's explicit retention
  becomes an expire timestamp.
* **Fetch** (OffsetFetch). All partitions of a group, or the requested ones; a partition with
  no commit reads offset -1, leader epoch -1, empty metadata.
* **Delete** (OffsetDelete). Refused per topic with GROUP_SUBSCRIBED_TO_TOPIC while a member's
  consumer-protocol subscription names the topic (see ``Group.is_subscribed_to_topic``), and
  for the whole group with NON_EMPTY_GROUP when a non-consumer group has members.
* **Transactional commits** (TxnOffsetCommit, KIP-98/447). Validated like OffsetCommit
  (``Group.validate_offset_commit(transactional=True)``: generation, member and instance id
  checked when the request carries them), but the records are appended as the producer's
  transactional batch and stay *pending* per producer id: OffsetFetch does not see them
  (with ``require_stable`` it answers UNSTABLE_OFFSET_COMMIT for such a partition) until
  ``complete_transaction(producer_id, commit=True)`` (the COMMIT marker) applies them;
  an ABORT drops them. ``add_pending`` takes the batch's log offset because the latest
  record in log order wins, a transactional one counting once committed (Kafka's
  ``recordOffset`` rule): a plain commit or tombstone of the same partition appended after
  a pending offset supersedes it, and so does another producer's later offset committed
  first. Loading replays the same calls in log order, so a new coordinator ends where the
  old one was, transactions still open at the end of the log staying pending.
* **Expiry** (``offsets.retention.minutes``, Kafka's ``OffsetExpirationCondition``): offsets of
  an Empty group expire once the group has been Empty for the retention period; offsets of a
  simple group (no protocol type) once their last commit is that old; a Stable consumer
  group's offsets of topics no member subscribes to, likewise by commit time. Subscribed
  topics never expire. An explicit expire timestamp (old OffsetCommit versions) wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from weir.coordinator.config import OffsetConfig
from weir.coordinator.group import Group
from weir.coordinator.state import GroupState

__all__ = [
    "CommitOutcome",
    "DeleteOutcome",
    "ExpiryOutcome",
    "FetchedOffset",
    "OffsetAndMetadata",
    "OffsetCommitRecord",
    "OffsetStore",
    "PartitionCommit",
    "PartitionResult",
    "PendingOffset",
]

_E = ErrorCode
_DEFAULT_RETENTION_TIME = -1
# OffsetCommit v9 (KIP-848) answers GROUP_ID_NOT_FOUND where older versions answered
# ILLEGAL_GENERATION for a generation-carrying commit to an unknown group.
_GROUP_ID_NOT_FOUND_VERSION = 9


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset, as ``OffsetCommitValue`` stores it."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    """An ``__consumer_offsets`` offset record; ``value`` None is a tombstone."""

    group_id: str
    topic: str
    partition: int
    value: OffsetAndMetadata | None


@dataclass(frozen=True, slots=True)
class PartitionCommit:
    """One partition of an OffsetCommit request."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """Per-partition outcome of a commit or delete."""

    topic: str
    partition: int
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    """OffsetCommit's per-partition errors and the records to append."""

    partitions: tuple[PartitionResult, ...]
    records: tuple[OffsetCommitRecord, ...]


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    """One partition of an OffsetFetch response."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """OffsetDelete's top-level error, per-partition errors and the tombstones to append."""

    error: ErrorCode
    partitions: tuple[PartitionResult, ...] = ()
    records: tuple[OffsetCommitRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingOffset:
    """A transactional offset waiting for its transaction's marker."""

    log_offset: int
    """Where its batch is in ``__consumer_offsets``: the latest record in log order wins."""
    value: OffsetAndMetadata
    superseded: bool = False
    """A later plain commit (or another transaction's later offset) already took its place;
    the partition still counts as unstable until the marker."""


@dataclass(frozen=True, slots=True)
class ExpiryOutcome:
    """Tombstones for expired offsets, and the Empty groups left with no offsets at all
    (Kafka then deletes those groups: ``Group.delete`` plus a group tombstone)."""

    records: tuple[OffsetCommitRecord, ...]
    groups_to_delete: tuple[str, ...]


class OffsetStore:
    """Committed offsets by group, topic and partition."""

    def __init__(self, config: OffsetConfig | None = None) -> None:
        self.config = config or OffsetConfig()
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # Transactional offsets by producer id, then (group, topic, partition).
        self._pending: dict[int, dict[tuple[str, str, int], PendingOffset]] = {}

    # -- state ---------------------------------------------------------------------------

    def apply(self, record: OffsetCommitRecord, log_offset: int | None = None) -> None:
        """Make an appended (or replayed) record take effect; later records win.

        ``log_offset`` is where the record's batch is; pending transactional offsets of the
        partition appended before it are superseded (None, as when replaying in log order:
        every pending one is older)."""
        if self._pending:
            self._supersede((record.group_id, record.topic, record.partition), log_offset)
        key = (record.topic, record.partition)
        if record.value is None:
            offsets = self._offsets.get(record.group_id)
            if offsets is not None:
                offsets.pop(key, None)
                if not offsets:
                    del self._offsets[record.group_id]
        else:
            self._offsets.setdefault(record.group_id, {})[key] = record.value

    def committed(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._offsets.get(group_id, {}).get((topic, partition))

    def group_ids(self) -> frozenset[str]:
        """Groups that have at least one committed offset."""
        return frozenset(self._offsets)

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._offsets.get(group_id))

    # -- transactions --------------------------------------------------------------------

    def add_pending(
        self, producer_id: int, records: Iterable[OffsetCommitRecord], log_offset: int
    ) -> None:
        """Records of ``producer_id``'s transactional batch at ``log_offset``, appended (or
        replayed): pending until the transaction's marker. A tombstone withdraws the
        producer's pending offset of that partition, as in Kafka."""
        pending = self._pending.setdefault(producer_id, {})
        for record in records:
            key = (record.group_id, record.topic, record.partition)
            if record.value is None:
                pending.pop(key, None)
            else:
                pending[key] = PendingOffset(log_offset, record.value)
        if not pending:
            del self._pending[producer_id]

    def drop_pending(
        self, producer_id: int, records: Iterable[OffsetCommitRecord], log_offset: int
    ) -> None:
        """The append of the batch at ``log_offset`` failed: forget what it added."""
        pending = self._pending.get(producer_id)
        if pending is None:
            return
        for record in records:
            key = (record.group_id, record.topic, record.partition)
            entry = pending.get(key)
            if entry is not None and entry.log_offset == log_offset:
                del pending[key]
        if not pending:
            del self._pending[producer_id]

    def complete_transaction(
        self, producer_id: int, *, commit: bool, marker_offset: int | None = None
    ) -> list[OffsetCommitRecord]:
        """``producer_id``'s COMMIT or ABORT marker: apply or drop its pending offsets.
        Returns the offsets a commit made visible.

        ``marker_offset`` (where the marker is in the log) limits the marker to offsets
        appended before it, should the producer's next transaction have written some since;
        None (replay, in log order) takes them all."""
        pending = self._pending.pop(producer_id, None)
        if pending is None:
            return []
        if marker_offset is not None:
            later = {k: e for k, e in pending.items() if e.log_offset > marker_offset}
            if later:
                self._pending[producer_id] = later
                pending = {k: e for k, e in pending.items() if e.log_offset < marker_offset}
        if not commit:
            return []
        applied: list[OffsetCommitRecord] = []
        for (group_id, topic, partition), entry in sorted(
            pending.items(), key=lambda item: item[1].log_offset
        ):
            if entry.superseded:
                continue
            record = OffsetCommitRecord(group_id, topic, partition, entry.value)
            self.apply(record, entry.log_offset)
            applied.append(record)
        return applied

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Does an open transaction hold an offset of the partition (UNSTABLE_OFFSET_COMMIT)?"""
        key = (group_id, topic, partition)
        return any(key in pending for pending in self._pending.values())

    def pending_group_ids(self) -> frozenset[str]:
        """Groups with an offset in an open transaction."""
        return frozenset(key[0] for pending in self._pending.values() for key in pending)

    def pending_producer_ids(self) -> frozenset[int]:
        """Producers with an open transaction holding offsets here."""
        return frozenset(self._pending)

    def _supersede(self, key: tuple[str, str, int], before: int | None) -> None:
        for pending in self._pending.values():
            entry = pending.get(key)
            if (
                entry is not None
                and not entry.superseded
                and (before is None or entry.log_offset < before)
            ):
                pending[key] = replace(entry, superseded=True)

    # -- OffsetCommit --------------------------------------------------------------------

    def commit(
        self,
        *,
        group_id: str,
        group: Group | None,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        partitions: Sequence[PartitionCommit],
        api_version: int,
        now_ms: int,
        retention_time_ms: int = _DEFAULT_RETENTION_TIME,
        transactional: bool = False,
    ) -> CommitOutcome:
        """Validate an OffsetCommit (or a TxnOffsetCommit: ``transactional``) and build its
        records (v0: generation -1, member "").

        ``group`` is None when the coordinator has no such group. A simple commit
        (generation < 0) is then accepted, and Kafka creates an Empty group for it: the
        wiring should do the same so ListGroups and DescribeGroups see it.
        """
        if group is None:
            if generation_id < 0:
                error = _E.none
            elif api_version >= _GROUP_ID_NOT_FOUND_VERSION:
                error = _E.group_id_not_found
            else:
                error = _E.illegal_generation
        else:
            error = group.validate_offset_commit(
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
                now_ms=now_ms,
                transactional=transactional,
            )
        if error is not _E.none:
            return CommitOutcome(
                tuple(PartitionResult(p.topic, p.partition, error) for p in partitions), ()
            )
        expire = (
            None if retention_time_ms == _DEFAULT_RETENTION_TIME else now_ms + retention_time_ms
        )
        results: list[PartitionResult] = []
        records: list[OffsetCommitRecord] = []
        for p in partitions:
            metadata = p.metadata or ""
            if len(metadata) > self.config.metadata_max_bytes:
                results.append(PartitionResult(p.topic, p.partition, _E.offset_metadata_too_large))
                continue
            results.append(PartitionResult(p.topic, p.partition, _E.none))
            value = OffsetAndMetadata(p.offset, p.leader_epoch, metadata, now_ms, expire)
            records.append(OffsetCommitRecord(group_id, p.topic, p.partition, value))
        return CommitOutcome(tuple(results), tuple(records))

    # -- OffsetFetch ---------------------------------------------------------------------

    def fetch(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        require_stable: bool = False,
    ) -> tuple[FetchedOffset, ...]:
        """Committed offsets of ``partitions`` (all of the group's when None). With
        ``require_stable`` (OffsetFetch v7+), a partition an open transaction holds an
        offset of answers UNSTABLE_OFFSET_COMMIT, so the consumer retries after the marker."""
        offsets = self._offsets.get(group_id, {})
        keys = sorted(offsets) if partitions is None else list(partitions)
        unstable = require_stable and bool(self._pending)
        fetched: list[FetchedOffset] = []
        for topic, partition in keys:
            value = offsets.get((topic, partition))
            if unstable and self.has_pending(group_id, topic, partition):
                fetched.append(
                    FetchedOffset(topic, partition, -1, -1, "", _E.unstable_offset_commit)
                )
            elif value is None:
                fetched.append(FetchedOffset(topic, partition, -1, -1, ""))
            else:
                fetched.append(
                    FetchedOffset(
                        topic, partition, value.offset, value.leader_epoch, value.metadata
                    )
                )
        return tuple(fetched)

    # -- OffsetDelete / DeleteGroups / deleted topics -------------------------------------

    def delete(
        self, *, group_id: str, group: Group | None, partitions: Sequence[tuple[str, int]]
    ) -> DeleteOutcome:
        """Validate an OffsetDelete and build its tombstones."""
        if group is None:
            if not self.has_offsets(group_id):
                return DeleteOutcome(_E.group_id_not_found)
        elif group.state is GroupState.DEAD:
            return DeleteOutcome(_E.group_id_not_found)
        elif not group.is_empty and not group.uses_consumer_protocol:
            return DeleteOutcome(_E.non_empty_group)
        results: list[PartitionResult] = []
        records: list[OffsetCommitRecord] = []
        for topic, partition in partitions:
            if group is not None and group.is_subscribed_to_topic(topic):
                results.append(PartitionResult(topic, partition, _E.group_subscribed_to_topic))
                continue
            results.append(PartitionResult(topic, partition, _E.none))
            if self.committed(group_id, topic, partition) is not None:
                records.append(OffsetCommitRecord(group_id, topic, partition, None))
        return DeleteOutcome(_E.none, tuple(results), tuple(records))

    def delete_group(self, group_id: str) -> tuple[OffsetCommitRecord, ...]:
        """Tombstones for every offset of a group being deleted (DeleteGroups)."""
        return tuple(
            OffsetCommitRecord(group_id, topic, partition, None)
            for topic, partition in sorted(self._offsets.get(group_id, {}))
        )

    def on_partitions_deleted(
        self, partitions: Iterable[tuple[str, int]]
    ) -> tuple[OffsetCommitRecord, ...]:
        """Tombstones for offsets of deleted topic partitions, in every group."""
        gone = set(partitions)
        return tuple(
            OffsetCommitRecord(group_id, topic, partition, None)
            for group_id, offsets in sorted(self._offsets.items())
            for topic, partition in sorted(offsets)
            if (topic, partition) in gone
        )

    # -- expiry --------------------------------------------------------------------------

    def expire(self, groups: Mapping[str, Group], *, now_ms: int) -> ExpiryOutcome:
        """Offsets past retention (run every ``offsets.retention.check.interval.ms``)."""
        records: list[OffsetCommitRecord] = []
        to_delete: list[str] = []
        retention = self.config.retention_ms
        # Kafka's ``hasOffsets`` counts pending transactional offsets: such a group stays.
        pending_groups = self.pending_group_ids() if self._pending else frozenset()
        for group_id, offsets in sorted(self._offsets.items()):
            group = groups.get(group_id)
            base = _expiry_base(group)
            if base is None:
                continue
            all_expired = True
            for (topic, partition), value in sorted(offsets.items()):
                if group is not None and group.is_subscribed_to_topic(topic):
                    all_expired = False
                    continue
                if value.expire_timestamp_ms is not None:
                    expired = now_ms >= value.expire_timestamp_ms
                else:
                    since = base if base >= 0 else value.commit_timestamp_ms
                    expired = now_ms - since >= retention
                if expired:
                    records.append(OffsetCommitRecord(group_id, topic, partition, None))
                else:
                    all_expired = False
            if (
                all_expired
                and group is not None
                and group.is_empty
                and group_id not in pending_groups
            ):
                to_delete.append(group_id)
        return ExpiryOutcome(tuple(records), tuple(to_delete))


def _expiry_base(group: Group | None) -> int | None:
    """When retention starts counting: -1 for "each offset's commit time", a timestamp for
    "since the group became Empty", None for "this group's offsets do not expire now"."""
    if group is None or group.protocol_type is None:
        return -1  # simple group: by commit time
    if group.state is GroupState.EMPTY:
        timestamp = group.state_timestamp_ms
        return -1 if timestamp is None else timestamp
    if (
        group.uses_consumer_protocol
        and group.state is GroupState.STABLE
        and group.subscribed_topics() is not None
    ):
        return -1
    return None
