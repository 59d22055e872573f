"""The internal topic a coordinator keeps its state in, as both coordinators use it.

Theory of operation
-------------------
The group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) are built alike, after Kafka's: the coordinator of a key is the
leader of the internal topic's partition the key hashes to, and its state is the partition's
records. What they share with respect to that topic lives here, so both do it one way:

* ``InternalTopic.ensure``: create the topic on first use (FindCoordinator), with a
  replication factor of at most the live brokers, as Kafka does; concurrent callers share
  one creation.
* ``InternalTopic.leadership``: which partitions this broker leads now, compared with the
  shards it hosts, says which shards to unload (leadership lost or a new leader epoch) and
  which partitions to load.
* ``read_log``: a partition's batches from log start to LEO (records, producer id,
  transactional bit, the COMMIT/ABORT marker of a control batch), for a shard that must
  know which records belong to which transaction; ``read_records`` keeps only the (key,
  value) records, control batches skipped.
* ``append_committed``: append records through the leader path and wait, as an ``acks=all``
  produce does, until the high watermark passes them; below ``min.insync.replicas`` the
  write is refused before it reaches the log, so a refused write never reappears after a
  failover. ``append_as_leader`` is its first half, for a caller that must act on the
  batch's offset before the wait (the group coordinator's transactional offset commits);
  a batch may carry a producer id and epoch and the transactional bit, with base sequence
  -1 as Kafka's coordinators write theirs.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from weir.log.errors import LogError
from weir.protocol.batch_builder import NO_PRODUCER_ID, build_batch
from weir.protocol.control_records import EndTxnMarker, parse_end_txn_marker
from weir.protocol.inflate import iter_records
from weir.protocol.records import TRANSACTIONAL_MASK, iter_batches, validate_batches
from weir.purgatory import await_commit

if TYPE_CHECKING:
    from weir.config import TopicConfig
    from weir.metadata_view import MetadataView, TopicView
    from weir.partition import AppendOutcome, Partition
    from weir.replica_manager import ReplicaManager

__all__ = [
    "CreateTopic",
    "InternalTopic",
    "LoggedBatch",
    "append_as_leader",
    "append_committed",
    "read_log",
    "read_records",
]

log = logging.getLogger("weir.coordinator")

LOAD_CHUNK_BYTES = 4 * 1024 * 1024


class CreateTopic(Protocol):
    """Topic auto-creation as ``TopicAdmin.auto_create_topic`` does it: the error and,
    once the topic is in this broker's metadata, its view."""

    def __call__(
        self,
        name: str,
        *,
        num_partitions: int,
        replication_factor: int,
        configs: dict[str, str],
    ) -> Awaitable[tuple[ErrorCode, TopicView | None]]: ...


@dataclass(eq=False, kw_only=True)
class InternalTopic:
    """One coordinator's internal topic: its name and the broker settings that shape it."""

    name: str
    view: MetadataView
    create_topic: CreateTopic
    partitions_setting: str
    """The broker config giving the partition count (``offsets.topic.num.partitions``)."""
    replication_setting: str
    """The broker config giving the replication factor."""
    configs: Callable[[], dict[str, str]]
    """The topic configs Kafka gives it when it creates it."""
    _creating: asyncio.Task[ErrorCode] | None = field(init=False, default=None)

    def partition_count(self) -> int:
        """The topic's partitions, or the configured count before it exists."""
        view = self.view.topic_views().get(self.name)
        if view is not None:
            return len(view.partitions)
        return int(self.view.config.get(self.partitions_setting))

    def leader_of(self, index: int) -> int:
        """The leader broker id of partition ``index``, or -1."""
        view = self.view.topic_views().get(self.name)
        if view is None or index >= len(view.partitions):
            return -1
        return view.partitions[index].leader

    async def ensure(self) -> ErrorCode:
        """Create the topic on first use; every concurrent caller waits for one creation."""
        if self.name in self.view.topic_views():
            return ErrorCode.none
        if self._creating is None or self._creating.done():
            self._creating = asyncio.create_task(self._create())
        return await asyncio.shield(self._creating)

    async def _create(self) -> ErrorCode:
        live = len(await self.view.fresh_live_brokers())
        wanted = int(self.view.config.get(self.replication_setting))
        error, view = await self.create_topic(
            self.name,
            num_partitions=int(self.view.config.get(self.partitions_setting)),
            replication_factor=max(1, min(wanted, live)),
            configs=self.configs(),
        )
        if view is None:
            log.warning("creating %s failed: %s", self.name, error.name)
            return error
        return ErrorCode.none

    def creation(self) -> asyncio.Task[ErrorCode] | None:
        """The creation under way or done, for a stop to wait on."""
        return self._creating

    def leadership(
        self, replicas: ReplicaManager, hosted: Mapping[int, int]
    ) -> tuple[list[int], dict[int, Partition]]:
        """Given the hosted shards (partition index → the leader epoch they loaded at): the
        indexes to unload and the partitions to load."""
        leading = {
            p.index: p for p in replicas.partitions() if p.topic == self.name and p.is_leader
        }
        unload = [
            index
            for index, epoch in hosted.items()
            if index not in leading or leading[index].leader_epoch != epoch
        ]
        load = {
            index: partition
            for index, partition in leading.items()
            if index not in hosted or index in unload
        }
        return unload, load


@dataclass(frozen=True, slots=True)
class LoggedBatch:
    """One batch of an internal topic's partition, as a loading coordinator needs it."""

    producer_id: int
    """The batch's producer id; NO_PRODUCER_ID (-1) for a coordinator's plain writes."""
    transactional: bool
    marker: EndTxnMarker | None
    """A control batch's COMMIT/ABORT marker (None for data batches and other controls)."""
    records: list[tuple[int, bytes, bytes | None]]
    """The keyed records (offset, key, value) of a data batch; empty for a control batch."""


def read_log(partition: Partition) -> Iterator[LoggedBatch]:
    """Every batch in the partition from its log start to its LEO, in order."""
    log_ = partition.log
    offset = log_.log_start_offset
    end = log_.log_end_offset
    while offset < end:
        slices = log_.read(offset, LOAD_CHUNK_BYTES)
        if not slices:
            return
        data = b"".join(os.pread(s.file.fileno(), s.size, s.position) for s in slices)
        if not data:
            return
        for pos, header in iter_batches(data, check_crc=False):
            transactional = header.is_transactional
            if header.is_control:
                marker = parse_end_txn_marker(data, pos) if header.base_offset >= offset else None
                yield LoggedBatch(header.producer_id, transactional, marker, [])
            else:
                records = [
                    (record.offset, record.key, record.value)
                    for record in iter_records(data, pos)
                    if record.offset >= offset and record.key is not None
                ]
                yield LoggedBatch(header.producer_id, transactional, None, records)
            offset = header.last_offset + 1


def read_records(partition: Partition) -> Iterator[tuple[bytes, bytes | None]]:
    """Every keyed (key, value) in the partition from its log start to its LEO, in order."""
    for batch in read_log(partition):
        for _, key, value in batch.records:
            yield key, value


def append_as_leader(
    partition: Partition,
    records: list[tuple[bytes, bytes | None]],
    *,
    leader_epoch: int,
    timestamp_ms: int,
    topic_config: Callable[[str], TopicConfig],
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    transactional: bool = False,
) -> AppendOutcome | ErrorCode:
    """Append ``records`` as one uncompressed batch (not yet committed), or say why not."""
    if not partition.is_leader or partition.leader_epoch != leader_epoch:
        return ErrorCode.not_leader_or_follower
    if len(partition.isr) < topic_config(partition.topic).min_insync_replicas:
        return ErrorCode.not_enough_replicas
    payload = build_batch(
        records,
        timestamp_ms=timestamp_ms,
        attributes=TRANSACTIONAL_MASK if transactional else 0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
    try:
        return partition.append(payload, validate_batches(payload))
    except LogError as exc:
        return ErrorCode(exc.error_code)


async def append_committed(
    partition: Partition,
    records: list[tuple[bytes, bytes | None]],
    *,
    leader_epoch: int,
    timestamp_ms: int,
    timeout_s: float,
    topic_config: Callable[[str], TopicConfig],
) -> ErrorCode:
    """Append ``records`` as one uncompressed batch and wait until the HW passes it."""
    outcome = append_as_leader(
        partition,
        records,
        leader_epoch=leader_epoch,
        timestamp_ms=timestamp_ms,
        topic_config=topic_config,
    )
    if isinstance(outcome, ErrorCode):
        return outcome
    return await await_commit(
        partition, leader_epoch, outcome.last_offset + 1, timeout_s, topic_config=topic_config
    )
