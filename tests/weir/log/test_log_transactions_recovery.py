"""Transactions across restarts: producer snapshots, crash recovery of the .txnindex,
damaged indexes, segment swaps."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from weir.log.log import AbortedTxn, Log, LogConfig
from weir.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
    TransactionCoordinatorFencedError,
)
from weir.log.segment import BatchInfo, LogSegment
from weir.log.transaction_index import TXN_INDEX_SUFFIX
from weir.protocol.records import parse_header

from .conftest import LogFactory, make_batch
from .test_log_transactions import (
    TRANSACTIONAL,
    A,
    B,
    C,
    Producer,
    _three_segments_of_transactions,
    all_entries,
    with_attributes,
)

SMALL = LogConfig(segment_bytes=200)
# What ``_three_segments_of_transactions`` aborts.
ABORTED = [AbortedTxn(A, 0, 2, 1), AbortedTxn(B, 1, 5, 3), AbortedTxn(A, 7, 8, 9)]


def txn_index(log: Log, base: int) -> Path:
    return log.directory / f"{base:020d}{TXN_INDEX_SUFFIX}"


def test_an_open_transaction_survives_close_and_reopen(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    a, b = Producer(log, A), Producer(log, B)
    a.send(2)  # 0-1
    b.send()  # 2
    b.end(commit=True, coordinator_epoch=4)  # 3
    log.close()
    log = open_log(SMALL)
    assert log.first_unstable_offset() == 0
    described = {p.producer_id: p for p in log.active_producers()}
    assert described[A].current_txn_start_offset == 0
    assert described[B].coordinator_epoch == 4
    a.log = b.log = log
    a.end(commit=False)  # 4: the transaction from before the restart ends here
    assert all_entries(log) == [AbortedTxn(A, 0, 4, 5)]
    # The coordinator epoch survived too: an older coordinator is still fenced.
    b.send()
    with pytest.raises(TransactionCoordinatorFencedError):
        b.end(commit=True, coordinator_epoch=3)


def test_a_snapshot_round_trips_the_transaction_fields(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    state.update(parse_header(_txn_batch(A, offset=10)), 10)
    state.update(parse_header(_txn_batch(B, offset=11)), 11)
    state.map_end_offset = 12
    state.take_snapshot()
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_latest_snapshot(12) == 12
    assert loaded.producers == state.producers
    assert loaded.producers[A].current_txn_first_offset == 10
    assert loaded.ongoing_transactions() == [(10, A), (11, B)]
    assert loaded.first_unstable_offset() == 10


def _txn_batch(pid: int, *, offset: int) -> bytes:
    return with_attributes(
        make_batch(producer_id=pid, producer_epoch=1, base_sequence=0, base_offset=offset),
        TRANSACTIONAL,
    )


def test_a_version_1_snapshot_is_still_read(tmp_path: Path) -> None:
    """Version 1 (before transactions): producerId, epoch, lastTimestamp, batchCount and
    the batches; the transaction fields read as 'none'."""
    body = struct.pack(">i", 1) + struct.pack(">qhqb", A, 3, 1234, 1)
    body += struct.pack(">iiqqq", 0, 4, 20, 24, 1234)
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    (tmp_path / f"{25:020d}.snapshot").write_bytes(data)
    state = ProducerStateManager(tmp_path)
    assert state.load_latest_snapshot(100) == 25
    entry = state.producers[A]
    assert entry == ProducerStateEntry(A, 3, 1234, entry.batches)
    assert list(entry.batches) == [BatchMetadata(0, 4, 20, 24, 1234)]
    assert (entry.coordinator_epoch, entry.current_txn_first_offset) == (-1, -1)
    assert state.first_unstable_offset() is None


def test_recovery_after_a_crash_rebuilds_lost_txn_index_entries(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    log.close_handlers()  # a crash: nothing flushed
    for path in log.directory.glob(f"*{TXN_INDEX_SUFFIX}"):
        path.unlink()  # never reached the disk
    log = open_log(SMALL, recovery_point=0)
    assert all_entries(log) == ABORTED
    assert [p.name for p in sorted(log.directory.glob(f"*{TXN_INDEX_SUFFIX}"))] == [
        txn_index(log, base).name for base in (2, 4, 8)
    ]


def test_recovery_from_a_later_segment_finds_transactions_begun_before_it(
    open_log: LogFactory,
) -> None:
    """B's transaction starts at offset 1 (segment 0) and aborts at 5 (segment 4); only
    segment 4 on is recovered, from the producer snapshot taken when it was rolled."""
    log = open_log(SMALL)
    a, b, c = Producer(log, A), Producer(log, B), Producer(log, C)
    a.send()  # 0
    b.send()  # 1
    a.end(commit=False)  # 2
    c.send()  # 3
    b.send()  # 4
    log.flush()  # recovery point 5: segment 4 holds it
    b.end(commit=False)  # 5
    c.end(commit=True)  # 6
    log.close_handlers()
    txn_index(log, 4).write_bytes(b"\x00" * 20)  # the append was torn
    log = open_log(SMALL, recovery_point=5)
    assert all_entries(log) == ABORTED[:2]
    # Replayed markers count as stable once the high watermark is past them.
    assert log.first_unstable_offset() == 1
    assert log.last_stable_offset(high_watermark=7) == 7


def test_recovery_keeps_flushed_entries_without_duplicating_them(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    log.flush()
    log.close_handlers()  # a crash right after a flush: every index entry is on disk
    log = open_log(SMALL, recovery_point=4, assume_unclean=True)
    assert all_entries(log) == ABORTED


def test_a_damaged_txn_index_is_rebuilt_from_the_log(open_log: LogFactory, caplog) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    log.close()  # clean: the next open checks, but does not scan, the segments
    txn_index(log, 4).write_bytes(struct.pack(">hqqqq", 9, B, 1, 5, 3))  # unknown version
    log = open_log(SMALL)
    assert all_entries(log) == ABORTED
    assert "00000000000000000004.txnindex" in caplog.text


def test_truncation_below_a_marker_survives_a_restart(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    log.truncate_to(5)
    log.close()
    log = open_log(SMALL)
    assert all_entries(log) == ABORTED[:1]
    assert log.first_unstable_offset() == 1
    assert not txn_index(log, 8).exists()


def _copy_of(log: Log, segments: list[LogSegment]) -> LogSegment:
    """A ``.cleaned`` segment holding the batches of ``segments`` (a cleaner that keeps
    everything)."""
    new = LogSegment(
        log.directory,
        segments[0].base_offset,
        index_interval_bytes=log.config.index_interval_bytes,
        max_index_size=log.config.segment_index_bytes,
        time_ms=log.time_ms,
        file_suffix=".cleaned",
    )
    for segment in segments:
        data = segment.log_path.read_bytes()
        infos = []
        for position, header in segment.iter_headers():
            infos.append(BatchInfo(position, header.size, header.last_offset, header.max_timestamp))
        new.append(data, infos)
    new.flush()
    return new


def test_replacing_segments_keeps_their_aborted_transactions(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    old = list(log.segments[1:3])  # bases 2 and 4
    log.replace_segments(_copy_of(log, old), old)
    assert [s.base_offset for s in log.segments] == [0, 2, 6, 8]
    assert all_entries(log) == ABORTED
    assert log.collect_aborted_transactions(1, 2) == ABORTED[:2]


def test_a_swap_completed_after_a_crash_rebuilds_its_txn_index(open_log: LogFactory) -> None:
    log = open_log(SMALL)
    _three_segments_of_transactions(log)
    old = list(log.segments[1:3])

    def crash(step: str) -> None:
        if step == "swap-renamed":
            raise RuntimeError("crash")

    new = _copy_of(log, old)
    with pytest.raises(RuntimeError, match="crash"):
        log.replace_segments(new, old, on_step=crash)
    log.close_handlers()
    new.close_handlers()
    log = open_log(SMALL, recovery_point=log.log_end_offset)
    assert [s.base_offset for s in log.segments] == [0, 2, 6, 8]
    assert all_entries(log) == ABORTED
