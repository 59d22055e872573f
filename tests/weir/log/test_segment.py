"""LogSegment: one .log file with its sparse indexes, reads, recovery and truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir.log.segment import BatchInfo, LogSegment, offset_from_file_name, segment_file_stem
from weir.protocol.records import iter_batches, set_base_offset

from .conftest import FakeClock, make_batch

BASE = 1000


@pytest.fixture
def segment(tmp_path: Path, clock: FakeClock):
    seg = LogSegment(tmp_path, BASE, index_interval_bytes=300, max_index_size=4096, time_ms=clock)
    yield seg
    seg.close()


def append_batches(segment: LogSegment, sizes: list[int], first_offset: int = BASE) -> list[int]:
    """Append one batch per size (records of ``value_size``); returns their positions."""
    positions = []
    offset = first_offset
    for i, value_size in enumerate(sizes):
        batch = bytearray(make_batch(count=2, value_size=value_size, base_timestamp=100 + i))
        set_base_offset(batch, 0, offset)
        positions.append(segment.size)
        segment.append(batch, [BatchInfo(0, len(batch), offset + 1, 101 + i)])
        offset += 2
    return positions


def test_file_names_are_twenty_digit_base_offsets(segment: LogSegment) -> None:
    assert segment.log_path.name == "00000000000000001000.log"
    assert segment.offset_index.path.name == "00000000000000001000.index"
    assert segment.time_index.path.name == "00000000000000001000.timeindex"
    assert segment_file_stem(7) == "00000000000000000007"
    assert offset_from_file_name("00000000000000000042.snapshot") == 42
    assert offset_from_file_name("leader-epoch-checkpoint") is None


def test_index_entry_added_after_each_index_interval_bytes(segment: LogSegment) -> None:
    positions = append_batches(segment, [100] * 12)  # ~270-byte batches, interval 300
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    # The first batch is never indexed; afterwards every second batch crosses 300 bytes.
    assert entries == [(BASE + 2 * i + 1, positions[i]) for i in range(2, 12, 2)]


def test_translate_offset_finds_the_batch_holding_the_offset(segment: LogSegment) -> None:
    positions = append_batches(segment, [100] * 12)
    for i, position in enumerate(positions):
        for offset in (BASE + 2 * i, BASE + 2 * i + 1):
            found = segment.translate_offset(offset)
            assert found is not None
            assert found[0] == position
            assert found[1].base_offset == BASE + 2 * i
    assert segment.translate_offset(BASE + 24) is None
    assert segment.read_next_offset() == BASE + 24


def test_read_returns_whole_batches_within_max_size(segment: LogSegment) -> None:
    positions = append_batches(segment, [100] * 12)
    batch_size = positions[1]
    piece = segment.read(BASE + 4, batch_size * 3 + 10)
    assert piece is not None
    assert (piece.position, piece.size) == (positions[2], 3 * batch_size)
    whole = segment.read(BASE, 10**9)
    assert whole is not None and whole.size == segment.size


def test_read_stops_below_max_position(segment: LogSegment) -> None:
    positions = append_batches(segment, [100] * 6)
    piece = segment.read(BASE, 10**6, positions[3])
    assert piece is not None and piece.size == positions[3]


def test_recover_rebuilds_the_same_indexes(segment: LogSegment) -> None:
    append_batches(segment, [100, 5, 300, 40, 100, 100, 7, 250, 100, 100])
    before = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    max_before = segment.max_timestamp_and_offset
    assert segment.recover() == 0
    after = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    assert after == before
    # Recovery also writes the roll-time entry: the segment's largest timestamp.
    assert segment.time_index.last_entry == max_before == (110, BASE + 19)


@pytest.mark.parametrize("chunk_size", [64, 200, 1000, 1 << 20])
def test_recover_reads_batches_across_chunk_boundaries(
    segment: LogSegment, chunk_size: int
) -> None:
    append_batches(segment, [100, 5, 300, 40, 1000, 100, 7])
    size = segment.size
    assert segment.recover(chunk_size=chunk_size) == 0
    assert segment.size == size


def test_recover_truncates_a_torn_tail_and_returns_bytes_removed(segment: LogSegment) -> None:
    append_batches(segment, [100] * 4)
    valid = segment.size
    torn = make_batch(count=3, value_size=100)
    with open(segment.log_path, "ab") as f:
        f.write(torn[: len(torn) // 2])
    seen = []
    assert segment.recover(seen.append) == len(torn) // 2
    assert segment.size == valid == segment.log_path.stat().st_size
    assert len(seen) == 4
    assert len(list(iter_batches(segment.log_path.read_bytes()))) == 4


def test_recover_truncates_at_a_batch_whose_offsets_go_backwards(segment: LogSegment) -> None:
    append_batches(segment, [100] * 3)
    valid = segment.size
    stale = bytearray(make_batch(count=1))
    set_base_offset(stale, 0, BASE)  # offset already used
    with open(segment.log_path, "ab") as f:
        f.write(stale)
    assert segment.recover() == len(stale)
    assert segment.size == valid


def test_truncate_to_drops_the_batch_holding_the_offset_and_after(segment: LogSegment) -> None:
    positions = append_batches(segment, [100] * 10)
    size_before = segment.size
    removed = segment.truncate_to(BASE + 9)  # inside the batch [1008, 1009]
    assert removed == size_before - positions[4]
    assert segment.size == positions[4]
    assert segment.read_next_offset() == BASE + 8
    assert segment.offset_index.last_entry[0] < BASE + 8


def test_roll_by_time_counts_from_first_batch_timestamp(segment: LogSegment) -> None:
    append_batches(segment, [10])  # first batch max timestamp 101
    kwargs = dict(
        messages_size=10,
        max_offset_in_messages=BASE + 5,
        now_ms=10**15,
        segment_bytes=10**9,
        segment_ms=1000,
    )
    assert not segment.should_roll(max_timestamp_in_messages=1101, **kwargs)
    assert segment.should_roll(max_timestamp_in_messages=1102, **kwargs)
