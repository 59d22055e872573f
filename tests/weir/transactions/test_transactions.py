"""AddPartitionsToTxn, AddOffsetsToTxn and EndTxn: the transaction's life, its markers,
retries and the errors Kafka answers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from tests.weir.transactions.harness import COORDINATOR_EPOCH, START_MS, TIMEOUT_MS, Driver
from weir.coordinator import partition_for as group_partition_for
from weir.transactions import (
    Pending,
    SendMarkers,
    TransactionDescription,
    TransactionListing,
    TransactionLogValue,
    TransactionState,
    error_for_version,
)

E = ErrorCode
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
S = TransactionState
OK = E.none


def test_add_partitions_starts_a_transaction_once_written() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.now += 100
    driver.auto_persist = False
    reply = driver.add("txn", producer, ("t", 0), ("u", 3))
    assert isinstance(reply, Pending)
    assert driver.meta().state is S.EMPTY  # not before the record is replicated
    write = driver.ack_write()
    assert driver.replies[reply.ticket] is OK
    assert write.record.value == TransactionLogValue(
        producer_id=producer.producer_id,
        producer_epoch=0,
        timeout_ms=TIMEOUT_MS,
        state=S.ONGOING,
        partitions=frozenset({("t", 0), ("u", 3)}),
        last_update_timestamp_ms=START_MS + 100,
        start_timestamp_ms=START_MS + 100,
    )
    assert driver.meta().state is S.ONGOING


def test_adding_known_partitions_answers_at_once_and_more_keeps_the_start_time() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("t", 1))
    writes = len(driver.written)
    assert driver.add("txn", producer, ("t", 1)) is OK
    assert len(driver.written) == writes  # nothing to write
    driver.now += 500
    assert driver.add("txn", producer, ("t", 2)) is OK
    meta = driver.meta()
    assert meta.partitions == {("t", 0), ("t", 1), ("t", 2)}
    assert (meta.start_timestamp_ms, meta.last_update_timestamp_ms) == (START_MS, START_MS + 500)


def test_add_partitions_errors() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    stale = producer.__class__(OK, producer.producer_id, producer.producer_epoch - 1)
    other = producer.__class__(OK, producer.producer_id + 1, producer.producer_epoch)
    assert driver.add("", producer, ("t", 0)) is E.invalid_request
    assert driver.add("unknown", producer, ("t", 0)) is E.invalid_producer_id_mapping
    assert driver.add("txn", other, ("t", 0)) is E.invalid_producer_id_mapping
    assert driver.add("txn", stale, ("t", 0)) is E.producer_fenced
    assert error_for_version(E.producer_fenced, api_key=ADD_PARTITIONS_TO_TXN, version=1) is (
        E.invalid_producer_epoch
    )
    assert error_for_version(E.producer_fenced, api_key=ADD_PARTITIONS_TO_TXN, version=2) is (
        E.producer_fenced
    )
    driver.add("txn", producer, ("t", 0))
    driver.end("txn", producer, commit=True)
    assert driver.add("txn", producer, ("t", 1)) is E.concurrent_transactions  # markers pending
    driver.auto_persist = False
    driver.ack_markers()
    assert driver.add("txn", producer, ("t", 1)) is E.concurrent_transactions  # complete pending


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    driver = Driver()
    producer = driver.producer()
    reply = driver.shard.add_offsets(
        "txn",
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        group_id="payments",
        now_ms=driver.now,
        offsets_partitions=7,
    )
    assert driver.answer(reply) is OK
    assert driver.meta().partitions == {("__consumer_offsets", group_partition_for("payments", 7))}
    assert error_for_version(E.producer_fenced, api_key=ADD_OFFSETS_TO_TXN, version=1) is (
        E.invalid_producer_epoch
    )


def test_commit_writes_prepare_then_markers_then_complete() -> None:
    driver = Driver(auto_persist=False, auto_markers=False)
    driver.auto_persist = True
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("u", 1))
    driver.auto_persist = False
    driver.now += 1_000

    reply = driver.end("txn", producer, commit=True)
    assert isinstance(reply, Pending)
    assert driver.markers == []  # no marker before PrepareCommit is replicated
    prepare = driver.ack_write()
    assert prepare.record.value is not None
    assert prepare.record.value.state is S.PREPARE_COMMIT
    assert prepare.record.value.partitions == {("t", 0), ("u", 1)}
    assert driver.replies[reply.ticket] is OK  # the client hears back before the markers
    assert driver.markers == [
        SendMarkers(
            transactional_id="txn",
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            commit=True,
            coordinator_epoch=COORDINATOR_EPOCH,
            partitions=frozenset({("t", 0), ("u", 1)}),
        )
    ]
    meta = driver.meta()
    assert (meta.state, meta.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)

    driver.ack_markers()
    complete = driver.ack_write()
    assert complete.record.value == TransactionLogValue(
        producer_id=producer.producer_id,
        producer_epoch=0,
        timeout_ms=TIMEOUT_MS,
        state=S.COMPLETE_COMMIT,
        partitions=frozenset(),
        last_update_timestamp_ms=START_MS + 1_000,
        start_timestamp_ms=START_MS,
    )
    meta = driver.meta()
    assert (meta.state, meta.pending_state, meta.partitions) == (S.COMPLETE_COMMIT, None, set())


def test_abort_sends_abort_markers() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    assert driver.end("txn", producer, commit=False) is OK
    assert driver.sent_markers[-1].commit is False
    assert driver.meta().state is S.COMPLETE_ABORT


def test_next_transaction_starts_from_complete_with_the_same_epoch() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.end("txn", producer, commit=True)
    driver.now += 5
    assert driver.add("txn", producer, ("t", 9)) is OK
    meta = driver.meta()
    assert (meta.state, meta.partitions, meta.start_timestamp_ms) == (
        S.ONGOING,
        {("t", 9)},
        START_MS + 5,
    )


def test_end_txn_retries_and_wrong_states() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    assert driver.end("txn", producer, commit=True) is E.invalid_txn_state  # nothing to end
    driver.add("txn", producer, ("t", 0))
    assert driver.end("txn", producer, commit=True) is OK
    # Markers still going out: a retry is told to wait, whatever it asks.
    assert driver.end("txn", producer, commit=True) is E.concurrent_transactions
    assert driver.end("txn", producer, commit=False) is E.concurrent_transactions
    driver.ack_markers()
    assert driver.end("txn", producer, commit=True) is OK  # a retry after success
    assert driver.end("txn", producer, commit=False) is E.invalid_txn_state
    assert driver.end("", producer, commit=True) is E.invalid_request
    assert driver.end("nope", producer, commit=True) is E.invalid_producer_id_mapping
    assert error_for_version(E.producer_fenced, api_key=END_TXN, version=2) is E.producer_fenced


def test_end_txn_in_prepare_without_pending_answers_per_outcome() -> None:
    # A coordinator whose Complete* write failed with NOT_COORDINATOR keeps Prepare* until it
    # is unloaded; Kafka's answers for that state.
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.end("txn", producer, commit=False)
    driver.auto_persist = False
    driver.ack_markers()
    driver.ack_write(E.not_leader_or_follower)
    assert driver.writes == []  # no retry: leadership moved
    driver.meta().pending_state = None  # as after an unload and reload without markers
    assert driver.end("txn", producer, commit=False) is E.concurrent_transactions
    assert driver.end("txn", producer, commit=True) is E.invalid_txn_state


def test_failed_prepare_write_keeps_the_transaction_ongoing() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.auto_persist = False
    reply = driver.end("txn", producer, commit=True)
    driver.ack_write(E.request_timed_out)
    assert isinstance(reply, Pending)
    assert driver.replies[reply.ticket] is E.coordinator_not_available
    assert (driver.meta().state, driver.meta().pending_state) == (S.ONGOING, None)
    assert driver.sent_markers == []


def test_markers_retry_the_partitions_that_failed() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("t", 1), ("u", 0))
    driver.end("txn", producer, commit=True)
    driver.ack_markers({("t", 1): E.not_leader_or_follower, ("u", 0): E.request_timed_out})
    retry = driver.markers[-1]
    assert (retry.partitions, retry.retry) == ({("t", 1), ("u", 0)}, True)
    assert driver.meta().state is S.PREPARE_COMMIT
    driver.ack_markers({("u", 0): E.not_enough_replicas})
    assert driver.markers[-1].partitions == {("u", 0)}
    driver.ack_markers()
    assert driver.meta().state is S.COMPLETE_COMMIT


def test_markers_skip_deleted_partitions_and_old_message_formats() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("gone", 0), ("old", 0))
    driver.end("txn", producer, commit=True)
    driver.ack_markers(
        {("gone", 0): E.unknown_topic_or_partition, ("old", 0): E.unsupported_for_message_format},
        deleted=[("gone", 0)],
    )
    assert driver.markers == []
    assert driver.meta().state is S.COMPLETE_COMMIT


def test_unknown_topic_without_deletion_is_retried() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.end("txn", producer, commit=True)
    driver.ack_markers({("t", 0): E.unknown_topic_or_partition})
    assert driver.markers[-1].partitions == {("t", 0)}


def test_fenced_markers_stop_the_transaction_where_it_is() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0), ("t", 1))
    driver.end("txn", producer, commit=True)
    driver.ack_markers({("t", 1): E.transaction_coordinator_fenced})
    assert driver.markers == []
    assert driver.meta().state is S.PREPARE_COMMIT


def test_stray_marker_results_are_ignored() -> None:
    driver = Driver()
    assert driver.shard.markers_written("nope", {("t", 0): OK}, now_ms=driver.now) == ()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    assert driver.shard.markers_written("txn", {("t", 0): OK}, now_ms=driver.now) == ()
    assert driver.shard.persisted(12345, error=OK, now_ms=driver.now) == ()


def test_complete_write_is_retried_until_replicated() -> None:
    driver = Driver()
    producer = driver.producer()
    driver.add("txn", producer, ("t", 0))
    driver.auto_persist = False
    driver.end("txn", producer, commit=True)
    driver.ack_write()  # PrepareCommit
    first = driver.ack_write(E.not_enough_replicas)  # CompleteCommit, refused
    again = driver.writes[-1]
    assert (again.record, again.retry) == (first.record, True)
    driver.ack_write()
    assert driver.meta().state is S.COMPLETE_COMMIT


def test_describe_and_list() -> None:
    driver = Driver(auto_markers=False)
    producer = driver.producer("a")
    driver.producer("b")
    driver.add("a", producer, ("t", 1), ("t", 0))
    assert driver.shard.describe("a") == TransactionDescription(
        "a",
        OK,
        state="Ongoing",
        producer_id=producer.producer_id,
        producer_epoch=0,
        timeout_ms=TIMEOUT_MS,
        start_timestamp_ms=START_MS,
        partitions=(("t", 0), ("t", 1)),
    )
    assert driver.shard.describe("zz").error is E.transactional_id_not_found
    assert driver.shard.describe("").error is E.invalid_request
    everything = driver.shard.list_transactions()
    assert [listing.transactional_id for listing in everything] == ["a", "b"]
    assert driver.shard.list_transactions(states=["Ongoing"]) == (
        TransactionListing("a", producer.producer_id, "Ongoing"),
    )
    assert driver.shard.list_transactions(producer_ids=[producer.producer_id + 1]) == (
        TransactionListing("b", producer.producer_id + 1, "Empty"),
    )
    assert driver.shard.list_transactions(min_duration_ms=10, now_ms=START_MS + 9) == ()
    assert len(driver.shard.list_transactions(min_duration_ms=10, now_ms=START_MS + 10)) == 1
