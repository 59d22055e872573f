"""Log.read: whole batches, max_bytes, max_offset (the HW), min_one_batch, segments."""

from __future__ import annotations

import itertools

import pytest

from weir.log.errors import OffsetOutOfRangeError
from weir.log.log import Log, LogConfig

from .conftest import LogFactory, append, make_batch, read_headers, slice_bytes

# Batches of different sizes and record counts; segment.bytes makes several segments.
SHAPES = [(1, 50), (3, 200), (2, 10), (5, 400), (1, 1000), (4, 30), (2, 300), (1, 5)] * 3


@pytest.fixture
def log(open_log: LogFactory) -> Log:
    log = open_log(LogConfig(segment_bytes=3000, index_interval_bytes=500))
    for count, value_size in SHAPES:
        append(log, make_batch(count=count, value_size=value_size))
    assert len(log.segments) > 3
    return log


def batch_table(log: Log) -> list[tuple[int, int, int]]:
    """(base offset, last offset, size) of every batch, in log order."""
    table = []
    for segment in log.segments:
        table += [(h.base_offset, h.last_offset, h.size) for _, h in segment.iter_headers()]
    return table


def expected_read(
    table: list[tuple[int, int, int]],
    offset: int,
    max_bytes: int,
    max_offset: int | None,
    min_one_batch: bool,
) -> list[int]:
    """The reference: base offsets of the batches Log.read must return."""
    result: list[int] = []
    total = 0
    for base, last, size in table:
        if last < offset:
            continue
        if max_offset is not None and last >= max_offset:
            break
        if total + size > max_bytes and not (min_one_batch and not result):
            break
        result.append(base)
        total += size
        if total >= max_bytes:
            break
    return result


def test_read_matches_the_reference_for_every_offset_budget_and_limit(log: Log) -> None:
    table = batch_table(log)
    leo = log.log_end_offset
    budgets = [0, 1, 60, 500, 1000, 2999, 3000, 5000, 10**6]
    limits = [None, 0, 1, 4, 5, 10, 17, 30, leo - 1, leo]
    for offset, max_bytes, max_offset, min_one in itertools.product(
        range(leo + 1), budgets, limits, [True, False]
    ):
        slices = log.read(offset, max_bytes, max_offset=max_offset, min_one_batch=min_one)
        got = [h.base_offset for h in read_headers(slices)]
        assert got == expected_read(table, offset, max_bytes, max_offset, min_one), (
            offset,
            max_bytes,
            max_offset,
            min_one,
        )


def test_read_at_the_log_end_offset_returns_nothing(log: Log) -> None:
    assert log.read(log.log_end_offset, 10**6) == []


def test_read_at_or_above_max_offset_returns_nothing(log: Log) -> None:
    assert log.read(10, 10**6, max_offset=10) == []
    assert log.read(12, 10**6, max_offset=10) == []


def test_read_outside_the_log_raises_offset_out_of_range(log: Log) -> None:
    with pytest.raises(OffsetOutOfRangeError) as exc:
        log.read(log.log_end_offset + 1, 100)
    assert exc.value.error_code == 1
    log.delete_records_before(log.segments[1].base_offset)
    with pytest.raises(OffsetOutOfRangeError, match=r"outside \["):
        log.read(log.log_start_offset - 1, 100)


def test_first_batch_is_returned_whole_even_when_larger_than_max_bytes(log: Log) -> None:
    table = batch_table(log)
    big = next(row for row in table if row[2] > 1000)
    slices = log.read(big[0], 10)
    assert [h.base_offset for h in read_headers(slices)] == [big[0]]
    assert log.read(big[0], 10, min_one_batch=False) == []


def test_read_from_mid_batch_offset_starts_at_the_batch_holding_it(log: Log) -> None:
    table = batch_table(log)
    base, last, _ = next(row for row in table if row[1] - row[0] >= 2)
    headers = read_headers(log.read(base + 1, 10**6))
    assert headers[0].base_offset == base
    assert headers[0].last_offset == last


def test_read_spans_segment_boundaries_within_max_bytes(log: Log) -> None:
    slices = log.read(0, 10**6)
    assert len(slices) == len(log.segments)
    assert len(slice_bytes(slices)) == log.size_bytes
    assert [s.file for s in slices] == [seg.file for seg in log.segments]


def test_max_offset_at_a_segment_boundary_stops_before_that_segment(log: Log) -> None:
    boundary = log.segments[2].base_offset
    slices = log.read(0, 10**6, max_offset=boundary)
    headers = read_headers(slices)
    assert headers[-1].next_offset == boundary
    assert len(slices) == 2


def test_slices_point_into_open_segment_files(log: Log) -> None:
    for piece in log.read(0, 10**6):
        assert not piece.file.closed
        assert piece.position >= 0 and piece.size > 0
