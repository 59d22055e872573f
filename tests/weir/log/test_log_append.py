"""Log.append / append_as_follower: offsets, stamping, rolling, indexes, limits."""

from __future__ import annotations

import pytest

from weir.log.errors import (
    InvalidRecordError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from weir.log.leader_epoch import EpochEntry
from weir.log.log import LogConfig
from weir.protocol.records import (
    compute_crc,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)

from .conftest import START_MS, FakeClock, LogFactory, append, disk_headers, make_batch, payload


def test_empty_log_starts_at_offset_zero(open_log: LogFactory) -> None:
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert log.directory.is_dir()
    assert [s.log_path.name for s in log.segments] == ["00000000000000000000.log"]


def test_append_assigns_dense_offsets_starting_at_log_end_offset(open_log: LogFactory) -> None:
    log = open_log()
    first = append(log, make_batch(count=3))
    second = append(log, make_batch(count=1), make_batch(count=4))
    assert (first.base_offset, first.last_offset) == (0, 2)
    assert (second.base_offset, second.last_offset) == (3, 7)
    assert log.log_end_offset == 8
    headers = disk_headers(log)
    assert [(h.base_offset, h.last_offset) for h in headers] == [(0, 2), (3, 3), (4, 7)]


def test_append_ignores_the_producers_base_offset(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(count=2))
    result = append(log, make_batch(count=2, base_offset=12345))
    assert result.base_offset == 2
    assert disk_headers(log)[-1].base_offset == 2


def test_append_stamps_the_leader_epoch_into_every_batch(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(leader_epoch=99), make_batch(), epoch=3)
    append(log, make_batch(), epoch=4)
    assert [h.partition_leader_epoch for h in disk_headers(log)] == [3, 3, 4]


def test_leader_epoch_cache_records_where_each_epoch_starts(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(count=2), epoch=1)
    append(log, make_batch(count=2), epoch=1)
    append(log, make_batch(count=2), epoch=3)
    assert log.leader_epoch_cache.entries == (EpochEntry(1, 0), EpochEntry(3, 4))
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(3) == (3, 6)


def test_create_time_keeps_the_producers_timestamps(open_log: LogFactory) -> None:
    log = open_log()
    result = append(log, make_batch(count=3, timestamps=[5, 9, 7]))
    assert result.log_append_time == -1
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (9, 2)
    assert disk_headers(log)[0].max_timestamp == 9


def test_log_append_time_rewrites_max_timestamp_and_keeps_crc_valid(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    clock.now = 1_800_000_000_000
    result = append(log, make_batch(count=3, timestamps=[5, 9, 7]), make_batch(count=1))
    assert result.log_append_time == 1_800_000_000_000
    assert result.max_timestamp == 1_800_000_000_000
    assert result.offset_of_max_timestamp == 0
    headers = disk_headers(log)  # iter_batches checks every CRC
    assert all(h.is_log_append_time for h in headers)
    assert all(h.max_timestamp == 1_800_000_000_000 for h in headers)


def test_payload_is_written_byte_for_byte_apart_from_stamped_fields(open_log: LogFactory) -> None:
    log = open_log()
    original = make_batch(count=5, codec="zstd", value_size=200)
    append(log, original, epoch=2)
    expected = bytearray(original)
    set_base_offset(expected, 0, 0)
    set_partition_leader_epoch(expected, 0, 2)
    assert log.active_segment.log_path.read_bytes() == expected


def test_roll_when_the_next_append_would_exceed_segment_bytes(open_log: LogFactory) -> None:
    batch = make_batch(count=1, value_size=100)
    log = open_log(LogConfig(segment_bytes=len(batch) * 3))
    for _ in range(7):
        append(log, batch)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert all(s.size <= len(batch) * 3 for s in log.segments)
    assert log.size_bytes == 7 * len(batch)


def test_roll_after_segment_ms_counted_from_the_first_batch_timestamp(
    open_log: LogFactory,
) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    append(log, make_batch(timestamps=[START_MS]))
    append(log, make_batch(timestamps=[START_MS + 1000]))  # exactly segment.ms: no roll
    assert len(log.segments) == 1
    append(log, make_batch(timestamps=[START_MS + 1001]))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_after_segment_ms_by_clock_when_batches_have_no_timestamp(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    append(log, make_batch(timestamps=[-1]))
    clock.advance(1000)
    append(log, make_batch(timestamps=[-1]))
    assert len(log.segments) == 1
    clock.advance(1)
    append(log, make_batch(timestamps=[-1]))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_by_segment_ms_with_log_append_time_uses_the_clock(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig(segment_ms=1000, message_timestamp_type="LogAppendTime"))
    append(log, make_batch(timestamps=[1]))
    clock.advance(1001)
    append(log, make_batch(timestamps=[1]))
    assert len(log.segments) == 2


def test_roll_when_the_offset_index_is_full(open_log: LogFactory) -> None:
    log = open_log(LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    for _ in range(5):
        append(log, make_batch())
    # 24 bytes: 3 offset-index entries, but 2 time-index slots, one reserved for the roll.
    assert [s.base_offset for s in log.segments] == [0, 2, 4]


def test_sparse_index_has_one_entry_per_index_interval_bytes(open_log: LogFactory) -> None:
    batch = make_batch(count=4, value_size=250)  # ~1.1 KB
    log = open_log(LogConfig(index_interval_bytes=4096))
    for _ in range(40):
        append(log, batch)
    index = log.active_segment.offset_index
    entries = [index.entry(i) for i in range(index.entries)]
    positions = [p for _, p in entries]
    gaps = [b - a for a, b in zip([0, *positions], positions, strict=False)]
    # An entry lands on the batch after more than 4096 bytes went unindexed.
    batches_per_entry = -(-4097 // len(batch))
    assert len(entries) == (40 - 1) // batches_per_entry
    assert all(gap == batches_per_entry * len(batch) for gap in gaps)
    # Every entry points at the start of the batch whose last offset it names.
    data = log.active_segment.log_path.read_bytes()
    starts = {pos: h.last_offset for pos, h in iter_batches(data)}
    assert all(starts[p] == offset for offset, p in entries)


def test_batch_larger_than_max_message_bytes_is_rejected(open_log: LogFactory) -> None:
    batch = make_batch(value_size=500)
    log = open_log(LogConfig(max_message_bytes=len(batch) - 1))
    with pytest.raises(RecordTooLargeError) as exc:
        append(log, batch)
    assert exc.value.error_code == 10
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_payload_larger_than_segment_bytes_is_rejected(open_log: LogFactory) -> None:
    batch = make_batch(value_size=500)
    log = open_log(LogConfig(segment_bytes=len(batch) * 2 - 1))
    with pytest.raises(RecordBatchTooLargeError) as exc:
        append(log, batch, batch)
    assert exc.value.error_code == 18


def test_batch_whose_record_count_contradicts_its_offsets_is_rejected(
    open_log: LogFactory,
) -> None:
    log = open_log()
    batch = bytearray(make_batch(count=3))
    batch[57:61] = (2).to_bytes(4, "big")  # recordsCount, then a matching CRC
    batch[17:21] = compute_crc(batch, 0, len(batch)).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        append(log, bytes(batch))


def test_invalid_timestamp_type_config_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"message\.timestamp\.type"):
        LogConfig(message_timestamp_type="Wallclock")


def test_append_as_follower_keeps_offsets_and_leader_epochs(open_log: LogFactory) -> None:
    log = open_log()
    buf, _ = payload(
        make_batch(count=2, base_offset=0, leader_epoch=1),
        make_batch(count=3, base_offset=2, leader_epoch=2),
    )
    result = log.append_as_follower(buf)
    assert (result.base_offset, result.last_offset) == (0, 4)
    assert log.log_end_offset == 5
    assert [(h.base_offset, h.partition_leader_epoch) for h in disk_headers(log)] == [
        (0, 1),
        (2, 2),
    ]
    assert log.leader_epoch_cache.entries == (EpochEntry(1, 0), EpochEntry(2, 2))


def test_append_as_follower_rejects_offsets_below_the_log_end_offset(
    open_log: LogFactory,
) -> None:
    log = open_log()
    log.append_as_follower(payload(make_batch(count=2, base_offset=0))[0])
    with pytest.raises(UnexpectedAppendOffsetError, match="below the expected 2"):
        log.append_as_follower(payload(make_batch(count=2, base_offset=1))[0])


def test_control_batches_from_clients_are_rejected(open_log: LogFactory) -> None:
    log = open_log()
    batch = bytearray(make_batch(producer_id=1, producer_epoch=0, base_sequence=0))
    batch[21:23] = (0x30).to_bytes(2, "big")  # transactional + control
    batch[17:21] = compute_crc(batch, 0, len(batch)).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError, match="control"):
        append(log, bytes(batch))
