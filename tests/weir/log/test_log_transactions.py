"""Transactions in the log: open/commit/abort bookkeeping, LSO, markers, the aborted index."""

from __future__ import annotations

import struct

import crc32c
import pytest

from weir.log.log import AbortedTxn, AppendResult, Log, LogConfig
from weir.log.producer_state import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from weir.log.transaction_index import TXN_INDEX_SUFFIX
from weir.protocol.records import BatchHeader, iter_batches

from .conftest import START_MS, LogFactory, append, make_batch

TRANSACTIONAL = 0x10
CONTROL = 0x20
A, B, C = 1000, 2000, 3000


def with_attributes(batch: bytes, bits: int) -> bytes:
    """``batch`` with attribute ``bits`` set and its CRC recomputed."""
    raw = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", raw, 21)
    struct.pack_into(">h", raw, 21, attributes | bits)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    return bytes(raw)


def kafka_marker(
    pid: int, epoch: int, *, commit: bool, coordinator_epoch: int, timestamp: int
) -> bytes:
    """A marker as Kafka writes it, built independently of ``weir.protocol``: one record
    with key ControlRecordType(version 0, type) and value EndTxnMarker(version 0, epoch)."""
    batch = make_batch(
        values=[struct.pack(">hi", 0, coordinator_epoch)],
        keys=[struct.pack(">hh", 0, 1 if commit else 0)],
        timestamps=[timestamp],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=-1,
    )
    return with_attributes(batch, CONTROL | TRANSACTIONAL)


class Producer:
    """A transactional producer writing to one log, with its own sequence numbers."""

    def __init__(self, log: Log, pid: int, epoch: int = 0) -> None:
        self.log, self.pid, self.epoch, self.seq = log, pid, epoch, 0

    def send(self, count: int = 1, *, transactional: bool = True) -> AppendResult:
        batch = make_batch(
            count=count, producer_id=self.pid, producer_epoch=self.epoch, base_sequence=self.seq
        )
        self.seq += count
        return append(self.log, with_attributes(batch, TRANSACTIONAL) if transactional else batch)

    def end(self, *, commit: bool, coordinator_epoch: int = 0) -> AppendResult:
        return self.log.append_control_marker(
            producer_id=self.pid,
            producer_epoch=self.epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=0,
            timestamp_ms=START_MS,
        )


def all_entries(log: Log) -> list[AbortedTxn]:
    return [entry for segment in log.segments for entry in segment.txn_index.entries]


def batches_on_disk(log: Log) -> list[tuple[BatchHeader, bytes]]:
    out = []
    for segment in log.segments:
        data = segment.log_path.read_bytes()
        out += [(h, data[p : p + h.size]) for p, h in iter_batches(data)]
    return out


def test_interleaved_transactions_move_the_lso(open_log: LogFactory) -> None:
    log = open_log()
    a, b = Producer(log, A), Producer(log, B)
    assert log.first_unstable_offset() is None
    assert a.send(2).base_offset == 0  # A opens at 0
    assert b.send().base_offset == 2  # B opens at 2
    append(log, make_batch())  # 3: not transactional, no producer
    assert log.first_unstable_offset() == 0
    assert log.last_stable_offset(high_watermark=4) == 0
    assert a.end(commit=True).base_offset == 4  # A commits
    # The commit is not replicated yet (HW 4 is at its offset): A still holds the LSO.
    assert log.last_stable_offset(high_watermark=4) == 0
    # Once the HW passes the marker, B's open transaction is the oldest unstable one.
    assert log.last_stable_offset(high_watermark=5) == 2
    a.send()  # 5: A opens again
    assert b.end(commit=False).base_offset == 6  # B aborts
    assert log.last_stable_offset(high_watermark=7) == 5
    assert a.end(commit=False).base_offset == 7
    assert log.last_stable_offset(high_watermark=7) == 5  # A's abort is not replicated
    assert log.last_stable_offset(high_watermark=8) == 8
    assert log.first_unstable_offset() is None
    # Only aborts are indexed; B's LSO was A's open transaction at 5, A's its marker + 1.
    assert all_entries(log) == [AbortedTxn(B, 2, 6, 5), AbortedTxn(A, 5, 7, 8)]


def test_the_lso_never_exceeds_the_high_watermark(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(count=5))
    assert log.last_stable_offset(high_watermark=3) == 3
    Producer(log, A).send()
    assert log.last_stable_offset(high_watermark=3) == 3
    assert log.last_stable_offset(high_watermark=6) == 5


def test_the_first_unstable_offset_is_never_below_the_log_start(open_log: LogFactory) -> None:
    log = open_log()
    Producer(log, A).send(count=3)
    log.delete_records_before(2)
    assert log.first_unstable_offset() == 2
    assert log.last_stable_offset(high_watermark=3) == 2


def test_active_producers_report_their_transactions(open_log: LogFactory) -> None:
    log = open_log()
    a, b = Producer(log, A, epoch=3), Producer(log, B)
    a.send(2)
    b.send()
    b.end(commit=True, coordinator_epoch=9)
    described = {p.producer_id: p for p in log.active_producers()}
    assert described[A].producer_epoch == 3
    assert described[A].last_sequence == 1
    assert described[A].current_txn_start_offset == 0
    assert described[A].coordinator_epoch == -1
    assert described[B].current_txn_start_offset == -1
    assert described[B].coordinator_epoch == 9
    assert described[B].last_timestamp == START_MS


def test_a_marker_is_written_in_kafkas_layout(open_log: LogFactory) -> None:
    log = open_log()
    a = Producer(log, A, epoch=4)
    a.send()
    log.append_control_marker(
        producer_id=A,
        producer_epoch=4,
        commit=False,
        coordinator_epoch=11,
        leader_epoch=2,
        timestamp_ms=START_MS + 5,
    )
    header, data = batches_on_disk(log)[-1]
    expected = bytearray(
        kafka_marker(A, 4, commit=False, coordinator_epoch=11, timestamp=START_MS + 5)
    )
    struct.pack_into(">q", expected, 0, 1)  # base offset, stamped by the leader
    struct.pack_into(">i", expected, 12, 2)  # partition leader epoch
    assert data == bytes(expected)
    assert header.is_control and header.is_transactional and header.base_sequence == -1


def test_a_marker_for_a_producer_without_a_transaction_is_appended_but_not_indexed(
    open_log: LogFactory,
) -> None:
    log = open_log()
    result = Producer(log, A).end(commit=False, coordinator_epoch=2)
    assert (result.base_offset, log.log_end_offset) == (0, 1)
    assert all_entries(log) == []
    assert log.active_producers()[0].coordinator_epoch == 2


def test_a_marker_with_a_stale_producer_epoch_is_refused(open_log: LogFactory) -> None:
    log = open_log()
    Producer(log, A, epoch=5).send()
    with pytest.raises(InvalidProducerEpochError, match="epoch 4, older than the current epoch 5"):
        Producer(log, A, epoch=4).end(commit=True)
    assert log.log_end_offset == 1
    assert log.first_unstable_offset() == 0
    # A newer epoch (the coordinator fencing the producer) is accepted and aborts.
    Producer(log, A, epoch=6).end(commit=False)
    assert all_entries(log) == [AbortedTxn(A, 0, 1, 2)]


def test_a_marker_from_a_stale_coordinator_is_refused(open_log: LogFactory) -> None:
    log = open_log()
    a = Producer(log, A)
    a.send()
    a.end(commit=True, coordinator_epoch=3)
    a.send()
    with pytest.raises(TransactionCoordinatorFencedError) as exc:
        a.end(commit=False, coordinator_epoch=2)
    assert exc.value.error_code == 52  # TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == 3


def test_a_non_transactional_write_inside_a_transaction_is_refused(
    open_log: LogFactory,
) -> None:
    log = open_log()
    a = Producer(log, A)
    a.send()
    with pytest.raises(InvalidTxnStateError) as exc:
        a.send(transactional=False)
    assert exc.value.error_code == 48  # INVALID_TXN_STATE
    assert log.log_end_offset == 1


def test_clients_still_may_not_write_control_batches(open_log: LogFactory) -> None:
    log = open_log()
    with pytest.raises(Exception, match="may not write control batches"):
        append(log, kafka_marker(A, 0, commit=True, coordinator_epoch=0, timestamp=START_MS))


def _three_segments_of_transactions(log: Log) -> tuple[Producer, Producer, Producer]:
    """A, B and C interleaved over several segments (see the offsets in the comments)."""
    a, b, c = Producer(log, A), Producer(log, B), Producer(log, C)
    a.send()  # 0
    b.send()  # 1
    a.end(commit=False)  # 2: A [0, 2] aborted, LSO 1 (B open)
    c.send()  # 3
    b.send()  # 4
    b.end(commit=False)  # 5: B [1, 5] aborted, LSO 3 (C open)
    c.end(commit=True)  # 6
    a.send()  # 7
    a.end(commit=False)  # 8: A [7, 8] aborted, LSO 9
    return a, b, c


def test_collect_aborted_transactions_over_several_segments(open_log: LogFactory) -> None:
    log = open_log(LogConfig(segment_bytes=200))
    _three_segments_of_transactions(log)
    assert len(log.segments) >= 4
    a1, b1, a2 = AbortedTxn(A, 0, 2, 1), AbortedTxn(B, 1, 5, 3), AbortedTxn(A, 7, 8, 9)
    assert all_entries(log) == [a1, b1, a2]
    assert log.collect_aborted_transactions(0, 9) == [a1, b1, a2]
    assert log.collect_aborted_transactions(0, 1) == [a1]
    # B started in the first segment but its marker (and entry) is further on.
    assert log.collect_aborted_transactions(1, 2) == [a1, b1]
    assert log.collect_aborted_transactions(3, 5) == [b1]
    assert log.collect_aborted_transactions(6, 7) == []
    assert log.collect_aborted_transactions(6, 9) == [a2]
    assert log.collect_aborted_transactions(9, 9) == []


def test_a_follower_does_the_same_bookkeeping_from_replicated_markers(
    open_log: LogFactory, tmp_path
) -> None:
    leader = open_log(LogConfig(segment_bytes=200))
    _, _, c = _three_segments_of_transactions(leader)
    assert c.send().base_offset == 9  # C open
    follower = Log.open(tmp_path / "follower-0", config=LogConfig(), time_ms=leader.time_ms)
    try:
        for _, data in batches_on_disk(leader):
            follower.append_as_follower(bytearray(data))
        assert all_entries(follower) == all_entries(leader)
        assert follower.collect_aborted_transactions(0, 10) == all_entries(leader)
        assert follower.last_stable_offset(high_watermark=10) == 9
        assert follower.active_producers() == leader.active_producers()
    finally:
        follower.close()


def test_truncating_below_a_marker_reopens_the_transaction(open_log: LogFactory) -> None:
    log = open_log(LogConfig(segment_bytes=200))
    _, b, _ = _three_segments_of_transactions(log)
    log.truncate_to(5)  # B's abort marker at 5 goes, and A's later transaction
    assert all_entries(log) == [AbortedTxn(A, 0, 2, 1)]
    assert log.first_unstable_offset() == 1  # B open again from 1, C from 3
    described = {p.producer_id: p for p in log.active_producers()}
    assert described[B].current_txn_start_offset == 1
    assert described[C].current_txn_start_offset == 3
    # The leader's marker arrives again and is indexed again.
    b.end(commit=False)
    assert all_entries(log)[-1] == AbortedTxn(B, 1, 5, 3)


def txn_index_files(log: Log) -> list[str]:
    return sorted(p.name for p in log.directory.glob(f"*{TXN_INDEX_SUFFIX}"))


def test_deleting_a_segment_deletes_its_txn_index(open_log: LogFactory) -> None:
    log = open_log(LogConfig(segment_bytes=200))
    _three_segments_of_transactions(log)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6, 8]
    assert txn_index_files(log) == [f"{base:020d}.txnindex" for base in (2, 4, 8)]
    log.delete_records_before(6)  # what retention does: segments 0, 2 and 4 go
    assert txn_index_files(log) == [f"{8:020d}.txnindex"]
    # B's transaction is gone from the log; A's last abort is still reported.
    assert log.collect_aborted_transactions(6, 9) == [AbortedTxn(A, 7, 8, 9)]
