"""The group coordinator's asyncio side: ``__consumer_offsets`` shards around the pure groups.

Theory of operation
-------------------
``weir.coordinator`` is Kafka's classic group protocol as pure logic. This module gives it
a home in the broker, the way Kafka's ``GroupCoordinator`` wraps ``GroupMetadataManager``:

* **Shards.** The coordinator of group G is the leader of ``__consumer_offsets`` partition
  ``partition_for(G)``. For every such partition this broker leads there is one ``Shard``:
  the partition's groups (``Group``) and committed offsets (``OffsetStore``). When metadata
  makes this broker the leader, the shard *loads*: it reads the partition from log start to
  its LEO and ``replay``s the records (requests answer COORDINATOR_LOAD_IN_PROGRESS
  meanwhile). When leadership moves away the shard unloads: parked requests answer
  NOT_COORDINATOR and clients look the coordinator up again.
* **Requests** call the group's methods with ``now_ms`` and get values back. A parked
  JoinGroup or SyncGroup (``Pending(ticket)``) waits on a future that a later
  ``JoinCompletion``/``SyncCompletion`` resolves, whichever call produces it.
* **Writes.** ``PersistGroup`` (a group's metadata record) and offset commits are appended
  to the shard's partition as ordinary v2 batches through the leader path, then wait, as
  ``acks=all`` produce requests do, until the high watermark passes them. Only then are
  offsets applied (a committed offset is never visible before it is replicated) and
  ``Group.persisted`` told; append errors map to coordinator errors as in Kafka.
* **Transactions.** A TxnOffsetCommit's records are appended as the producer's transactional
  batch (its producer id and epoch, base sequence -1, as Kafka's coordinator writes them),
  acks=all too, and become *pending* offsets of that producer the moment they are in the
  log (OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them). The
  WriteTxnMarkers handler appends the COMMIT/ABORT marker to the shard's partition and then
  calls ``complete_transaction``: a commit applies the producer's pending offsets, an abort
  drops them. Loading replays the same from the log (``read_log``), so records of a
  transaction still open at its end stay pending until their marker arrives.
* **Time.** One timer task per shard sleeps until the earliest ``next_deadline()`` of its
  groups (woken early whenever a request may have moved a deadline) and ticks the due groups;
  session expiry, join and sync deadlines all come from there. Offset expiry
  (``offsets.retention.minutes``) runs every ``offsets.retention.check.interval.ms``.
* **Parts.** It reads the metadata view and the local replicas, creates
  ``__consumer_offsets`` through the topic admin's auto-creation and reads a clock passed in;
  it never sees the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.coordinator import (
    Completion,
    Group,
    GroupConfig,
    JoinCompletion,
    OffsetCommitRecord,
    OffsetConfig,
    OffsetStore,
    PersistGroup,
    SyncCompletion,
    TxnMarker,
    TxnRecord,
    encode,
    encode_group_metadata,
    encode_group_tombstone,
    partition_for,
    replay,
)
from weir.coordinator.group import append_error_to_response_error
from weir.coordinator_topic import (
    CreateTopic,
    InternalTopic,
    LoggedBatch,
    append_as_leader,
    read_log,
)
from weir.loop_task import stop_tasks
from weir.protocol.batch_builder import NO_PRODUCER_ID
from weir.purgatory import await_commit

if TYPE_CHECKING:
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator", "Shard"]

log = logging.getLogger("weir.coordinator")

OFFSETS_TOPIC = "__consumer_offsets"
# How long stop() waits for the shards' tasks to end.
STOP_TIMEOUT_S = 5.0


class CoordinatorError(Exception):
    """The request cannot be served by this broker's coordinator right now."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


@dataclass(eq=False)
class Shard:
    """The groups and offsets of one ``__consumer_offsets`` partition this broker leads."""

    index: int
    leader_epoch: int
    groups: dict[str, Group] = field(default_factory=dict)
    offsets: OffsetStore = field(default_factory=OffsetStore)
    loaded: bool = False
    unloaded: bool = False
    waiters: dict[tuple[str, int], asyncio.Future[Any]] = field(default_factory=dict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


@dataclass(eq=False, repr=False, kw_only=True)
class GroupCoordinator:
    """Every shard this broker hosts, and the operations the handlers call."""

    view: MetadataView
    replicas: ReplicaManager
    # Topic auto-creation (``TopicAdmin.auto_create_topic``), for __consumer_offsets.
    create_topic: CreateTopic
    time_ms: Callable[[], int]
    shards: dict[int, Shard] = field(init=False, default_factory=dict)
    _background: set[asyncio.Task[Any]] = field(init=False, default_factory=set)
    _topic: InternalTopic = field(init=False)

    def __post_init__(self) -> None:
        self._topic = InternalTopic(
            name=OFFSETS_TOPIC,
            view=self.view,
            create_topic=self.create_topic,
            partitions_setting="offsets.topic.num.partitions",
            replication_setting="offsets.topic.replication.factor",
            configs=self.offsets_topic_configs,
        )

    def now_ms(self) -> int:
        """The coordinator's clock: the ``now_ms`` requests hand the group state machines."""
        return self.time_ms()

    # configuration ---------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        return int(self.view.config.get("offsets.topic.num.partitions"))

    def group_config(self) -> GroupConfig:
        return GroupConfig.from_broker_config(self.view.config)

    def offset_config(self) -> OffsetConfig:
        return OffsetConfig.from_broker_config(self.view.config)

    def _commit_timeout_s(self) -> float:
        return int(self.view.config.get("offsets.commit.timeout.ms")) / 1000

    def offsets_topic_configs(self) -> dict[str, str]:
        """The configs Kafka gives ``__consumer_offsets`` when it creates it."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(self.view.config.get("offsets.topic.segment.bytes")),
        }

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self._topic.partition_count())

    # the offsets topic -----------------------------------------------------------------
    async def ensure_offsets_topic(self) -> ErrorCode:
        """Create ``__consumer_offsets`` on first use, as Kafka's FindCoordinator does."""
        return await self._topic.ensure()

    # shards follow leadership ------------------------------------------------------------
    def on_metadata(self) -> None:
        """Load shards this broker now leads, unload the ones it stopped leading."""
        hosted = {index: shard.leader_epoch for index, shard in self.shards.items()}
        unload, load = self._topic.leadership(self.replicas, hosted)
        for index in unload:
            self._unload(self.shards[index])
        for index, partition in load.items():
            if index not in self.shards:
                shard = Shard(index=index, leader_epoch=partition.leader_epoch)
                self.shards[index] = shard
                self._spawn(shard, self._load(shard, partition), f"load-{index}")

    def _spawn(self, shard: Shard, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=f"coordinator-{name}")
        shard.tasks.append(task)

    async def _load(self, shard: Shard, partition: Partition) -> None:
        started = self.time_ms()
        try:
            records = list(_replay_items(read_log(partition)))
            groups, offsets = replay(
                records,
                now_ms=self.time_ms(),
                group_config=self.group_config(),
                offset_config=self.offset_config(),
            )
        except Exception:
            # Serving the partition's groups from a partial load would hand out stale
            # offsets; its groups answer COORDINATOR_LOAD_IN_PROGRESS until leadership moves.
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, shard.index)
            return
        if shard.unloaded:
            return
        shard.groups, shard.offsets, shard.loaded = groups, offsets, True
        log.info(
            "loaded %s-%d: %d groups, %d records in %d ms",
            OFFSETS_TOPIC,
            shard.index,
            len(groups),
            len(records),
            self.time_ms() - started,
        )
        self._spawn(shard, self._timer_loop(shard), f"timers-{shard.index}")
        self._spawn(shard, self._expiry_loop(shard), f"expiry-{shard.index}")

    def _unload(self, shard: Shard) -> None:
        shard.unloaded = True
        self.shards.pop(shard.index, None)
        now = self.time_ms()
        for group in shard.groups.values():
            self._process(shard, group, group.unload(now))
        for future in shard.waiters.values():
            if not future.done():
                future.set_exception(CoordinatorError(ErrorCode.not_coordinator))
        shard.waiters.clear()
        for task in shard.tasks:
            task.cancel()
        log.info("unloaded %s-%d", OFFSETS_TOPIC, shard.index)

    async def stop(self) -> None:
        """Unload every shard and end its tasks for sure (weir.loop_task); bounded."""
        shards = list(self.shards.values())
        tasks = [t for s in shards for t in s.tasks] + list(self._background)
        creation = self._topic.creation()
        if creation is not None:
            tasks.append(creation)
        for shard in shards:
            self._unload(shard)
        left = await stop_tasks(tasks, STOP_TIMEOUT_S)
        if left:
            log.warning("group coordinator: %d tasks did not stop", len(left))
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a failure here was logged where it happened

    # lookups the handlers use --------------------------------------------------------------
    def shard_for(self, group_id: str) -> Shard:
        """The loaded shard coordinating ``group_id``; raises CoordinatorError otherwise."""
        if not group_id:
            raise CoordinatorError(ErrorCode.invalid_group_id)
        shard = self.shards.get(self.partition_of(group_id))
        if shard is None:
            raise CoordinatorError(ErrorCode.not_coordinator)
        if not shard.loaded:
            raise CoordinatorError(ErrorCode.coordinator_load_in_progress)
        return shard

    def coordinates(self, group_id: str) -> bool:
        """Is this broker the (loaded) coordinator of ``group_id``?"""
        shard = self.shards.get(self.partition_of(group_id)) if group_id else None
        return shard is not None and shard.loaded

    def coordinator_of(self, group_id: str) -> tuple[int, int]:
        """(partition, leader broker id or -1) of the group's offsets partition."""
        index = self.partition_of(group_id)
        return index, self._topic.leader_of(index)

    def all_groups(self) -> Iterator[tuple[Shard, Group]]:
        for shard in list(self.shards.values()):
            if shard.loaded:
                for group in list(shard.groups.values()):
                    yield shard, group

    # running group calls ---------------------------------------------------------------------
    def new_group(self, shard: Shard, group_id: str) -> Group:
        group = Group(group_id, now_ms=self.time_ms(), config=self.group_config())
        shard.groups[group_id] = group
        return group

    def park(self, shard: Shard, group: Group, ticket: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        shard.waiters[(group.group_id, ticket)] = future
        return future

    def process(self, shard: Shard, group: Group, completions: Iterable[Completion]) -> None:
        self._process(shard, group, completions)
        shard.wake.set()  # deadlines may have moved

    def _process(self, shard: Shard, group: Group, completions: Iterable[Completion]) -> None:
        for completion in completions:
            if isinstance(completion, JoinCompletion | SyncCompletion):
                future = shard.waiters.pop((group.group_id, completion.ticket), None)
                if future is not None and not future.done():
                    future.set_result(completion.response)
            elif isinstance(completion, PersistGroup):
                task = asyncio.create_task(self._persist(shard, group, completion))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _persist(self, shard: Shard, group: Group, persist: PersistGroup) -> None:
        key, value = encode_group_metadata(persist.snapshot)
        error = await self.append(shard, [(key, value)])
        if shard.unloaded:
            return
        self.process(
            shard, group, group.persisted(persist.token, now_ms=self.time_ms(), error=error)
        )

    async def append(
        self,
        shard: Shard,
        records: list[tuple[bytes, bytes | None]],
        *,
        appended: Callable[[int], None] | None = None,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
    ) -> ErrorCode:
        """Append records to the shard's partition and wait until they are committed.

        ``appended`` hears the batch's base offset as soon as it is in the log; a
        ``producer_id`` makes the batch that producer's transactional write."""
        partition = self.replicas.get(OFFSETS_TOPIC, shard.index)
        if partition is None or shard.unloaded:
            return ErrorCode.not_leader_or_follower
        if producer_id != NO_PRODUCER_ID:
            # Base sequence -1 skips the log's idempotence checks, the epoch check with
            # them; Kafka fences a zombie's coordinator write by epoch all the same.
            entry = partition.log.producer_state.last_entry(producer_id)
            if entry is not None and producer_epoch < entry.producer_epoch:
                return ErrorCode.invalid_producer_epoch
        outcome = append_as_leader(
            partition,
            records,
            leader_epoch=shard.leader_epoch,
            timestamp_ms=self.time_ms(),
            topic_config=self.view.topic_config,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=producer_id != NO_PRODUCER_ID,
        )
        if isinstance(outcome, ErrorCode):
            return outcome
        if appended is not None:
            appended(outcome.base_offset)
        return await await_commit(
            partition,
            shard.leader_epoch,
            outcome.last_offset + 1,
            self._commit_timeout_s(),
            topic_config=self.view.topic_config,
        )

    async def write_offsets(
        self,
        shard: Shard,
        records: tuple[OffsetCommitRecord, ...],
        more: list[tuple[bytes, bytes | None]] | None = None,
    ) -> ErrorCode:
        """Append offset records (and ``more`` records in the same batch); apply the offset
        records once committed, at their log offset (``OffsetStore.apply``)."""
        at: list[int] = []
        encoded = [encode(r) for r in records]
        error = await self.append(shard, encoded + more if more else encoded, appended=at.append)
        if error is ErrorCode.none:
            for record in records:
                shard.offsets.apply(record, at[0])
        return error

    async def commit_offsets(
        self, shard: Shard, records: tuple[OffsetCommitRecord, ...]
    ) -> ErrorCode:
        """Append offset records; apply them once committed. The error clients should see."""
        if not records:
            return ErrorCode.none
        return _commit_error(await self.write_offsets(shard, records))

    async def commit_txn_offsets(
        self,
        shard: Shard,
        records: tuple[OffsetCommitRecord, ...],
        *,
        producer_id: int,
        producer_epoch: int,
    ) -> ErrorCode:
        """TxnOffsetCommit's write: the producer's transactional batch, pending from the
        moment it is in the log until ``complete_transaction``. The error clients see."""
        if not records:
            return ErrorCode.none
        at: list[int] = []

        def appended(offset: int) -> None:
            at.append(offset)
            shard.offsets.add_pending(producer_id, records, offset)

        error = await self.append(
            shard,
            [encode(r) for r in records],
            appended=appended,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        if error is not ErrorCode.none and at and not shard.unloaded:
            shard.offsets.drop_pending(producer_id, records, at[0])
        return _commit_error(error)

    def complete_transaction(
        self,
        offsets_partition: int,
        producer_id: int,
        commit: bool,
        marker_offset: int | None = None,
    ) -> None:
        """The COMMIT (``commit``) or ABORT marker of ``producer_id`` was appended to
        ``__consumer_offsets`` partition ``offsets_partition`` here (WriteTxnMarkers): apply
        or drop the producer's pending offsets in that shard.

        ``marker_offset``, the marker's offset, confines it to offsets written before it
        (without it, every pending offset of the producer is completed: right while the
        transaction coordinator refuses the producer's next AddOffsetsToTxn until every
        marker is written, as it does). A shard not loaded yet needs nothing: its load
        reads the marker from the log."""
        shard = self.shards.get(offsets_partition)
        if shard is None or not shard.loaded or shard.unloaded:
            return
        applied = shard.offsets.complete_transaction(
            producer_id, commit=commit, marker_offset=marker_offset
        )
        for group_id in sorted({r.group_id for r in applied} - shard.groups.keys()):
            # As after loading: offsets without a group make an Empty (simple) group.
            self.new_group(shard, group_id)

    async def delete_group(self, shard: Shard, group_id: str) -> ErrorCode:
        """DeleteGroups for one group: tombstones for its offsets and its metadata."""
        group = shard.groups.get(group_id)
        if group is None and not shard.offsets.has_offsets(group_id):
            return ErrorCode.group_id_not_found
        if group is not None:
            error = group.validate_delete()
            if error is not ErrorCode.none:
                return error
        tombstones = shard.offsets.delete_group(group_id)
        error = await self.write_offsets(shard, tombstones, [encode_group_tombstone(group_id)])
        if error is not ErrorCode.none:
            return append_error_to_response_error(error)
        group = shard.groups.pop(group_id, None)
        if group is not None:
            group.delete(self.time_ms())
        return ErrorCode.none

    def force_rebalance(self, group_id: str) -> ErrorCode:
        """Start a rebalance of a live group now (members see REBALANCE_IN_PROGRESS)."""
        try:
            shard = self.shard_for(group_id)
        except CoordinatorError as exc:
            return exc.error
        group = shard.groups.get(group_id)
        if group is None or not group.members:
            # Nothing to rebalance: Kafka's error for a group without live members.
            return ErrorCode.group_id_not_found
        self.process(shard, group, group.force_rebalance(self.time_ms()))
        return ErrorCode.none

    # time -----------------------------------------------------------------------------------
    async def _timer_loop(self, shard: Shard) -> None:
        while not shard.unloaded:
            now = self.time_ms()
            deadlines = [
                (deadline, group)
                for group in list(shard.groups.values())
                if (deadline := group.next_deadline()) is not None
            ]
            for deadline, group in deadlines:
                if deadline <= now:
                    self.process(shard, group, group.tick(now))
            upcoming = [d for d, _ in deadlines if d > now]
            timeout = (min(upcoming) - now) / 1000 if upcoming else None
            shard.wake.clear()
            if any(d <= now for d, _ in deadlines):
                continue  # ticks may have scheduled more work that is due already
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await shard.wake.wait()

    async def _expiry_loop(self, shard: Shard) -> None:
        while not shard.unloaded:
            interval = int(self.view.config.get("offsets.retention.check.interval.ms"))
            await asyncio.sleep(interval / 1000)
            shard.offsets.config = self.offset_config()
            outcome = shard.offsets.expire(shard.groups, now_ms=self.time_ms())
            if not outcome.records and not outcome.groups_to_delete:
                continue
            error = await self.write_offsets(
                shard,
                outcome.records,
                [encode_group_tombstone(g) for g in outcome.groups_to_delete],
            )
            if error is not ErrorCode.none:
                log.warning(
                    "expiring offsets of %s-%d failed: %s", OFFSETS_TOPIC, shard.index, error.name
                )
                continue
            for group_id in outcome.groups_to_delete:
                group = shard.groups.pop(group_id, None)
                if group is not None:
                    group.delete(self.time_ms())
            log.info(
                "expired %d offsets and %d empty groups in %s-%d",
                len(outcome.records),
                len(outcome.groups_to_delete),
                OFFSETS_TOPIC,
                shard.index,
            )


def _commit_error(error: ErrorCode) -> ErrorCode:
    """What a failed offset write tells the committer (Kafka's ``storeOffsets`` callback)."""
    if error is ErrorCode.message_too_large:
        return ErrorCode.invalid_commit_offset_size
    return append_error_to_response_error(error)


def _replay_items(
    batches: Iterable[LoggedBatch],
) -> Iterator[tuple[bytes, bytes | None] | TxnRecord | TxnMarker]:
    """What ``replay`` reads, from the partition's batches: plain (key, value) records,
    transactional records with their producer and log offset, and markers."""
    for batch in batches:
        if batch.marker is not None:
            yield TxnMarker(batch.producer_id, batch.marker.commit)
        elif batch.transactional:
            for offset, key, value in batch.records:
                yield TxnRecord(batch.producer_id, offset, key, value)
        else:
            for _, key, value in batch.records:
                yield key, value
