"""Log.open recovery: torn tails, corrupt data, lost indexes, checkpoints, leftovers."""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest

from weir.log.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from weir.log.errors import KafkaStorageError
from weir.log.loader import CLEAN_SHUTDOWN_FILE
from weir.log.log import Log, LogConfig
from weir.log.segment import LogSegment

from .conftest import START_MS, LogFactory, append, disk_headers, make_batch, read_headers

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def fill(log: Log, batches: int = 30) -> None:
    for i in range(batches):
        append(log, make_batch(count=1 + i % 3, value_size=40 + i * 3), epoch=i // 10)


def index_entries(log: Log) -> list[list[tuple[int, int]]]:
    return [[s.offset_index.entry(i) for i in range(s.offset_index.entries)] for s in log.segments]


def corrupt_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def test_clean_close_and_reopen_keeps_everything(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    end, size, entries = log.log_end_offset, log.size_bytes, index_entries(log)
    log.close()
    assert (log.directory / CLEAN_SHUTDOWN_FILE).exists()
    log = open_log(CONFIG, recovery_point=0)
    assert not (log.directory / CLEAN_SHUTDOWN_FILE).exists()
    assert (log.log_end_offset, log.size_bytes, log.recovery_point) == (end, size, end)
    assert index_entries(log) == entries
    append(log, make_batch())
    assert log.log_end_offset == end + 1


def test_reopen_after_a_crash_recovers_every_batch(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    end, entries = log.log_end_offset, index_entries(log)
    log.close_handlers()  # a crash: nothing flushed, trimmed or marked
    log = open_log(CONFIG, recovery_point=0)
    assert log.log_end_offset == end
    assert index_entries(log) == entries
    assert read_headers(log.read(0, 10**6))[-1].next_offset == end


def test_recovery_truncates_a_torn_tail(open_log: LogFactory, caplog) -> None:
    log = open_log(CONFIG)
    fill(log)
    end, size = log.log_end_offset, log.size_bytes
    active = log.active_segment.log_path
    log.close_handlers()
    torn = make_batch(count=5, value_size=100)
    with open(active, "ab") as f:
        f.write(torn[:70])
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG, recovery_point=0)
    assert (log.log_end_offset, log.size_bytes) == (end, size)
    assert str(active) in caplog.text and "truncated 70 bytes" in caplog.text
    assert append(log, make_batch()).base_offset == end
    disk_headers(log)  # every batch on disk is whole and CRC-valid


def closed_after_fill(open_log: LogFactory, *, clean: bool = True) -> tuple[int, int, LogSegment]:
    """A filled log, closed (cleanly, or as if the close never finished): its end offset,
    size in bytes and active segment."""
    log = open_log(CONFIG)
    fill(log)
    end, size, active = log.log_end_offset, log.size_bytes, log.active_segment
    log.close()
    if not clean:
        (log.directory / CLEAN_SHUTDOWN_FILE).unlink()
    return end, size, active


def filled_with_a_middle_victim(open_log: LogFactory) -> tuple[Log, LogSegment]:
    """A filled log of at least four segments and its second one, to damage: a segment with
    segments after it, so a test sees what recovery does to those."""
    log = open_log(CONFIG)
    fill(log)
    assert len(log.segments) >= 4
    return log, log.segments[1]


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.parametrize(
    ("clean", "tail", "reopen"),
    [
        pytest.param(
            False, b"\x00" * 3 + b"garbage" * 20, {"recovery_point": 0}, id="garbage-after-a-crash"
        ),
        # Preallocated or never-written blocks read as zeros.
        pytest.param(True, b"\x00" * 4096, {}, id="zeroed-tail-after-a-clean-shutdown"),
    ],
)
def test_recovery_truncates_bytes_after_the_last_batch(
    open_log: LogFactory, clean: bool, tail: bytes, reopen: dict[str, int]
) -> None:
    end, size, active = closed_after_fill(open_log, clean=clean)
    append_bytes(active.log_path, tail)
    log = open_log(CONFIG, **reopen)
    assert (log.log_end_offset, log.size_bytes) == (end, size)


def test_corrupt_batch_truncates_its_segment_and_drops_later_segments(
    open_log: LogFactory, caplog
) -> None:
    log, victim = filled_with_a_middle_victim(open_log)
    positions = [(p, h) for p, h in victim.iter_headers()]
    position, header = positions[2]
    path, later = victim.log_path, [s.log_path for s in log.segments[2:]]
    log.close_handlers()
    corrupt_byte(path, position + 70)  # inside the CRC'd records
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG, recovery_point=0)
    assert log.log_end_offset == header.base_offset
    assert len(log.segments) == 2
    assert not any(p.exists() for p in later)
    assert "CRC" in caplog.text and str(path) in caplog.text
    disk_headers(log)
    assert log.leader_epoch_cache.latest_entry.start_offset < log.log_end_offset


def test_recovery_starts_at_the_segment_holding_the_recovery_point(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.flush()
    assert log.recovery_point == log.log_end_offset
    flushed = log.segments[0].log_path
    fill(log, 10)
    end = log.log_end_offset
    recovery_point = log.recovery_point
    log.close_handlers()
    # Below the recovery point data is trusted: a flipped bit there is not scanned for.
    corrupt_byte(flushed, 100)
    log = open_log(CONFIG, recovery_point=recovery_point)
    assert log.log_end_offset == end
    assert log.recovery_point == recovery_point


def test_recovery_rebuilds_deleted_index_files(open_log: LogFactory, caplog) -> None:
    log = open_log(CONFIG)
    fill(log)
    entries = index_entries(log)
    largest = [s.largest_timestamp for s in log.segments]
    log.close()
    for segment in log.segments[:2]:
        segment.offset_index.path.unlink()
        segment.time_index.path.unlink()
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert "missing index files" in caplog.text
    assert index_entries(log) == entries
    assert [s.largest_timestamp for s in log.segments] == largest
    assert read_headers(log.read(3, 10**6))[0].last_offset >= 3


def test_recovery_rebuilds_corrupted_index_files(open_log: LogFactory, caplog) -> None:
    log = open_log(CONFIG)
    fill(log)
    entries = index_entries(log)
    log.close()
    first = log.segments[0]
    first.offset_index.path.write_bytes(b"\x7f" * 16)  # two entries far past the log
    with open(log.segments[1].offset_index.path, "ab") as f:
        f.write(b"\x01\x02\x03")  # not a whole entry
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert str(first.offset_index.path) in caplog.text
    assert index_entries(log) == entries


def test_recovery_point_and_log_start_checkpoints_round_trip(
    open_log: LogFactory, tmp_path: Path
) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.flush()
    log.delete_records_before(log.segments[1].base_offset + 1)
    fill(log, 5)
    key = ("orders", 0)
    write_offset_checkpoint(
        tmp_path / "recovery-point-offset-checkpoint", {key: log.recovery_point}
    )
    write_offset_checkpoint(tmp_path / "log-start-offset-checkpoint", {key: log.log_start_offset})
    start, recovery_point, end = log.log_start_offset, log.recovery_point, log.log_end_offset
    log.close_handlers()
    log = open_log(
        CONFIG,
        recovery_point=read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint")[key],
        log_start_offset=read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint")[key],
    )
    assert (log.log_start_offset, log.recovery_point, log.log_end_offset) == (
        start,
        recovery_point,
        end,
    )


def test_log_start_offset_is_at_least_the_first_segment_base(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log)
    log.delete_records_before(log.segments[2].base_offset)
    base = log.segments[0].base_offset
    log.close()
    log = open_log(CONFIG, log_start_offset=0)
    assert log.log_start_offset == base


def test_recovery_point_above_the_log_end_is_clamped(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 5)
    end = log.log_end_offset
    log.close_handlers()
    log = open_log(CONFIG, recovery_point=end + 1000)
    assert log.recovery_point == end


def test_leftover_temp_files_are_deleted(open_log: LogFactory, log_dir: Path) -> None:
    log = open_log(CONFIG)
    fill(log, 3)
    log.close()
    leftovers = [
        "00000000000000000000.log.cleaned",
        "00000000000000000000.log.deleted",
        "00000000000000000000.index.deleted",
        "leader-epoch-checkpoint.tmp",
        "00000000000000000099.snapshot.tmp",
        "00000000000000000050.index",  # orphaned: no .log
    ]
    for name in leftovers:
        (log_dir / name).write_bytes(b"junk")
    open_log(CONFIG)
    assert not any((log_dir / name).exists() for name in leftovers)


def test_a_finished_swap_file_replaces_the_segments_it_covers(
    open_log: LogFactory, log_dir: Path
) -> None:
    log = open_log(CONFIG)
    fill(log)
    first, second = log.segments[0], log.segments[1]
    end = log.log_end_offset
    log.close()
    # A cleaner wrote segments 0 and 1 as one swap file, then crashed before renaming it.
    swap = log_dir / "00000000000000000000.log.swap"
    swap.write_bytes(first.log_path.read_bytes() + second.log_path.read_bytes())
    second.log_path.unlink()
    log = open_log(CONFIG)
    assert not swap.exists()
    assert not second.log_path.exists()
    assert log.segments[0].base_offset == 0
    assert log.segments[1].base_offset == log.segments[0].read_next_offset()
    assert log.log_end_offset == end
    assert [h.base_offset for h in disk_headers(log)] == [
        h.base_offset for h in read_headers(log.read(0, 10**7))
    ]


def test_unparseable_segment_file_name_is_a_clear_error(log_dir: Path, clock) -> None:
    log_dir.mkdir(parents=True)
    (log_dir / "12.log").write_bytes(b"")
    with pytest.raises(KafkaStorageError, match=r"12\.log"):
        Log.open(log_dir, config=CONFIG, time_ms=clock)


def test_log_start_offset_beyond_the_data_empties_the_log(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 5)
    log.close()
    log = open_log(CONFIG, log_start_offset=500)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (500, 500, 0)
    assert append(log, make_batch()).base_offset == 500


def test_flush_moves_the_recovery_point_to_the_log_end(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 5)
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == log.log_end_offset
    fill(log, 2)
    assert log.recovery_point < log.log_end_offset


def test_clean_close_lets_the_next_open_skip_the_crc_scan(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    fill(log, 10)
    end = log.log_end_offset
    segment = log.active_segment
    assert segment.offset_index.entries > 0
    path = segment.log_path
    log.close()
    # Bit rot before the last index entry after a clean close goes unseen (as in Kafka:
    # only the tail is checked)...
    corrupt_byte(path, 100)
    log = open_log(CONFIG, recovery_point=0)
    assert log.log_end_offset == end
    log.close_handlers()  # ...but after a crash the scan finds it
    log = open_log(CONFIG, recovery_point=0)
    assert log.log_end_offset < end


# -- damage after a clean shutdown: the marker is a claim the loader checks ----------------


def loader_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "weir.log.loader"]


def test_torn_tail_after_a_clean_shutdown_is_truncated(open_log: LogFactory, caplog) -> None:
    end, size, active = closed_after_fill(open_log)
    path, base = active.log_path, active.base_offset
    # The disk lied: half a batch after the clean close.
    append_bytes(path, make_batch(count=5, value_size=100)[:70])
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG, recovery_point=end)
    assert (log.log_end_offset, log.size_bytes) == (end, size)
    assert log.recovery_point <= base  # a crash before the next flush rescans the repair
    (line,) = loader_warnings(caplog)
    assert str(path) in line and "truncated 70 bytes" in line and f"offset {end}" in line
    assert append(log, make_batch()).base_offset == end
    disk_headers(log)


def test_bad_crc_in_the_last_batch_after_a_clean_shutdown_is_truncated(
    open_log: LogFactory, caplog
) -> None:
    log = open_log(CONFIG)
    fill(log)
    last_position, last = list(log.active_segment.iter_headers())[-1]
    path = log.active_segment.log_path
    log.close()
    corrupt_byte(path, last_position + 70)
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert log.log_end_offset == last.base_offset
    (line,) = loader_warnings(caplog)
    assert "CRC" in line and str(path) in line
    disk_headers(log)


def test_torn_middle_segment_after_a_clean_shutdown_drops_what_follows(
    open_log: LogFactory, caplog
) -> None:
    log, victim = filled_with_a_middle_victim(open_log)
    last_position, last = list(victim.iter_headers())[-1]
    path, later = victim.log_path, [s.log_path for s in log.segments[2:]]
    log.close()
    with open(path, "r+b") as f:  # a copy of the data directory cut the segment short
        f.truncate(last_position + 30)
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert log.log_end_offset == last.base_offset
    assert len(log.segments) == 2 and not any(p.exists() for p in later)
    (line,) = loader_warnings(caplog)
    assert str(path) in line and f"deleted {len(later)} later segment(s)" in line
    disk_headers(log)
    assert log.leader_epoch_cache.latest_entry.start_offset < log.log_end_offset
    assert append(log, make_batch()).base_offset == last.base_offset


def test_index_pointing_into_a_batch_is_rebuilt_without_losing_data(
    open_log: LogFactory, caplog
) -> None:
    log = open_log(CONFIG)
    fill(log)
    end, entries = log.log_end_offset, index_entries(log)
    index = log.segments[0].offset_index
    log.close()
    data = bytearray(index.path.read_bytes())
    data[-1] += 1  # the last entry now points one byte into its batch
    index.path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert log.log_end_offset == end
    assert index_entries(log) == entries
    (line,) = loader_warnings(caplog)
    assert "found only valid batches" in line


def test_corrupt_time_index_is_rebuilt(open_log: LogFactory, caplog) -> None:
    log = open_log(CONFIG)
    fill(log)
    largest = [s.largest_timestamp for s in log.segments]
    log.close()
    time_index = log.segments[0].time_index.path
    # Two entries whose timestamps go backwards.
    time_index.write_bytes(struct.pack(">qiqi", START_MS + 100, 5, START_MS, 6))
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert str(time_index) in caplog.text
    assert [s.largest_timestamp for s in log.segments] == largest
    assert log.offset_for_timestamp(0) == (0, log.segments[0].find_offset_by_timestamp(0)[1])
