"""The transaction coordinator hosted in-process with real broker parts and no broker process.

As ``tests/weir/test_handlers_in_process.py`` does for the handlers: a real
``ReplicaManager`` with its logs under ``tmp_path`` and a ``MetadataView`` over a
``MetadataCache`` tailing the suite's Redis (isolated by ``cluster_id``); this broker is the
controller and leads every partition. ``__transaction_state`` is created up front with
``min.insync.replicas=1`` (one broker; the default ``transaction.state.log.min.isr`` of 2
would refuse every write, as it does in Kafka). WriteTxnMarkers is not wired yet, so
markers go to a recorder with the ``MarkerSender`` signature; everything else is real:
records are appended to the partition's log, wait for its high watermark, and a second
coordinator loads them back from disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.single_broker import BROKER_ID, SingleBroker, eventually, now_ms, single_broker
from weir.coordinator_topic import read_records
from weir.replica_manager import ReplicaManager
from weir.transaction_coordinator import ProducerIdBlock, TransactionCoordinator
from weir.transactions import (
    TRANSACTION_STATE_TOPIC,
    InitProducerIdResult,
    SendMarkers,
    TopicPartition,
    TransactionConfig,
    TransactionState,
    partition_for,
    replay,
)

E = ErrorCode
S = TransactionState
TOPIC = "events"
STATE_PARTITIONS = 3
CONFIG = TransactionConfig(
    abort_timed_out_interval_ms=50, remove_expired_interval_ms=60_000, num_partitions=3
)


@dataclass
class Markers:
    """Stands in for WriteTxnMarkers: records every call, answers with ``errors`` (once
    each) and no error otherwise, or holds the calls while ``hold`` is set."""

    calls: list[tuple[int, SendMarkers]] = field(default_factory=list)
    errors: list[ErrorCode] = field(default_factory=list)
    hold: asyncio.Event | None = None

    async def __call__(
        self, leader_broker_id: int, markers: Sequence[SendMarkers]
    ) -> Sequence[Mapping[TopicPartition, ErrorCode]]:
        self.calls.extend((leader_broker_id, m) for m in markers)
        if self.hold is not None:
            await self.hold.wait()
        error = self.errors.pop(0) if self.errors else E.none
        return [dict.fromkeys(m.partitions, error) for m in markers]


@dataclass
class Parts:
    broker: SingleBroker

    @property
    def coordinators(self) -> list[Any]:
        return self.broker.coordinators

    @property
    def replicas(self) -> ReplicaManager:
        return self.broker.replicas

    async def coordinator(
        self,
        markers: Markers,
        allocate: Callable[[int], Awaitable[range]] | None = None,
    ) -> TransactionCoordinator:
        """A coordinator that has loaded every ``__transaction_state`` partition."""
        coordinator = TransactionCoordinator(
            view=self.broker.view,
            replicas=self.replicas,
            create_topic=self.broker.admin.auto_create_topic,
            allocate_producer_ids=allocate or self.broker.store.allocate_producer_ids,
            send_markers=markers,
            time_ms=now_ms,
            txn_config=CONFIG,
        )
        self.coordinators.append(coordinator)
        coordinator.on_metadata()
        await eventually(
            lambda: all(coordinator.coordinates(f"txn-{i}") for i in range(STATE_PARTITIONS * 4))
        )
        return coordinator

    def state_records(self, transactional_id: str) -> list[tuple[bytes, bytes | None]]:
        index = partition_for(transactional_id, STATE_PARTITIONS)
        partition = self.replicas.get(TRANSACTION_STATE_TOPIC, index)
        assert partition is not None
        return list(read_records(partition))


@pytest.fixture
async def parts(redis_server: str, cluster_id: str, tmp_path: Path) -> AsyncIterator[Parts]:
    async with single_broker(
        redis_url=redis_server, cluster_id=cluster_id, data_dir=tmp_path / "data"
    ) as broker:
        await broker.create_topic(TOPIC, 2)
        await broker.create_topic(
            TRANSACTION_STATE_TOPIC,
            STATE_PARTITIONS,
            **{"cleanup.policy": "compact", "min.insync.replicas": "1"},
        )
        yield Parts(broker)


def state_of(coordinator: TransactionCoordinator, transactional_id: str) -> str:
    return coordinator.describe(transactional_id).state


async def test_commit_is_written_to_the_log_and_completed_after_the_markers(parts: Parts) -> None:
    markers = Markers()
    coordinator = await parts.coordinator(markers)
    assert coordinator.coordinator_of("txn") == (coordinator.partition_of("txn"), BROKER_ID)

    producer = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    assert (producer.error, producer.producer_epoch) == (E.none, 0)
    ids = {"producer_id": producer.producer_id, "producer_epoch": 0}
    partitions = [(TOPIC, 0), (TOPIC, 1), ("__consumer_offsets", 4)]
    assert await coordinator.add_partitions("txn", partitions=partitions, **ids) is E.none
    assert await coordinator.end_txn("txn", commit=True, **ids) is E.none
    await eventually(lambda: state_of(coordinator, "txn") == "CompleteCommit")

    # One call per leader; the offsets topic does not exist here, so it needs no marker.
    assert len(markers.calls) == 1
    leader, sent = markers.calls[0]
    assert leader == BROKER_ID
    assert (sent.commit, sent.producer_id, sent.producer_epoch) == (True, producer.producer_id, 0)
    assert sent.partitions == {(TOPIC, 0), (TOPIC, 1)}
    state_partition = parts.replicas.get(TRANSACTION_STATE_TOPIC, coordinator.partition_of("txn"))
    assert state_partition is not None
    assert sent.coordinator_epoch == state_partition.leader_epoch
    # Every transition is in the log, replicated: Empty, Ongoing, PrepareCommit, CompleteCommit.
    records = parts.state_records("txn")
    assert len(records) == 4
    assert replay(records)["txn"].state is S.COMPLETE_COMMIT
    assert state_partition.high_watermark == state_partition.log.log_end_offset


async def test_a_new_coordinator_finishes_a_commit_left_in_prepare(parts: Parts) -> None:
    stuck = Markers(hold=asyncio.Event())
    old = await parts.coordinator(stuck)
    producer = await old.init_producer_id("txn", timeout_ms=60_000)
    ids = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch}
    assert await old.add_partitions("txn", partitions=[(TOPIC, 0)], **ids) is E.none
    assert await old.end_txn("txn", commit=True, **ids) is E.none
    await eventually(lambda: len(stuck.calls) == 1)
    await old.stop()  # the old coordinator dies with its markers unanswered
    parts.coordinators.remove(old)
    assert replay(parts.state_records("txn"))["txn"].state is S.PREPARE_COMMIT

    markers = Markers()
    new = await parts.coordinator(markers)
    await eventually(lambda: state_of(new, "txn") == "CompleteCommit")
    assert [(m.commit, m.partitions) for _, m in markers.calls] == [(True, {(TOPIC, 0)})]
    # The producer carries on with the same epoch.
    assert await new.add_partitions("txn", partitions=[(TOPIC, 1)], **ids) is E.none


async def test_failed_markers_are_retried(parts: Parts) -> None:
    markers = Markers(errors=[E.not_leader_or_follower, E.request_timed_out])
    coordinator = await parts.coordinator(markers)
    producer = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    ids = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch}
    await coordinator.add_partitions("txn", partitions=[(TOPIC, 0)], **ids)
    assert await coordinator.end_txn("txn", commit=False, **ids) is E.none
    await eventually(lambda: state_of(coordinator, "txn") == "CompleteAbort")
    assert len(markers.calls) == 3
    assert all(not m.commit for _, m in markers.calls)


async def test_timed_out_transaction_is_aborted_and_the_producer_fenced(parts: Parts) -> None:
    markers = Markers()
    coordinator = await parts.coordinator(markers)
    producer = await coordinator.init_producer_id("txn", timeout_ms=100)
    ids = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch}
    await coordinator.add_partitions("txn", partitions=[(TOPIC, 1)], **ids)
    await eventually(lambda: state_of(coordinator, "txn") == "CompleteAbort")
    (_, sent) = markers.calls[0]
    assert (sent.commit, sent.producer_epoch) == (False, 1)
    assert await coordinator.end_txn("txn", commit=True, **ids) is E.producer_fenced


async def test_zombie_is_fenced_by_a_new_producer(parts: Parts) -> None:
    markers = Markers()
    coordinator = await parts.coordinator(markers)
    zombie = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    ids = {"producer_id": zombie.producer_id, "producer_epoch": zombie.producer_epoch}
    await coordinator.add_partitions("txn", partitions=[(TOPIC, 0)], **ids)
    retry = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    assert retry == InitProducerIdResult(E.concurrent_transactions)
    await eventually(lambda: state_of(coordinator, "txn") == "CompleteAbort")
    fresh = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    assert (fresh.error, fresh.producer_id, fresh.producer_epoch) == (
        E.none,
        zombie.producer_id,
        2,
    )
    assert await coordinator.end_txn("txn", commit=True, **ids) is E.producer_fenced


async def test_requests_for_other_brokers_and_bad_ids(parts: Parts) -> None:
    coordinator = await parts.coordinator(Markers())
    assert await coordinator.end_txn("", producer_id=1, producer_epoch=0, commit=True) is (
        E.invalid_request
    )
    assert (await coordinator.init_producer_id("", timeout_ms=1)).error is E.invalid_request
    assert coordinator.describe("nobody").error is E.transactional_id_not_found
    await coordinator.stop()
    assert (await coordinator.init_producer_id("txn", timeout_ms=1)).error is E.not_coordinator
    assert coordinator.describe("txn").error is E.not_coordinator


async def test_list_transactions_covers_every_loaded_shard(parts: Parts) -> None:
    coordinator = await parts.coordinator(Markers())
    for tid in ("a", "b", "c", "d"):
        assert (await coordinator.init_producer_id(tid, timeout_ms=60_000)).error is E.none
    error, listings = coordinator.list_transactions()
    assert error is E.none
    assert sorted(listing.transactional_id for listing in listings) == ["a", "b", "c", "d"]


async def test_the_state_topic_configs_are_kafkas(parts: Parts) -> None:
    coordinator = await parts.coordinator(Markers())
    configs = coordinator.state_topic_configs()
    assert configs["cleanup.policy"] == "compact"
    assert configs["compression.type"] == "uncompressed"
    assert configs["unclean.leader.election.enable"] == "false"
    assert configs["min.insync.replicas"] == "2"  # transaction.state.log.min.isr
    assert await coordinator.ensure_state_topic() is E.none  # exists already


async def test_producer_ids_come_from_blocks_fetched_once_for_concurrent_callers() -> None:
    asked: list[int] = []
    gate = asyncio.Event()

    async def allocate(count: int) -> range:
        asked.append(count)
        await gate.wait()
        start = 1 + len(asked) * 10_000
        return range(start, start + 2)

    block = ProducerIdBlock(allocate)
    with pytest.raises(RuntimeError):
        block.take()
    waiting = [asyncio.create_task(block.ensure()) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(*waiting)
    assert asked == [1000]  # one block for every waiter
    assert [block.take(), block.take()] == [10_001, 10_002]
    await block.ensure()
    assert block.take() == 20_001


async def test_init_producer_id_answers_coordinator_not_available_without_redis(
    parts: Parts,
) -> None:
    async def unreachable(count: int) -> range:
        raise ConnectionError("redis is away")

    coordinator = await parts.coordinator(Markers(), allocate=unreachable)
    result = await coordinator.init_producer_id("txn", timeout_ms=60_000)
    assert result == InitProducerIdResult(E.coordinator_not_available)
