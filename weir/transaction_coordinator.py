"""The transaction coordinator's asyncio side: ``__transaction_state`` shards around the pure
``weir.transactions`` state machine.

Theory of operation
-------------------
``weir.transactions`` is Kafka's transaction coordinator as pure logic. This module gives it
a home in the broker, the way ``weir.group_coordinator`` hosts the group protocol (and
Kafka's ``TransactionCoordinator`` wraps ``TransactionStateManager`` and the marker channel):

* **Shards.** The coordinator of transactional id T is the leader of ``__transaction_state``
  partition ``partition_for(T)``. For every such partition this broker leads there is one
  ``TxnHost`` holding a ``TransactionShard``. When metadata makes this broker the leader,
  the host *loads*: it reads the partition from log start to its LEO and
  ``TransactionShard.load``s the records, whose effects resend the markers of every
  transaction a previous coordinator left in PrepareCommit/PrepareAbort (requests answer
  COORDINATOR_LOAD_IN_PROGRESS meanwhile). The partition's leader epoch is the coordinator
  epoch every marker carries. When leadership moves away the host unloads: parked requests
  answer NOT_COORDINATOR and the new leader finishes what was in flight.
* **Requests** call the shard with ``now_ms``. A reply that waits for a write
  (``Pending(ticket)``) parks on a future that the later ``Reply`` effect resolves.
* **Writes.** A ``WriteTxn`` record is appended to the host's partition as an ordinary,
  uncompressed v2 batch through the leader path and waits, as ``acks=all`` produce requests
  do, until the high watermark passes it; below ``min.insync.replicas`` it is refused before
  it reaches the log. Only then is ``persisted`` told.
* **Markers.** A ``SendMarkers`` is split by partition leader (from the metadata view; a
  partition whose topic is gone needs no marker) and handed to the injected ``send_markers``
  (WriteTxnMarkers to each leader, wired by the broker); the per-partition errors go back
  to ``markers_written``, which retries what failed. Retried writes and markers wait
  ``retry.backoff.ms`` first.
* **Producer ids** come in blocks (``allocate_producer_ids``, the metadata store's
  cluster-wide counter); the pure shard takes them one at a time from the current block,
  which is refilled before any request that could need one.
* **Time.** Per shard, one task aborts timed-out transactions every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` and one expires idle
  transactional ids every ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from weir.coordinator_topic import CreateTopic, InternalTopic, append_committed, read_records
from weir.loop_task import stop_tasks
from weir.transactions import (
    TRANSACTION_STATE_TOPIC,
    Effect,
    InitProducerIdResult,
    Outcome,
    Pending,
    Reply,
    SendMarkers,
    TopicPartition,
    TransactionConfig,
    TransactionDescription,
    TransactionListing,
    TransactionShard,
    WriteTxn,
    encode,
    partition_for,
)

if TYPE_CHECKING:
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager

__all__ = ["MarkerSender", "ProducerIdBlock", "TransactionCoordinator", "TxnHost"]

log = logging.getLogger("weir.transactions")

STOP_TIMEOUT_S = 5.0
PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
RETRY_BACKOFF_MS = 100
# How long a __transaction_state write may wait for replication: Kafka uses the broker's
# request.timeout.ms (default 30 s), which Weir does not define.
WRITE_TIMEOUT_S = 30.0


class MarkerSender(Protocol):
    """WriteTxnMarkers to one partition leader: the per-partition errors of each marker, in
    the order given. A leader that cannot be reached answers every partition with a
    retriable error (e.g. NOT_LEADER_OR_FOLLOWER)."""

    def __call__(
        self, leader_broker_id: int, markers: Sequence[SendMarkers]
    ) -> Awaitable[Sequence[Mapping[TopicPartition, ErrorCode]]]: ...


class ProducerIdBlock:
    """Producer ids from cluster-wide blocks: ``ensure`` (async) keeps one ready, ``take``
    (sync, for the pure shard) hands it out."""

    def __init__(self, allocate: Callable[[int], Awaitable[range]]) -> None:
        self._allocate = allocate
        self._block: range = range(0)
        self._next = 0
        self._refill: asyncio.Task[range] | None = None

    async def ensure(self) -> None:
        while self._next >= len(self._block):
            if self._refill is None or self._refill.done():
                self._refill = asyncio.create_task(self._allocate(PRODUCER_ID_BLOCK_SIZE))
            block = await asyncio.shield(self._refill)
            if self._next >= len(self._block):
                self._block, self._next = block, 0

    def take(self) -> int:
        if self._next >= len(self._block):
            raise RuntimeError("no producer id ready: ensure() first")
        self._next += 1
        return self._block[self._next - 1]


@dataclass(eq=False)
class TxnHost:
    """One ``__transaction_state`` partition this broker leads, and its shard."""

    index: int
    leader_epoch: int
    shard: TransactionShard | None = None
    unloaded: bool = False
    waiters: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)


@dataclass(eq=False, repr=False, kw_only=True)
class TransactionCoordinator:
    """Every transaction shard this broker hosts, and the operations the handlers call."""

    view: MetadataView
    replicas: ReplicaManager
    create_topic: CreateTopic
    allocate_producer_ids: Callable[[int], Awaitable[range]]
    send_markers: MarkerSender
    time_ms: Callable[[], int]
    # Settings to use instead of the broker config's (tests shorten the intervals).
    txn_config: TransactionConfig | None = None
    hosts: dict[int, TxnHost] = field(init=False, default_factory=dict)
    _ids: ProducerIdBlock = field(init=False)
    _topic: InternalTopic = field(init=False)

    def __post_init__(self) -> None:
        self._ids = ProducerIdBlock(self.allocate_producer_ids)
        self._topic = InternalTopic(
            name=TRANSACTION_STATE_TOPIC,
            view=self.view,
            create_topic=self.create_topic,
            partitions_setting="transaction.state.log.num.partitions",
            replication_setting="transaction.state.log.replication.factor",
            configs=self.state_topic_configs,
        )

    # configuration ---------------------------------------------------------------------
    def config(self) -> TransactionConfig:
        if self.txn_config is not None:
            return self.txn_config
        return TransactionConfig.from_broker_config(self.view.config)

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._topic.partition_count())

    def state_topic_configs(self) -> dict[str, str]:
        """The configs Kafka enforces on ``__transaction_state``."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(self.view.config.get("transaction.state.log.min.isr")),
            "segment.bytes": str(self.view.config.get("transaction.state.log.segment.bytes")),
        }

    # the state topic ---------------------------------------------------------------------
    async def ensure_state_topic(self) -> ErrorCode:
        """Create ``__transaction_state`` on first use (FindCoordinator for a transaction)."""
        return await self._topic.ensure()

    def coordinator_of(self, transactional_id: str) -> tuple[int, int]:
        """(partition, leader broker id or -1) of the id's ``__transaction_state`` partition."""
        index = self.partition_of(transactional_id)
        return index, self._topic.leader_of(index)

    # shards follow leadership ------------------------------------------------------------
    def on_metadata(self) -> None:
        """Load the partitions this broker now leads, unload the ones it stopped leading."""
        hosted = {index: host.leader_epoch for index, host in self.hosts.items()}
        unload, load = self._topic.leadership(self.replicas, hosted)
        for index in unload:
            self._unload(self.hosts[index])
        for index, partition in load.items():
            if index not in self.hosts:
                host = TxnHost(index=index, leader_epoch=partition.leader_epoch)
                self.hosts[index] = host
                self._spawn(host, self._load(host, partition))

    def _spawn(self, host: TxnHost, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        host.tasks.add(task)
        task.add_done_callback(host.tasks.discard)
        task.add_done_callback(_log_failure)

    async def _load(self, host: TxnHost, partition: Partition) -> None:
        started = self.time_ms()
        try:
            records = list(read_records(partition))
            shard, effects = TransactionShard.load(
                records,
                coordinator_epoch=host.leader_epoch,
                allocate_producer_id=self._ids.take,
                now_ms=self.time_ms(),
                config=self.config(),
            )
        except Exception:
            # Serving from a partial load could reopen finished transactions; the ids of this
            # partition answer COORDINATOR_LOAD_IN_PROGRESS until leadership moves.
            log.exception("loading %s-%d failed", TRANSACTION_STATE_TOPIC, host.index)
            return
        if host.unloaded:
            return
        host.shard = shard
        log.info(
            "loaded %s-%d at coordinator epoch %d: %d transactional ids, %d to complete, "
            "%d records in %d ms",
            TRANSACTION_STATE_TOPIC,
            host.index,
            host.leader_epoch,
            len(shard),
            len(effects),
            len(records),
            self.time_ms() - started,
        )
        self._process(host, effects)
        config = shard.config
        self._spawn(
            host, self._every(host, config.abort_timed_out_interval_ms, shard.abort_timed_out)
        )
        self._spawn(
            host,
            self._every(host, config.remove_expired_interval_ms, shard.expire_transactional_ids),
        )

    def _unload(self, host: TxnHost) -> None:
        host.unloaded = True
        self.hosts.pop(host.index, None)
        for future in host.waiters.values():
            if not future.done():
                future.set_result(ErrorCode.not_coordinator)
        host.waiters.clear()
        for task in list(host.tasks):
            task.cancel()
        log.info("unloaded %s-%d", TRANSACTION_STATE_TOPIC, host.index)

    async def stop(self) -> None:
        """Unload every shard and end its tasks for sure (weir.loop_task); bounded."""
        hosts = list(self.hosts.values())
        tasks = [t for h in hosts for t in h.tasks]
        creation = self._topic.creation()
        if creation is not None:
            tasks.append(creation)
        for host in hosts:
            self._unload(host)
        left = await stop_tasks(tasks, STOP_TIMEOUT_S)
        if left:
            log.warning("transaction coordinator: %d tasks did not stop", len(left))
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a failure here was logged where it happened

    # requests -----------------------------------------------------------------------------
    def _shard_for(self, transactional_id: str) -> tuple[TxnHost, TransactionShard] | ErrorCode:
        """The loaded shard of ``transactional_id``, or the error a request for it gets."""
        if not transactional_id:
            return ErrorCode.invalid_request
        host = self.hosts.get(self.partition_of(transactional_id))
        if host is None or host.unloaded:
            return ErrorCode.not_coordinator
        if host.shard is None:
            return ErrorCode.coordinator_load_in_progress
        return host, host.shard

    def coordinates(self, transactional_id: str) -> bool:
        """Is this broker the (loaded) coordinator of ``transactional_id``?"""
        return not isinstance(self._shard_for(transactional_id), ErrorCode)

    async def init_producer_id(
        self,
        transactional_id: str,
        *,
        timeout_ms: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> InitProducerIdResult:
        """InitProducerId with a transactional id."""
        try:
            await self._ids.ensure()  # before the shard: it may need a new producer id
        except ConnectionError:
            return InitProducerIdResult(ErrorCode.coordinator_not_available)
        found = self._shard_for(transactional_id)
        if isinstance(found, ErrorCode):
            return InitProducerIdResult(found)
        host, shard = found
        outcome = shard.init_producer_id(
            transactional_id,
            timeout_ms=timeout_ms,
            now_ms=self.time_ms(),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        reply = await self._settle(host, outcome)
        return reply if isinstance(reply, InitProducerIdResult) else InitProducerIdResult(reply)

    async def add_partitions(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        """AddPartitionsToTxn: the error for every partition of the request."""
        return await self._request(
            transactional_id,
            lambda shard, now: shard.add_partitions(
                transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=partitions,
                now_ms=now,
            ),
        )

    async def add_offsets(
        self, transactional_id: str, *, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        """AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition."""
        offsets_partitions = int(self.view.config.get("offsets.topic.num.partitions"))
        return await self._request(
            transactional_id,
            lambda shard, now: shard.add_offsets(
                transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                group_id=group_id,
                now_ms=now,
                offsets_partitions=offsets_partitions,
            ),
        )

    async def end_txn(
        self, transactional_id: str, *, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """EndTxn: answered once the Prepare* record is replicated (markers follow)."""
        return await self._request(
            transactional_id,
            lambda shard, now: shard.end_txn(
                transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                commit=commit,
                now_ms=now,
            ),
        )

    async def _request(
        self,
        transactional_id: str,
        call: Callable[[TransactionShard, int], Outcome[ErrorCode]],
    ) -> ErrorCode:
        """Run a request answered by one error on the id's shard."""
        found = self._shard_for(transactional_id)
        if isinstance(found, ErrorCode):
            return found
        host, shard = found
        reply = await self._settle(host, call(shard, self.time_ms()))
        assert isinstance(reply, ErrorCode), reply
        return reply

    def describe(self, transactional_id: str) -> TransactionDescription:
        """DescribeTransactions for one id."""
        found = self._shard_for(transactional_id)
        if isinstance(found, ErrorCode):
            return TransactionDescription(transactional_id, found)
        return found[1].describe(transactional_id)

    def list_transactions(
        self,
        *,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        min_duration_ms: int = -1,
    ) -> tuple[ErrorCode, tuple[TransactionListing, ...]]:
        """ListTransactions over every loaded shard; COORDINATOR_LOAD_IN_PROGRESS while any
        shard this broker leads is still loading (Kafka's answer)."""
        if any(host.shard is None for host in self.hosts.values()):
            return ErrorCode.coordinator_load_in_progress, ()
        found: list[TransactionListing] = []
        for index in sorted(self.hosts):
            shard = self.hosts[index].shard
            assert shard is not None
            found.extend(
                shard.list_transactions(
                    states=states,
                    producer_ids=producer_ids,
                    min_duration_ms=min_duration_ms,
                    now_ms=self.time_ms(),
                )
            )
        return ErrorCode.none, tuple(found)

    # effects --------------------------------------------------------------------------------
    async def _settle(self, host: TxnHost, outcome: Outcome[Any]) -> Any:
        """Carry out the outcome's effects; its reply, once it is known."""
        if not isinstance(outcome.reply, Pending):
            self._process(host, outcome.effects)
            return outcome.reply
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        host.waiters[outcome.reply.ticket] = future
        self._process(host, outcome.effects)
        return await future

    def _process(self, host: TxnHost, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Reply):
                future = host.waiters.pop(effect.ticket, None)
                if future is not None and not future.done():
                    future.set_result(effect.response)
            elif isinstance(effect, WriteTxn):
                self._spawn(host, self._write(host, effect))
            elif isinstance(effect, SendMarkers):
                self._spawn(host, self._send(host, effect))

    async def _write(self, host: TxnHost, write: WriteTxn) -> None:
        if write.retry:
            await asyncio.sleep(RETRY_BACKOFF_MS / 1000)
        assert host.shard is not None
        record = encode(write.record, value_version=host.shard.config.value_version)
        error = await self.append(host, record)
        if not host.unloaded:
            self._process(
                host, host.shard.persisted(write.token, error=error, now_ms=self.time_ms())
            )

    async def append(self, host: TxnHost, record: tuple[bytes, bytes | None]) -> ErrorCode:
        """Append one record to the host's partition and wait until it is committed."""
        partition = self.replicas.get(TRANSACTION_STATE_TOPIC, host.index)
        if partition is None or host.unloaded:
            return ErrorCode.not_leader_or_follower
        return await append_committed(
            partition,
            [record],
            leader_epoch=host.leader_epoch,
            timestamp_ms=self.time_ms(),
            timeout_s=WRITE_TIMEOUT_S,
            topic_config=self.view.topic_config,
        )

    async def _send(self, host: TxnHost, markers: SendMarkers) -> None:
        if markers.retry:
            await asyncio.sleep(RETRY_BACKOFF_MS / 1000)
        topics = self.view.topic_views()
        deleted: list[TopicPartition] = []
        results: dict[TopicPartition, ErrorCode] = {}
        by_leader: dict[int, list[TopicPartition]] = {}
        for topic, index in sorted(markers.partitions):
            view = topics.get(topic)
            if view is None or index >= len(view.partitions):
                deleted.append((topic, index))
            elif view.partitions[index].leader < 0:
                results[(topic, index)] = ErrorCode.leader_not_available
            else:
                by_leader.setdefault(view.partitions[index].leader, []).append((topic, index))
        answers = await asyncio.gather(
            *(
                self._send_to(leader, replace(markers, partitions=frozenset(parts)))
                for leader, parts in by_leader.items()
            )
        )
        for answer in answers:
            results.update(answer)
        if host.unloaded or host.shard is None:
            return
        effects = host.shard.markers_written(
            markers.transactional_id, results, now_ms=self.time_ms(), deleted=deleted
        )
        self._process(host, effects)

    async def _send_to(
        self, leader: int, markers: SendMarkers
    ) -> Mapping[TopicPartition, ErrorCode]:
        try:
            (answer,) = await self.send_markers(leader, [markers])
        except (OSError, TimeoutError) as exc:
            log.info("markers to broker %d failed: %s", leader, exc)
            return dict.fromkeys(markers.partitions, ErrorCode.not_leader_or_follower)
        return answer

    async def _every(
        self, host: TxnHost, interval_ms: int, work: Callable[[int], tuple[Effect, ...]]
    ) -> None:
        while not host.unloaded:
            await asyncio.sleep(interval_ms / 1000)
            self._process(host, work(self.time_ms()))


def _log_failure(task: asyncio.Task[Any]) -> None:
    """A shard task that failed is a bug: say so where it happened (it has no awaiter)."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("transaction coordinator task failed", exc_info=exc)
