"""InitProducerId: new ids, epoch bumps, KIP-360 resumption, zombie fencing, exhaustion."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from tests.weir.transactions.harness import FIRST_PRODUCER_ID, START_MS, TIMEOUT_MS, Driver
from weir.transactions import (
    InitProducerIdResult,
    Pending,
    TransactionConfig,
    TransactionLogValue,
    TransactionMetadata,
    TransactionRecord,
    TransactionShard,
    TransactionState,
    error_for_version,
)

E = ErrorCode
INIT_PRODUCER_ID = 22
END_TXN = 26
S = TransactionState
OK = E.none


def resting_shard(driver: Driver, *, epoch: int, state: TransactionState = S.EMPTY) -> None:
    """Put transactional id "txn" at ``epoch`` in a resting state."""
    meta = TransactionMetadata(
        transactional_id="txn",
        producer_id=500,
        producer_epoch=epoch,
        timeout_ms=TIMEOUT_MS,
        state=state,
        last_update_timestamp_ms=START_MS,
    )
    driver.shard = TransactionShard(
        coordinator_epoch=7,
        allocate_producer_id=lambda: next(driver.ids),
        transactions=[meta],
    )


def test_new_id_gets_a_producer_id_and_epoch_0_once_its_record_is_written() -> None:
    driver = Driver(auto_persist=False)
    reply = driver.init("txn")
    assert isinstance(reply, Pending)  # nothing counts before the write is acknowledged
    assert driver.meta().pending_state is S.EMPTY
    write = driver.ack_write()
    assert write.record == TransactionRecord(
        "txn",
        TransactionLogValue(
            producer_id=FIRST_PRODUCER_ID,
            producer_epoch=0,
            timeout_ms=TIMEOUT_MS,
            state=S.EMPTY,
            partitions=frozenset(),
            last_update_timestamp_ms=START_MS,
            start_timestamp_ms=-1,
        ),
    )
    assert driver.replies[reply.ticket] == InitProducerIdResult(OK, FIRST_PRODUCER_ID, 0)
    assert driver.meta().pending_state is None


def test_init_again_bumps_the_epoch_and_keeps_the_producer_id() -> None:
    driver = Driver()
    first = driver.producer(timeout_ms=5_000)
    second = driver.producer(timeout_ms=9_000)
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert driver.meta().timeout_ms == 9_000


def test_request_errors() -> None:
    driver = Driver(config=TransactionConfig(max_timeout_ms=10_000))
    assert driver.init("") == InitProducerIdResult(E.invalid_request)
    assert driver.init(timeout_ms=10_001) == InitProducerIdResult(E.invalid_transaction_timeout)
    assert driver.init(timeout_ms=0) == InitProducerIdResult(E.invalid_transaction_timeout)
    assert driver.init(timeout_ms=10_000).error is OK  # the maximum itself is allowed
    assert driver.init(producer_id=5) == InitProducerIdResult(E.invalid_request)
    assert driver.init(producer_epoch=5) == InitProducerIdResult(E.invalid_request)


def test_init_while_a_write_is_pending_answers_concurrent_transactions() -> None:
    driver = Driver(auto_persist=False)
    driver.init()
    assert driver.init() == InitProducerIdResult(E.concurrent_transactions)


def test_failed_write_answers_the_coordinator_error_and_can_be_retried() -> None:
    driver = Driver(auto_persist=False)
    first = driver.init()
    driver.ack_write(E.not_enough_replicas)
    assert isinstance(first, Pending)
    assert driver.replies[first.ticket] == InitProducerIdResult(E.coordinator_not_available)
    assert driver.meta().pending_state is None
    assert driver.meta().producer_epoch == -1
    retry = driver.init()
    driver.ack_write(E.not_leader_or_follower)
    assert isinstance(retry, Pending)
    assert driver.replies[retry.ticket] == InitProducerIdResult(E.not_coordinator)
    third = driver.init()
    driver.ack_write()
    # The producer id allocated the first time is kept; the epoch starts at 0.
    assert isinstance(third, Pending)
    assert driver.replies[third.ticket] == InitProducerIdResult(OK, FIRST_PRODUCER_ID, 0)


def test_init_during_prepare_answers_concurrent_transactions() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    assert driver.end("txn", producer, commit=True) is OK
    assert driver.meta().state is S.PREPARE_COMMIT
    assert driver.init() == InitProducerIdResult(E.concurrent_transactions)


# -- KIP-360: a producer that names its producer id and epoch ---------------------------------


def test_kip360_current_epoch_is_bumped_and_a_retry_gets_the_same_epoch() -> None:
    driver = Driver()
    producer = driver.producer()
    ids = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch}
    bumped = driver.producer(**ids)
    assert bumped.producer_epoch == 1
    writes = len(driver.written)
    # The response was lost: the producer asks again with its old epoch.
    assert driver.producer(**ids) == bumped
    assert len(driver.written) == writes + 1  # Kafka writes the (unchanged) state again
    # Now it carries on from epoch 1.
    assert driver.producer(producer_id=producer.producer_id, producer_epoch=1).producer_epoch == 2


def test_kip360_stale_epoch_or_unknown_producer_id_is_fenced() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.producer()  # another instance took over: epoch 1, last epoch forgotten
    pid = producer.producer_id
    assert driver.init(producer_id=pid, producer_epoch=0) == InitProducerIdResult(E.producer_fenced)
    assert driver.init(producer_id=pid + 1, producer_epoch=1) == InitProducerIdResult(
        E.producer_fenced
    )
    assert error_for_version(E.producer_fenced, api_key=INIT_PRODUCER_ID, version=3) is (
        E.invalid_producer_epoch
    )
    assert error_for_version(E.producer_fenced, api_key=INIT_PRODUCER_ID, version=4) is (
        E.producer_fenced
    )


def test_kip360_new_id_accepts_the_producers_old_ids() -> None:
    # The id expired and came back: the producer recovers from UNKNOWN_PRODUCER_ID.
    driver = Driver()
    result = driver.producer(producer_id=42, producer_epoch=3)
    assert (result.producer_id, result.producer_epoch) == (FIRST_PRODUCER_ID, 0)


# -- fencing a zombie ---------------------------------------------------------------------------


def test_init_fences_a_zombies_ongoing_transaction() -> None:
    driver = Driver(auto_markers=False)
    zombie = driver.producer()
    assert driver.add("txn", zombie, ("t", 0), ("t", 1)) is OK
    driver.auto_persist = False

    reply = driver.init()
    assert isinstance(reply, Pending)
    # The bumped epoch takes effect at once: the zombie is fenced before anything is written.
    assert driver.meta().producer_epoch == 1
    assert driver.add("txn", zombie, ("t", 2)) is E.producer_fenced
    assert driver.end("txn", zombie, commit=True) is E.producer_fenced
    assert error_for_version(E.producer_fenced, api_key=END_TXN, version=1) is (
        E.invalid_producer_epoch
    )
    # The transaction is aborted with the new epoch; the new producer is told to retry.
    write = driver.ack_write()
    assert write.record.value is not None
    assert (write.record.value.state, write.record.value.producer_epoch) == (S.PREPARE_ABORT, 1)
    assert driver.replies[reply.ticket] == InitProducerIdResult(E.concurrent_transactions)
    assert driver.init() == InitProducerIdResult(E.concurrent_transactions)  # still aborting
    markers = driver.ack_markers()
    assert (markers.commit, markers.producer_epoch) == (False, 1)
    assert markers.partitions == {("t", 0), ("t", 1)}
    driver.ack_write()
    assert driver.meta().state is S.COMPLETE_ABORT
    # The retry bumps once more.
    driver.auto_persist = True
    assert driver.producer() == InitProducerIdResult(OK, zombie.producer_id, 2)


def test_failed_fence_write_reuses_the_bumped_epoch() -> None:
    driver = Driver(auto_markers=False)
    zombie = driver.producer()
    driver.add("txn", zombie, ("t", 0))
    driver.auto_persist = False
    reply = driver.init()
    driver.ack_write(E.not_enough_replicas)
    assert isinstance(reply, Pending)
    assert driver.replies[reply.ticket] == InitProducerIdResult(E.coordinator_not_available)
    meta = driver.meta()
    assert (meta.state, meta.producer_epoch, meta.has_failed_epoch_fence) == (S.ONGOING, 1, True)
    driver.init()
    write = driver.ack_write()
    assert write.record.value is not None
    assert write.record.value.producer_epoch == 1  # not bumped a second time
    driver.ack_markers()
    driver.ack_write()
    assert not driver.meta().has_failed_epoch_fence


# -- epoch exhaustion -----------------------------------------------------------------------------


def test_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    driver = Driver()
    resting_shard(driver, epoch=32766, state=S.COMPLETE_COMMIT)
    result = driver.producer()
    assert result == InitProducerIdResult(OK, FIRST_PRODUCER_ID, 0)
    value = driver.written[-1].record.value
    assert value is not None
    assert (value.producer_id, value.previous_producer_id) == (FIRST_PRODUCER_ID, 500)


def test_epoch_below_exhaustion_is_bumped() -> None:
    driver = Driver()
    resting_shard(driver, epoch=32765)
    assert driver.producer() == InitProducerIdResult(OK, 500, 32766)


def test_kip360_retry_of_a_rotation_gets_the_new_producer_id_again() -> None:
    driver = Driver()
    resting_shard(driver, epoch=32766)
    rotated = driver.producer(producer_id=500, producer_epoch=32766)
    assert rotated == InitProducerIdResult(OK, FIRST_PRODUCER_ID, 0)
    assert driver.producer(producer_id=500, producer_epoch=32766) == rotated
    # A producer on the old id with an epoch that is not exhausted is a zombie.
    assert driver.init(producer_id=500, producer_epoch=32000) == InitProducerIdResult(
        E.producer_fenced
    )


def test_fencing_at_an_exhausted_epoch_uses_the_last_epoch_then_rotates() -> None:
    driver = Driver()
    resting_shard(driver, epoch=32766, state=S.ONGOING)
    meta = driver.meta()
    meta.partitions = frozenset({("t", 0)})
    meta.start_timestamp_ms = START_MS
    assert driver.init() == InitProducerIdResult(E.concurrent_transactions)
    assert driver.sent_markers[-1].producer_epoch == 32767
    assert driver.meta().state is S.COMPLETE_ABORT
    assert driver.producer() == InitProducerIdResult(OK, FIRST_PRODUCER_ID, 0)
