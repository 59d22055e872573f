"""Transaction timeouts, transactional id expiry, and a new coordinator loading a partition."""

from __future__ import annotations

import itertools

from kio.schema.errors import ErrorCode

from tests.weir.transactions.harness import START_MS, TIMEOUT_MS, Driver
from weir.transactions import (
    InitProducerIdResult,
    SendMarkers,
    TransactionConfig,
    TransactionShard,
    TransactionState,
    WriteTxn,
)

E = ErrorCode
S = TransactionState
OK = E.none
DAY_MS = 86_400_000


def test_timed_out_transaction_is_aborted_with_an_epoch_bump() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.now = START_MS + TIMEOUT_MS
    assert driver.shard.abort_timed_out(driver.now) == ()  # exactly the timeout: not yet
    driver.now += 1
    driver.run(driver.shard.abort_timed_out(driver.now))
    prepare = driver.written[-2].record.value
    assert prepare is not None
    assert (prepare.state, prepare.producer_epoch) == (S.PREPARE_ABORT, 1)
    assert driver.sent_markers[-1].commit is False
    assert driver.sent_markers[-1].producer_epoch == 1
    assert driver.meta().state is S.COMPLETE_ABORT
    # The producer hears it is fenced when it tries to finish (a fatal error with TV1).
    assert driver.end("txn", producer, commit=True) is E.producer_fenced
    assert driver.producer().producer_epoch == 2


def test_timeout_skips_pending_and_idle_ids() -> None:
    driver = Driver(auto_markers=False)
    idle = driver.producer("idle")
    busy = driver.producer("busy")
    driver.add("busy", busy, ("t", 0))
    driver.end("busy", busy, commit=True)  # PrepareCommit, markers outstanding
    assert idle.error is OK
    driver.now += 10 * TIMEOUT_MS
    assert driver.shard.abort_timed_out(driver.now) == ()


def test_failed_timeout_abort_is_retried_with_the_same_epoch() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.now += TIMEOUT_MS + 1
    driver.auto_persist = False
    driver.run(driver.shard.abort_timed_out(driver.now))
    driver.ack_write(E.not_enough_replicas)
    meta = driver.meta()
    assert (meta.state, meta.producer_epoch, meta.has_failed_epoch_fence) == (S.ONGOING, 1, True)
    driver.run(driver.shard.abort_timed_out(driver.now))
    again = driver.ack_write()
    assert again.record.value is not None
    assert again.record.value.producer_epoch == 1


def test_idle_transactional_id_expires_with_a_tombstone() -> None:
    config = TransactionConfig(id_expiration_ms=7 * DAY_MS)
    driver = Driver(config=config)
    producer = driver.producer("done")
    driver.add("done", producer, ("t", 0))
    driver.end("done", producer, commit=True)
    last_update = driver.meta("done").last_update_timestamp_ms
    driver.producer("open")
    open_txn = driver.shard.get("open")
    assert open_txn is not None
    driver.add("open", InitProducerIdResult(OK, open_txn.producer_id, 0), ("t", 1))

    driver.now = last_update + 7 * DAY_MS - 1
    assert driver.shard.expire_transactional_ids(driver.now) == ()
    driver.now += 1
    driver.auto_persist = False
    effects = driver.shard.expire_transactional_ids(driver.now)
    assert [e.record.transactional_id for e in effects if isinstance(e, WriteTxn)] == ["done"]
    driver.run(effects)
    assert driver.writes[0].record.value is None  # a tombstone
    assert driver.meta("done").pending_state is S.DEAD
    assert driver.init("done") == InitProducerIdResult(E.concurrent_transactions)
    driver.ack_write()
    assert driver.shard.get("done") is None
    assert driver.shard.describe("done").error is E.transactional_id_not_found
    assert driver.shard.get("open") is not None  # an Ongoing transaction never expires
    # The id may come back: a new producer id.
    driver.auto_persist = True
    assert driver.producer("done").producer_id != producer.producer_id


def test_failed_tombstone_keeps_the_id() -> None:
    driver = Driver(config=TransactionConfig(id_expiration_ms=DAY_MS))
    driver.producer()
    driver.now += DAY_MS
    driver.auto_persist = False
    driver.run(driver.shard.expire_transactional_ids(driver.now))
    driver.ack_write(E.not_enough_replicas)
    meta = driver.meta()
    assert (meta.state, meta.pending_state) == (S.EMPTY, None)


# -- loading --------------------------------------------------------------------------------


def reload(driver: Driver, *, coordinator_epoch: int = 8) -> tuple[Driver, tuple[object, ...]]:
    """A new coordinator over the same records (its allocator continues from the old one)."""
    new = Driver(auto_persist=driver.auto_persist, auto_markers=False, start_ms=driver.now)
    new.ids = itertools.count(5000)
    new.log = list(driver.log)
    new.shard, effects = TransactionShard.load(
        driver.log,
        coordinator_epoch=coordinator_epoch,
        allocate_producer_id=lambda: next(new.ids),
        now_ms=new.now,
    )
    return new, effects


def test_load_restores_every_id_and_forgets_tombstoned_ones() -> None:
    driver = Driver(config=TransactionConfig(id_expiration_ms=DAY_MS))
    gone = driver.producer("gone")
    driver.now += DAY_MS
    kept = driver.producer("kept")
    driver.add("kept", kept, ("t", 0))
    driver.run(driver.shard.expire_transactional_ids(driver.now))
    assert gone.error is OK
    new, effects = reload(driver)
    assert effects == ()
    assert new.shard.transactional_ids() == ["kept"]
    meta = new.meta("kept")
    assert (meta.state, meta.producer_epoch, meta.partitions) == (S.ONGOING, 0, {("t", 0)})
    assert meta.start_timestamp_ms == driver.now
    # The loaded transaction carries on with the same producer.
    assert new.end("kept", kept, commit=True) is OK


def test_load_finishes_a_transaction_left_in_prepare_commit() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("u", 2))
    driver.end("txn", producer, commit=True)
    # The old coordinator dies before any marker is answered.
    new, effects = reload(driver, coordinator_epoch=8)
    assert effects == (
        SendMarkers(
            transactional_id="txn",
            producer_id=producer.producer_id,
            producer_epoch=0,
            commit=True,
            coordinator_epoch=8,  # the new coordinator's epoch
            partitions=frozenset({("t", 0), ("u", 2)}),
        ),
    )
    meta = new.meta()
    assert (meta.state, meta.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    assert new.end("txn", producer, commit=True) is E.concurrent_transactions
    new.run(effects)
    new.ack_markers()
    assert new.meta().state is S.COMPLETE_COMMIT
    assert new.end("txn", producer, commit=True) is OK


def test_load_finishes_a_fenced_abort_with_the_bumped_epoch() -> None:
    driver = Driver(auto_markers=False)
    zombie = driver.producer()
    driver.add("txn", zombie, ("t", 0))
    driver.init()  # fence: PrepareAbort at epoch 1 is written, markers outstanding
    new, effects = reload(driver)
    assert len(effects) == 1
    send = effects[0]
    assert isinstance(send, SendMarkers)
    assert (send.commit, send.producer_epoch) == (False, 1)
    new.run(effects)
    new.ack_markers()
    assert new.producer() == InitProducerIdResult(OK, zombie.producer_id, 2)


def test_load_of_v0_records_reads_the_same_state() -> None:
    driver = Driver(config=TransactionConfig(value_version=0), auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.end("txn", producer, commit=False)
    assert all(value is None or value[:2] == b"\x00\x00" for _, value in driver.log)
    new, effects = reload(driver)
    assert [type(e) for e in effects] == [SendMarkers]
    assert new.meta().state is S.PREPARE_ABORT


def test_load_restores_the_previous_producer_id_but_not_the_last_epoch() -> None:
    driver = Driver()
    producer = driver.producer()
    meta = driver.meta()
    meta.producer_epoch = 32766  # as if the producer had been restarted that often
    rotated = driver.producer(producer_id=producer.producer_id, producer_epoch=32766)
    assert rotated.producer_id != producer.producer_id
    new, _ = reload(driver)
    loaded = new.meta()
    assert (loaded.last_producer_id, loaded.last_producer_epoch) == (producer.producer_id, -1)
    # As in Kafka, the last epoch lives in memory only: a retry of the rotation that spans
    # the failover cannot be told from a zombie of the old id, and is fenced.
    assert new.init(producer_id=producer.producer_id, producer_epoch=32766) == (
        InitProducerIdResult(E.producer_fenced)
    )
    # The rotated producer itself carries on.
    new.auto_persist = True
    assert new.producer(producer_id=rotated.producer_id, producer_epoch=0).producer_epoch == 1
