"""Moving the ends of a log: DeleteRecords, truncate_to, truncate_fully_and_start_at."""

from __future__ import annotations

import pytest

from weir.log.errors import OffsetOutOfRangeError
from weir.log.leader_epoch import EpochEntry
from weir.log.log import Log, LogConfig

from .conftest import FakeClock, LogFactory, append, disk_headers, make_batch, read_headers

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100, file_delete_delay_ms=60_000)


def fill(log: Log, batches: int = 24, epoch_every: int = 8) -> None:
    for i in range(batches):
        append(log, make_batch(count=2, value_size=60), epoch=i // epoch_every)


def test_delete_records_before_moves_log_start_and_deletes_only_whole_segments(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    fill(log)
    bases = [s.base_offset for s in log.segments]
    target = bases[2] + 1  # just inside the third segment
    files = [s.log_path for s in log.segments[:2]]
    assert log.delete_records_before(target) == target
    assert log.log_start_offset == target
    assert [s.base_offset for s in log.segments] == bases[2:]
    assert not any(p.exists() for p in files)
    assert log.size_bytes == sum(s.size for s in log.segments)
    # The batch holding the new start is still served from its start.
    assert read_headers(log.read(target, 10**6))[0].base_offset == bases[2]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)


def test_delete_records_before_never_deletes_the_active_segment(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    end = log.log_end_offset
    assert log.delete_records_before(end) == end
    assert len(log.segments) == 1
    assert log.read(end, 100) == []
    assert append(log, make_batch()).base_offset == end


def test_delete_records_below_the_log_start_changes_nothing(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.delete_records_before(10)
    assert log.delete_records_before(4) == 10
    assert log.log_start_offset == 10


def test_delete_records_beyond_the_log_end_offset_is_out_of_range(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError, match="above the log end offset"):
        log.delete_records_before(log.log_end_offset + 1)


def test_delete_records_truncates_the_leader_epoch_cache_from_the_start(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    fill(log)  # epochs 0, 1, 2 start at 0, 16, 32
    log.delete_records_before(20)
    assert log.leader_epoch_cache.entries == (EpochEntry(1, 20), EpochEntry(2, 32))


def test_deleted_segment_stays_readable_until_the_file_delete_delay(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(CONFIG)
    fill(log)
    in_flight = log.read(0, 300)
    log.delete_records_before(log.segments[3].base_offset)
    assert not in_flight[0].file.closed
    assert read_headers(in_flight)[0].base_offset == 0  # sendfile would still work
    clock.advance(60_000)
    log.read(log.log_start_offset, 10)
    assert in_flight[0].file.closed


def test_truncate_to_removes_batches_and_reassigns_their_offsets(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.truncate_to(31)  # inside the batch [30, 31]
    assert log.log_end_offset == 30
    assert disk_headers(log)[-1].next_offset == 30
    assert log.size_bytes == sum(s.size for s in log.segments)
    assert append(log, make_batch(count=3), epoch=5).base_offset == 30
    assert [h.base_offset for h in read_headers(log.read(28, 10**6))] == [28, 30]


def test_truncate_into_an_earlier_segment_deletes_later_ones_and_keeps_indexing(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    fill(log)
    keep = log.segments[1]
    later = [s.log_path for s in log.segments[2:]]
    log.truncate_to(keep.base_offset + 4)
    assert log.active_segment is keep
    assert not any(p.exists() for p in later)
    for _ in range(20):
        append(log, make_batch(count=2, value_size=60), epoch=9)
    # Appends after truncation index and roll normally.
    assert log.segments[1].offset_index.entries > 0
    assert len(log.segments) > 2
    headers = read_headers(log.read(0, 10**7))
    assert [h.base_offset for h in headers] == list(range(0, log.log_end_offset, 2))


def test_truncate_to_truncates_the_leader_epoch_cache(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)  # epochs 0, 1, 2 start at 0, 16, 32
    log.truncate_to(20)
    assert log.leader_epoch_cache.entries == (EpochEntry(0, 0), EpochEntry(1, 16))
    assert log.end_offset_for_epoch(1) == (1, 20)


def test_truncate_to_at_or_above_the_log_end_does_nothing(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 4)
    log.truncate_to(100)
    assert log.log_end_offset == 8


def test_truncation_survives_reopen(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.truncate_to(21)
    log.close()
    log = open_log(CONFIG)
    assert log.log_end_offset == 20
    assert disk_headers(log)[-1].next_offset == 20


def test_truncate_fully_and_start_at_empties_the_log(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    old = [s.log_path for s in log.segments]
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (1000, 1000, 1000)
    assert log.size_bytes == 0
    assert not any(p.exists() for p in old)
    assert log.leader_epoch_cache.entries == ()
    assert log.producer_state.snapshot_offsets() == []
    result = append(log, make_batch(), epoch=7)
    assert result.base_offset == 1000
    assert log.segments[0].log_path.name == "00000000000000001000.log"
    log.close()
    log = open_log(CONFIG)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1001)


def test_delete_removes_the_directory(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 3)
    log.delete()
    assert not log.directory.exists()
